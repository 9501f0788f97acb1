// Origin and target checks with datatypes whose (count - 1) x extent does
// not fit in 64 bits (issue 12, defect 7): a clear error class before
// anything is posted, the target untouched. Under UBSan the old code
// aborted on the signed overflow in the footprint; without it, it posted
// atomics to wrapped addresses.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>

#include "api_test_util.hpp"

namespace {

using api_test::run_ranks;

rma_Datatype resized_int64(rma_Aint lb, rma_Aint extent) {
  rma_Datatype t = RMA_DATATYPE_NULL;
  EXPECT_EQ(rma_type_create_resized(RMA_INT64_T, lb, extent, &t), RMA_SUCCESS);
  EXPECT_EQ(rma_type_commit(&t), RMA_SUCCESS);
  return t;
}

TEST(ApiOverflow, HugeExtentsAreRejectedBeforeAnythingIsSent) {
  run_ranks(2, [](int rank, int) {
    std::int64_t* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(64, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_set_errhandler(win, RMA_ERRORS_RETURN), RMA_SUCCESS);
    for (int i = 0; i < 8; ++i) base[i] = 77;
    const rma_Aint big = rma_Aint{1} << 62;
    rma_Datatype up = resized_int64(0, big);      // 3 x 2^62 overflows
    rma_Datatype down = resized_int64(0, -big);   // 3 x -2^62 overflows
    rma_Datatype far = resized_int64(0, big / 2); // 3 x 2^61 fits, far outside any window
    rma_Datatype low = RMA_DATATYPE_NULL;         // data 2^62 bytes below its buffer
    const int one = 1;
    const rma_Aint below = -big;
    ASSERT_EQ(rma_type_create_hindexed(1, &one, &below, RMA_INT64_T, &low), RMA_SUCCESS);
    ASSERT_EQ(rma_type_commit(&low), RMA_SUCCESS);
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
    const int peer = 1 - rank;
    std::int64_t v[4] = {1, 2, 3, 4}, out[4] = {0, 0, 0, 0};
    for (rma_Datatype huge : {up, down}) {
      EXPECT_EQ(rma_accumulate(v, 4, RMA_INT64_T, peer, 0, 4, huge, RMA_SUM, win), RMA_ERR_COUNT);
      EXPECT_NE(api_test::last_message().find("overflows"), std::string::npos) << api_test::last_message();
      EXPECT_EQ(rma_accumulate(v, 4, huge, peer, 0, 4, RMA_INT64_T, RMA_SUM, win), RMA_ERR_COUNT);
      EXPECT_EQ(rma_get_accumulate(v, 4, RMA_INT64_T, out, 4, huge, peer, 0, 4, RMA_INT64_T, RMA_SUM, win),
                RMA_ERR_COUNT);
      EXPECT_EQ(rma_put(v, 4, RMA_INT64_T, peer, 0, 4, huge, win), RMA_ERR_COUNT);
      EXPECT_EQ(rma_put(v, 4, huge, peer, 0, 4, RMA_INT64_T, win), RMA_ERR_COUNT);
      EXPECT_EQ(rma_get(out, 4, huge, peer, 0, 4, RMA_INT64_T, win), RMA_ERR_COUNT);
      EXPECT_EQ(rma_get(out, 4, RMA_INT64_T, peer, 0, 4, huge, win), RMA_ERR_COUNT);
      rma_Request req = RMA_REQUEST_NULL;
      EXPECT_EQ(rma_raccumulate(v, 4, RMA_INT64_T, peer, 0, 4, huge, RMA_SUM, win, &req), RMA_ERR_COUNT);
    }
    // Fits in 64 bits but not in the window.
    EXPECT_EQ(rma_accumulate(v, 4, RMA_INT64_T, peer, 0, 4, far, RMA_SUM, win), RMA_ERR_RMA_RANGE);
    EXPECT_EQ(rma_put(v, 4, RMA_INT64_T, peer, 0, 4, far, win), RMA_ERR_RMA_RANGE);
    // An origin buffer reaching 2^62 bytes below its address wraps.
    EXPECT_EQ(rma_put(v, 1, low, peer, 0, 1, RMA_INT64_T, win), RMA_ERR_BUFFER);
    EXPECT_EQ(rma_accumulate(v, 1, low, peer, 0, 1, RMA_INT64_T, RMA_SUM, win), RMA_ERR_BUFFER);
    // The window stays usable and untouched.
    EXPECT_EQ(rma_get(out, 1, RMA_INT64_T, peer, 0, 1, RMA_INT64_T, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
    EXPECT_EQ(out[0], 77);
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_sync(win), RMA_SUCCESS);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(base[i], 77) << i;
    for (rma_Datatype* t : {&up, &down, &far, &low}) EXPECT_EQ(rma_type_free(t), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

}  // namespace
