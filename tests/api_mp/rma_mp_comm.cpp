// One rank of a multi-process test of communicators and requests, started
// by rmarun over the software RoCE NIC:
//   rmarun -n N rma_mp_comm <scenario> [iterations]
// Scenarios:
//   comms     windows on split communicators (ranks relative to them:
//             fence ring, accumulate, passive target), split_type shared,
//             create_group called by its members only, and allgathers on a
//             dup larger than one mailbox slot;
//   requests  request sets to every peer of mixed sizes, completed with
//             waitany / waitsome / testany / testall in whatever order they
//             finish; every request exactly once, the data checked.
// A failed check prints the rank, the scenario and what differed; the rank
// exits 1 and rmarun stops the others and names it.
#include <cinttypes>
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

// The world ranks of a communicator, in its order.
std::vector<int> world_ranks(rma_Comm comm) {
  rma_Group g = RMA_GROUP_NULL, world = RMA_GROUP_NULL;
  CALL(rma_comm_group(comm, &g));
  CALL(rma_comm_group(RMA_COMM_WORLD, &world));
  int n = 0;
  CALL(rma_group_size(g, &n));
  std::vector<int> in(static_cast<std::size_t>(n)), out(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) in[static_cast<std::size_t>(i)] = i;
  CALL(rma_group_translate_ranks(g, n, in.data(), world, out.data()));
  CALL(rma_group_free(&g));
  CALL(rma_group_free(&world));
  return out;
}

// Fence ring, accumulate into rank 0 and a passive read-back on `comm`.
void window_on(rma_Comm comm, int round) {
  int r = -1, n = 0;
  CALL(rma_comm_rank(comm, &r));
  CALL(rma_comm_size(comm, &n));
  const std::vector<int> world = world_ranks(comm);
  CHECK_EQ(world[static_cast<std::size_t>(r)], g_rank);
  i64* base = nullptr;
  rma_Win win = RMA_WIN_NULL;
  CALL(rma_win_allocate(16 * 8, 8, RMA_INFO_NULL, comm, &base, &win));
  CALL(rma_win_set_errhandler(win, RMA_ERRORS_RETURN));
  CALL(rma_win_fence(0, win));
  const i64 v = 1000 * round + g_rank;
  CALL(rma_put(&v, 1, RMA_INT64_T, (r + 1) % n, 0, 1, RMA_INT64_T, win));
  const i64 one = 1;
  CALL(rma_accumulate(&one, 1, RMA_INT64_T, 0, 1, 1, RMA_INT64_T, RMA_SUM, win));
  if (rma_put(&v, 1, RMA_INT64_T, n, 0, 1, RMA_INT64_T, win) != RMA_ERR_RANK) {
    fail(__LINE__, "a put to rank %d of a communicator of %d ranks was not RMA_ERR_RANK", n, n);
  }
  CALL(rma_win_fence(0, win));
  CHECK_EQ(base[0], 1000 * round + world[static_cast<std::size_t>((r + n - 1) % n)]);
  if (r == 0) CHECK_EQ(base[1], static_cast<i64>(n));
  CALL(rma_win_fence(0, win));
  CALL(rma_win_lock(RMA_LOCK_SHARED, n - 1, 0, win));
  i64 got = -1;
  CALL(rma_get(&got, 1, RMA_INT64_T, n - 1, 0, 1, RMA_INT64_T, win));
  CALL(rma_win_unlock(n - 1, win));
  CHECK_EQ(got, 1000 * round + world[static_cast<std::size_t>(n - 2 >= 0 ? n - 2 : n - 1)]);
  CALL(rma_win_free(&win));
}

