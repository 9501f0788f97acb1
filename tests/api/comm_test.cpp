// Communicators and groups (comm/): dup, split, split_type, create_group,
// free, compare, names, error handlers; windows on any communicator with
// ranks relative to it; the group calls; freed handles.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "api_test_util.hpp"

namespace {

using api_test::last_message;
using api_test::run_ranks;

bool contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

std::vector<int> group_ranks(rma_Group g) {
  int n = 0;
  EXPECT_EQ(rma_group_size(g, &n), RMA_SUCCESS);
  // Translate every rank of g into RMA_COMM_WORLD's group.
  rma_Group world = RMA_GROUP_NULL;
  EXPECT_EQ(rma_comm_group(RMA_COMM_WORLD, &world), RMA_SUCCESS);
  std::vector<int> in(static_cast<std::size_t>(n)), out(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) in[static_cast<std::size_t>(i)] = i;
  EXPECT_EQ(rma_group_translate_ranks(g, n, in.data(), world, out.data()), RMA_SUCCESS);
  rma_group_free(&world);
  return out;
}

TEST(ApiComm, DupCompareNameFree) {
  run_ranks(3, [](int rank, int size) {
    ASSERT_EQ(rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN), RMA_SUCCESS);
    rma_Comm dup = RMA_COMM_NULL;
    ASSERT_EQ(rma_comm_dup(RMA_COMM_WORLD, &dup), RMA_SUCCESS);
    int r = -1, s = -1, cmp = -1;
    ASSERT_EQ(rma_comm_rank(dup, &r), RMA_SUCCESS);
    ASSERT_EQ(rma_comm_size(dup, &s), RMA_SUCCESS);
    EXPECT_EQ(r, rank);
    EXPECT_EQ(s, size);
    EXPECT_EQ(rma_comm_compare(dup, dup, &cmp), RMA_SUCCESS);
    EXPECT_EQ(cmp, RMA_IDENT);
    EXPECT_EQ(rma_comm_compare(RMA_COMM_WORLD, dup, &cmp), RMA_SUCCESS);
    EXPECT_EQ(cmp, RMA_CONGRUENT);
    EXPECT_EQ(rma_comm_compare(RMA_COMM_WORLD, RMA_COMM_SELF, &cmp), RMA_SUCCESS);
    EXPECT_EQ(cmp, RMA_UNEQUAL);
    char name[RMA_MAX_OBJECT_NAME];
    int len = 0;
    ASSERT_EQ(rma_comm_get_name(RMA_COMM_WORLD, name, &len), RMA_SUCCESS);
    EXPECT_STREQ(name, "RMA_COMM_WORLD");
    ASSERT_EQ(rma_comm_set_name(dup, "mine"), RMA_SUCCESS);
    ASSERT_EQ(rma_comm_get_name(dup, name, &len), RMA_SUCCESS);
    EXPECT_STREQ(name, "mine");
    EXPECT_EQ(len, 4);
    EXPECT_EQ(rma_barrier(dup), RMA_SUCCESS);
    // The dup inherited RMA_ERRORS_RETURN.
    rma_Errhandler eh = RMA_ERRHANDLER_NULL;
    ASSERT_EQ(rma_comm_get_errhandler(dup, &eh), RMA_SUCCESS);
    EXPECT_EQ(eh, RMA_ERRORS_RETURN);
    rma_Comm keep = dup;
    ASSERT_EQ(rma_comm_free(&dup), RMA_SUCCESS);
    EXPECT_EQ(dup, RMA_COMM_NULL);
    // A freed handle, NULL, world and self: clear errors.
    EXPECT_EQ(rma_comm_rank(keep, &r), RMA_ERR_COMM);
    EXPECT_TRUE(contains(last_message(), "rma_comm_free")) << last_message();
    EXPECT_EQ(rma_barrier(keep), RMA_ERR_COMM);
    EXPECT_EQ(rma_comm_free(&keep), RMA_ERR_COMM);
    EXPECT_EQ(rma_comm_size(RMA_COMM_NULL, &s), RMA_ERR_COMM);
    EXPECT_TRUE(contains(last_message(), "RMA_COMM_NULL")) << last_message();
    rma_Comm world = RMA_COMM_WORLD;
    EXPECT_EQ(rma_comm_free(&world), RMA_ERR_COMM);
    EXPECT_EQ(rma_comm_dup(RMA_COMM_WORLD, nullptr), RMA_ERR_ARG);
    // RMA_COMM_SELF has its own handler (fatal by default).
    ASSERT_EQ(rma_comm_set_errhandler(RMA_COMM_SELF, RMA_ERRORS_RETURN), RMA_SUCCESS);
    EXPECT_EQ(rma_comm_set_name(RMA_COMM_SELF, std::string(200, 'x').c_str()), RMA_ERR_ARG);
  });
}

