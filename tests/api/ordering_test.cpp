// accumulate_ordering=none: non-fetching compare-and-swap-loop accumulates
// are recorded and run together at the next synchronization
// (window/deferred_accumulate.hpp). They must still be atomic against other
// origins, exact when combined, complete at every epoch close, and leave
// the other accumulates (fetching, request-based, integer SUM) as they were.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "api_test_util.hpp"

namespace {

using api_test::run_ranks;

rma_Win allocate_unordered(rma_Aint bytes, void** base, const char* ordering = "none") {
  rma_Info info = RMA_INFO_NULL;
  EXPECT_EQ(rma_info_create(&info), RMA_SUCCESS);
  EXPECT_EQ(rma_info_set(info, "accumulate_ordering", ordering), RMA_SUCCESS);
  rma_Win win = RMA_WIN_NULL;
  EXPECT_EQ(rma_win_allocate(bytes, 1, info, RMA_COMM_WORLD, base, &win), RMA_SUCCESS);
  rma_info_free(&info);
  return win;
}

double load_double(const void* base, std::size_t off) {
  double v;
  std::memcpy(&v, static_cast<const char*>(base) + off, 8);
  return v;
}
std::int64_t load_int64(const void* base, std::size_t off) {
  std::int64_t v;
  std::memcpy(&v, static_cast<const char*>(base) + off, 8);
  return v;
}

// Rank 0 accumulates into rank 1, whose memory the test reads directly (the
// ranks are threads of this process) to see when the updates land.
std::atomic<void*> rank1_base{nullptr};

TEST(ApiOrderingNone, RecordedAccumulatesLandAtTheFlush) {
  run_ranks(2, [](int rank, int) {
    void* base = nullptr;
    rma_Win win = allocate_unordered(1024, &base);
    if (rank == 1) { rank1_base.store(base); }
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    if (rank == 0) {
      void* target = rank1_base.load();
      ASSERT_EQ(rma_win_lock(RMA_LOCK_SHARED, 1, 0, win), RMA_SUCCESS);
      // Two double SUMs on one location do not (rounding): the second runs
      // the list (holding only the first, so far).
      for (double v : {0.1, 0.2}) {
        ASSERT_EQ(rma_accumulate(&v, 1, RMA_DOUBLE, 1, 168, 1, RMA_DOUBLE, RMA_SUM, win), RMA_SUCCESS);
      }
      // 16 doubles, SUM: a compare-and-swap loop per element.
      std::vector<double> ones(16, 1.5);
      ASSERT_EQ(rma_accumulate(ones.data(), 16, RMA_DOUBLE, 1, 0, 16, RMA_DOUBLE, RMA_SUM, win), RMA_SUCCESS);
      // Every other element of the origin (a derived origin type) as REPLACE.
      rma_Datatype every_other = RMA_DATATYPE_NULL;
      ASSERT_EQ(rma_type_vector(4, 1, 2, RMA_INT64_T, &every_other), RMA_SUCCESS);
      ASSERT_EQ(rma_type_commit(&every_other), RMA_SUCCESS);
      const std::int64_t spread[8] = {11, -1, 22, -1, 33, -1, 44, -1};
      ASSERT_EQ(rma_accumulate(spread, 1, every_other, 1, 128, 4, RMA_INT64_T, RMA_REPLACE, win), RMA_SUCCESS);
      ASSERT_EQ(rma_type_free(&every_other), RMA_SUCCESS);
      // Three MAXes on one location combine into one update.
      for (std::int64_t v : {5, 9, 7}) {
        ASSERT_EQ(rma_accumulate(&v, 1, RMA_INT64_T, 1, 160, 1, RMA_INT64_T, RMA_MAX, win), RMA_SUCCESS);
      }
      // Integer SUM stays a posted fetch-add; fetching calls are never recorded.
      const std::int64_t two = 2;
      ASSERT_EQ(rma_accumulate(&two, 1, RMA_INT64_T, 1, 176, 1, RMA_INT64_T, RMA_SUM, win), RMA_SUCCESS);
      double old = -1, three = 3;
      ASSERT_EQ(rma_fetch_and_op(&three, &old, RMA_DOUBLE, 1, 184, RMA_REPLACE, win), RMA_SUCCESS);
      EXPECT_EQ(old, 0.0);
      // A request-based accumulate completes with its request, not later.
      rma_Request req = RMA_REQUEST_NULL;
      const double four = 4;
      ASSERT_EQ(rma_raccumulate(&four, 1, RMA_DOUBLE, 1, 192, 1, RMA_DOUBLE, RMA_MAX, win, &req), RMA_SUCCESS);
      ASSERT_EQ(rma_wait(&req, RMA_STATUS_IGNORE), RMA_SUCCESS);
      EXPECT_EQ(load_double(target, 192), 4.0);

      // Recorded, not yet run: the loops run at the flush.
      EXPECT_EQ(load_double(target, 0), 0.0);
      EXPECT_EQ(load_int64(target, 128), 0);
      EXPECT_EQ(load_int64(target, 160), 0);
      EXPECT_EQ(load_double(target, 168), 0.1);  // the first ran when the second came
      // flush_local does not need them: their operands were copied.
      ASSERT_EQ(rma_win_flush_local(1, win), RMA_SUCCESS);
      EXPECT_EQ(load_double(target, 0), 0.0);
      ASSERT_EQ(rma_win_flush(1, win), RMA_SUCCESS);
      for (int i = 0; i < 16; ++i) EXPECT_EQ(load_double(target, 8u * i), 1.5) << i;
      for (int i = 0; i < 4; ++i) EXPECT_EQ(load_int64(target, 128u + 8u * i), 11 * (i + 1)) << i;
      EXPECT_EQ(load_int64(target, 160), 9);
      EXPECT_EQ(load_double(target, 168), 0.1 + 0.2);
      EXPECT_EQ(load_int64(target, 176), 2);
      EXPECT_EQ(load_double(target, 184), 3.0);
      ASSERT_EQ(rma_win_unlock(1, win), RMA_SUCCESS);
    }
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

// Every origin runs its recorded loops against the others' at once: the
// totals are what serial application gives.
TEST(ApiOrderingNone, ManyOriginsStayAtomic) {
  constexpr int kIters = 120;
  run_ranks(4, [](int rank, int size) {
    void* base = nullptr;
    rma_Win win = allocate_unordered(32 * 8, &base);
    ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
    std::vector<double> quarter(16, 0.25);
    for (int it = 0; it < kIters; ++it) {
      const double one = 1;
      ASSERT_EQ(rma_accumulate(&one, 1, RMA_DOUBLE, 0, 0, 1, RMA_DOUBLE, RMA_SUM, win), RMA_SUCCESS);
      const std::int64_t mark = rank * 1000 + it;
      ASSERT_EQ(rma_accumulate(&mark, 1, RMA_INT64_T, 0, 8, 1, RMA_INT64_T, RMA_MAX, win), RMA_SUCCESS);
      ASSERT_EQ(rma_accumulate(&mark, 1, RMA_INT64_T, 0, 16, 1, RMA_INT64_T, RMA_MIN, win), RMA_SUCCESS);
      ASSERT_EQ(rma_accumulate(quarter.data(), 16, RMA_DOUBLE, 0, 24, 16, RMA_DOUBLE, RMA_SUM, win), RMA_SUCCESS);
      if (it % 10 == 9) { ASSERT_EQ(rma_win_flush_all(win), RMA_SUCCESS); }
    }
    ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    if (rank == 0) {
      EXPECT_EQ(load_double(base, 0), 1.0 * kIters * size);
      EXPECT_EQ(load_int64(base, 8), (size - 1) * 1000 + kIters - 1);
      EXPECT_EQ(load_int64(base, 16), 0);
      for (int i = 0; i < 16; ++i) EXPECT_EQ(load_double(base, 24u + 8u * i), 0.25 * kIters * size) << i;
    }
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

// More recorded elements than the list holds: it runs when full.
TEST(ApiOrderingNone, AFullListRuns) {
  run_ranks(2, [](int rank, int size) {
    void* base = nullptr;
    constexpr int kElems = 1000;  // > DeferredAccumulates::kCapacity
    rma_Win win = allocate_unordered(kElems * 8, &base);
    std::vector<double> halves(kElems, 0.5);
    ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
    for (int t = 0; t < size; ++t) {
      ASSERT_EQ(rma_accumulate(halves.data(), kElems, RMA_DOUBLE, t, 0, kElems, RMA_DOUBLE, RMA_SUM, win), RMA_SUCCESS);
    }
    ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    for (int i = 0; i < kElems; ++i) ASSERT_EQ(load_double(base, 8u * i), 0.5 * size) << rank << " " << i;
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

// Every epoch close runs what was recorded: fence, complete, unlock.
TEST(ApiOrderingNone, EveryEpochCloseRunsTheRecorded) {
  run_ranks(3, [](int rank, int size) {
    void* base = nullptr;
    rma_Win win = allocate_unordered(64, &base);
    const double d = rank + 1;
    // Fence epoch: every rank into rank 0.
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    ASSERT_EQ(rma_accumulate(&d, 1, RMA_DOUBLE, 0, 0, 1, RMA_DOUBLE, RMA_SUM, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    if (rank == 0) { EXPECT_EQ(load_double(base, 0), 6.0); }
    ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, win), RMA_SUCCESS);
    // PSCW: ranks 1 and 2 into rank 0.
    rma_Group world = RMA_GROUP_NULL, zero = RMA_GROUP_NULL, others = RMA_GROUP_NULL;
    ASSERT_EQ(rma_comm_group(RMA_COMM_WORLD, &world), RMA_SUCCESS);
    const int r0[] = {0}, r12[] = {1, 2};
    ASSERT_EQ(rma_group_incl(world, 1, r0, &zero), RMA_SUCCESS);
    ASSERT_EQ(rma_group_incl(world, 2, r12, &others), RMA_SUCCESS);
    if (rank == 0) {
      ASSERT_EQ(rma_win_post(others, 0, win), RMA_SUCCESS);
      ASSERT_EQ(rma_win_wait(win), RMA_SUCCESS);
      EXPECT_EQ(load_double(base, 8), 5.0);
    } else {
      ASSERT_EQ(rma_win_start(zero, 0, win), RMA_SUCCESS);
      ASSERT_EQ(rma_accumulate(&d, 1, RMA_DOUBLE, 0, 8, 1, RMA_DOUBLE, RMA_SUM, win), RMA_SUCCESS);
      ASSERT_EQ(rma_win_complete(win), RMA_SUCCESS);
    }
    ASSERT_EQ(rma_group_free(&world), RMA_SUCCESS);
    ASSERT_EQ(rma_group_free(&zero), RMA_SUCCESS);
    ASSERT_EQ(rma_group_free(&others), RMA_SUCCESS);
    // Lock epochs, one per target, closed by unlock.
    for (int t = 0; t < size; ++t) {
      ASSERT_EQ(rma_win_lock(RMA_LOCK_SHARED, t, 0, win), RMA_SUCCESS);
      ASSERT_EQ(rma_accumulate(&d, 1, RMA_DOUBLE, t, 16, 1, RMA_DOUBLE, RMA_MAX, win), RMA_SUCCESS);
      ASSERT_EQ(rma_win_unlock(t, win), RMA_SUCCESS);
    }
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    EXPECT_EQ(load_double(base, 16), 3.0);
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

// Under the default ordering the same call is complete at the target when
// it returns (its compare-and-swap loop ran to its end).
TEST(ApiOrderingNone, DefaultOrderingRecordsNothing) {
  run_ranks(2, [](int rank, int) {
    void* base = nullptr;
    rma_Win win = allocate_unordered(64, &base, "rar,raw,war,waw");
    if (rank == 1) { rank1_base.store(base); }
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    if (rank == 0) {
      ASSERT_EQ(rma_win_lock(RMA_LOCK_SHARED, 1, 0, win), RMA_SUCCESS);
      const double v = 2.5;
      ASSERT_EQ(rma_accumulate(&v, 1, RMA_DOUBLE, 1, 0, 1, RMA_DOUBLE, RMA_SUM, win), RMA_SUCCESS);
      EXPECT_EQ(load_double(rank1_base.load(), 0), 2.5);
      ASSERT_EQ(rma_win_unlock(1, win), RMA_SUCCESS);
    }
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

}  // namespace