void scenario_comms(int iters) {
  // Halves by parity, reversed by key.
  rma_Comm half = RMA_COMM_NULL;
  CALL(rma_comm_split(RMA_COMM_WORLD, g_rank % 2, -g_rank, &half));
  int hr = -1, hn = 0;
  CALL(rma_comm_rank(half, &hr));
  CALL(rma_comm_size(half, &hn));
  CHECK_EQ(hn, (g_size - g_rank % 2 + 1) / 2);
  CHECK_EQ(hr, hn - 1 - g_rank / 2);
  window_on(half, 1);
  // All ranks of this host: everyone under rmarun.
  rma_Comm node = RMA_COMM_NULL;
  CALL(rma_comm_split_type(RMA_COMM_WORLD, RMA_COMM_TYPE_SHARED, 0, RMA_INFO_NULL, &node));
  int nn = 0;
  CALL(rma_comm_size(node, &nn));
  CHECK_EQ(nn, g_size);
  window_on(node, 2);
  // The first and the second half of the world ranks (in reverse), each
  // created by its own members only, at the same time.
  const int k = (g_size + 1) / 2;
  rma_Group world = RMA_GROUP_NULL, mine = RMA_GROUP_NULL;
  CALL(rma_comm_group(RMA_COMM_WORLD, &world));
  int first[1][3] = {{0, k - 1, 1}};
  int second[1][3] = {{g_size - 1, k, -1}};
  CALL(rma_group_range_incl(world, 1, g_rank < k ? first : second, &mine));
  if (g_rank < k || k < g_size) {
    rma_Comm c = RMA_COMM_NULL;
    CALL(rma_comm_create_group(RMA_COMM_WORLD, mine, g_rank < k ? 7 : 8, &c));
    window_on(c, 3);
    CALL(rma_comm_free(&c));
  }
  CALL(rma_group_free(&mine));
  CALL(rma_group_free(&world));
  // Allgathers larger than a mailbox slot, through window creation on a
  // dup: many windows, each exchanging descriptors, plus barriers.
  rma_Comm dup = RMA_COMM_NULL;
  CALL(rma_comm_dup(half, &dup));
  for (int i = 0; i < iters; ++i) {
    CALL(rma_barrier(dup));
    rma_Win w = RMA_WIN_NULL;
    i64* b = nullptr;
    CALL(rma_win_allocate(8, 8, RMA_INFO_NULL, dup, &b, &w));
    CALL(rma_win_free(&w));
  }
  CALL(rma_comm_free(&dup));
  CALL(rma_comm_free(&node));
  CALL(rma_comm_free(&half));
  CALL(rma_barrier(RMA_COMM_WORLD));
}

