// Windows (create, allocate, dynamic), put and get with fence epochs,
// attributes, requests.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include "api_test_util.hpp"
#include "window/context.hpp"

namespace {

using api_test::run_ranks;

TEST(ApiWindow, InitGivesRankAndSize) {
  run_ranks(4, [](int rank, int size) {
    int r = -1, s = -1, flag = 0;
    EXPECT_EQ(rma_comm_rank(RMA_COMM_WORLD, &r), RMA_SUCCESS);
    EXPECT_EQ(rma_comm_size(RMA_COMM_WORLD, &s), RMA_SUCCESS);
    EXPECT_EQ(r, rank);
    EXPECT_EQ(s, size);
    EXPECT_EQ(rma_comm_size(RMA_COMM_SELF, &s), RMA_SUCCESS);
    EXPECT_EQ(s, 1);
    EXPECT_EQ(rma_initialized(&flag), RMA_SUCCESS);
    EXPECT_EQ(flag, 1);
    EXPECT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
  });
}

TEST(ApiWindow, AllocatePutGetFenceRing) {
  run_ranks(4, [](int rank, int size) {
    std::int32_t* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(64 * 4, 4, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    ASSERT_NE(base, nullptr);
    for (int i = 0; i < 64; ++i) base[i] = -1;
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    std::int32_t mine[8];
    for (int i = 0; i < 8; ++i) mine[i] = rank * 100 + i;
    // Into the right neighbour's slot 8*rank (small: inline path).
    ASSERT_EQ(rma_put(mine, 8, RMA_INT32_T, right, 8 * rank, 8, RMA_INT32_T, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(base[8 * left + i], left * 100 + i);
    // Read back what we wrote at the right neighbour.
    std::int32_t back[8] = {};
    ASSERT_EQ(rma_get(back, 8, RMA_INT32_T, right, 8 * rank, 8, RMA_INT32_T, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(back[i], rank * 100 + i);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
    EXPECT_EQ(win, RMA_WIN_NULL);
  });
}

TEST(ApiWindow, CreateOverUserMemoryLargeTransfers) {
  // 1 MiB: registered through the cache, many work requests.
  constexpr std::size_t kN = 1 << 17;
  run_ranks(2, [](int rank, int) {
    std::vector<std::uint64_t> mem(kN, 0);
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_create(mem.data(), static_cast<rma_Aint>(kN * 8), 8, RMA_INFO_NULL,
                             RMA_COMM_WORLD, &win),
              RMA_SUCCESS);
    std::vector<std::uint64_t> src(kN);
    std::iota(src.begin(), src.end(), static_cast<std::uint64_t>(rank) << 32);
    const int peer = 1 - rank;
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    ASSERT_EQ(rma_put(src.data(), kN, RMA_UINT64_T, peer, 0, kN, RMA_UINT64_T, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    for (std::size_t i = 0; i < kN; i += 997) ASSERT_EQ(mem[i], (std::uint64_t{static_cast<unsigned>(peer)} << 32) + i);
    std::vector<std::uint64_t> back(kN, 0);
    ASSERT_EQ(rma_get(back.data(), kN, RMA_UINT64_T, peer, 0, kN, RMA_UINT64_T, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    EXPECT_EQ(back, src);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

TEST(ApiWindow, DerivedDatatypesOnBothSides) {
  run_ranks(2, [](int rank, int) {
    double* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(100 * sizeof(double), sizeof(double), RMA_INFO_NULL, RMA_COMM_WORLD,
                               &base, &win),
              RMA_SUCCESS);
    for (int i = 0; i < 100; ++i) base[i] = 0;
    // Origin: every other double of 20; target: a column (stride 10) of 10.
    rma_Datatype every_other, column;
    ASSERT_EQ(rma_type_vector(10, 1, 2, RMA_DOUBLE, &every_other), RMA_SUCCESS);
    ASSERT_EQ(rma_type_vector(10, 1, 10, RMA_DOUBLE, &column), RMA_SUCCESS);
    ASSERT_EQ(rma_type_commit(&every_other), RMA_SUCCESS);
    ASSERT_EQ(rma_type_commit(&column), RMA_SUCCESS);
    double src[20];
    for (int i = 0; i < 20; ++i) src[i] = rank * 1000 + i;
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    ASSERT_EQ(rma_put(src, 1, every_other, 1 - rank, 3, 1, column, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    const int peer = 1 - rank;
    for (int i = 0; i < 10; ++i) EXPECT_EQ(base[3 + 10 * i], peer * 1000 + 2 * i) << i;
    EXPECT_EQ(base[4], 0.0);
    double got[20] = {};
    ASSERT_EQ(rma_get(got, 1, every_other, 1 - rank, 3, 1, column, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    for (int i = 0; i < 10; ++i) {
      EXPECT_EQ(got[2 * i], rank * 1000 + 2 * i);
      EXPECT_EQ(got[2 * i + 1], 0.0);
    }
    rma_type_free(&every_other);
    rma_type_free(&column);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

TEST(ApiWindow, AttributesAndZeroSizeWindow) {
  run_ranks(3, [](int rank, int) {
    rma_Aint size = rank == 1 ? 0 : 40;
    int* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(size, 4, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    void* b = nullptr;
    rma_Aint* sz = nullptr;
    int* du = nullptr;
    int* flavor = nullptr;
    int flag = 0;
    ASSERT_EQ(rma_win_get_attr(win, RMA_WIN_BASE, &b, &flag), RMA_SUCCESS);
    EXPECT_EQ(flag, 1);
    EXPECT_EQ(b, static_cast<void*>(base));
    ASSERT_EQ(rma_win_get_attr(win, RMA_WIN_SIZE, &sz, &flag), RMA_SUCCESS);
    EXPECT_EQ(*sz, size);
    ASSERT_EQ(rma_win_get_attr(win, RMA_WIN_DISP_UNIT, &du, &flag), RMA_SUCCESS);
    EXPECT_EQ(*du, 4);
    ASSERT_EQ(rma_win_get_attr(win, RMA_WIN_CREATE_FLAVOR, &flavor, &flag), RMA_SUCCESS);
    EXPECT_EQ(*flavor, RMA_WIN_FLAVOR_ALLOCATE);
    rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
    EXPECT_EQ(rma_win_get_attr(win, 999, &b, &flag), RMA_ERR_KEYVAL);
    // Rank 1's window is empty: any byte there is out of range.
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    int v = 7;
    EXPECT_EQ(rma_put(&v, 1, RMA_INT, 1, 0, 1, RMA_INT, win), RMA_ERR_RMA_RANGE);
    EXPECT_EQ(rma_put(&v, 0, RMA_INT, 1, 0, 0, RMA_INT, win), RMA_SUCCESS);  // nothing moves
    EXPECT_EQ(rma_put(&v, 1, RMA_INT, RMA_PROC_NULL, 0, 1, RMA_INT, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

TEST(ApiWindow, DynamicAttachDetach) {
  run_ranks(3, [](int rank, int size) {
    rma_Win dyn = RMA_WIN_NULL, addrs = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_create_dynamic(RMA_INFO_NULL, RMA_COMM_WORLD, &dyn), RMA_SUCCESS);
    rma_win_set_errhandler(dyn, RMA_ERRORS_RETURN);
    std::vector<std::int64_t> mem(16, -1);
    ASSERT_EQ(rma_win_attach(dyn, mem.data(), 16 * 8), RMA_SUCCESS);
    EXPECT_EQ(rma_win_attach(dyn, mem.data() + 4, 8), RMA_ERR_RMA_ATTACH);  // overlaps
    // Publish the address through an ordinary window.
    rma_Aint* table = nullptr;
    ASSERT_EQ(rma_win_allocate(size * static_cast<rma_Aint>(sizeof(rma_Aint)), sizeof(rma_Aint),
                               RMA_INFO_NULL, RMA_COMM_WORLD, &table, &addrs),
              RMA_SUCCESS);
    rma_Aint me = reinterpret_cast<rma_Aint>(mem.data());
    ASSERT_EQ(rma_win_fence(0, addrs), RMA_SUCCESS);
    for (int r = 0; r < size; ++r) ASSERT_EQ(rma_put(&me, 1, RMA_AINT, r, rank, 1, RMA_AINT, addrs), RMA_SUCCESS);
    ASSERT_EQ(rma_win_fence(0, addrs), RMA_SUCCESS);
    const int right = (rank + 1) % size;
    ASSERT_EQ(rma_win_fence(0, dyn), RMA_SUCCESS);
    std::int64_t v[2] = {rank * 10 + 1, rank * 10 + 2};
    ASSERT_EQ(rma_put(v, 2, RMA_INT64_T, right, table[right] + 8 * 3, 2, RMA_INT64_T, dyn), RMA_SUCCESS);
    // Past the end of the attachment: rejected at the origin.
    EXPECT_EQ(rma_put(v, 2, RMA_INT64_T, right, table[right] + 8 * 15, 2, RMA_INT64_T, dyn),
              RMA_ERR_RMA_RANGE);
    EXPECT_NE(api_test::last_message().find("not inside memory attached"), std::string::npos)
        << api_test::last_message();
    ASSERT_EQ(rma_win_fence(0, dyn), RMA_SUCCESS);
    const int left = (rank + size - 1) % size;
    EXPECT_EQ(mem[3], left * 10 + 1);
    EXPECT_EQ(mem[4], left * 10 + 2);
    EXPECT_EQ(mem[15], -1);
    EXPECT_EQ(mem[2], -1);
    ASSERT_EQ(rma_win_fence(0, dyn), RMA_SUCCESS);
    ASSERT_EQ(rma_win_detach(dyn, mem.data()), RMA_SUCCESS);
    EXPECT_EQ(rma_win_detach(dyn, mem.data()), RMA_ERR_RMA_ATTACH);
    ASSERT_EQ(rma_win_fence(0, dyn), RMA_SUCCESS);
    // Detached everywhere: the origin re-reads the table and refuses.
    EXPECT_EQ(rma_put(v, 1, RMA_INT64_T, right, table[right], 1, RMA_INT64_T, dyn), RMA_ERR_RMA_RANGE);
    ASSERT_EQ(rma_win_fence(0, dyn), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&addrs), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&dyn), RMA_SUCCESS);
  });
}

TEST(ApiWindow, RequestOperationsWaitAndTest) {
  run_ranks(2, [](int rank, int) {
    std::int64_t* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(1024 * 8, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
    const int peer = 1 - rank;
    std::vector<std::int64_t> src(1024, rank + 1);
    rma_Request reqs[4];
    ASSERT_EQ(rma_rput(src.data(), 512, RMA_INT64_T, peer, 0, 512, RMA_INT64_T, win, &reqs[0]), RMA_SUCCESS);
    std::int64_t one = 1, fetched = -5;
    ASSERT_EQ(rma_raccumulate(&one, 1, RMA_INT64_T, peer, 600, 1, RMA_INT64_T, RMA_SUM, win, &reqs[1]), RMA_SUCCESS);
    ASSERT_EQ(rma_rget_accumulate(&one, 1, RMA_INT64_T, &fetched, 1, RMA_INT64_T, peer, 601, 1,
                                  RMA_INT64_T, RMA_SUM, win, &reqs[2]),
              RMA_SUCCESS);
    std::int64_t fl = 0;
    ASSERT_EQ(rma_raccumulate(&fl, 1, RMA_DOUBLE, peer, 602, 1, RMA_DOUBLE, RMA_SUM, win, &reqs[3]), RMA_SUCCESS);
    rma_Status st;
    ASSERT_EQ(rma_wait(&reqs[0], &st), RMA_SUCCESS);
    EXPECT_EQ(reqs[0], RMA_REQUEST_NULL);
    EXPECT_EQ(st.RMA_ERROR, RMA_SUCCESS);
    int flag = 0;
    for (int i = 0; i < 1000 && !flag; ++i) ASSERT_EQ(rma_test(&reqs[1], &flag, RMA_STATUS_IGNORE), RMA_SUCCESS);
    EXPECT_EQ(flag, 1);
    ASSERT_EQ(rma_waitall(2, &reqs[2], RMA_STATUSES_IGNORE), RMA_SUCCESS);
    EXPECT_EQ(fetched, 0);
    // Waiting on a null request is a no-op.
    ASSERT_EQ(rma_wait(&reqs[0], RMA_STATUS_IGNORE), RMA_SUCCESS);
    ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    std::vector<std::int64_t> got(1024, 0);
    ASSERT_EQ(rma_win_lock(RMA_LOCK_SHARED, rank, 0, win), RMA_SUCCESS);
    rma_Request r;
    ASSERT_EQ(rma_rget(got.data(), 602, RMA_INT64_T, rank, 0, 602, RMA_INT64_T, win, &r), RMA_SUCCESS);
    ASSERT_EQ(rma_wait(&r, RMA_STATUS_IGNORE), RMA_SUCCESS);
    ASSERT_EQ(rma_win_unlock(rank, win), RMA_SUCCESS);
    for (int i = 0; i < 512; ++i) ASSERT_EQ(got[static_cast<std::size_t>(i)], peer + 1);
    EXPECT_EQ(got[600], 1);
    EXPECT_EQ(got[601], 1);
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

// A freed window's memory keeps no cached registration with remote rights:
// a peer's stale rkey, or a later lookup, cannot reach it.
TEST(ApiWindow, FreeDropsTheWindowsRegistrations) {
  run_ranks(2, [](int, int) {
    rma::RegistrationCache& rc = rma::api::current_context()->eps().rcache(rma::endpoint::kNetworkRail);
    std::vector<char> mem(3 * 4096);
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_create(mem.data(), static_cast<rma_Aint>(mem.size()), 1, RMA_INFO_NULL,
                             RMA_COMM_WORLD, &win),
              RMA_SUCCESS);
    const auto before = rc.stats();
    // The window and its metadata are exact registrations, never cached:
    // freeing the window deregisters both.
    EXPECT_GE(before.exact, 2u);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
    const auto after = rc.stats();
    EXPECT_EQ(after.exact, before.exact - 2);
  });
}

}  // namespace
