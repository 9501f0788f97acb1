// One rank of a multi-process test of shared windows and of the direct
// (load/store) path between ranks of one host, started by rmarun:
//   rmarun -n N rma_mp_shared <scenario> [iterations]
// Scenarios:
//   shared      rma_win_allocate_shared, contiguous then alloc_shared_noncontig:
//               shared_query (sizes, contiguity, RMA_PROC_NULL, a size-0 rank),
//               plain stores into every rank's part seen by its owner after a
//               barrier and win_sync, no /dev/shm name left once created, and
//               every communication and synchronization call on the window;
//               concurrent fetch_and_op, CAS-loop and lock-path accumulates from
//               every rank with exact totals;
//   atomics     rma_win_allocate on RMA_COMM_WORLD: every rank at once does
//               fetch_and_op, integer and floating accumulates (NIC atomic, CAS
//               loop and accumulate-lock paths), compare_and_swap increments and
//               exclusive-lock read-modify-writes on the same words of the first
//               and the last rank; exact totals. Run on one host (every peer
//               direct), under host_per_rank.sh (CPU atomics from the ranks of the
//               target's host mixed with NIC atomics from the other host) and
//               with a forced provider;
//   threads     the same atomics from 3 threads per rank at RMA_THREAD_MULTIPLE;
//   bad_input   every argument error of allocate_shared and shared_query, each
//               with its class and nothing changed;
//   hosts       (under host_per_rank.sh) allocate_shared over ranks of two hosts
//               fails on every rank naming the others' ranks; over
//               rma_comm_split_type(RMA_COMM_TYPE_SHARED) it works.
// A failed check prints the rank, the scenario and what differed; the rank
// exits 1 and rmarun stops the others.
#include <dirent.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "rma/rma.h"
#include "mp_check.hpp"

namespace {

using i64 = std::int64_t;

rma_Datatype g_int32_at4 = RMA_DATATYPE_NULL;  // one int32 displaced by 4 bytes (disp_unit 8 windows)

std::string last_message() {
  char msg[RMA_MAX_ERROR_STRING];
  int len = 0;
  rma_last_error_message(msg, &len);
  return std::string(msg, static_cast<std::size_t>(len));
}

// Names in /dev/shm of librma segments of this process that hold windows:
// there must be none once a window exists (unlinked when every rank mapped).
int window_segment_names() {
  const std::string mine = "rma." + std::to_string(getuid()) + "." + std::to_string(getpid()) + ".win";
  int found = 0;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) {
      if (std::strncmp(e->d_name, mine.c_str(), mine.size()) == 0) ++found;
    }
    closedir(d);
  }
  return found;
}

// ------------------------------------------------------------------ shared
// Rank r has 8 + r int64 (rank 0 none: a size-0 rank, and RMA_PROC_NULL must
// skip it). Every rank t >= 1: [0, n) written by rank r with plain stores,
// then by rma_put. The last rank also: [n] fetch_and_op counter; [n + 1]
// double SUM; the int32 at byte 8 * (n + 2) + 4 (misaligned for 8-byte
// atomics: the accumulate lock) MAX; [n + 3] CAS word.
i64 elems_of(int r) { return r == 0 ? 0 : 8 + r; }

