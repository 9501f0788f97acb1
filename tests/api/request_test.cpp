// Requests (window/requests.cpp): request_free, waitany, waitsome, testall,
// testany, testsome, and RMA_ERR_IN_STATUS with per-request statuses.
// Real operations on the self provider complete quickly and in order, so
// the out-of-order and failure cases also drive requests whose state the
// test sets (pending count, error) through the context's request pool.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "api_test_util.hpp"
#include "window/context.hpp"

namespace {

using api_test::last_message;
using api_test::run_ranks;

// A request whose completion the test controls.
rma_Request fake_request(int target, std::uint32_t pending, bool failed) {
  rma::api::Context* ctx = rma::api::current_context();
  rma_request_s* r = ctx->new_request();
  r->target = target;
  r->req.pending = pending;
  if (failed) {
    r->req.error = rma::WcStatus::kRemAccessErr;
    r->req.error_peer = target;
  }
  return r;
}

TEST(ApiRequest, RealOperationsThroughEveryCompletionCall) {
  run_ranks(2, [](int rank, int) {
    std::int64_t* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(64 * 8, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    const int peer = 1 - rank;
    ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
    std::vector<std::int64_t> src(64);
    for (int i = 0; i < 64; ++i) src[static_cast<std::size_t>(i)] = rank * 1000 + i;
    rma_Request reqs[8];
    for (int i = 0; i < 8; ++i) {
      ASSERT_EQ(rma_rput(&src[static_cast<std::size_t>(8 * i)], 8, RMA_INT64_T, peer, 8 * i, 8, RMA_INT64_T, win,
                         &reqs[i]),
                RMA_SUCCESS);
    }
    // waitany until all are done: every index once.
    std::vector<int> seen(8, 0);
    for (int k = 0; k < 8; ++k) {
      int idx = -1;
      rma_Status st;
      ASSERT_EQ(rma_waitany(8, reqs, &idx, &st), RMA_SUCCESS);
      ASSERT_GE(idx, 0);
      ASSERT_LT(idx, 8);
      ++seen[static_cast<std::size_t>(idx)];
      EXPECT_EQ(reqs[idx], RMA_REQUEST_NULL);
      EXPECT_EQ(st.RMA_SOURCE, peer);
      EXPECT_EQ(st.RMA_ERROR, RMA_SUCCESS);
    }
    for (int v : seen) EXPECT_EQ(v, 1);
    int idx = 0;
    ASSERT_EQ(rma_waitany(8, reqs, &idx, RMA_STATUS_IGNORE), RMA_SUCCESS);
    EXPECT_EQ(idx, RMA_UNDEFINED);  // all null

    // rget + waitsome / testsome / testall / testany.
    std::vector<std::int64_t> back(64, -1);
    for (int i = 0; i < 4; ++i) {
      ASSERT_EQ(rma_rget(&back[static_cast<std::size_t>(16 * i)], 16, RMA_INT64_T, peer, 16 * i, 16, RMA_INT64_T,
                         win, &reqs[i]),
                RMA_SUCCESS);
    }
    int done = 0;
    while (done < 4) {
      int out = 0, indices[4];
      rma_Status sts[4];
      ASSERT_EQ(rma_waitsome(4, reqs, &out, indices, sts), RMA_SUCCESS);
      ASSERT_GE(out, 1);
      done += out;
    }
    int out = 0, indices[4];
    ASSERT_EQ(rma_waitsome(4, reqs, &out, indices, RMA_STATUSES_IGNORE), RMA_SUCCESS);
    EXPECT_EQ(out, RMA_UNDEFINED);
    for (int i = 0; i < 64; ++i) EXPECT_EQ(back[static_cast<std::size_t>(i)], rank * 1000 + i);
    ASSERT_EQ(rma_rget(back.data(), 8, RMA_INT64_T, peer, 0, 8, RMA_INT64_T, win, &reqs[0]), RMA_SUCCESS);
    reqs[1] = RMA_REQUEST_NULL;
    int flag = 0;
    rma_Status sts[2];
    while (!flag) ASSERT_EQ(rma_testall(2, reqs, &flag, sts), RMA_SUCCESS);
    EXPECT_EQ(reqs[0], RMA_REQUEST_NULL);
    EXPECT_EQ(sts[1].RMA_SOURCE, RMA_PROC_NULL);  // the empty status
    ASSERT_EQ(rma_rget(back.data(), 8, RMA_INT64_T, peer, 0, 8, RMA_INT64_T, win, &reqs[1]), RMA_SUCCESS);
    flag = 0;
    while (!flag) ASSERT_EQ(rma_testany(2, reqs, &idx, &flag, RMA_STATUS_IGNORE), RMA_SUCCESS);
    EXPECT_EQ(idx, 1);
    ASSERT_EQ(rma_rget(back.data(), 8, RMA_INT64_T, peer, 0, 8, RMA_INT64_T, win, &reqs[0]), RMA_SUCCESS);
    out = 0;
    while (out == 0) ASSERT_EQ(rma_testsome(2, reqs, &out, indices, RMA_STATUSES_IGNORE), RMA_SUCCESS);
    EXPECT_EQ(out, 1);
    EXPECT_EQ(indices[0], 0);
    // request_free: the operation still happens.
    const std::int64_t marker = 777;
    ASSERT_EQ(rma_rput(&marker, 1, RMA_INT64_T, peer, 63, 1, RMA_INT64_T, win, &reqs[0]), RMA_SUCCESS);
    ASSERT_EQ(rma_request_free(&reqs[0]), RMA_SUCCESS);
    EXPECT_EQ(reqs[0], RMA_REQUEST_NULL);
    ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_sync(win), RMA_SUCCESS);
    EXPECT_EQ(base[63], 777);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

TEST(ApiRequest, OutOfOrderCompletionAndErrInStatus) {
  run_ranks(1, [](int, int) {
    ASSERT_EQ(rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN), RMA_SUCCESS);
    // Request 2 completes first, then 0; 1 stays in flight.
    rma_Request r[3] = {fake_request(0, 1, false), fake_request(0, 1, false), fake_request(0, 0, false)};
    int idx = -1, flag = -1;
    ASSERT_EQ(rma_waitany(3, r, &idx, RMA_STATUS_IGNORE), RMA_SUCCESS);
    EXPECT_EQ(idx, 2);
    ASSERT_EQ(rma_testall(3, r, &flag, RMA_STATUSES_IGNORE), RMA_SUCCESS);
    EXPECT_EQ(flag, 0);
    EXPECT_NE(r[0], RMA_REQUEST_NULL);  // testall completes all or none
    ASSERT_EQ(rma_testany(3, r, &idx, &flag, RMA_STATUS_IGNORE), RMA_SUCCESS);
    EXPECT_EQ(flag, 0);
    EXPECT_EQ(idx, RMA_UNDEFINED);
    r[0]->req.pending = 0;
    int out = 0, indices[3];
    ASSERT_EQ(rma_testsome(3, r, &out, indices, RMA_STATUSES_IGNORE), RMA_SUCCESS);
    ASSERT_EQ(out, 1);
    EXPECT_EQ(indices[0], 0);
    r[1]->req.pending = 0;
    ASSERT_EQ(rma_wait(&r[1], RMA_STATUS_IGNORE), RMA_SUCCESS);

    // One of three fails: RMA_ERR_IN_STATUS, and each status says which.
    rma_Request f[3] = {fake_request(0, 0, false), fake_request(5, 0, true), RMA_REQUEST_NULL};
    rma_Status st[3];
    for (auto& s : st) s.RMA_ERROR = -1;
    EXPECT_EQ(rma_waitall(3, f, st), RMA_ERR_IN_STATUS);
    EXPECT_EQ(st[0].RMA_ERROR, RMA_SUCCESS);
    EXPECT_EQ(st[1].RMA_ERROR, RMA_ERR_OTHER);
    EXPECT_EQ(st[1].RMA_SOURCE, 5);
    EXPECT_EQ(st[2].RMA_ERROR, RMA_SUCCESS);
    EXPECT_EQ(f[1], RMA_REQUEST_NULL);
    rma_Request g[2] = {fake_request(0, 0, true), fake_request(0, 0, false)};
    EXPECT_EQ(rma_waitsome(2, g, &out, indices, st), RMA_ERR_IN_STATUS);
    EXPECT_EQ(out, 2);
    EXPECT_EQ(st[0].RMA_ERROR, RMA_ERR_OTHER);
    EXPECT_EQ(st[1].RMA_ERROR, RMA_SUCCESS);
    // Single completion returns the request's error itself.
    rma_Request h = fake_request(0, 0, true);
    EXPECT_EQ(rma_wait(&h, RMA_STATUS_IGNORE), RMA_ERR_OTHER);
    EXPECT_NE(last_message().find("REM_ACCESS_ERR"), std::string::npos) << last_message();

    // request_free of one in flight: released when it completes.
    rma_Request inflight = fake_request(0, 1, false);
    rma_request_s* raw = inflight;
    ASSERT_EQ(rma_request_free(&inflight), RMA_SUCCESS);
    EXPECT_EQ(inflight, RMA_REQUEST_NULL);
    raw->req.pending = 0;

    // Bad input.
    rma_Request freed = raw;
    EXPECT_EQ(rma_wait(&freed, RMA_STATUS_IGNORE), RMA_ERR_REQUEST);
    EXPECT_EQ(rma_request_free(&freed), RMA_ERR_REQUEST);
    rma_Request none = RMA_REQUEST_NULL;
    EXPECT_EQ(rma_request_free(&none), RMA_ERR_REQUEST);
    EXPECT_EQ(rma_waitall(-1, f, RMA_STATUSES_IGNORE), RMA_ERR_COUNT);
    EXPECT_EQ(rma_waitany(1, nullptr, &idx, RMA_STATUS_IGNORE), RMA_ERR_ARG);
    rma_Request mixed[2] = {RMA_REQUEST_NULL, freed};
    EXPECT_EQ(rma_testsome(2, mixed, &out, indices, RMA_STATUSES_IGNORE), RMA_ERR_REQUEST);
    EXPECT_NE(last_message().find("array_of_requests[1]"), std::string::npos) << last_message();
  });
}

}  // namespace
