// The C++ API: RAII windows, typed calls, exceptions on request.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "api_test_util.hpp"
#include "rma/rma.hpp"

namespace {

using api_test::run_ranks;

TEST(ApiCxx, TypedCallsAndRaii) {
  run_ranks(3, [](int rank, int size) {
    EXPECT_EQ(rma::rank(), rank);
    EXPECT_EQ(rma::size(), size);
    auto win = rma::Window::allocate<std::int64_t>(8);
    EXPECT_EQ(win.size_bytes(), 64u);
    std::int64_t* mine = win.data<std::int64_t>();
    for (int i = 0; i < 8; ++i) mine[i] = 0;
    ASSERT_EQ(win.fence(), RMA_SUCCESS);
    const std::int64_t v[2] = {rank + 1, rank + 2};
    ASSERT_EQ(win.put(v, 2, (rank + 1) % size, 2), RMA_SUCCESS);
    ASSERT_EQ(win.accumulate(v, 1, 0, 7, RMA_SUM), RMA_SUCCESS);
    ASSERT_EQ(win.fence(), RMA_SUCCESS);
    const int left = (rank + size - 1) % size;
    EXPECT_EQ(mine[2], left + 1);
    EXPECT_EQ(mine[3], left + 2);
    if (rank == 0) { EXPECT_EQ(mine[7], size * (size + 1) / 2); }
    ASSERT_EQ(win.fence(), RMA_SUCCESS);
    {
      rma::Window::Lock lock(win, RMA_LOCK_EXCLUSIVE, 0);
      ASSERT_TRUE(lock.locked());
      double d = 0;
      (void)d;
      std::int64_t old = 0;
      ASSERT_EQ(win.fetch_and_op(std::int64_t{10}, old, 0, 6, RMA_SUM), RMA_SUCCESS);
      std::int64_t seen = -1;
      ASSERT_EQ(win.compare_and_swap(std::int64_t{5}, std::int64_t{-7}, seen, 0, 5), RMA_SUCCESS);
    }
    rma::barrier();
    if (rank == 0) { EXPECT_EQ(mine[6], 10 * size); }
    rma::barrier();
  });
}

TEST(ApiCxx, ThrowingHandlerRaisesRmaError) {
  run_ranks(2, [](int rank, int) {
    auto win = rma::Window::allocate<int>(4);
    win.throw_exceptions();
    int v = 1;
    try {
      win.put(&v, 1, 1 - rank, 0);  // no epoch
      ADD_FAILURE() << "no exception";
    } catch (const rma::Error& e) {
      EXPECT_EQ(e.code(), RMA_ERR_RMA_SYNC);
      EXPECT_NE(std::string(e.what()).find("rma_put on rank " + std::to_string(rank)), std::string::npos) << e.what();
    }
    win.fence();
    try {
      win.put(&v, 1, 1 - rank, 4);  // one past the end
      ADD_FAILURE() << "no exception";
    } catch (const rma::Error& e) {
      EXPECT_EQ(e.code(), RMA_ERR_RMA_RANGE);
      EXPECT_NE(std::string(e.what()).find("16 bytes"), std::string::npos) << e.what();
    }
    win.fence();
    // Creation errors throw once RMA_COMM_WORLD returns codes.
    ASSERT_EQ(rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN), RMA_SUCCESS);
    EXPECT_THROW(rma::Window::create<int>(nullptr, 4), rma::Error);
  });
}

TEST(ApiCxx, CommunicatorsGroupsAndWindowsOnThem) {
  run_ranks(4, [](int rank, int) {
    rma::Comm world = rma::Comm::world();
    EXPECT_EQ(world.rank(), rank);
    rma::Comm half = world.split(rank / 2, rank);
    ASSERT_FALSE(half.is_null());
    EXPECT_EQ(half.size(), 2);
    EXPECT_EQ(half.rank(), rank % 2);
    rma::Comm node = world.split_shared(0);
    EXPECT_EQ(node.size(), 4);
    rma::Comm none = world.split(rank == 0 ? RMA_UNDEFINED : 1, 0);
    EXPECT_EQ(none.is_null(), rank == 0);
    rma::Group g = world.group().excl({0});
    EXPECT_EQ(g.size(), 3);
    EXPECT_EQ(g.rank(), rank == 0 ? RMA_UNDEFINED_RANK : rank - 1);
    auto win = rma::Window::allocate<std::int64_t>(2, half);
    win.set_name("half");
    EXPECT_EQ(win.name(), "half");
    std::int64_t* mine = win.data<std::int64_t>();
    mine[0] = mine[1] = 0;
    ASSERT_EQ(win.fence(), RMA_SUCCESS);
    const std::int64_t v = 10 + rank;
    ASSERT_EQ(win.put(&v, 1, 1 - half.rank(), 0), RMA_SUCCESS);
    ASSERT_EQ(win.fence(), RMA_SUCCESS);
    EXPECT_EQ(mine[0], 10 + (rank ^ 1));
    half.barrier();
  });
}

}  // namespace
