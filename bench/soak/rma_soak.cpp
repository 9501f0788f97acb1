// One rank of the mixed soak: every operation of the RMA API against every
// rank, for a given time, each result checked, over whatever transport the
// job uses (run-soak.sh runs it over the software RoCE NIC with injected
// loss). Started by rmarun:
//   rmarun -n N rma_soak <seconds> [report-interval-seconds]
// Each rank prints one line per interval (operations, bytes, its RSS), so
// that memory growth shows; at the end every counter is reconciled across
// ranks: no update lost, none applied twice. Exit 1 on any mismatch.
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "rma/rma.h"

namespace {

int g_rank = -1, g_size = 0;

[[noreturn]] void fail(int line, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  char why[RMA_MAX_ERROR_STRING];
  int len = 0;
  rma_last_error_message(why, &len);
  std::fprintf(stderr, "rma_soak: rank %d of %d, line %d: %s (last librma error: %.*s)\n", g_rank, g_size, line,
               msg, len, why);
  std::fflush(stderr);
  std::_Exit(1);
}

#define CALL(expr)                                                         \
  do {                                                                     \
    const int rc_ = (expr);                                                \
    if (rc_ != RMA_SUCCESS) fail(__LINE__, "%s returned %d", #expr, rc_);  \
  } while (0)

using i64 = std::int64_t;

// Window layout (disp_unit 1): one data slot per origin rank, then the
// counters every rank updates on every other, then one "what I did to you"
// record per origin rank for the final reconciliation.
constexpr std::size_t kSlot = 64 * 1024;
enum Counter : int { kAccSum, kFetchAddSum, kCasTicket, kLockedSum, kCounters };

std::size_t counter_disp(int n, int c) { return static_cast<std::size_t>(n) * kSlot + 8 * c; }
std::size_t record_disp(int n, int origin) {
  return counter_disp(n, kCounters) + static_cast<std::size_t>(origin) * 8 * kCounters;
}

long rss_kib() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: rmarun -n N %s <seconds> [report-interval-seconds]\n", argv[0]);
    return 2;
  }
  char* end = nullptr;
  const long seconds = std::strtol(argv[1], &end, 10);
  const long interval = argc > 2 ? std::strtol(argv[2], nullptr, 10) : 60;
  if (*end != '\0' || seconds <= 0 || interval <= 0) {
    std::fprintf(stderr, "%s: seconds and interval must be positive integers\n", argv[0]);
    return 2;
  }
  CALL(rma_init(&argc, &argv));
  CALL(rma_comm_rank(RMA_COMM_WORLD, &g_rank));
  CALL(rma_comm_size(RMA_COMM_WORLD, &g_size));
  const int n = g_size;

  const std::size_t win_bytes = record_disp(n, n);
  std::uint8_t* base = nullptr;
  rma_Win win, lock_win;
  CALL(rma_win_allocate(static_cast<rma_Aint>(win_bytes), 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win));
  std::memset(base, 0, win_bytes);
  i64* locked = nullptr;
  CALL(rma_win_allocate(8, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &locked, &lock_win));
  *locked = 0;
  CALL(rma_barrier(RMA_COMM_WORLD));

  // What this rank did to each target, reconciled at the end.
  std::vector<i64> done(static_cast<std::size_t>(n) * kCounters, 0);
  std::vector<std::uint8_t> out(kSlot), back(kSlot);
  std::mt19937_64 rng(0x50a4 + static_cast<unsigned>(g_rank));
  std::uint64_t ops = 0, bytes = 0;
  const i64 one = 1;