void scenario_requests(int iters) {
  const int n = g_size;
  constexpr int kSlots = 8;
  constexpr int kMax = 4096;  // int64 per slot
  i64* base = nullptr;
  rma_Win win = RMA_WIN_NULL;
  CALL(rma_win_allocate(static_cast<rma_Aint>(n) * kSlots * kMax * 8, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win));
  CALL(rma_win_set_errhandler(win, RMA_ERRORS_RETURN));
  std::vector<i64> src(static_cast<std::size_t>(kSlots) * kMax);
  std::vector<i64> back(static_cast<std::size_t>(n) * kSlots * kMax);
  CALL(rma_win_lock_all(0, win));
  for (int it = 0; it < iters; ++it) {
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = (static_cast<i64>(it) << 40) + (g_rank << 24) + static_cast<i64>(i);
    // Puts of mixed sizes to every peer (big first, so later small ones
    // can finish first), into this rank's slots there.
    std::vector<rma_Request> reqs;
    for (int p = 0; p < n; ++p) {
      for (int s = 0; s < kSlots; ++s) {
        const int count = s % 2 == 0 ? kMax : 1 + s;
        rma_Request r = RMA_REQUEST_NULL;
        CALL(rma_rput(&src[static_cast<std::size_t>(s) * kMax], count, RMA_INT64_T, p,
                      (static_cast<rma_Aint>(g_rank) * kSlots + s) * kMax, count, RMA_INT64_T, win, &r));
        reqs.push_back(r);
      }
    }
    std::vector<int> seen(reqs.size(), 0);
    std::size_t done = 0;
    while (done < reqs.size()) {
      const int mode = static_cast<int>(done % 3);
      if (mode == 0) {
        int idx = -1;
        CALL(rma_waitany(static_cast<int>(reqs.size()), reqs.data(), &idx, RMA_STATUS_IGNORE));
        if (idx < 0) fail(__LINE__, "waitany gave index %d with %zu left", idx, reqs.size() - done);
        ++seen[static_cast<std::size_t>(idx)];
        ++done;
      } else if (mode == 1) {
        std::vector<int> idx(reqs.size());
        std::vector<rma_Status> st(reqs.size());
        int out = 0;
        CALL(rma_waitsome(static_cast<int>(reqs.size()), reqs.data(), &out, idx.data(), st.data()));
        for (int i = 0; i < out; ++i) {
          ++seen[static_cast<std::size_t>(idx[static_cast<std::size_t>(i)])];
          CHECK_EQ(st[static_cast<std::size_t>(i)].RMA_ERROR, RMA_SUCCESS);
        }
        done += static_cast<std::size_t>(out);
      } else {
        int idx = -1, flag = 0;
        CALL(rma_testany(static_cast<int>(reqs.size()), reqs.data(), &idx, &flag, RMA_STATUS_IGNORE));
        if (flag && idx >= 0) {
          ++seen[static_cast<std::size_t>(idx)];
          ++done;
        } else if (!flag) {  // nothing finished yet: wait for one
          int any = -1;
          CALL(rma_waitany(static_cast<int>(reqs.size()), reqs.data(), &any, RMA_STATUS_IGNORE));
          ++seen[static_cast<std::size_t>(any)];
          ++done;
        }
      }
    }
    for (std::size_t i = 0; i < seen.size(); ++i) {
      if (seen[i] != 1) fail(__LINE__, "request %zu completed %d times", i, seen[i]);
    }
    int flag = 0;
    CALL(rma_testall(static_cast<int>(reqs.size()), reqs.data(), &flag, RMA_STATUSES_IGNORE));
    CHECK_EQ(flag, 1);
    // Read every peer's copy of what this rank wrote, with request sets.
    std::vector<rma_Request> gets;
    for (int p = 0; p < n; ++p) {
      for (int s = 0; s < kSlots; ++s) {
        const int count = s % 2 == 0 ? kMax : 1 + s;
        rma_Request r = RMA_REQUEST_NULL;
        CALL(rma_rget(&back[(static_cast<std::size_t>(p) * kSlots + s) * kMax], count, RMA_INT64_T, p,
                      (static_cast<rma_Aint>(g_rank) * kSlots + s) * kMax, count, RMA_INT64_T, win, &r));
        gets.push_back(r);
      }
    }
    CALL(rma_waitall(static_cast<int>(gets.size()), gets.data(), RMA_STATUSES_IGNORE));
    for (int p = 0; p < n; ++p) {
      for (int s = 0; s < kSlots; ++s) {
        const int count = s % 2 == 0 ? kMax : 1 + s;
        for (int i = 0; i < count; ++i) {
          CHECK_EQ(back[(static_cast<std::size_t>(p) * kSlots + s) * kMax + static_cast<std::size_t>(i)],
                   src[static_cast<std::size_t>(s) * kMax + static_cast<std::size_t>(i)]);
        }
      }
    }
  }
  CALL(rma_win_unlock_all(win));
  CALL(rma_win_free(&win));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: rmarun -n N %s comms|requests [iterations]\n", argv[0]);
    return 2;
  }
  g_scenario = argv[1];
  const int iters = argc > 2 ? std::atoi(argv[2]) : 20;
  if (iters <= 0) {
    std::fprintf(stderr, "%s: iterations must be a positive integer, not '%s'\n", argv[0], argv[2]);
    return 2;
  }
  CALL(rma_init(&argc, &argv));
  CALL(rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN));
  CALL(rma_comm_rank(RMA_COMM_WORLD, &g_rank));
  CALL(rma_comm_size(RMA_COMM_WORLD, &g_size));
  const std::string s = g_scenario;
  if (s == "comms") scenario_comms(iters);
  else if (s == "requests") scenario_requests(iters);
  else fail(__LINE__, "unknown scenario '%s'", g_scenario);
  CALL(rma_finalize());
  if (g_rank == 0) std::printf("rma_mp_comm %s: %d ranks passed\n", g_scenario, g_size);
  return 0;
}
