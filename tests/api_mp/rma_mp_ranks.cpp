// One rank of a multi-process RMA API test, started by rmarun:
//   rmarun -n N rma_mp_ranks <scenario> [iterations]
// Scenarios: ops (every operation in every synchronization mode), accumulate
// (every rank accumulates into one location at once: the result must equal
// the serial one), locks (exclusive-lock contention on one counter, shared
// readers), dynamic (attach/detach, addresses published through a window),
// bounds (out-of-bounds calls rejected at the origin, the target untouched).
// Every check that fails prints the rank, the scenario and what differed,
// and the rank exits 1: rmarun then stops the others and names it.
#include <unistd.h>

#include <cinttypes>
#include <cstddef>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "rma/rma.h"
#include "mp_check.hpp"

namespace {

using i64 = std::int64_t;

// ------------------------------------------------------------------ ops
// Window of 64 int64 per rank, disp_unit 8. Slots:
//   [0..N)      fence puts: slot r written by rank r
//   [N..2N)     passive exclusive puts
//   [2N..3N)    PSCW puts
//   [3N..4N)    request-based puts
//   60 int64 SUM accumulate target, 61 fetch_and_op target, 62 CAS word,
//   63 (as double) SUM accumulate through the accumulate lock
void scenario_ops() {
  const int n = g_size, me = g_rank;
  if (4 * n > 56) fail(__LINE__, "ops supports at most 14 ranks");
  i64* base = nullptr;
  rma_Win win = RMA_WIN_NULL;
  CALL(rma_win_allocate(64 * 8, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win));
  CALL(rma_win_set_errhandler(win, RMA_ERRORS_RETURN));
  for (int i = 0; i < 64; ++i) base[i] = -1;
  base[60] = 0;
  base[61] = 0;
  base[62] = 0;
  double zero = 0.0;
  std::memcpy(&base[63], &zero, 8);
  CALL(rma_win_fence(0, win));

  // Active target, fence: put to everyone, get from everyone, accumulate.
  const i64 mine = 1000 + me;
  for (int t = 0; t < n; ++t) CALL(rma_put(&mine, 1, RMA_INT64_T, t, me, 1, RMA_INT64_T, win));
  const i64 one = 1;
  CALL(rma_accumulate(&one, 1, RMA_INT64_T, 0, 60, 1, RMA_INT64_T, RMA_SUM, win));
  const double half = 0.5;
  CALL(rma_accumulate(&half, 1, RMA_DOUBLE, 0, 63, 1, RMA_DOUBLE, RMA_SUM, win));
  CALL(rma_win_fence(0, win));
  for (int r = 0; r < n; ++r) CHECK_EQ(base[r], 1000 + r);
  std::vector<i64> got(static_cast<std::size_t>(n), 0);
  for (int t = 0; t < n; ++t) CALL(rma_get(&got[static_cast<std::size_t>(t)], 1, RMA_INT64_T, t, me, 1, RMA_INT64_T, win));
  CALL(rma_win_fence(0, win));
  for (int t = 0; t < n; ++t) CHECK_EQ(got[static_cast<std::size_t>(t)], mine);
  if (me == 0) {
    CHECK_EQ(base[60], static_cast<i64>(n));
    double d;
    std::memcpy(&d, &base[63], 8);
    CHECK_EQ(d, 0.5 * n);
  }
  CALL(rma_win_fence(0, win));

  // Passive target, exclusive and shared locks, flushes.
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  CALL(rma_win_lock(RMA_LOCK_EXCLUSIVE, right, 0, win));
  const i64 tag = 2000 + me;
  CALL(rma_put(&tag, 1, RMA_INT64_T, right, n + me, 1, RMA_INT64_T, win));
  CALL(rma_win_flush(right, win));
  i64 back = 0;
  CALL(rma_get(&back, 1, RMA_INT64_T, right, n + me, 1, RMA_INT64_T, win));
  CALL(rma_win_flush_local(right, win));  // a get is locally complete when its result is in place
  CHECK_EQ(back, tag);
  CALL(rma_win_unlock(right, win));
  i64 fetched = -5;
  CALL(rma_win_lock(RMA_LOCK_SHARED, 0, 0, win));
  CALL(rma_fetch_and_op(&one, &fetched, RMA_INT64_T, 0, 61, RMA_SUM, win));
  CALL(rma_win_flush_local(0, win));
  CALL(rma_win_unlock(0, win));
  if (fetched < 0 || fetched >= n) fail(__LINE__, "fetch_and_op returned %" PRId64 ", not in [0, %d)", fetched, n);
  // MPI's unified model: after the barrier, win_sync before loading what
  // others wrote into this window.
  CALL(rma_barrier(RMA_COMM_WORLD));
  CALL(rma_win_sync(win));
  if (me == 0) CHECK_EQ(base[61], static_cast<i64>(n));
  CHECK_EQ(base[n + left], 2000 + left);

  // compare_and_swap: every rank tries 0 -> rank+1 on rank 0's word; exactly one wins.
  CALL(rma_win_lock_all(0, win));
  const i64 zero64 = 0, want = me + 1;
  i64 old = -7;
  CALL(rma_compare_and_swap(&want, &zero64, &old, RMA_INT64_T, 0, 62, win));
  CALL(rma_win_flush_all(win));
  // get_accumulate NO_OP reads the winner atomically.
  i64 winner = -7, dummy = 0;
  CALL(rma_get_accumulate(&dummy, 1, RMA_INT64_T, &winner, 1, RMA_INT64_T, 0, 62, 1, RMA_INT64_T, RMA_NO_OP, win));
  CALL(rma_win_flush_local_all(win));
  CALL(rma_win_sync(win));
  CALL(rma_win_unlock_all(win));
  if (winner < 1 || winner > n) fail(__LINE__, "CAS word holds %" PRId64, winner);
  if ((old == 0) != (winner == want)) fail(__LINE__, "CAS returned %" PRId64 " but the word holds %" PRId64, old, winner);
  i64 wins = old == 0 ? 1 : 0, total_wins = 0;
  {
    // Count the winners: everyone adds its win to rank 0's slot 60 (reset first).
    CALL(rma_barrier(RMA_COMM_WORLD));
    if (me == 0) base[59] = 0;
    CALL(rma_win_fence(0, win));
    CALL(rma_accumulate(&wins, 1, RMA_INT64_T, 0, 59, 1, RMA_INT64_T, RMA_SUM, win));
    CALL(rma_win_fence(0, win));
    if (me == 0) {
      total_wins = base[59];
      CHECK_EQ(total_wins, 1);
    }
  }

  // PSCW: each rank exposes to its left neighbour, accesses its right one.
  rma_Group world, from_left, to_right;
  CALL(rma_comm_group(RMA_COMM_WORLD, &world));
  CALL(rma_group_incl(world, 1, &left, &from_left));
  CALL(rma_group_incl(world, 1, &right, &to_right));
  CALL(rma_win_post(from_left, 0, win));
  CALL(rma_win_start(to_right, 0, win));
  const i64 pscw = 3000 + me;
  CALL(rma_put(&pscw, 1, RMA_INT64_T, right, 2 * n + me, 1, RMA_INT64_T, win));
  CALL(rma_win_complete(win));
  CALL(rma_win_wait(win));
  CHECK_EQ(base[2 * n + left], 3000 + left);
  CALL(rma_group_free(&from_left));
  CALL(rma_group_free(&to_right));
  CALL(rma_group_free(&world));

  // Request-based operations inside a lock_all epoch.
  CALL(rma_win_lock_all(0, win));
  rma_Request req[4];
  const i64 rp = 4000 + me;
  CALL(rma_rput(&rp, 1, RMA_INT64_T, right, 3 * n + me, 1, RMA_INT64_T, win, &req[0]));
  CALL(rma_wait(&req[0], RMA_STATUS_IGNORE));
  i64 rg = 0;
  CALL(rma_rget(&rg, 1, RMA_INT64_T, right, 3 * n + me, 1, RMA_INT64_T, win, &req[1]));
  int flag = 0;
  for (int spin = 0; !flag && spin < 100000000; ++spin) CALL(rma_test(&req[1], &flag, RMA_STATUS_IGNORE));
  if (!flag) fail(__LINE__, "rma_rget never completed");
  CHECK_EQ(rg, rp);
  CALL(rma_raccumulate(&one, 1, RMA_INT64_T, 0, 60, 1, RMA_INT64_T, RMA_SUM, win, &req[2]));
  i64 ga = -1;
  CALL(rma_rget_accumulate(&one, 1, RMA_INT64_T, &ga, 1, RMA_INT64_T, 0, 61, 1, RMA_INT64_T, RMA_SUM, win, &req[3]));
  CALL(rma_waitall(2, &req[2], nullptr));
  CALL(rma_win_unlock_all(win));
  if (ga < n || ga >= 2 * n) fail(__LINE__, "rget_accumulate fetched %" PRId64 ", not in [%d, %d)", ga, n, 2 * n);
  CALL(rma_barrier(RMA_COMM_WORLD));
  CALL(rma_win_sync(win));
  CHECK_EQ(base[3 * n + left], 4000 + left);
  if (me == 0) {
    CHECK_EQ(base[60], static_cast<i64>(2 * n));
    CHECK_EQ(base[61], static_cast<i64>(2 * n));
  }
  CALL(rma_win_free(&win));
}

// ------------------------------------------------------------------ accumulate
void scenario_accumulate(int iters) {
  const int n = g_size, me = g_rank;
  struct Target {
    i64 sum;
    double dsum;
    std::int32_t max;
    std::int32_t isum;  // 4- and 2-byte sums: read-modify-write under the
    i64 fetch;          // target's accumulate lock, whichever path an
    std::int16_t ssum;  // origin takes (the direct path's shortcut for a
    std::int16_t pad[3];  // predefined type, its checked path, the NIC)
  };
  // Odd ranks describe the int32 target as a derived type, which the direct
  // path's shortcut leaves to the checked path: both paths take one lock.
  rma_Datatype int32_derived = RMA_DATATYPE_NULL;
  CALL(rma_type_contiguous(1, RMA_INT32_T, &int32_derived));
  CALL(rma_type_commit(&int32_derived));
  Target* t = nullptr;
  rma_Win win = RMA_WIN_NULL;
  CALL(rma_win_allocate(sizeof(Target) + (me == 0 ? static_cast<rma_Aint>(8) * n * iters : 0), 1, RMA_INFO_NULL,
                        RMA_COMM_WORLD, &t, &win));
  CALL(rma_win_set_errhandler(win, RMA_ERRORS_RETURN));
  std::memset(t, 0, sizeof(Target));
  t->max = -1;
  CALL(rma_barrier(RMA_COMM_WORLD));
  CALL(rma_win_lock_all(0, win));
  std::vector<i64> fetched(static_cast<std::size_t>(iters));
  for (int i = 0; i < iters; ++i) {
    const i64 add = me + 1;
    CALL(rma_accumulate(&add, 1, RMA_INT64_T, 0, offsetof(Target, sum), 1, RMA_INT64_T, RMA_SUM, win));
    const double dadd = 0.25 * (me + 1);
    CALL(rma_accumulate(&dadd, 1, RMA_DOUBLE, 0, offsetof(Target, dsum), 1, RMA_DOUBLE, RMA_SUM, win));
    const std::int32_t cand = me * 1000 + i;
    CALL(rma_accumulate(&cand, 1, RMA_INT32_T, 0, offsetof(Target, max), 1, RMA_INT32_T, RMA_MAX, win));
    const std::int32_t iadd = me + 1;
    CALL(rma_accumulate(&iadd, 1, RMA_INT32_T, 0, offsetof(Target, isum), 1, me % 2 ? int32_derived : RMA_INT32_T,
                        RMA_SUM, win));
    const std::int16_t sadd = 1;
    CALL(rma_accumulate(&sadd, 1, RMA_INT16_T, 0, offsetof(Target, ssum), 1, RMA_INT16_T, RMA_SUM, win));
    const i64 one = 1;
    CALL(rma_fetch_and_op(&one, &fetched[static_cast<std::size_t>(i)], RMA_INT64_T, 0, offsetof(Target, fetch),
                          RMA_SUM, win));
    if (i % 16 == 15) CALL(rma_win_flush(0, win));
  }
  CALL(rma_win_flush_all(win));
  CALL(rma_win_unlock_all(win));
  // Every fetched value is distinct across the job: publish them on rank 0.
  CALL(rma_win_fence(0, win));
  CALL(rma_put(fetched.data(), iters, RMA_INT64_T, 0, sizeof(Target) + static_cast<rma_Aint>(8) * me * iters, iters,
               RMA_INT64_T, win));
  CALL(rma_win_fence(0, win));
  if (me == 0) {
    const i64 serial = static_cast<i64>(iters) * n * (n + 1) / 2;
    CHECK_EQ(t->sum, serial);
    CHECK_EQ(t->dsum, 0.25 * static_cast<double>(serial));
    CHECK_EQ(t->max, (n - 1) * 1000 + iters - 1);
    CHECK_EQ(static_cast<i64>(t->isum), serial);
    // int16 arithmetic wraps (a long manual run passes 32767).
    CHECK_EQ(t->ssum, static_cast<std::int16_t>(static_cast<std::uint16_t>(n * iters)));
    CHECK_EQ(t->fetch, static_cast<i64>(n) * iters);
    std::vector<char> seen(static_cast<std::size_t>(n) * iters, 0);
    const auto* all = reinterpret_cast<const i64*>(t + 1);
    for (std::size_t k = 0; k < seen.size(); ++k) {
      const i64 v = all[k];
      if (v < 0 || v >= static_cast<i64>(seen.size()) || seen[static_cast<std::size_t>(v)]) {
        fail(__LINE__, "fetch_and_op result %" PRId64 " (entry %zu) repeated or out of range", v, k);
      }
      seen[static_cast<std::size_t>(v)] = 1;
    }
    std::printf("accumulate: %d ranks x %d iterations: int64 SUM %" PRId64 ", double SUM %.2f, int32 MAX %d, "
                "%zu distinct fetch_and_op results\n",
                n, iters, t->sum, t->dsum, t->max, seen.size());
  }
  CALL(rma_win_free(&win));
  CALL(rma_type_free(&int32_derived));
}

// accumulate_ordering=none: compare-and-swap-loop accumulates are recorded
// and run together at flush and unlock (rmaapi/window/deferred_accumulate):
// from every rank at once over the NIC they must still add up.
void scenario_accumulate_unordered(int iters) {
  const int n = g_size, me = g_rank;
  constexpr int kArray = 16;
  rma_Info info = RMA_INFO_NULL;
  CALL(rma_info_create(&info));
  CALL(rma_info_set(info, "accumulate_ordering", "none"));
  double* t = nullptr;
  rma_Win win = RMA_WIN_NULL;
  CALL(rma_win_allocate(8 * (2 + kArray), 8, info, RMA_COMM_WORLD, &t, &win));
  CALL(rma_info_free(&info));
  CALL(rma_win_set_errhandler(win, RMA_ERRORS_RETURN));
  std::memset(t, 0, 8 * (2 + kArray));
  CALL(rma_barrier(RMA_COMM_WORLD));
  CALL(rma_win_lock_all(0, win));
  const std::vector<double> quarter(kArray, 0.25);
  for (int i = 0; i < iters; ++i) {
    const double dadd = 0.5 * (me + 1);
    CALL(rma_accumulate(&dadd, 1, RMA_DOUBLE, 0, 0, 1, RMA_DOUBLE, RMA_SUM, win));
    const i64 cand = me * 1000 + i;
    CALL(rma_accumulate(&cand, 1, RMA_INT64_T, 0, 1, 1, RMA_INT64_T, RMA_MAX, win));
    CALL(rma_accumulate(quarter.data(), kArray, RMA_DOUBLE, i % n, 2, kArray, RMA_DOUBLE, RMA_SUM, win));
    if (i % 16 == 15) CALL(rma_win_flush_all(win));
  }
  CALL(rma_win_unlock_all(win));
  CALL(rma_barrier(RMA_COMM_WORLD));
  CALL(rma_win_sync(win));
  // Target r gets the arrays of the iterations i with i % n == r, from every rank.
  const i64 mine = iters / n + (me < iters % n ? 1 : 0);
  for (int k = 0; k < kArray; ++k) CHECK_EQ(t[2 + k], 0.25 * static_cast<double>(mine * n));
  if (me == 0) {
    CHECK_EQ(t[0], 0.5 * static_cast<double>(iters) * n * (n + 1) / 2);
    i64 max = 0;
    std::memcpy(&max, &t[1], 8);
    CHECK_EQ(max, static_cast<i64>((n - 1) * 1000 + iters - 1));
    std::printf("accumulate_ordering=none: %d ranks x %d iterations: double SUM %.2f, int64 MAX %" PRId64 "\n",
                n, iters, t[0], max);
  }
  CALL(rma_barrier(RMA_COMM_WORLD));
  CALL(rma_win_free(&win));
}

// ------------------------------------------------------------------ locks
void scenario_locks(int iters) {
  const int n = g_size, me = g_rank;
  i64* base = nullptr;
  rma_Win win = RMA_WIN_NULL;
  CALL(rma_win_allocate(2 * 8, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win));
  CALL(rma_win_set_errhandler(win, RMA_ERRORS_RETURN));
  base[0] = 0;
  base[1] = 0;
  CALL(rma_barrier(RMA_COMM_WORLD));
  for (int i = 0; i < iters; ++i) {
    // Read-modify-write with plain get and put: only the exclusive lock makes it atomic.
    CALL(rma_win_lock(RMA_LOCK_EXCLUSIVE, 0, 0, win));
    i64 v[2] = {0, 0};
    CALL(rma_get(v, 2, RMA_INT64_T, 0, 0, 2, RMA_INT64_T, win));
    CALL(rma_win_flush(0, win));
    if (v[0] != v[1]) fail(__LINE__, "inside an exclusive lock the pair differs: %" PRId64 " %" PRId64, v[0], v[1]);
    v[0] += 1;
    CALL(rma_put(&v[0], 1, RMA_INT64_T, 0, 0, 1, RMA_INT64_T, win));
    CALL(rma_win_flush(0, win));
    v[1] = v[0];
    CALL(rma_put(&v[1], 1, RMA_INT64_T, 0, 1, 1, RMA_INT64_T, win));
    CALL(rma_win_unlock(0, win));
    // A shared reader never sees a half-done update.
    CALL(rma_win_lock(RMA_LOCK_SHARED, 0, 0, win));
    i64 r[2] = {0, 0};
    CALL(rma_get(r, 2, RMA_INT64_T, 0, 0, 2, RMA_INT64_T, win));
    CALL(rma_win_unlock(0, win));
    if (r[0] != r[1]) fail(__LINE__, "a shared reader saw %" PRId64 " %" PRId64, r[0], r[1]);
  }
  CALL(rma_barrier(RMA_COMM_WORLD));
  CALL(rma_win_sync(win));
  if (me == 0) {
    CHECK_EQ(base[0], static_cast<i64>(n) * iters);
    CHECK_EQ(base[1], static_cast<i64>(n) * iters);
    std::printf("locks: %d ranks x %d exclusive read-modify-writes: counter %" PRId64 "\n", n, iters, base[0]);
  }
  CALL(rma_win_free(&win));
}

// ------------------------------------------------------------------ dynamic
void scenario_dynamic() {
  const int n = g_size, me = g_rank;
  rma_Win dyn = RMA_WIN_NULL, addrs = RMA_WIN_NULL;
  CALL(rma_win_create_dynamic(RMA_INFO_NULL, RMA_COMM_WORLD, &dyn));
  CALL(rma_win_set_errhandler(dyn, RMA_ERRORS_RETURN));
  std::vector<i64> mem(16, -1);
  CALL(rma_win_attach(dyn, mem.data(), 16 * 8));
  rma_Aint* table = nullptr;
  CALL(rma_win_allocate(n * static_cast<rma_Aint>(sizeof(rma_Aint)), sizeof(rma_Aint), RMA_INFO_NULL,
                        RMA_COMM_WORLD, &table, &addrs));
  const rma_Aint at = reinterpret_cast<rma_Aint>(mem.data());
  CALL(rma_win_fence(0, addrs));
  for (int r = 0; r < n; ++r) CALL(rma_put(&at, 1, RMA_AINT, r, me, 1, RMA_AINT, addrs));
  CALL(rma_win_fence(0, addrs));
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  CALL(rma_win_lock_all(0, dyn));
  const i64 v[2] = {me * 10 + 1, me * 10 + 2};
  CALL(rma_put(v, 2, RMA_INT64_T, right, table[right] + 8 * 3, 2, RMA_INT64_T, dyn));
  const int past = rma_put(v, 2, RMA_INT64_T, right, table[right] + 8 * 15, 2, RMA_INT64_T, dyn);
  CHECK_EQ(past, RMA_ERR_RMA_RANGE);
  CALL(rma_win_unlock_all(dyn));
  CALL(rma_barrier(RMA_COMM_WORLD));
  CALL(rma_win_sync(dyn));
  CHECK_EQ(mem[3], left * 10 + 1);
  CHECK_EQ(mem[4], left * 10 + 2);
  CHECK_EQ(mem[15], -1);
  CHECK_EQ(mem[2], -1);
  CALL(rma_win_detach(dyn, mem.data()));
  CALL(rma_barrier(RMA_COMM_WORLD));
  // Detached everywhere: the origin re-reads the table and refuses.
  CALL(rma_win_lock_all(0, dyn));
  CHECK_EQ(rma_put(v, 1, RMA_INT64_T, right, table[right], 1, RMA_INT64_T, dyn), RMA_ERR_RMA_RANGE);
  CALL(rma_win_unlock_all(dyn));
  // A new attachment at another address works.
  std::vector<i64> more(4, 0);
  CALL(rma_win_attach(dyn, more.data(), 4 * 8));
  const rma_Aint at2 = reinterpret_cast<rma_Aint>(more.data());
  CALL(rma_win_fence(0, addrs));
  for (int r = 0; r < n; ++r) CALL(rma_put(&at2, 1, RMA_AINT, r, me, 1, RMA_AINT, addrs));
  CALL(rma_win_fence(0, addrs));
  CALL(rma_win_lock_all(0, dyn));
  const i64 w = 500 + me;
  CALL(rma_accumulate(&w, 1, RMA_INT64_T, right, table[right] + 8, 1, RMA_INT64_T, RMA_SUM, dyn));
  CALL(rma_win_unlock_all(dyn));
  CALL(rma_barrier(RMA_COMM_WORLD));
  CALL(rma_win_sync(dyn));
  CHECK_EQ(more[1], 500 + left);
  CALL(rma_win_detach(dyn, more.data()));
  CALL(rma_win_free(&addrs));
  CALL(rma_win_free(&dyn));
}

// ------------------------------------------------------------------ bounds
void scenario_bounds() {
  const int n = g_size, me = g_rank;
  i64* base = nullptr;
  rma_Win win = RMA_WIN_NULL;
  // Rank r's window has r + 2 elements: every rank's size differs.
  CALL(rma_win_allocate((me + 2) * 8, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win));
  CALL(rma_win_set_errhandler(win, RMA_ERRORS_RETURN));
  for (int i = 0; i < me + 2; ++i) base[i] = 77;
  CALL(rma_barrier(RMA_COMM_WORLD));
  CALL(rma_win_lock_all(0, win));
  const i64 v[4] = {1, 2, 3, 4};
  i64 out[4] = {0, 0, 0, 0};
  for (int t = 0; t < n; ++t) {
    const int elems = t + 2;
    CHECK_EQ(rma_put(v, 1, RMA_INT64_T, t, elems, 1, RMA_INT64_T, win), RMA_ERR_RMA_RANGE);
    char msg[RMA_MAX_ERROR_STRING];
    int len = 0;
    rma_last_error_message(msg, &len);
    const std::string m(msg, static_cast<std::size_t>(len));
    if (m.find("outside the window of rank " + std::to_string(t)) == std::string::npos) {
      fail(__LINE__, "message does not name the target: %s", m.c_str());
    }
    CHECK_EQ(rma_put(v, 2, RMA_INT64_T, t, elems - 1, 2, RMA_INT64_T, win), RMA_ERR_RMA_RANGE);
    CHECK_EQ(rma_get(out, 4, RMA_INT64_T, t, 0, 4, RMA_INT64_T, win), t + 2 >= 4 ? RMA_SUCCESS : RMA_ERR_RMA_RANGE);
    CHECK_EQ(rma_accumulate(v, 1, RMA_INT64_T, t, -1, 1, RMA_INT64_T, RMA_SUM, win), RMA_ERR_RMA_RANGE);
    CHECK_EQ(rma_fetch_and_op(v, out, RMA_INT64_T, t, elems, RMA_SUM, win), RMA_ERR_RMA_RANGE);
    CHECK_EQ(rma_compare_and_swap(v, v, out, RMA_INT64_T, t, elems + 5, win), RMA_ERR_RMA_RANGE);
    CHECK_EQ(rma_put(v, 1, RMA_INT64_T, n, 0, 1, RMA_INT64_T, win), RMA_ERR_RANK);
  }
  CALL(rma_win_unlock_all(win));
  CALL(rma_barrier(RMA_COMM_WORLD));
  CALL(rma_win_sync(win));
  for (int i = 0; i < me + 2; ++i) CHECK_EQ(base[i], 77);
  CALL(rma_win_free(&win));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: rmarun -n N %s ops|accumulate|locks|dynamic|bounds [iterations]\n", argv[0]);
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
  if (s == "ops") {
    scenario_ops();
  } else if (s == "accumulate") {
    scenario_accumulate(iters);
    scenario_accumulate_unordered(iters);
  } else if (s == "locks") {
    scenario_locks(iters);
  } else if (s == "dynamic") {
    scenario_dynamic();
  } else if (s == "bounds") {
    scenario_bounds();
  } else {
    fail(__LINE__, "unknown scenario '%s'", g_scenario);
  }
  CALL(rma_finalize());
  if (g_rank == 0) std::printf("rma_mp_ranks %s: %d ranks passed\n", g_scenario, g_size);
  return 0;
}