void shared_layout(bool noncontig, int iters) {
  const int n = g_size, me = g_rank;
  if (n > 8) fail(__LINE__, "at most 8 ranks");
  rma_Info info = RMA_INFO_NULL;
  if (noncontig) {
    CALL(rma_info_create(&info));
    CALL(rma_info_set(info, "alloc_shared_noncontig", "true"));
  }
  i64* base = reinterpret_cast<i64*>(0x1);
  rma_Win win = RMA_WIN_NULL;
  CALL(rma_win_allocate_shared(8 * elems_of(me), 8, info, RMA_COMM_WORLD, &base, &win));
  if (info != RMA_INFO_NULL) CALL(rma_info_free(&info));
  CALL(rma_win_set_errhandler(win, RMA_ERRORS_RETURN));
  CHECK(window_segment_names() == 0, "a window segment of this process is still named in /dev/shm");
  if (me == 0) CHECK(base == nullptr, "a size-0 rank got base %p", static_cast<void*>(base));

  int* flavor = nullptr;
  int* model = nullptr;
  int flag = 0;
  CALL(rma_win_get_attr(win, RMA_WIN_CREATE_FLAVOR, &flavor, &flag));
  CHECK_EQ(*flavor, RMA_WIN_FLAVOR_SHARED);
  CALL(rma_win_get_attr(win, RMA_WIN_MODEL, &model, &flag));
  CHECK_EQ(*model, RMA_WIN_UNIFIED);
  rma_Info used = RMA_INFO_NULL;
  CALL(rma_win_get_info(win, &used));
  char value[16] = {};
  CALL(rma_info_get(used, "alloc_shared_noncontig", sizeof value - 1, value, &flag));
  CHECK(flag == 1 && std::string(value) == (noncontig ? "true" : "false"), "get_info says %s", value);
  CALL(rma_info_free(&used));

  // Every rank's part as this process sees it.
  std::vector<i64*> part(static_cast<std::size_t>(n), nullptr);
  char* expect = nullptr;
  for (int t = 0; t < n; ++t) {
    rma_Aint size = -1;
    int du = 0;
    void* p = reinterpret_cast<void*>(0x1);
    CALL(rma_win_shared_query(win, t, &size, &du, &p));
    CHECK_EQ(size, static_cast<rma_Aint>(8 * elems_of(t)));
    CHECK_EQ(du, 8);
    if (size == 0) {
      CHECK(p == nullptr, "rank %d's size-0 part is %p", t, p);
      continue;
    }
    part[static_cast<std::size_t>(t)] = static_cast<i64*>(p);
    // Contiguous: each part starts where the previous one ended.
    if (!noncontig && expect != nullptr) CHECK(p == expect, "rank %d's part at %p, not right after the previous", t, p);
    expect = static_cast<char*>(p) + size;
  }
  if (me > 0) CHECK(part[static_cast<std::size_t>(me)] == base, "shared_query(own rank) differs from baseptr");
  {
    rma_Aint size = -1;
    int du = 0;
    void* p = nullptr;
    CALL(rma_win_shared_query(win, RMA_PROC_NULL, &size, &du, &p));
    if (n > 1) {
      CHECK(p == part[1] && size == 8 * elems_of(1), "RMA_PROC_NULL did not give rank 1, the lowest with memory");
    } else {
      CHECK(p == nullptr && size == 0, "RMA_PROC_NULL with no memory anywhere gave %p", p);
    }
  }

  // Plain stores by every rank into every part, seen by the owner.
  for (int t = 1; t < n; ++t) part[static_cast<std::size_t>(t)][me] = 1000 * me + t;
  CALL(rma_barrier(RMA_COMM_WORLD));
  CALL(rma_win_sync(win));
  for (int r = 0; r < n && me > 0; ++r) CHECK_EQ(base[r], static_cast<i64>(1000 * r + me));
  CALL(rma_barrier(RMA_COMM_WORLD));

  // The API on the window: put/get in a lock_all epoch, requests, fence.
  CALL(rma_win_lock_all(0, win));
  for (int t = 1; t < n; ++t) {
    const i64 v = 2000 * me + t;
    CALL(rma_put(&v, 1, RMA_INT64_T, t, me, 1, RMA_INT64_T, win));
    CALL(rma_win_flush(t, win));
    i64 back = -1;
    rma_Request req;
    CALL(rma_rget(&back, 1, RMA_INT64_T, t, me, 1, RMA_INT64_T, win, &req));
    CALL(rma_wait(&req, RMA_STATUS_IGNORE));
    CHECK_EQ(back, v);
  }
  CALL(rma_win_unlock_all(win));
  CALL(rma_win_fence(0, win));
  for (int r = 0; r < n && me > 0; ++r) CHECK_EQ(base[r], static_cast<i64>(2000 * r + me));
  if (me == n - 1 && me > 0) {  // the words the last rank's part has beyond [0, n)
    base[n] = 0;
    base[n + 1] = 0;
    const std::int32_t low[2] = {0, -1};
    std::memcpy(&base[n + 2], low, 8);
    base[n + 3] = 0;
  }
  CALL(rma_win_fence(0, win));

  // Every rank hammers the last rank's words at once.
  const int last = n - 1;
  if (last > 0) {
    CALL(rma_win_lock_all(0, win));
    i64 prev = -1;
    for (int i = 0; i < iters; ++i) {
      const i64 one = 1;
      i64 got = -1;
      CALL(rma_fetch_and_op(&one, &got, RMA_INT64_T, last, n, RMA_SUM, win));
      CALL(rma_win_flush(last, win));
      CHECK(got > prev && got < static_cast<i64>(n) * iters, "fetch_and_op gave %" PRId64 " after %" PRId64, got,
            prev);
      prev = got;
      const double q = 0.25;
      CALL(rma_accumulate(&q, 1, RMA_DOUBLE, last, n + 1, 1, RMA_DOUBLE, RMA_SUM, win));
      const std::int32_t cand = me * 100000 + i;
      CALL(rma_accumulate(&cand, 1, RMA_INT32_T, last, n + 2, 1, g_int32_at4, RMA_MAX, win));
    }
    // One compare_and_swap winner.
    const i64 zero = 0, mine = me + 1;
    i64 old = -1;
    CALL(rma_compare_and_swap(&mine, &zero, &old, RMA_INT64_T, last, n + 3, win));
    CALL(rma_win_unlock_all(win));
    const i64 won = old == 0 ? 1 : 0;
    // Everyone reports its win into the last rank's word [0] in a PSCW
    // epoch (every rank, the last one too, accesses the last rank).
    rma_Group world, target_only;
    CALL(rma_comm_group(RMA_COMM_WORLD, &world));
    CALL(rma_group_incl(world, 1, &last, &target_only));
    if (me == last) {
      base[0] = 0;
      CALL(rma_win_post(world, 0, win));
    }
    CALL(rma_win_start(target_only, 0, win));
    CALL(rma_accumulate(&won, 1, RMA_INT64_T, last, 0, 1, RMA_INT64_T, RMA_SUM, win));
    CALL(rma_win_complete(win));
    if (me == last) {
      CALL(rma_win_wait(win));
      CHECK_EQ(base[n], static_cast<i64>(n) * iters);
      double d = 0;
      std::memcpy(&d, &base[n + 1], 8);
      CHECK_EQ(d, 0.25 * n * iters);
      std::int32_t max = 0;
      std::memcpy(&max, reinterpret_cast<const char*>(&base[n + 2]) + 4, 4);
      CHECK_EQ(max, (n - 1) * 100000 + iters - 1);
      CHECK(base[n + 3] >= 1 && base[n + 3] <= n, "CAS word %" PRId64, base[n + 3]);
      CHECK_EQ(base[0], i64{1});
    }
    CALL(rma_group_free(&world));
    CALL(rma_group_free(&target_only));
  }
  CALL(rma_barrier(RMA_COMM_WORLD));
  CALL(rma_win_free(&win));
  if (me == 0) {
    std::printf("shared (%s): %d ranks, %d concurrent fetch_and_op each: exact\n",
                noncontig ? "alloc_shared_noncontig" : "contiguous", n, iters);
  }
}

