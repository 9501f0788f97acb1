// rma_init / rma_finalize as a program uses them: here without a launcher,
// so open_bootstrap() gives a singleton job of one rank.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>

#include "rma/rma.h"

namespace {

TEST(ApiInitDeathTest, SingletonProcessInitWindowFinalize) {
  ::setenv("RMA_PROVIDER", "self", 1);
  int flag = -1;
  ASSERT_EQ(rma_initialized(&flag), RMA_SUCCESS);
  EXPECT_EQ(flag, 0);
  ASSERT_EQ(rma_init(nullptr, nullptr), RMA_SUCCESS);
  int rank = -1, size = -1;
  ASSERT_EQ(rma_comm_rank(RMA_COMM_WORLD, &rank), RMA_SUCCESS);
  ASSERT_EQ(rma_comm_size(RMA_COMM_WORLD, &size), RMA_SUCCESS);
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(size, 1);
  std::int64_t* base = nullptr;
  rma_Win win = RMA_WIN_NULL;
  ASSERT_EQ(rma_win_allocate(64, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
  ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
  const std::int64_t v = 42;
  ASSERT_EQ(rma_put(&v, 1, RMA_INT64_T, 0, 3, 1, RMA_INT64_T, win), RMA_SUCCESS);
  ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
  EXPECT_EQ(base[3], 42);
  ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  ASSERT_EQ(rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN), RMA_SUCCESS);
  EXPECT_EQ(rma_init(nullptr, nullptr), RMA_ERR_OTHER) << "a second rma_init must fail";
  ASSERT_EQ(rma_finalize(), RMA_SUCCESS);
  ASSERT_EQ(rma_finalized(&flag), RMA_SUCCESS);
  EXPECT_EQ(flag, 1);
  // As in MPI, the library starts once; after rma_finalize the default
  // (fatal) handler ends the program.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH((void)rma_init(nullptr, nullptr), "rma_init after rma_finalize");
}

}  // namespace
