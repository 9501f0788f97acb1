// One rank of a multi-process hardening test (issue 12), started by rmarun:
//   rmarun -n N rma_mp_hardening <scenario> [iterations]
// Scenarios:
//   atomicity  every rank swaps unique tokens into one word of rank 0 (half
//              with fetch_and_op REPLACE, half with compare_and_swap loops,
//              reads with NO_OP) while rank 1 adds to an aligned and a
//              misaligned int64 in one call and the others to the aligned
//              one alone: no swap lost or duplicated, no addition lost;
//   peerdeath  (3 ranks, run with rmarun --grace) the last rank takes an
//              exclusive lock on rank 0's window, announces it to rank 1,
//              keeps putting and accumulating, and kills itself (SIGKILL)
//              in the middle. Rank 0, putting and accumulating to it, and
//              rank 1, asking rank 0's lock it holds, must each get an error
//              naming the dead rank (no hang), with their own memory
//              intact; they print what they saw and exit without
//              finalizing (a job with a dead rank cannot finalize).
//   unlockfail (2 ranks, short RMA_WAIT_TIMEOUT_MS) rank 1 locks rank 0,
//              stops rank 0's process (SIGSTOP), puts, and unlocks: the
//              flush times out and unlock fails; after SIGCONT the lock must
//              be free again (it was released behind the put), so rank 1's
//              next exclusive lock is granted and the put landed.
//   exposure   (2 ranks) rank 1 sends raw work requests with the published
//              rkey of rank 0's 100-byte window, one byte past it: the NIC
//              refuses them (remote access error) and rank 0's neighbouring
//              bytes stay unchanged.
// A failed check prints rank, scenario and what differed; the rank exits 1.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "rma/rma.h"
#include "mp_check.hpp"
#include "window/context.hpp"
#include "window/window.hpp"

