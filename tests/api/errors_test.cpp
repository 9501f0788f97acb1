// Argument and bounds checks at the origin, error handlers (fatal, return,
// custom), error classes and strings.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "api_test_util.hpp"

namespace {

using api_test::last_message;
using api_test::run_ranks;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(ApiErrors, OutOfBoundsIsRejectedAtTheOriginAndTheTargetIsUntouched) {
  run_ranks(2, [](int rank, int) {
    unsigned char* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(64, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    std::memset(base, 0xab, 64);
    rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    const int peer = 1 - rank;
    std::uint64_t v = 0, r = 0, c = 0;
    EXPECT_EQ(rma_put(&v, 1, RMA_UINT64_T, peer, 60, 1, RMA_UINT64_T, win), RMA_ERR_RMA_RANGE);
    const std::string m = last_message();
    EXPECT_TRUE(contains(m, "rma_put on rank " + std::to_string(rank))) << m;
    EXPECT_TRUE(contains(m, "RMA_ERR_RMA_RANGE")) << m;
    EXPECT_TRUE(contains(m, "to rank " + std::to_string(peer))) << m;
    EXPECT_TRUE(contains(m, "[60, 68)")) << m;
    EXPECT_TRUE(contains(m, "64 bytes")) << m;
    EXPECT_EQ(rma_put(&v, 1, RMA_UINT64_T, peer, -1, 1, RMA_UINT64_T, win), RMA_ERR_RMA_RANGE);
    EXPECT_EQ(rma_get(&v, 1, RMA_UINT64_T, peer, 57, 1, RMA_UINT64_T, win), RMA_ERR_RMA_RANGE);
    EXPECT_EQ(rma_accumulate(&v, 1, RMA_UINT64_T, peer, 64, 1, RMA_UINT64_T, RMA_SUM, win), RMA_ERR_RMA_RANGE);
    EXPECT_EQ(rma_accumulate(&v, 1, RMA_UINT64_T, peer, 60, 1, RMA_UINT64_T, RMA_MAX, win), RMA_ERR_RMA_RANGE);
    EXPECT_EQ(rma_get_accumulate(&v, 1, RMA_UINT64_T, &r, 1, RMA_UINT64_T, peer, 59, 1, RMA_UINT64_T,
                                 RMA_SUM, win), RMA_ERR_RMA_RANGE);
    EXPECT_EQ(rma_fetch_and_op(&v, &r, RMA_UINT64_T, peer, 1000, RMA_SUM, win), RMA_ERR_RMA_RANGE);
    EXPECT_EQ(rma_compare_and_swap(&v, &c, &r, RMA_UINT64_T, peer, 61, win), RMA_ERR_RMA_RANGE);
    // A derived type whose extent runs past the end: 4 blocks 16 bytes apart.
    rma_Datatype strided;
    ASSERT_EQ(rma_type_vector(4, 1, 2, RMA_UINT64_T, &strided), RMA_SUCCESS);
    ASSERT_EQ(rma_type_commit(&strided), RMA_SUCCESS);
    std::uint64_t four[4] = {1, 2, 3, 4};
    EXPECT_EQ(rma_put(four, 4, RMA_UINT64_T, peer, 9, 1, strided, win), RMA_ERR_RMA_RANGE);  // [9, 65)
    EXPECT_EQ(rma_put(four, 4, RMA_UINT64_T, peer, 0, 1, strided, win), RMA_SUCCESS);  // [0, 56) fits
    rma_Request req = RMA_REQUEST_NULL;
    // Request-based operations need a passive-target epoch (their bounds
    // check inside one: api_hardening_test, ApiEpochs).
    EXPECT_EQ(rma_rput(four, 4, RMA_UINT64_T, peer, 16, 1, strided, win, &req), RMA_ERR_RMA_SYNC);
    EXPECT_EQ(req, RMA_REQUEST_NULL);
    rma_type_free(&strided);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    // Only the one valid put landed: bytes 56..63 and the gaps keep 0xab.
    for (int i = 0; i < 4; ++i) {
      std::uint64_t got;
      std::memcpy(&got, base + 16 * i, 8);
      EXPECT_EQ(got, static_cast<std::uint64_t>(i + 1));
      for (int k = 8; k < 16; ++k) EXPECT_EQ(base[16 * i + k], 0xab) << 16 * i + k;
    }
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

TEST(ApiErrors, ArgumentsAreCheckedBeforeAnythingIsSent) {
  run_ranks(2, [](int rank, int) {
    std::int32_t* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(64, 4, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    for (int i = 0; i < 16; ++i) base[i] = 77;
    rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    std::int32_t v[4] = {1, 2, 3, 4};
    const int peer = 1 - rank;
    EXPECT_EQ(rma_put(v, 1, RMA_INT32_T, 2, 0, 1, RMA_INT32_T, win), RMA_ERR_RANK);
    EXPECT_EQ(rma_put(v, 1, RMA_INT32_T, -5, 0, 1, RMA_INT32_T, win), RMA_ERR_RANK);
    EXPECT_EQ(rma_put(v, -1, RMA_INT32_T, peer, 0, 1, RMA_INT32_T, win), RMA_ERR_COUNT);
    EXPECT_EQ(rma_put(v, 1, RMA_INT32_T, peer, 0, -1, RMA_INT32_T, win), RMA_ERR_COUNT);
    EXPECT_EQ(rma_put(v, 1, RMA_DATATYPE_NULL, peer, 0, 1, RMA_INT32_T, win), RMA_ERR_TYPE);
    EXPECT_EQ(rma_put(v, 2, RMA_INT32_T, peer, 0, 1, RMA_INT32_T, win), RMA_ERR_TYPE);  // sizes differ
    EXPECT_TRUE(contains(last_message(), "8 bytes")) << last_message();
    rma_Datatype uncommitted;
    ASSERT_EQ(rma_type_contiguous(2, RMA_INT32_T, &uncommitted), RMA_SUCCESS);
    EXPECT_EQ(rma_put(v, 2, RMA_INT32_T, peer, 0, 1, uncommitted, win), RMA_ERR_TYPE);
    EXPECT_TRUE(contains(last_message(), "not committed")) << last_message();
    rma_type_free(&uncommitted);
    EXPECT_EQ(rma_put(nullptr, 1, RMA_INT32_T, peer, 0, 1, RMA_INT32_T, win), RMA_ERR_BUFFER);
    EXPECT_EQ(rma_get(nullptr, 1, RMA_INT32_T, peer, 0, 1, RMA_INT32_T, win), RMA_ERR_BUFFER);
    EXPECT_EQ(rma_rput(v, 1, RMA_INT32_T, peer, 0, 1, RMA_INT32_T, win, nullptr), RMA_ERR_REQUEST);
    rma_Request bogus = reinterpret_cast<rma_Request>(v);
    EXPECT_EQ(rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN), RMA_SUCCESS);
    EXPECT_EQ(rma_wait(&bogus, RMA_STATUS_IGNORE), RMA_ERR_REQUEST);
    // Window handles: the comm handler reports.
    EXPECT_EQ(rma_put(v, 1, RMA_INT32_T, peer, 0, 1, RMA_INT32_T, RMA_WIN_NULL), RMA_ERR_WIN);
    EXPECT_TRUE(contains(last_message(), "RMA_WIN_NULL")) << last_message();
    EXPECT_EQ(rma_win_fence(0, reinterpret_cast<rma_Win>(v)), RMA_ERR_WIN);
    rma_Win w2 = RMA_WIN_NULL;
    int* b2 = nullptr;
    EXPECT_EQ(rma_win_allocate(-1, 4, RMA_INFO_NULL, RMA_COMM_WORLD, &b2, &w2), RMA_ERR_SIZE);
    EXPECT_EQ(rma_win_allocate(8, 0, RMA_INFO_NULL, RMA_COMM_WORLD, &b2, &w2), RMA_ERR_DISP);
    // (Windows on RMA_COMM_SELF are valid since communicators came: comm_test.cpp.)
    EXPECT_EQ(rma_win_allocate(8, 4, RMA_INFO_NULL, reinterpret_cast<rma_Comm>(v), &b2, &w2), RMA_ERR_COMM);
    EXPECT_EQ(rma_win_allocate(8, 4, RMA_INFO_NULL, RMA_COMM_NULL, &b2, &w2), RMA_ERR_COMM);
    EXPECT_EQ(rma_win_allocate(8, 4, reinterpret_cast<rma_Info>(v), RMA_COMM_WORLD, &b2, &w2), RMA_ERR_INFO);
    EXPECT_EQ(rma_win_create(nullptr, 8, 4, RMA_INFO_NULL, RMA_COMM_WORLD, &w2), RMA_ERR_BASE);
    EXPECT_EQ(rma_win_attach(win, v, 16), RMA_ERR_RMA_FLAVOR);
    EXPECT_EQ(w2, RMA_WIN_NULL);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    for (int i = 0; i < 16; ++i) EXPECT_EQ(base[i], 77) << i;  // nothing was sent
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
    EXPECT_EQ(rma_win_fence(0, win), RMA_ERR_WIN);
  });
}

std::atomic<int> g_calls{0};
std::atomic<int> g_last_code{0};
void counting_handler(rma_Win* win, int* code, ...) {
  EXPECT_NE(win, nullptr);
  g_calls.fetch_add(1);
  g_last_code.store(*code);
}

TEST(ApiErrors, CustomHandlerIsCalledWithTheCode) {
  g_calls = 0;
  run_ranks(1, [](int, int) {
    int* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(16, 4, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    rma_Errhandler eh = RMA_ERRHANDLER_NULL;
    ASSERT_EQ(rma_win_create_errhandler(counting_handler, &eh), RMA_SUCCESS);
    ASSERT_EQ(rma_win_set_errhandler(win, eh), RMA_SUCCESS);
    ASSERT_EQ(rma_errhandler_free(&eh), RMA_SUCCESS);  // the window keeps it alive
    rma_Errhandler got = RMA_ERRHANDLER_NULL;
    ASSERT_EQ(rma_win_get_errhandler(win, &got), RMA_SUCCESS);
    EXPECT_NE(got, RMA_ERRORS_ARE_FATAL);
    ASSERT_EQ(rma_errhandler_free(&got), RMA_SUCCESS);
    int v = 1;
    EXPECT_EQ(rma_put(&v, 1, RMA_INT, 0, 0, 1, RMA_INT, win), RMA_ERR_RMA_SYNC);
    EXPECT_EQ(g_calls.load(), 1);
    EXPECT_EQ(g_last_code.load(), RMA_ERR_RMA_SYNC);
    EXPECT_EQ(rma_win_call_errhandler(win, RMA_ERR_OTHER), RMA_ERR_OTHER);
    EXPECT_EQ(g_calls.load(), 2);
    EXPECT_EQ(g_last_code.load(), RMA_ERR_OTHER);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

TEST(ApiErrors, ClassesAndStrings) {
  char text[RMA_MAX_ERROR_STRING];
  int len = 0;
  for (int code : {RMA_ERR_COMM, RMA_ERR_GROUP, RMA_ERR_REQUEST, RMA_ERR_INFO, RMA_ERR_NO_MEM, RMA_ERR_BASE,
                   RMA_ERR_LOCKTYPE, RMA_ERR_KEYVAL, RMA_ERR_SIZE, RMA_ERR_DISP, RMA_ERR_ASSERT,
                   RMA_ERR_RMA_ATTACH, RMA_ERR_RMA_FLAVOR, RMA_ERR_RMA_RANGE, RMA_ERR_RMA_SYNC, RMA_ERR_RMA_SHARED}) {
    ASSERT_EQ(rma_error_string(code, text, &len), RMA_SUCCESS) << code;
    EXPECT_EQ(static_cast<std::size_t>(len), std::strlen(text));
    EXPECT_EQ(std::string(text).rfind("RMA_ERR_", 0), 0u) << text;
    int cls = -1;
    ASSERT_EQ(rma_error_class(code, &cls), RMA_SUCCESS);
    EXPECT_EQ(cls, code);
  }
  ASSERT_EQ(rma_error_string(RMA_ERR_RMA_RANGE, text, &len), RMA_SUCCESS);
  EXPECT_TRUE(contains(text, "outside the window")) << text;
}

TEST(ApiErrorsDeathTest, FatalHandlerNamesCallRankAndProblemThenAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        run_ranks(1, [](int, int) {
          int* base = nullptr;
          rma_Win win = RMA_WIN_NULL;
          if (rma_win_allocate(16, 4, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win) != RMA_SUCCESS) return;
          (void)rma_win_fence(0, win);
          int v = 1;
          (void)rma_put(&v, 1, RMA_INT, 0, 4, 1, RMA_INT, win);  // [16, 20): outside
        });
      },
      "rma_put on rank 0: RMA_ERR_RMA_RANGE: .*outside the window of rank 0, which is 16 bytes");
}

TEST(ApiErrorsDeathTest, CallsBeforeInitAreFatalByDefault) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        int r = 0;
        (void)rma_comm_rank(RMA_COMM_WORLD, &r);
      },
      "rma_comm_rank on rank \\?: RMA_ERR_OTHER: librma is not initialized");
}

}  // namespace