  CALL(rma_win_lock_all(0, win));
  const auto start = std::chrono::steady_clock::now();
  auto next_report = start + std::chrono::seconds(interval);
  const auto stop = start + std::chrono::seconds(seconds);
  std::printf("soak rank %d: t=0s ops=0 MB=0 rss_kib=%ld\n", g_rank, rss_kib());
  std::fflush(stdout);
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_report || now >= stop) {
      const long t = std::chrono::duration_cast<std::chrono::seconds>(now - start).count();
      std::printf("soak rank %d: t=%lds ops=%" PRIu64 " MB=%" PRIu64 " rss_kib=%ld\n", g_rank, t, ops,
                  bytes >> 20, rss_kib());
      std::fflush(stdout);
      next_report += std::chrono::seconds(interval);
      if (now >= stop) break;
    }
    const int t = static_cast<int>(rng() % static_cast<std::uint64_t>(n));
    i64* d = &done[static_cast<std::size_t>(t) * kCounters];
    switch (rng() % 8) {
      case 0: case 1: case 2: {  // put, flush, get back, compare: 1 B .. 64 KiB, log-uniform
        const std::size_t len = std::size_t{1} << (rng() % 17);
        const std::size_t size = len + rng() % len;
        const std::size_t bytes_ = size > kSlot ? kSlot : size;
        const std::size_t off = rng() % (kSlot - bytes_ + 1);
        const std::uint8_t seed = static_cast<std::uint8_t>(rng());
        for (std::size_t i = 0; i < bytes_; ++i) out[i] = static_cast<std::uint8_t>(seed + i * 7);
        const rma_Aint disp = static_cast<rma_Aint>(static_cast<std::size_t>(g_rank) * kSlot + off);
        CALL(rma_put(out.data(), static_cast<int>(bytes_), RMA_BYTE, t, disp, static_cast<int>(bytes_), RMA_BYTE, win));
        CALL(rma_win_flush(t, win));
        CALL(rma_get(back.data(), static_cast<int>(bytes_), RMA_BYTE, t, disp, static_cast<int>(bytes_), RMA_BYTE, win));
        CALL(rma_win_flush(t, win));
        if (std::memcmp(out.data(), back.data(), bytes_) != 0) {
          fail(__LINE__, "%zu bytes put to rank %d at %zu read back different", bytes_, t, off);
        }
        bytes += 2 * bytes_;
        break;
      }
      case 3: case 4:  // accumulate SUM
        CALL(rma_accumulate(&one, 1, RMA_INT64_T, t, static_cast<rma_Aint>(counter_disp(n, kAccSum)), 1,
                            RMA_INT64_T, RMA_SUM, win));
        ++d[kAccSum];
        break;
      case 5: {  // fetch-add: the value fetched is what others added before
        i64 prev = -1;
        CALL(rma_fetch_and_op(&one, &prev, RMA_INT64_T, t, static_cast<rma_Aint>(counter_disp(n, kFetchAddSum)),
                              RMA_SUM, win));
        CALL(rma_win_flush(t, win));
        if (prev < 0) fail(__LINE__, "fetch-add on rank %d fetched %" PRId64, t, prev);
        ++d[kFetchAddSum];
        break;
      }
      case 6: {  // a ticket taken by compare-and-swap: read, try old -> old + 1, retry on a race
        i64 seen = 0;
        const i64 zero = 0;
        CALL(rma_fetch_and_op(&zero, &seen, RMA_INT64_T, t, static_cast<rma_Aint>(counter_disp(n, kCasTicket)),
                              RMA_NO_OP, win));
        CALL(rma_win_flush(t, win));
        for (;;) {
          const i64 want = seen + 1;
          i64 got = 0;
          CALL(rma_compare_and_swap(&want, &seen, &got, RMA_INT64_T, t,
                                    static_cast<rma_Aint>(counter_disp(n, kCasTicket)), win));
          CALL(rma_win_flush(t, win));
          if (got == seen) break;
          seen = got;
        }
        ++d[kCasTicket];
        break;
      }
      default: {  // an exclusive-lock epoch on the other window: read, add, write back
        CALL(rma_win_lock(RMA_LOCK_EXCLUSIVE, t, 0, lock_win));
        i64 v = 0;
        CALL(rma_get(&v, 1, RMA_INT64_T, t, 0, 1, RMA_INT64_T, lock_win));
        CALL(rma_win_flush(t, lock_win));
        ++v;
        CALL(rma_put(&v, 1, RMA_INT64_T, t, 0, 1, RMA_INT64_T, lock_win));
        CALL(rma_win_unlock(t, lock_win));
        ++d[kLockedSum];
        break;
      }
    }
    ++ops;
  }
  // Reconcile: tell every target what this rank did to it; each target sums
  // what all ranks say and compares with its counters.
  for (int t = 0; t < n; ++t) {
    CALL(rma_put(&done[static_cast<std::size_t>(t) * kCounters], kCounters, RMA_INT64_T, t,
                 static_cast<rma_Aint>(record_disp(n, g_rank)), kCounters, RMA_INT64_T, win));
  }
  CALL(rma_win_unlock_all(win));
  CALL(rma_barrier(RMA_COMM_WORLD));
  CALL(rma_win_lock(RMA_LOCK_SHARED, g_rank, 0, win));  // order the loads after the others' puts
  i64 expect[kCounters] = {};
  for (int o = 0; o < n; ++o) {
    const i64* rec = reinterpret_cast<const i64*>(base + record_disp(n, o));
    for (int c = 0; c < kCounters; ++c) expect[c] += rec[c];
  }
  const i64* counters = reinterpret_cast<const i64*>(base + counter_disp(n, 0));
  const char* names[kCounters] = {"accumulate SUM", "fetch-add", "compare-and-swap ticket", "exclusive-lock"};
  for (int c = 0; c < kLockedSum; ++c) {
    if (counters[c] != expect[c]) {
      fail(__LINE__, "%s counter is %" PRId64 ", the ranks applied %" PRId64, names[c], counters[c], expect[c]);
    }
  }
  CALL(rma_win_unlock(g_rank, win));
  CALL(rma_win_lock(RMA_LOCK_SHARED, g_rank, 0, lock_win));
  if (*locked != expect[kLockedSum]) {
    fail(__LINE__, "exclusive-lock counter is %" PRId64 ", the ranks applied %" PRId64, *locked, expect[kLockedSum]);
  }
  CALL(rma_win_unlock(g_rank, lock_win));
  std::printf("soak rank %d: done, %" PRIu64 " operations, every counter reconciled (%" PRId64 " accumulates, %" PRId64
              " fetch-adds, %" PRId64 " CAS tickets, %" PRId64 " locked updates received)\n",
              g_rank, ops, expect[kAccSum], expect[kFetchAddSum], expect[kCasTicket], expect[kLockedSum]);
  std::fflush(stdout);
  CALL(rma_barrier(RMA_COMM_WORLD));
  CALL(rma_win_free(&lock_win));
  CALL(rma_win_free(&win));
  CALL(rma_finalize());
  return 0;
}