namespace {

using i64 = std::int64_t;

// A window word that a peer's put may still be writing: the software NIC's
// progress thread stores it with memcpy, as a NIC's DMA would, so a polling
// load is ordered after the NIC's earlier writes (rma_win_sync before it) but
// not before its later ones; tests/tsan.supp names this function.
__attribute__((noinline)) i64 load_nic_written(const i64* word) { return __atomic_load_n(word, __ATOMIC_ACQUIRE); }

i64 token(int rank, int it) { return (static_cast<i64>(rank + 1) << 32) | (it + 1); }

// ------------------------------------------------------------------ atomicity
// Rank 0's window: [0] the swapped word, [16] the aligned counter, [28] the
// misaligned one, then from 64 every rank's displaced tokens.
void scenario_atomicity(int iters) {
  const int n = g_size, me = g_rank;
  unsigned char* base = nullptr;
  rma_Win win = RMA_WIN_NULL;
  const rma_Aint table = 64;
  CALL(rma_win_allocate(me == 0 ? table + static_cast<rma_Aint>(8) * n * iters : 0, 1, RMA_INFO_NULL,
                        RMA_COMM_WORLD, &base, &win));
  CALL(rma_win_set_errhandler(win, RMA_ERRORS_RETURN));
  rma_Datatype pair = RMA_DATATYPE_NULL;
  const int blens[2] = {1, 1};
  const rma_Aint disps[2] = {0, 12};
  CALL(rma_type_create_hindexed(2, blens, disps, RMA_INT64_T, &pair));
  CALL(rma_type_commit(&pair));
  CALL(rma_barrier(RMA_COMM_WORLD));
  CALL(rma_win_lock_all(0, win));
  std::vector<i64> displaced(static_cast<std::size_t>(iters));
  i64 guess = 0;
  const i64 ones[2] = {1, 1};
  for (int it = 0; it < iters; ++it) {
    const i64 tok = token(me, it);
    i64 old = 0;
    if (me % 2 == 0) {
      CALL(rma_fetch_and_op(&tok, &old, RMA_INT64_T, 0, 0, RMA_REPLACE, win));
      CALL(rma_win_flush(0, win));
    } else {
      for (;;) {
        CALL(rma_compare_and_swap(&tok, &guess, &old, RMA_INT64_T, 0, 0, win));
        CALL(rma_win_flush(0, win));
        if (old == guess) break;
        guess = old;
      }
      guess = tok;
    }
    displaced[static_cast<std::size_t>(it)] = old;
    if (me == 1) {
      CALL(rma_accumulate(ones, 2, RMA_INT64_T, 0, 16, 1, pair, RMA_SUM, win));
    } else {
      CALL(rma_accumulate(ones, 1, RMA_INT64_T, 0, 16, 1, RMA_INT64_T, RMA_SUM, win));
    }
    if (it % 4 == 0) {
      i64 read = -1;
      CALL(rma_get_accumulate(nullptr, 0, RMA_INT64_T, &read, 1, RMA_INT64_T, 0, 0, 1, RMA_INT64_T,
                              RMA_NO_OP, win));
      CALL(rma_win_flush(0, win));
      const bool plausible = read == 0 || ((read >> 32) >= 1 && (read >> 32) <= n &&
                                           (read & 0xffffffff) >= 1 && (read & 0xffffffff) <= iters);
      if (!plausible) fail(__LINE__, "NO_OP read %" PRId64 ", which nobody wrote", read);
    }
  }
  CALL(rma_win_unlock_all(win));
  CALL(rma_win_fence(0, win));
  CALL(rma_put(displaced.data(), iters, RMA_INT64_T, 0, table + static_cast<rma_Aint>(8) * me * iters, iters,
               RMA_INT64_T, win));
  CALL(rma_win_fence(0, win));
  if (me == 0) {
    std::vector<i64> got, want{0};
    i64 final_value = 0, at16 = 0, at28 = 0;
    std::memcpy(&final_value, base, 8);
    std::memcpy(&at16, base + 16, 8);
    std::memcpy(&at28, base + 28, 8);
    got.push_back(final_value);
    for (int k = 0; k < n * iters; ++k) {
      i64 v = 0;
      std::memcpy(&v, base + table + 8 * k, 8);
      got.push_back(v);
    }
    for (int r = 0; r < n; ++r) {
      for (int it = 0; it < iters; ++it) want.push_back(token(r, it));
    }
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    for (std::size_t k = 0; k < want.size(); ++k) {
      if (got[k] != want[k]) {
        fail(__LINE__, "swaps: sorted entry %zu is %" PRId64 ", expected %" PRId64 " (a swap was lost or duplicated)",
             k, got[k], want[k]);
      }
    }
    CHECK_EQ(at16, static_cast<i64>(n) * iters);
    CHECK_EQ(at28, n > 1 ? static_cast<i64>(iters) : i64{0});
    std::printf("atomicity: %d ranks x %d swaps, none lost; counters %" PRId64 " and %" PRId64 "\n", n, iters,
                at16, at28);
  }
  CALL(rma_type_free(&pair));
  CALL(rma_win_free(&win));
}

// ------------------------------------------------------------------ exposure
// One raw work request from this rank to `target`, waited for.
rma::WcStatus raw_access(int target, rma::Opcode op, std::uint64_t addr, std::uint32_t rkey, std::uint32_t len) {
  auto& eps = rma::api::current_context()->eps();
  auto& ep = eps.endpoint(target);
  if (ep.reserve(true) != rma::StatusCode::kOk) return rma::WcStatus::kGeneralErr;
  const rma::Sge s = ep.bounce(len);
  rma::WorkRequest wr;
  wr.opcode = op;
  wr.sgl = {&s, 1};
  wr.remote_addr = addr;
  wr.rkey = rkey;
  rma::endpoint::Request r;
  if (ep.post(wr, rma::endpoint::OnComplete{&r, {}, nullptr, 0}, true) != rma::StatusCode::kOk) {
    return rma::WcStatus::kGeneralErr;
  }
  if (eps.wait(r) != rma::StatusCode::kOk) return rma::WcStatus::kGeneralErr;
  return r.error;
}

void scenario_exposure() {
  if (g_size != 2) fail(__LINE__, "exposure runs with 2 ranks, not %d", g_size);
  constexpr rma_Aint kSize = 100;
  std::vector<unsigned char> arena(4 * 4096, 0x5a);
  auto page = reinterpret_cast<std::uintptr_t>(arena.data());
  page = (page + 4095) / 4096 * 4096 + 4096;
  auto* base = reinterpret_cast<unsigned char*>(page + 200);
  rma_Win win = RMA_WIN_NULL;
  CALL(rma_win_create(g_rank == 0 ? base : nullptr, g_rank == 0 ? kSize : 0, 1, RMA_INFO_NULL, RMA_COMM_WORLD,
                      &win));
  CALL(rma_win_set_errhandler(win, RMA_ERRORS_RETURN));
  const rma::api::PeerWindow p = win->peers[0];
  if (g_rank == 1) {
    CHECK_EQ(static_cast<int>(raw_access(0, rma::Opcode::kRdmaRead, p.base + kSize - 8, p.rkey, 8)),
             static_cast<int>(rma::WcStatus::kSuccess));
    // One byte past the window, written: refused, and the connection breaks.
    CHECK_EQ(static_cast<int>(raw_access(0, rma::Opcode::kRdmaWrite, p.base + kSize, p.rkey, 1)),
             static_cast<int>(rma::WcStatus::kRemAccessErr));
  }
  CALL(rma_barrier(RMA_COMM_WORLD));
  const int rc = rma_win_free(&win);
  if (g_rank == 0) {
    CHECK_EQ(rc, RMA_SUCCESS);
    for (std::size_t i = 0; i < arena.size(); ++i) {
      const unsigned char* b = arena.data() + i;
      if (b >= base && b < base + kSize) continue;
      if (*b != 0x5a) fail(__LINE__, "byte %td relative to the window changed", b - base);
    }
    std::printf("exposure: one byte past the window refused, neighbours untouched\n");
  }
}

// ------------------------------------------------------------------ peerdeath
std::string last_error() {
  char why[RMA_MAX_ERROR_STRING];
  int len = 0;
  rma_last_error_message(why, &len);
  return std::string(why, static_cast<std::size_t>(len));
}

void scenario_peerdeath() {
  if (g_size != 3) fail(__LINE__, "peerdeath runs with 3 ranks, not %d", g_size);
  const int victim = 2;
  constexpr int kWords = 512;
  i64* base = nullptr;
  rma_Win win = RMA_WIN_NULL;
  CALL(rma_win_allocate(8 * kWords, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win));
  CALL(rma_win_set_errhandler(win, RMA_ERRORS_RETURN));
  for (int i = 0; i < kWords; ++i) base[i] = 1000 * g_rank + i;
  std::vector<i64> own(4096);
  for (std::size_t i = 0; i < own.size(); ++i) own[i] = static_cast<i64>(i * 7 + 1);
  CALL(rma_barrier(RMA_COMM_WORLD));
  const auto start = std::chrono::steady_clock::now();
  auto elapsed_ms = [&] {
    return static_cast<long long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count());
  };
  // Words [0, 256) of each window: what the others may write; [256, 512): nobody's.
  // Rank 0's word 255: rank 1 is done; rank 1's word 0: the victim holds rank 0's lock.
  if (g_rank == victim) {
    CALL(rma_win_lock(RMA_LOCK_EXCLUSIVE, 0, 0, win));
    CALL(rma_win_lock(RMA_LOCK_SHARED, 1, 0, win));
    const i64 flag = 1;
    CALL(rma_put(&flag, 1, RMA_INT64_T, 1, 0, 1, RMA_INT64_T, win));
    CALL(rma_win_flush(1, win));
    for (int it = 0;; ++it) {
      CALL(rma_put(own.data(), 16, RMA_INT64_T, 0, 16, 16, RMA_INT64_T, win));
      CALL(rma_accumulate(own.data(), 4, RMA_INT64_T, 0, 64, 4, RMA_INT64_T, RMA_SUM, win));
      if (it == 50) {
        std::fflush(stdout);
        ::raise(SIGKILL);  // mid-epoch, operations in flight
      }
    }
  }
  std::string seen;
  if (g_rank == 0) {
    // Puts and accumulates to the victim until one fails.
    for (int it = 0; seen.empty(); ++it) {
      int rc = rma_win_lock(RMA_LOCK_SHARED, victim, 0, win);
      if (rc == RMA_SUCCESS) rc = rma_put(own.data(), 64, RMA_INT64_T, victim, 0, 64, RMA_INT64_T, win);
      if (rc == RMA_SUCCESS) rc = rma_accumulate(own.data(), 8, RMA_INT64_T, victim, 128, 8, RMA_INT64_T, RMA_SUM, win);
      if (rc == RMA_SUCCESS) rc = rma_win_flush(victim, win);
      if (rc != RMA_SUCCESS) {
        seen = last_error();
        (void)rma_win_unlock(victim, win);  // ends the epoch; reports the dead connection again
        break;
      }
      rc = rma_win_unlock(victim, win);
      if (rc != RMA_SUCCESS) seen = last_error();
    }
    // Rank 1 still talks to rank 0: stay until it says it is done (the
    // bootstrap, which would give a barrier, is gone with the failed job).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    // rma_win_sync before every load: it orders the NIC's writes (made
    // under its lock) before them.
    for (;;) {
      CALL(rma_win_sync(win));
      if (load_nic_written(&base[255]) == 7) break;
      if (std::chrono::steady_clock::now() > deadline) fail(__LINE__, "rank 1 never said it was done");
    }
  } else {
    // Wait for the victim's lock on rank 0, then ask for it.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (;;) {
      CALL(rma_win_sync(win));
      if (load_nic_written(&base[0]) == 1) break;
      if (std::chrono::steady_clock::now() > deadline) fail(__LINE__, "the victim never announced its lock");
    }
    const int rc = rma_win_lock(RMA_LOCK_EXCLUSIVE, 0, 0, win);
    if (rc == RMA_SUCCESS) fail(__LINE__, "rank 0's lock was granted although the dead rank holds it");
    seen = last_error();
    // Tell rank 0 we are done (past its lock word, which stays held).
    const i64 done = 7;
    CALL(rma_win_lock(RMA_LOCK_SHARED, 0, RMA_MODE_NOCHECK, win));
    CALL(rma_put(&done, 1, RMA_INT64_T, 0, 255, 1, RMA_INT64_T, win));
    CALL(rma_win_unlock(0, win));
  }
  if (seen.find("rank " + std::to_string(victim)) == std::string::npos) {
    fail(__LINE__, "the error does not name the dead rank %d: %s", victim, seen.c_str());
  }
  // Own memory: the private buffer untouched, the window's second half too.
  for (std::size_t i = 0; i < own.size(); ++i) CHECK_EQ(own[i], static_cast<i64>(i * 7 + 1));
  for (int i = kWords / 2; i < kWords; ++i) CHECK_EQ(base[i], static_cast<i64>(1000 * g_rank + i));
  std::printf("peerdeath: rank %d saw after %lld ms: %s\n", g_rank, elapsed_ms(), seen.c_str());
  std::fflush(stdout);
  // A job with a dead rank cannot finalize (its barrier would wait for it).
  std::_Exit(0);
}