void scenario_shared(int iters) {
  const int bl = 1;
  const rma_Aint four = 4;
  CALL(rma_type_create_hindexed(1, &bl, &four, RMA_INT32_T, &g_int32_at4));
  CALL(rma_type_commit(&g_int32_at4));
  shared_layout(false, iters);
  shared_layout(true, iters);
  CALL(rma_type_free(&g_int32_at4));
}

// ------------------------------------------------------------------ atomics
// Windows of 8 int64 per rank; the targets are rank 0 and rank n - 1:
// [0] fetch_and_op SUM, [1] accumulate SUM (me + 1), [2] compare_and_swap
// increments, [3] double SUM (a CAS loop), the int32 at byte 36 SUM (the
// accumulate lock: misaligned for 8-byte atomics), [5] exclusive-lock get +
// put increments.

// Inside an epoch that allows access to `target`.
void atomic_ops(rma_Win win, int target, int iters) {
  const int me = g_rank;
  for (int i = 0; i < iters; ++i) {
    const i64 one = 1, add = me + 1;
    i64 got = -1;
    CALL(rma_fetch_and_op(&one, &got, RMA_INT64_T, target, 0, RMA_SUM, win));
    CALL(rma_accumulate(&add, 1, RMA_INT64_T, target, 1, 1, RMA_INT64_T, RMA_SUM, win));
    i64 guess = 0;
    for (;;) {
      const i64 next = guess + 1;
      i64 seen = -1;
      CALL(rma_compare_and_swap(&next, &guess, &seen, RMA_INT64_T, target, 2, win));
      CALL(rma_win_flush(target, win));
      if (seen == guess) break;
      guess = seen;
    }
    const double half = 0.5;
    CALL(rma_accumulate(&half, 1, RMA_DOUBLE, target, 3, 1, RMA_DOUBLE, RMA_SUM, win));
    const std::int32_t one32 = 1;
    CALL(rma_accumulate(&one32, 1, RMA_INT32_T, target, 4, 1, g_int32_at4, RMA_SUM, win));
  }
}

