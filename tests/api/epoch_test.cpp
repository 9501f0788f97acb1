// Epoch rules the old code did not enforce (issue 12, defect 10, API part):
// request-based operations only inside passive-target epochs (MPI 4.x
// 12.3.5), and operations on RMA_PROC_NULL only inside some access epoch.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "api_test_util.hpp"

namespace {

using api_test::run_ranks;

// The four request-based calls to `target`: the codes they return (each
// successful one is waited for).
struct RequestCodes {
  int rput, rget, racc, rgacc;
};
RequestCodes request_ops(rma_Win win, int target) {
  std::int64_t v = 1, r = 0;
  RequestCodes c{};
  rma_Request q = RMA_REQUEST_NULL;
  c.rput = rma_rput(&v, 1, RMA_INT64_T, target, 0, 1, RMA_INT64_T, win, &q);
  if (c.rput == RMA_SUCCESS) { EXPECT_EQ(rma_wait(&q, RMA_STATUS_IGNORE), RMA_SUCCESS); }
  c.rget = rma_rget(&r, 1, RMA_INT64_T, target, 0, 1, RMA_INT64_T, win, &q);
  if (c.rget == RMA_SUCCESS) { EXPECT_EQ(rma_wait(&q, RMA_STATUS_IGNORE), RMA_SUCCESS); }
  c.racc = rma_raccumulate(&v, 1, RMA_INT64_T, target, 0, 1, RMA_INT64_T, RMA_SUM, win, &q);
  if (c.racc == RMA_SUCCESS) { EXPECT_EQ(rma_wait(&q, RMA_STATUS_IGNORE), RMA_SUCCESS); }
  c.rgacc = rma_rget_accumulate(&v, 1, RMA_INT64_T, &r, 1, RMA_INT64_T, target, 0, 1, RMA_INT64_T,
                                RMA_SUM, win, &q);
  if (c.rgacc == RMA_SUCCESS) { EXPECT_EQ(rma_wait(&q, RMA_STATUS_IGNORE), RMA_SUCCESS); }
  return c;
}

void expect_all(const RequestCodes& c, int code, const char* where) {
  EXPECT_EQ(c.rput, code) << where;
  EXPECT_EQ(c.rget, code) << where;
  EXPECT_EQ(c.racc, code) << where;
  EXPECT_EQ(c.rgacc, code) << where;
}

TEST(ApiEpochs, RequestOperationsOnlyInPassiveTargetEpochs) {
  run_ranks(3, [](int rank, int) {
    std::int64_t* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(64, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_set_errhandler(win, RMA_ERRORS_RETURN), RMA_SUCCESS);
    const int peer = (rank + 1) % 3, other = (rank + 2) % 3;
    expect_all(request_ops(win, peer), RMA_ERR_RMA_SYNC, "no epoch");
    EXPECT_NE(api_test::last_message().find("passive-target epoch"), std::string::npos)
        << api_test::last_message();
    expect_all(request_ops(win, RMA_PROC_NULL), RMA_ERR_RMA_SYNC, "no epoch, RMA_PROC_NULL");

    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    expect_all(request_ops(win, peer), RMA_ERR_RMA_SYNC, "fence epoch");
    ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, win), RMA_SUCCESS);

    // A lock to another rank does not cover this one.
    ASSERT_EQ(rma_win_lock(RMA_LOCK_SHARED, other, 0, win), RMA_SUCCESS);
    expect_all(request_ops(win, peer), RMA_ERR_RMA_SYNC, "lock to another rank");
    expect_all(request_ops(win, RMA_PROC_NULL), RMA_SUCCESS, "a lock, RMA_PROC_NULL");
    ASSERT_EQ(rma_win_unlock(other, win), RMA_SUCCESS);

    ASSERT_EQ(rma_win_lock(RMA_LOCK_SHARED, peer, 0, win), RMA_SUCCESS);
    expect_all(request_ops(win, peer), RMA_SUCCESS, "lock to the target");
    ASSERT_EQ(rma_win_unlock(peer, win), RMA_SUCCESS);

    ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
    expect_all(request_ops(win, peer), RMA_SUCCESS, "lock_all");
    // Inside the epoch the operation's own checks run.
    std::int64_t v[2] = {0, 0};
    rma_Request q = RMA_REQUEST_NULL;
    EXPECT_EQ(rma_rput(v, 2, RMA_INT64_T, peer, 7, 2, RMA_INT64_T, win, &q), RMA_ERR_RMA_RANGE);
    EXPECT_EQ(q, RMA_REQUEST_NULL);
    EXPECT_EQ(rma_rput(v, 1, RMA_INT64_T, 3, 0, 1, RMA_INT64_T, win, &q), RMA_ERR_RANK);
    ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);

    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_sync(win), RMA_SUCCESS);
    // Three epochs with four additions each (rput wrote 1 first) from the left neighbour.
    EXPECT_EQ(base[0], 3);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

TEST(ApiEpochs, ProcNullNeedsAnAccessEpoch) {
  run_ranks(2, [](int, int) {
    std::int64_t* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(64, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_set_errhandler(win, RMA_ERRORS_RETURN), RMA_SUCCESS);
    std::int64_t v = 1, r = 0, c = 0;
    auto all = [&](int code, const char* where) {
      EXPECT_EQ(rma_put(&v, 1, RMA_INT64_T, RMA_PROC_NULL, 0, 1, RMA_INT64_T, win), code) << where;
      EXPECT_EQ(rma_get(&r, 1, RMA_INT64_T, RMA_PROC_NULL, 0, 1, RMA_INT64_T, win), code) << where;
      EXPECT_EQ(rma_accumulate(&v, 1, RMA_INT64_T, RMA_PROC_NULL, 0, 1, RMA_INT64_T, RMA_SUM, win), code)
          << where;
      EXPECT_EQ(rma_get_accumulate(&v, 1, RMA_INT64_T, &r, 1, RMA_INT64_T, RMA_PROC_NULL, 0, 1, RMA_INT64_T,
                                   RMA_SUM, win),
                code)
          << where;
      EXPECT_EQ(rma_fetch_and_op(&v, &r, RMA_INT64_T, RMA_PROC_NULL, 0, RMA_SUM, win), code) << where;
      EXPECT_EQ(rma_compare_and_swap(&v, &c, &r, RMA_INT64_T, RMA_PROC_NULL, 0, win), code) << where;
    };
    all(RMA_ERR_RMA_SYNC, "no epoch");
    EXPECT_NE(api_test::last_message().find("RMA_PROC_NULL outside an access epoch"), std::string::npos)
        << api_test::last_message();
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    all(RMA_SUCCESS, "fence epoch");
    ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, win), RMA_SUCCESS);
    all(RMA_ERR_RMA_SYNC, "after the closing fence");
    ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
    all(RMA_SUCCESS, "lock_all");
    ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
    EXPECT_EQ(r, 0);  // nothing was fetched from RMA_PROC_NULL
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

}  // namespace