// ------------------------------------------------------------------ unlockfail
bool stopped(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return false;
  char buf[512] = {};
  const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  const char* close = std::strrchr(buf, ')');  // "pid (comm) S ..."
  return n > 0 && close != nullptr && close[1] == ' ' && (close[2] == 'T' || close[2] == 't');
}

void scenario_unlockfail() {
  if (g_size != 2) fail(__LINE__, "unlockfail runs with 2 ranks, not %d", g_size);
  i64* base = nullptr;
  rma_Win win = RMA_WIN_NULL;
  CALL(rma_win_allocate(64, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win));
  CALL(rma_win_set_errhandler(win, RMA_ERRORS_RETURN));
  base[0] = 0;
  base[1] = ::getpid();
  CALL(rma_barrier(RMA_COMM_WORLD));
  if (g_rank == 1) {
    i64 pid0 = 0;
    CALL(rma_win_lock(RMA_LOCK_EXCLUSIVE, 0, 0, win));
    CALL(rma_get(&pid0, 1, RMA_INT64_T, 0, 1, 1, RMA_INT64_T, win));
    CALL(rma_win_flush(0, win));
    // Rank 0 (its NIC too) stops: the put below stays unacknowledged.
    if (::kill(static_cast<pid_t>(pid0), SIGSTOP) != 0) fail(__LINE__, "cannot stop rank 0 (pid %" PRId64 ")", pid0);
    while (!stopped(static_cast<pid_t>(pid0))) ::usleep(1000);
    const i64 v = 42;
    CALL(rma_put(&v, 1, RMA_INT64_T, 0, 0, 1, RMA_INT64_T, win));
    const int rc = rma_win_unlock(0, win);
    const std::string why = last_error();
    ::kill(static_cast<pid_t>(pid0), SIGCONT);
    if (rc == RMA_SUCCESS) fail(__LINE__, "unlock succeeded while rank 0 was stopped");
    // The lock word must come free once rank 0's NIC runs again.
    if (rma_win_lock(RMA_LOCK_EXCLUSIVE, 0, 0, win) != RMA_SUCCESS) {
      fail(__LINE__, "the lock word stayed held after the failed unlock (which said: %s)", why.c_str());
    }
    if (why.find("released behind") == std::string::npos) fail(__LINE__, "unlock's error: %s", why.c_str());
    i64 got = 0;
    CALL(rma_get(&got, 1, RMA_INT64_T, 0, 0, 1, RMA_INT64_T, win));
    CALL(rma_win_unlock(0, win));
    CHECK_EQ(got, i64{42});
    std::printf("unlockfail: unlock reported '%s'; the lock was free again after SIGCONT\n", why.c_str());
  }
  CALL(rma_barrier(RMA_COMM_WORLD));
  CALL(rma_win_free(&win));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: rmarun -n N %s atomicity|exposure|peerdeath|unlockfail [iterations]\n", argv[0]);
    return 2;
  }
  g_scenario = argv[1];
  const int iters = argc > 2 ? std::atoi(argv[2]) : 200;
  if (iters <= 0) {
    std::fprintf(stderr, "%s: iterations must be a positive integer, not '%s'\n", argv[0], argv[2]);
    return 2;
  }
  CALL(rma_init(&argc, &argv));
  CALL(rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN));
  CALL(rma_comm_rank(RMA_COMM_WORLD, &g_rank));
  CALL(rma_comm_size(RMA_COMM_WORLD, &g_size));
  const std::string s = g_scenario;
  if (s == "atomicity") scenario_atomicity(iters);
  else if (s == "exposure") scenario_exposure();
  else if (s == "peerdeath") scenario_peerdeath();
  else if (s == "unlockfail") scenario_unlockfail();
  else fail(__LINE__, "unknown scenario '%s'", g_scenario);
  CALL(rma_finalize());
  if (g_rank == 0) std::printf("rma_mp_hardening %s: %d ranks passed\n", g_scenario, g_size);
  return 0;
}