TEST(ApiComm, SplitOrdersByKeyAndCarriesWindows) {
  run_ranks(6, [](int rank, int) {
    ASSERT_EQ(rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN), RMA_SUCCESS);
    rma_Comm half = RMA_COMM_NULL;
    // Two halves (even/odd world ranks), reversed by key.
    ASSERT_EQ(rma_comm_split(RMA_COMM_WORLD, rank % 2, -rank, &half), RMA_SUCCESS) << last_message();
    int r = -1, n = -1;
    ASSERT_EQ(rma_comm_rank(half, &r), RMA_SUCCESS);
    ASSERT_EQ(rma_comm_size(half, &n), RMA_SUCCESS);
    ASSERT_EQ(n, 3);
    EXPECT_EQ(r, 2 - rank / 2);
    rma_Group g = RMA_GROUP_NULL;
    ASSERT_EQ(rma_comm_group(half, &g), RMA_SUCCESS);
    const std::vector<int> world = group_ranks(g);
    const std::vector<int> want = rank % 2 == 0 ? std::vector<int>{4, 2, 0} : std::vector<int>{5, 3, 1};
    EXPECT_EQ(world, want);

    // A window on the half: ranks are the half's.
    std::int64_t* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(8 * 8, 8, RMA_INFO_NULL, half, &base, &win), RMA_SUCCESS) << last_message();
    rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
    rma_Group wg = RMA_GROUP_NULL;
    ASSERT_EQ(rma_win_get_group(win, &wg), RMA_SUCCESS);
    EXPECT_EQ(group_ranks(wg), want);
    rma_group_free(&wg);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    const std::int64_t v = 1000 + rank;
    const int right = (r + 1) % n;
    ASSERT_EQ(rma_put(&v, 1, RMA_INT64_T, right, r, 1, RMA_INT64_T, win), RMA_SUCCESS);
    EXPECT_EQ(rma_put(&v, 1, RMA_INT64_T, 3, 0, 1, RMA_INT64_T, win), RMA_ERR_RANK);  // outside the half
    EXPECT_TRUE(contains(last_message(), "size 3")) << last_message();
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    const int left = (r + n - 1) % n;
    EXPECT_EQ(base[left], 1000 + want[static_cast<std::size_t>(left)]);
    for (int i = 0; i < 8; ++i) {
      if (i != left) {
        EXPECT_EQ(base[i], 0) << i;
      }
    }
    ASSERT_EQ(rma_barrier(half), RMA_SUCCESS);  // all checked before anyone changes more
    // Passive target and atomics: every member adds to half-rank 0.
    ASSERT_EQ(rma_win_lock(RMA_LOCK_SHARED, 0, 0, win), RMA_SUCCESS);
    std::int64_t one = 1, old = 0;
    ASSERT_EQ(rma_fetch_and_op(&one, &old, RMA_INT64_T, 0, 7, RMA_SUM, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_unlock(0, win), RMA_SUCCESS);
    // PSCW with the half's group: half-rank 0 exposes, the others access.
    if (r == 0) {
      rma_Group others = RMA_GROUP_NULL;
      const int zero[1] = {0};
      ASSERT_EQ(rma_group_excl(g, 1, zero, &others), RMA_SUCCESS);
      ASSERT_EQ(rma_win_post(others, 0, win), RMA_SUCCESS);
      ASSERT_EQ(rma_win_wait(win), RMA_SUCCESS);
      rma_group_free(&others);
    } else {
      rma_Group root = RMA_GROUP_NULL;
      const int zero[1] = {0};
      ASSERT_EQ(rma_group_incl(g, 1, zero, &root), RMA_SUCCESS);
      ASSERT_EQ(rma_win_start(root, 0, win), RMA_SUCCESS) << last_message();
      ASSERT_EQ(rma_accumulate(&one, 1, RMA_INT64_T, 0, 6, 1, RMA_INT64_T, RMA_SUM, win), RMA_SUCCESS);
      ASSERT_EQ(rma_win_complete(win), RMA_SUCCESS);
      rma_group_free(&root);
    }
    ASSERT_EQ(rma_barrier(half), RMA_SUCCESS);
    ASSERT_EQ(rma_win_sync(win), RMA_SUCCESS);
    if (r == 0) {
      EXPECT_EQ(base[7], 3);
      EXPECT_EQ(base[6], 2);
    }
    // A group naming a process outside the window's communicator.
    rma_Group wg2 = RMA_GROUP_NULL;
    ASSERT_EQ(rma_comm_group(RMA_COMM_WORLD, &wg2), RMA_SUCCESS);
    EXPECT_EQ(rma_win_start(wg2, 0, win), RMA_ERR_RANK);
    EXPECT_TRUE(contains(last_message(), "not in the window's communicator")) << last_message();
    rma_group_free(&wg2);
    rma_group_free(&g);
    // The window outlives the communicator's handle.
    ASSERT_EQ(rma_comm_free(&half), RMA_SUCCESS);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

TEST(ApiComm, SplitUndefinedAndBadColor) {
  run_ranks(4, [](int rank, int) {
    ASSERT_EQ(rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN), RMA_SUCCESS);
    rma_Comm c = reinterpret_cast<rma_Comm>(&rank);
    ASSERT_EQ(rma_comm_split(RMA_COMM_WORLD, rank == 3 ? RMA_UNDEFINED : 7, 0, &c), RMA_SUCCESS);
    if (rank == 3) {
      EXPECT_EQ(c, RMA_COMM_NULL);
    } else {
      int n = 0;
      ASSERT_EQ(rma_comm_size(c, &n), RMA_SUCCESS);
      EXPECT_EQ(n, 3);
      ASSERT_EQ(rma_comm_free(&c), RMA_SUCCESS);
    }
    // One rank's invalid color fails the call on every rank (nobody hangs).
    rma_Comm d = RMA_COMM_NULL;
    EXPECT_EQ(rma_comm_split(RMA_COMM_WORLD, rank == 1 ? -5 : 0, 0, &d), RMA_ERR_ARG);
    EXPECT_TRUE(contains(last_message(), rank == 1 ? "color -5" : "rank 1")) << last_message();
    EXPECT_EQ(d, RMA_COMM_NULL);
    EXPECT_EQ(rma_comm_split_type(RMA_COMM_WORLD, rank == 2 ? 99 : RMA_COMM_TYPE_SHARED, 0, RMA_INFO_NULL, &d),
              RMA_ERR_ARG);
    EXPECT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
  });
}

TEST(ApiComm, SplitTypeSharedIsThisHost) {
  run_ranks(4, [](int rank, int size) {
    rma_Comm node = RMA_COMM_NULL;
    ASSERT_EQ(rma_comm_split_type(RMA_COMM_WORLD, RMA_COMM_TYPE_SHARED, size - rank, RMA_INFO_NULL, &node),
              RMA_SUCCESS);
    int r = -1, n = -1;
    ASSERT_EQ(rma_comm_rank(node, &r), RMA_SUCCESS);
    ASSERT_EQ(rma_comm_size(node, &n), RMA_SUCCESS);
    EXPECT_EQ(n, size);  // every thread rank runs on this host
    EXPECT_EQ(r, size - 1 - rank);
    int cmp = -1;
    ASSERT_EQ(rma_comm_compare(node, RMA_COMM_WORLD, &cmp), RMA_SUCCESS);
    EXPECT_EQ(cmp, RMA_SIMILAR);
    ASSERT_EQ(rma_comm_free(&node), RMA_SUCCESS);
  });
}

TEST(ApiComm, CreateGroupOnlyMembersCall) {
  run_ranks(5, [](int rank, int) {
    rma_Group world = RMA_GROUP_NULL, odd = RMA_GROUP_NULL;
    ASSERT_EQ(rma_comm_group(RMA_COMM_WORLD, &world), RMA_SUCCESS);
    int range[1][3] = {{1, 4, 2}};
    ASSERT_EQ(rma_group_range_incl(world, 1, range, &odd), RMA_SUCCESS);
    if (rank % 2 == 1) {
      rma_Comm c = RMA_COMM_NULL;
      ASSERT_EQ(rma_comm_create_group(RMA_COMM_WORLD, odd, 5, &c), RMA_SUCCESS) << last_message();
      int r = -1, n = -1;
      ASSERT_EQ(rma_comm_rank(c, &r), RMA_SUCCESS);
      ASSERT_EQ(rma_comm_size(c, &n), RMA_SUCCESS);
      EXPECT_EQ(n, 2);
      EXPECT_EQ(r, rank / 2);
      // Windows on it, while the even ranks do something else.
      std::int32_t* base = nullptr;
      rma_Win win = RMA_WIN_NULL;
      ASSERT_EQ(rma_win_allocate(4, 4, RMA_INFO_NULL, c, &base, &win), RMA_SUCCESS);
      ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
      const std::int32_t v = 40 + rank;
      ASSERT_EQ(rma_put(&v, 1, RMA_INT32_T, 1 - r, 0, 1, RMA_INT32_T, win), RMA_SUCCESS);
      ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
      EXPECT_EQ(*base, 40 + (rank == 1 ? 3 : 1));
      ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
      ASSERT_EQ(rma_comm_free(&c), RMA_SUCCESS);
    } else {
      rma_Comm c = RMA_COMM_NULL;
      ASSERT_EQ(rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN), RMA_SUCCESS);
      EXPECT_EQ(rma_comm_create_group(RMA_COMM_WORLD, odd, 5, &c), RMA_ERR_GROUP);  // not a member
      rma_Comm evens = RMA_COMM_NULL;
      rma_Group even = RMA_GROUP_NULL;
      int range2[1][3] = {{0, 4, 2}};
      ASSERT_EQ(rma_group_range_incl(world, 1, range2, &even), RMA_SUCCESS);
      ASSERT_EQ(rma_comm_create_group(RMA_COMM_WORLD, even, 0, &evens), RMA_SUCCESS) << last_message();
      EXPECT_EQ(rma_barrier(evens), RMA_SUCCESS);
      ASSERT_EQ(rma_comm_free(&evens), RMA_SUCCESS);
      rma_group_free(&even);
    }
    rma_group_free(&odd);
    rma_group_free(&world);
    EXPECT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
  });
}

