// Epochs: passive target (lock, lock_all, flush), active target (fence,
// post/start/complete/wait), and the errors of misused epochs.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "api_test_util.hpp"

namespace {

using api_test::run_ranks;

// A read-modify-write that is only correct under mutual exclusion: get,
// increment locally, put, unlock. Lost updates would show in the total.
TEST(ApiSync, ExclusiveLockContention) {
  constexpr int kIters = 40;
  run_ranks(6, [](int rank, int size) {
    std::int64_t* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(16, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    const int target = size - 1;
    for (int i = 0; i < kIters; ++i) {
      ASSERT_EQ(rma_win_lock(RMA_LOCK_EXCLUSIVE, target, 0, win), RMA_SUCCESS);
      std::int64_t v[2] = {0, 0};
      ASSERT_EQ(rma_get(v, 2, RMA_INT64_T, target, 0, 2, RMA_INT64_T, win), RMA_SUCCESS);
      ASSERT_EQ(rma_win_flush(target, win), RMA_SUCCESS);
      EXPECT_EQ(v[1], 0) << "another rank is inside the critical section";
      const std::int64_t inside = 1;
      ASSERT_EQ(rma_put(&inside, 1, RMA_INT64_T, target, 1, 1, RMA_INT64_T, win), RMA_SUCCESS);
      ASSERT_EQ(rma_win_flush(target, win), RMA_SUCCESS);
      v[0] += 1;
      v[1] = 0;
      ASSERT_EQ(rma_put(v, 2, RMA_INT64_T, target, 0, 2, RMA_INT64_T, win), RMA_SUCCESS);
      ASSERT_EQ(rma_win_unlock(target, win), RMA_SUCCESS);
    }
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    if (rank == target) {
      ASSERT_EQ(rma_win_lock(RMA_LOCK_SHARED, target, 0, win), RMA_SUCCESS);
      ASSERT_EQ(rma_win_sync(win), RMA_SUCCESS);
      EXPECT_EQ(base[0], kIters * size);
      ASSERT_EQ(rma_win_unlock(target, win), RMA_SUCCESS);
    }
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

TEST(ApiSync, SharedLocksAndLockAllWithFlushes) {
  run_ranks(4, [](int rank, int size) {
    std::int32_t* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(4 * 64, 4, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    // Everyone writes its own slot at every rank under lock_all.
    ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
    for (int t = 0; t < size; ++t) {
      const std::int32_t v = rank * 10 + t;
      ASSERT_EQ(rma_put(&v, 1, RMA_INT32_T, t, rank, 1, RMA_INT32_T, win), RMA_SUCCESS);
      ASSERT_EQ(rma_win_flush_local(t, win), RMA_SUCCESS);
    }
    ASSERT_EQ(rma_win_flush_all(win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_flush_local_all(win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    // Shared locks on one target from everyone at once: all read.
    ASSERT_EQ(rma_win_lock(RMA_LOCK_SHARED, 0, 0, win), RMA_SUCCESS);
    std::vector<std::int32_t> got(static_cast<std::size_t>(size), -1);
    ASSERT_EQ(rma_get(got.data(), size, RMA_INT32_T, 0, 0, size, RMA_INT32_T, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_unlock(0, win), RMA_SUCCESS);
    for (int r = 0; r < size; ++r) EXPECT_EQ(got[static_cast<std::size_t>(r)], r * 10);
    // NOCHECK: no lock word traffic, still an epoch.
    ASSERT_EQ(rma_win_lock(RMA_LOCK_SHARED, 1, RMA_MODE_NOCHECK, win), RMA_SUCCESS);
    std::int32_t one = -1;
    ASSERT_EQ(rma_get(&one, 1, RMA_INT32_T, 1, rank, 1, RMA_INT32_T, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_unlock(1, win), RMA_SUCCESS);
    EXPECT_EQ(one, rank * 10 + 1);
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

TEST(ApiSync, PostStartCompleteWait) {
  run_ranks(4, [](int rank, int size) {
    std::int32_t* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(4 * 8, 4, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    rma_Group world, left_g, right_g;
    ASSERT_EQ(rma_comm_group(RMA_COMM_WORLD, &world), RMA_SUCCESS);
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    ASSERT_EQ(rma_group_incl(world, 1, &left, &left_g), RMA_SUCCESS);
    ASSERT_EQ(rma_group_incl(world, 1, &right, &right_g), RMA_SUCCESS);
    int gs = 0, gr = 0;
    ASSERT_EQ(rma_group_size(world, &gs), RMA_SUCCESS);
    EXPECT_EQ(gs, size);
    ASSERT_EQ(rma_group_rank(right_g, &gr), RMA_SUCCESS);
    EXPECT_EQ(gr, size > 1 ? RMA_UNDEFINED_RANK : 0);
    for (int round = 0; round < 5; ++round) {
      // Expose to the left neighbour, access the right one.
      ASSERT_EQ(rma_win_post(left_g, 0, win), RMA_SUCCESS);
      ASSERT_EQ(rma_win_start(right_g, 0, win), RMA_SUCCESS);
      const std::int32_t v = rank * 100 + round;
      ASSERT_EQ(rma_put(&v, 1, RMA_INT32_T, right, round, 1, RMA_INT32_T, win), RMA_SUCCESS);
      ASSERT_EQ(rma_win_complete(win), RMA_SUCCESS);
      if (round % 2 == 0) {
        ASSERT_EQ(rma_win_wait(win), RMA_SUCCESS);
      } else {
        int flag = 0;
        for (int i = 0; i < 1000000 && !flag; ++i) ASSERT_EQ(rma_win_test(win, &flag), RMA_SUCCESS);
        ASSERT_EQ(flag, 1);
      }
      EXPECT_EQ(base[round], left * 100 + round);
    }
    rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
    // Outside the start epoch the right neighbour is not accessible.
    const std::int32_t v = 1;
    EXPECT_EQ(rma_put(&v, 1, RMA_INT32_T, right, 0, 1, RMA_INT32_T, win), RMA_ERR_RMA_SYNC);
    EXPECT_EQ(rma_win_complete(win), RMA_ERR_RMA_SYNC);
    EXPECT_EQ(rma_win_wait(win), RMA_ERR_RMA_SYNC);
    rma_group_free(&left_g);
    rma_group_free(&right_g);
    rma_group_free(&world);
    EXPECT_EQ(world, RMA_GROUP_NULL);
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

TEST(ApiSync, FenceAssertionsAndMisuse) {
  run_ranks(2, [](int rank, int) {
    std::int32_t* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(64, 4, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
    const std::int32_t v = 5;
    // No epoch yet.
    EXPECT_EQ(rma_put(&v, 1, RMA_INT32_T, 1 - rank, 0, 1, RMA_INT32_T, win), RMA_ERR_RMA_SYNC);
    EXPECT_NE(api_test::last_message().find("no access epoch"), std::string::npos);
    EXPECT_EQ(rma_win_flush(0, win), RMA_ERR_RMA_SYNC);
    EXPECT_EQ(rma_win_flush_all(win), RMA_ERR_RMA_SYNC);
    EXPECT_EQ(rma_win_unlock(0, win), RMA_ERR_RMA_SYNC);
    EXPECT_EQ(rma_win_unlock_all(win), RMA_ERR_RMA_SYNC);
    EXPECT_EQ(rma_win_lock(99, 0, 0, win), RMA_ERR_LOCKTYPE);
    EXPECT_EQ(rma_win_lock(RMA_LOCK_SHARED, 7, 0, win), RMA_ERR_RANK);
    EXPECT_EQ(rma_win_lock(RMA_LOCK_SHARED, 0, RMA_MODE_NOPUT, win), RMA_ERR_ASSERT);
    EXPECT_EQ(rma_win_fence(1 << 30, win), RMA_ERR_ASSERT);
    ASSERT_EQ(rma_win_fence(RMA_MODE_NOPRECEDE, win), RMA_SUCCESS);
    ASSERT_EQ(rma_put(&v, 1, RMA_INT32_T, 1 - rank, 0, 1, RMA_INT32_T, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, win), RMA_SUCCESS);
    EXPECT_EQ(base[0], 5);
    // The fence epoch ended with NOSUCCEED.
    EXPECT_EQ(rma_put(&v, 1, RMA_INT32_T, 1 - rank, 0, 1, RMA_INT32_T, win), RMA_ERR_RMA_SYNC);
    ASSERT_EQ(rma_win_lock(RMA_LOCK_EXCLUSIVE, rank, 0, win), RMA_SUCCESS);
    EXPECT_EQ(rma_win_lock(RMA_LOCK_SHARED, rank, 0, win), RMA_ERR_RMA_SYNC);
    EXPECT_EQ(rma_win_lock_all(0, win), RMA_ERR_RMA_SYNC);
    EXPECT_EQ(rma_win_fence(0, win), RMA_ERR_RMA_SYNC);
    EXPECT_EQ(rma_win_free(&win), RMA_ERR_RMA_SYNC);  // still locked: nothing freed
    EXPECT_NE(win, RMA_WIN_NULL);
    ASSERT_EQ(rma_win_unlock(rank, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

}  // namespace

namespace {

// Waits that can never be satisfied end at RMA_WAIT_TIMEOUT_MS with an error
// naming who did not answer, instead of hanging.
TEST(ApiSync, WaitsTimeOutWithAMessage) {
  ::setenv("RMA_WAIT_TIMEOUT_MS", "300", 1);
  run_ranks(2, [](int rank, int) {
    std::int64_t* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(64, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
    rma_Group world, one;
    ASSERT_EQ(rma_comm_group(RMA_COMM_WORLD, &world), RMA_SUCCESS);
    const int r1 = 1;
    ASSERT_EQ(rma_group_incl(world, 1, &r1, &one), RMA_SUCCESS);
    if (rank == 1) { ASSERT_EQ(rma_win_lock(RMA_LOCK_EXCLUSIVE, 1, 0, win), RMA_SUCCESS); }
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    if (rank == 0) {
      // Rank 1 never posts.
      EXPECT_EQ(rma_win_start(one, 0, win), RMA_ERR_OTHER);
      EXPECT_NE(api_test::last_message().find("rma_win_post of rank 1"), std::string::npos)
          << api_test::last_message();
      // Rank 1 holds its own lock exclusively.
      EXPECT_EQ(rma_win_lock(RMA_LOCK_SHARED, 1, 0, win), RMA_ERR_OTHER);
      EXPECT_NE(api_test::last_message().find("held exclusively by rank 1"), std::string::npos)
          << api_test::last_message();
      // Nothing was left half-open: the epochs can be used normally now.
      EXPECT_EQ(rma_win_complete(win), RMA_ERR_RMA_SYNC);
      EXPECT_EQ(rma_win_unlock(1, win), RMA_ERR_RMA_SYNC);
    }
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    if (rank == 1) { ASSERT_EQ(rma_win_unlock(1, win), RMA_SUCCESS); }
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    if (rank == 0) {
      ASSERT_EQ(rma_win_lock(RMA_LOCK_SHARED, 1, 0, win), RMA_SUCCESS);
      ASSERT_EQ(rma_win_unlock(1, win), RMA_SUCCESS);
    }
    rma_group_free(&one);
    rma_group_free(&world);
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
  ::unsetenv("RMA_WAIT_TIMEOUT_MS");
}

}  // namespace