// A read-modify-write with plain get and put: only the lock makes it atomic.
void locked_increments(rma_Win win, int target, int iters) {
  for (int i = 0; i < iters; ++i) {
    CALL(rma_win_lock(RMA_LOCK_EXCLUSIVE, target, 0, win));
    i64 v = -1;
    CALL(rma_get(&v, 1, RMA_INT64_T, target, 5, 1, RMA_INT64_T, win));
    CALL(rma_win_flush(target, win));
    ++v;
    CALL(rma_put(&v, 1, RMA_INT64_T, target, 5, 1, RMA_INT64_T, win));
    CALL(rma_win_unlock(target, win));
  }
}

void check_atomic_ops(const i64* base, i64 times) {
  const i64 n = g_size;
  CHECK_EQ(base[0], n * times);
  CHECK_EQ(base[1], times * n * (n + 1) / 2);
  CHECK_EQ(base[2], n * times);
  double d = 0;
  std::memcpy(&d, &base[3], 8);
  CHECK_EQ(d, 0.5 * static_cast<double>(n * times));
  std::int32_t s = 0;
  std::memcpy(&s, reinterpret_cast<const char*>(base) + 36, 4);
  CHECK_EQ(s, static_cast<std::int32_t>(n * times));
}

// `threads` threads per rank: the atomics on one window in one lock_all
// epoch of the main thread, the locked increments each on its own window
// (an epoch belongs to a process: two threads may not lock one target of
// one window at once).
void scenario_atomics(int iters, int threads) {
  const int n = g_size, me = g_rank;
  const int bl = 1;
  const rma_Aint four = 4;
  CALL(rma_type_create_hindexed(1, &bl, &four, RMA_INT32_T, &g_int32_at4));
  CALL(rma_type_commit(&g_int32_at4));
  std::vector<i64*> base(static_cast<std::size_t>(threads) + 1, nullptr);
  std::vector<rma_Win> win(static_cast<std::size_t>(threads) + 1, RMA_WIN_NULL);
  for (std::size_t k = 0; k < win.size(); ++k) {
    CALL(rma_win_allocate(8 * 8, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base[k], &win[k]));
    CALL(rma_win_set_errhandler(win[k], RMA_ERRORS_RETURN));
  }
  CHECK(window_segment_names() == 0, "a window segment of this process is still named in /dev/shm");
  CALL(rma_barrier(RMA_COMM_WORLD));
  CALL(rma_win_lock_all(0, win[0]));
  auto work = [&](std::size_t k) {
    atomic_ops(win[0], 0, iters);
    atomic_ops(win[0], n - 1, iters);
    locked_increments(win[k], 0, iters);
    locked_increments(win[k], n - 1, iters);
  };
  std::vector<std::thread> pool;
  for (int k = 2; k <= threads; ++k) pool.emplace_back(work, static_cast<std::size_t>(k));
  work(1);
  for (auto& t : pool) t.join();
  CALL(rma_win_unlock_all(win[0]));
  CALL(rma_barrier(RMA_COMM_WORLD));
  const i64 rounds = n == 1 ? 2 * iters : iters;  // one rank: both targets are rank 0
  if (me == 0 || me == n - 1) {
    CALL(rma_win_sync(win[0]));
    check_atomic_ops(base[0], rounds * threads);
    for (int k = 1; k <= threads; ++k) {
      CALL(rma_win_sync(win[static_cast<std::size_t>(k)]));
      CHECK_EQ(base[static_cast<std::size_t>(k)][5], static_cast<i64>(n) * rounds);
    }
  }
  CALL(rma_barrier(RMA_COMM_WORLD));
  for (auto& w : win) CALL(rma_win_free(&w));
  CALL(rma_type_free(&g_int32_at4));
  if (me == 0) {
    std::printf("atomics: %d ranks x %d threads x %d rounds on ranks 0 and %d: exact\n", n, threads, iters, n - 1);
  }
}