TEST(ApiComm, WindowOnSelf) {
  run_ranks(2, [](int rank, int) {
    std::int64_t* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(8, 8, RMA_INFO_NULL, RMA_COMM_SELF, &base, &win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_lock(RMA_LOCK_EXCLUSIVE, 0, 0, win), RMA_SUCCESS);
    const std::int64_t v = 9 + rank;
    ASSERT_EQ(rma_put(&v, 1, RMA_INT64_T, 0, 0, 1, RMA_INT64_T, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_unlock(0, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_sync(win), RMA_SUCCESS);
    EXPECT_EQ(*base, 9 + rank);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

TEST(ApiComm, MismatchedCollectivesAreReported) {
  run_ranks(2, [](int rank, int) {
    ASSERT_EQ(rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN), RMA_SUCCESS);
    rma_Comm a = RMA_COMM_NULL, b = RMA_COMM_NULL;
    ASSERT_EQ(rma_comm_dup(RMA_COMM_WORLD, &a), RMA_SUCCESS);
    ASSERT_EQ(rma_comm_dup(RMA_COMM_WORLD, &b), RMA_SUCCESS);
    // Erroneous program: the ranks call barriers on different communicators.
    EXPECT_EQ(rma_barrier(rank == 0 ? a : b), RMA_ERR_COMM);
    EXPECT_TRUE(contains(last_message(), "another communicator")) << last_message();
    // Both can go on.
    EXPECT_EQ(rma_barrier(a), RMA_SUCCESS);
    EXPECT_EQ(rma_barrier(b), RMA_SUCCESS);
    rma_comm_free(&a);
    rma_comm_free(&b);
  });
}

std::atomic<int> g_comm_handler_calls{0};
void comm_handler(rma_Comm* comm, int* code, ...) {
  if (comm != nullptr && *comm != RMA_COMM_NULL && *code == RMA_ERR_ARG) g_comm_handler_calls.fetch_add(1);
}

TEST(ApiComm, CommErrorHandlers) {
  g_comm_handler_calls = 0;
  run_ranks(2, [](int, int) {
    rma_Errhandler eh = RMA_ERRHANDLER_NULL;
    ASSERT_EQ(rma_comm_create_errhandler(comm_handler, &eh), RMA_SUCCESS);
    rma_Comm dup = RMA_COMM_NULL;
    ASSERT_EQ(rma_comm_dup(RMA_COMM_WORLD, &dup), RMA_SUCCESS);
    ASSERT_EQ(rma_comm_set_errhandler(dup, eh), RMA_SUCCESS);
    // A window handler cannot go on a communicator and vice versa.
    ASSERT_EQ(rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN), RMA_SUCCESS);
    EXPECT_EQ(rma_errhandler_free(&eh), RMA_SUCCESS);  // dup keeps it alive
    EXPECT_EQ(rma_comm_rank(dup, nullptr), RMA_ERR_ARG);
    EXPECT_EQ(rma_comm_call_errhandler(dup, RMA_ERR_ARG), RMA_ERR_ARG);
    rma_comm_free(&dup);
  });
  EXPECT_EQ(g_comm_handler_calls.load(), 4);
}

TEST(ApiGroup, SetOperationsAndFreedHandles) {
  run_ranks(1, [](int, int) {
    ASSERT_EQ(rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN), RMA_SUCCESS);
    rma_Group self = RMA_GROUP_NULL;
    ASSERT_EQ(rma_comm_group(RMA_COMM_SELF, &self), RMA_SUCCESS);
    int n = -1, r = -1;
    ASSERT_EQ(rma_group_size(self, &n), RMA_SUCCESS);
    ASSERT_EQ(rma_group_rank(self, &r), RMA_SUCCESS);
    EXPECT_EQ(n, 1);
    EXPECT_EQ(r, 0);
    rma_Group empty = RMA_GROUP_NULL, u = RMA_GROUP_NULL, x = RMA_GROUP_NULL;
    ASSERT_EQ(rma_group_excl(self, 1, &r, &empty), RMA_SUCCESS);
    ASSERT_EQ(rma_group_size(empty, &n), RMA_SUCCESS);
    EXPECT_EQ(n, 0);
    ASSERT_EQ(rma_group_rank(empty, &r), RMA_SUCCESS);
    EXPECT_EQ(r, RMA_UNDEFINED_RANK);
    ASSERT_EQ(rma_group_union(empty, self, &u), RMA_SUCCESS);
    ASSERT_EQ(rma_group_intersection(empty, self, &x), RMA_SUCCESS);
    int cmp = -1;
    ASSERT_EQ(rma_group_compare(u, self, &cmp), RMA_SUCCESS);
    EXPECT_EQ(cmp, RMA_IDENT);
    ASSERT_EQ(rma_group_compare(x, self, &cmp), RMA_SUCCESS);
    EXPECT_EQ(cmp, RMA_UNEQUAL);
    const int bad[2] = {0, 0};
    rma_Group g = RMA_GROUP_NULL;
    EXPECT_EQ(rma_group_incl(self, 2, bad, &g), RMA_ERR_RANK);
    EXPECT_TRUE(contains(last_message(), "twice")) << last_message();
    const int out_of_range[1] = {1};
    EXPECT_EQ(rma_group_excl(self, 1, out_of_range, &g), RMA_ERR_RANK);
    int ranges[1][3] = {{0, 0, 0}};
    EXPECT_EQ(rma_group_range_incl(self, 1, ranges, &g), RMA_ERR_ARG);
    EXPECT_EQ(g, RMA_GROUP_NULL);
    rma_Group keep = u;
    ASSERT_EQ(rma_group_free(&u), RMA_SUCCESS);
    EXPECT_EQ(u, RMA_GROUP_NULL);
    EXPECT_EQ(rma_group_size(keep, &n), RMA_ERR_GROUP);  // freed: recognised, not read
    EXPECT_TRUE(contains(last_message(), "rma_group_free")) << last_message();
    EXPECT_EQ(rma_group_free(&keep), RMA_ERR_GROUP);
    EXPECT_EQ(rma_group_size(RMA_GROUP_NULL, &n), RMA_ERR_GROUP);
    rma_group_free(&self);
    rma_group_free(&empty);
    rma_group_free(&x);
  });
}

}  // namespace

#include "comm/collectives.hpp"
#include "window/context.hpp"

namespace {

// Contributions of different sizes, larger than one mailbox slot, through
// the mailbox (a dup is not the world, so its collectives use it).
TEST(ApiComm, MailboxAllgatherOfManyChunks) {
  run_ranks(3, [](int rank, int) {
    rma_Comm dup = RMA_COMM_NULL;
    ASSERT_EQ(rma_comm_dup(RMA_COMM_WORLD, &dup), RMA_SUCCESS);
    const std::size_t sizes[3] = {0, 1000, 2 * rma::api::Mailbox::kChunkBytes + 3};
    for (int round = 0; round < 3; ++round) {
      std::vector<std::uint8_t> mine(sizes[(static_cast<std::size_t>(rank) + static_cast<std::size_t>(round)) % 3]);
      for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = static_cast<std::uint8_t>(rank * 31 + i + round);
      auto all = rma::api::comm_allgather(*rma::api::current_context(), *dup, mine);
      ASSERT_TRUE(all.ok()) << all.status().to_string();
      ASSERT_EQ(all->size(), 3u);
      for (int r = 0; r < 3; ++r) {
        const auto& got = (*all)[static_cast<std::size_t>(r)];
        ASSERT_EQ(got.size(), sizes[(static_cast<std::size_t>(r) + static_cast<std::size_t>(round)) % 3]);
        for (std::size_t i = 0; i < got.size(); ++i) {
          ASSERT_EQ(got[i], static_cast<std::uint8_t>(r * 31 + i + round)) << r << " " << i;
        }
      }
    }
    ASSERT_EQ(rma_comm_free(&dup), RMA_SUCCESS);
  });
}

}  // namespace