// ------------------------------------------------------------------ bad_input
void scenario_bad_input() {
  const int n = g_size;
  i64* base = reinterpret_cast<i64*>(0x1234);
  rma_Win win = RMA_WIN_NULL;
  auto expect = [&](int rc, int want, const char* says, int line) {
    if (rc != want) fail(line, "returned %d, expected %d", rc, want);
    if (last_message().find(says) == std::string::npos) fail(line, "message lacks \"%s\": %s", says, last_message().c_str());
    if (win != RMA_WIN_NULL || base != reinterpret_cast<i64*>(0x1234)) fail(line, "a failed call changed its outputs");
  };
  expect(rma_win_allocate_shared(-8, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_ERR_SIZE, "size -8 is negative",
         __LINE__);
  expect(rma_win_allocate_shared(8, 0, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_ERR_DISP, "disp_unit 0",
         __LINE__);
  expect(rma_win_allocate_shared(8, 8, RMA_INFO_NULL, RMA_COMM_WORLD, nullptr, &win), RMA_ERR_ARG, "baseptr is null",
         __LINE__);
  expect(rma_win_allocate_shared(8, 8, RMA_INFO_NULL, RMA_COMM_NULL, &base, &win), RMA_ERR_COMM, "", __LINE__);
  rma_Info info = RMA_INFO_NULL;
  CALL(rma_info_create(&info));
  CALL(rma_info_set(info, "alloc_shared_noncontig", "yes"));
  expect(rma_win_allocate_shared(8, 8, info, RMA_COMM_WORLD, &base, &win), RMA_ERR_INFO_VALUE,
         "\"alloc_shared_noncontig\" has value \"yes\"", __LINE__);
  CALL(rma_info_free(&info));

  // shared_query on a window that is not shared, and with bad arguments.
  i64* abase = nullptr;
  rma_Win plain = RMA_WIN_NULL;
  CALL(rma_win_allocate(64, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &abase, &plain));
  CALL(rma_win_set_errhandler(plain, RMA_ERRORS_RETURN));
  rma_Aint size = -7;
  int du = -7;
  void* p = reinterpret_cast<void*>(0x99);
  auto unchanged = [&](int line) {
    if (size != -7 || du != -7 || p != reinterpret_cast<void*>(0x99)) fail(line, "a failed query wrote its outputs");
  };
  CHECK_EQ(rma_win_shared_query(plain, 0, &size, &du, &p), RMA_ERR_RMA_FLAVOR);
  CHECK(last_message().find("not made by rma_win_allocate_shared") != std::string::npos, "%s", last_message().c_str());
  unchanged(__LINE__);
  CALL(rma_win_free(&plain));
  i64* sbase = nullptr;
  rma_Win shared = RMA_WIN_NULL;
  CALL(rma_win_allocate_shared(16, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &sbase, &shared));
  CALL(rma_win_set_errhandler(shared, RMA_ERRORS_RETURN));
  CHECK_EQ(rma_win_shared_query(shared, n, &size, &du, &p), RMA_ERR_RANK);
  CHECK(last_message().find("rank " + std::to_string(n) + " is neither RMA_PROC_NULL") != std::string::npos, "%s",
        last_message().c_str());
  unchanged(__LINE__);
  CHECK_EQ(rma_win_shared_query(shared, -5, &size, &du, &p), RMA_ERR_RANK);
  unchanged(__LINE__);
  CHECK_EQ(rma_win_shared_query(shared, 0, nullptr, &du, &p), RMA_ERR_ARG);
  CHECK_EQ(rma_win_shared_query(shared, 0, &size, nullptr, &p), RMA_ERR_ARG);
  CHECK_EQ(rma_win_shared_query(shared, 0, &size, &du, nullptr), RMA_ERR_ARG);
  unchanged(__LINE__);
  CHECK_EQ(rma_win_shared_query(RMA_WIN_NULL, 0, &size, &du, &p), RMA_ERR_WIN);
  unchanged(__LINE__);
  // The window still works after all that.
  CALL(rma_win_shared_query(shared, 0, &size, &du, &p));
  CHECK(size == 16 && du == 8 && p != nullptr, "query after errors: %" PRId64 " %d %p", static_cast<i64>(size), du, p);
  CALL(rma_win_free(&shared));
  if (g_rank == 0) std::printf("bad_input: every error reported with its class, nothing changed\n");
}

// ------------------------------------------------------------------ hosts
// Under host_per_rank.sh (RMA_TEST_RANKS_PER_HOST, default 2): ranks
// [h * P, (h + 1) * P) are host h.
void scenario_hosts() {
  const int n = g_size, me = g_rank;
  const char* per_env = std::getenv("RMA_TEST_RANKS_PER_HOST");
  const int per = per_env != nullptr ? std::atoi(per_env) : 2;
  if (n <= per) fail(__LINE__, "needs more ranks than RMA_TEST_RANKS_PER_HOST (%d) to span two hosts", per);
  i64* base = reinterpret_cast<i64*>(0x1234);
  rma_Win win = RMA_WIN_NULL;
  CHECK_EQ(rma_win_allocate_shared(64, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_ERR_RMA_SHARED);
  std::string others = std::to_string(per);
  for (int r = per + 1; r < n; ++r) others += (r + 1 == n ? " and " : ", ") + std::to_string(r);
  const std::string m = last_message();
  CHECK(m.find("rank" + std::string(n - per > 1 ? "s " : " ") + others + " of the communicator") != std::string::npos &&
            m.find("on another host than its rank 0") != std::string::npos,
        "the message does not name ranks %s: %s", others.c_str(), m.c_str());
  CHECK(win == RMA_WIN_NULL && base == reinterpret_cast<i64*>(0x1234), "a failed allocate_shared changed its outputs");
  // The ranks of this host can.
  rma_Comm node = RMA_COMM_NULL;
  CALL(rma_comm_split_type(RMA_COMM_WORLD, RMA_COMM_TYPE_SHARED, 0, RMA_INFO_NULL, &node));
  int node_size = 0, node_rank = -1;
  CALL(rma_comm_size(node, &node_size));
  CALL(rma_comm_rank(node, &node_rank));
  const int first = me / per * per;
  CHECK_EQ(node_size, std::min(per, n - first));
  CHECK_EQ(node_rank, me - first);
  CALL(rma_win_allocate_shared(8 * 4, 8, RMA_INFO_NULL, node, &base, &win));
  CALL(rma_win_set_errhandler(win, RMA_ERRORS_RETURN));
  const int right = (node_rank + 1) % node_size;
  rma_Aint size = 0;
  int du = 0;
  i64* theirs = nullptr;
  CALL(rma_win_shared_query(win, right, &size, &du, &theirs));
  theirs[0] = 100 + me;
  CALL(rma_barrier(node));
  CALL(rma_win_sync(win));
  CHECK_EQ(base[0], static_cast<i64>(100 + first + (node_rank + node_size - 1) % node_size));
  CALL(rma_win_lock_all(0, win));
  const i64 one = 1;
  i64 got = 0;
  for (int i = 0; i < 50; ++i) CALL(rma_fetch_and_op(&one, &got, RMA_INT64_T, 0, 1, RMA_SUM, win));
  CALL(rma_win_unlock_all(win));
  CALL(rma_barrier(node));
  CALL(rma_win_sync(win));
  if (node_rank == 0) CHECK_EQ(base[1], static_cast<i64>(50 * node_size));
  CALL(rma_win_free(&win));
  CALL(rma_comm_free(&node));
  if (me == 0) std::printf("hosts: allocate_shared across hosts refused naming ranks %s; per host it works\n", others.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: rmarun -n N %s shared|atomics|threads|bad_input|hosts [iterations]\n", argv[0]);
    return 2;
  }
  g_scenario = argv[1];
  const int iters = argc > 2 ? std::atoi(argv[2]) : 100;
  if (iters <= 0) {
    std::fprintf(stderr, "%s: iterations must be a positive integer, not '%s'\n", argv[0], argv[2]);
    return 2;
  }
  const std::string s = g_scenario;
  if (s == "threads") {
    int provided = -1;
    CALL(rma_init_thread(&argc, &argv, RMA_THREAD_MULTIPLE, &provided));
    CHECK_EQ(provided, RMA_THREAD_MULTIPLE);
  } else {
    CALL(rma_init(&argc, &argv));
  }
  CALL(rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN));
  CALL(rma_comm_rank(RMA_COMM_WORLD, &g_rank));
  CALL(rma_comm_size(RMA_COMM_WORLD, &g_size));
  if (s == "shared") {
    scenario_shared(iters);
  } else if (s == "atomics") {
    scenario_atomics(iters, 1);
  } else if (s == "threads") {
    scenario_atomics(iters, 3);
  } else if (s == "bad_input") {
    scenario_bad_input();
  } else if (s == "hosts") {
    scenario_hosts();
  } else {
    fail(__LINE__, "unknown scenario '%s'", g_scenario);
  }
  CALL(rma_finalize());
  if (g_rank == 0) std::printf("rma_mp_shared %s: %d ranks passed\n", g_scenario, g_size);
  return 0;
}
