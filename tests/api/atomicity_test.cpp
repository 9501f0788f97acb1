// Accumulates from many origins stay atomic per location whatever each call
// looks like (issue 12, defect 6): the method (NIC atomic or accumulate
// lock) depends on the element, never on the rest of the call, and the
// pairs MPI allows concurrently on one location (same op, NO_OP, REPLACE,
// compare_and_swap with fetch_and_op REPLACE as an MCS lock does) stay
// atomic against each other. Ranks are threads on the self provider.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

#include "api_test_util.hpp"

namespace {

using api_test::run_ranks;

// One origin's calls each touch an aligned int64 (offset 0) and a
// misaligned one (offset 12); the others add to offset 0 alone. The
// misaligned element used to send the whole call down the lock path,
// whose write-back of offset 0 overwrote the others' NIC fetch-adds.
TEST(ApiAtomicity, AMisalignedElementDoesNotLoseOtherOriginsUpdates) {
  constexpr int kIters = 400;
  run_ranks(4, [](int rank, int size) {
    unsigned char* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(64, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    rma_Datatype pair = RMA_DATATYPE_NULL;
    const int blens[2] = {1, 1};
    const rma_Aint disps[2] = {0, 12};
    ASSERT_EQ(rma_type_create_hindexed(2, blens, disps, RMA_INT64_T, &pair), RMA_SUCCESS);
    ASSERT_EQ(rma_type_commit(&pair), RMA_SUCCESS);
    ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
    const std::int64_t ones[2] = {1, 1};
    for (int it = 0; it < kIters; ++it) {
      if (rank == 1) {
        ASSERT_EQ(rma_accumulate(ones, 2, RMA_INT64_T, 0, 0, 1, pair, RMA_SUM, win), RMA_SUCCESS);
      } else {
        ASSERT_EQ(rma_accumulate(ones, 1, RMA_INT64_T, 0, 0, 1, RMA_INT64_T, RMA_SUM, win), RMA_SUCCESS);
      }
      if (it % 16 == 0) {
        ASSERT_EQ(rma_win_flush(0, win), RMA_SUCCESS);
      }
    }
    ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    if (rank == 0) {
      ASSERT_EQ(rma_win_sync(win), RMA_SUCCESS);
      std::int64_t at0 = 0, at12 = 0;
      std::memcpy(&at0, base, 8);
      std::memcpy(&at12, base + 12, 8);
      EXPECT_EQ(at0, std::int64_t{kIters} * size);
      EXPECT_EQ(at12, std::int64_t{kIters});
    }
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_type_free(&pair), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

// The MCS-lock pattern: every origin swaps unique tokens into one location,
// half of them with fetch_and_op(REPLACE), half with compare_and_swap
// loops, and reads it with get_accumulate(NO_OP). With
// atomic swaps every token is displaced exactly once: the values returned
// plus the final value are the initial 0 and every token, each once.
template <typename T>
void swap_tokens(rma_Datatype type, int ranks, int iters) {
  std::vector<std::vector<T>> displaced(static_cast<std::size_t>(ranks));
  std::vector<T> seen_reads;
  T final_value{};
  std::mutex reads_mutex;
  run_ranks(ranks, [&](int rank, int) {
    T* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(64, sizeof(T), RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
    auto& mine = displaced[static_cast<std::size_t>(rank)];
    std::vector<T> reads;
    T guess{};
    for (int it = 0; it < iters; ++it) {
      const T token = static_cast<T>((static_cast<std::uint64_t>(rank + 1) << (4 * sizeof(T))) |
                                     static_cast<std::uint64_t>(it + 1));
      T old{};
      if (rank % 2 == 0) {
        ASSERT_EQ(rma_fetch_and_op(&token, &old, type, 0, 0, RMA_REPLACE, win), RMA_SUCCESS);
        ASSERT_EQ(rma_win_flush(0, win), RMA_SUCCESS);
      } else {
        // Retry at once with the value the failed attempt saw, as an MCS
        // lock's release does: the swaps race as closely as they can.
        for (;;) {
          ASSERT_EQ(rma_compare_and_swap(&token, &guess, &old, type, 0, 0, win), RMA_SUCCESS);
          ASSERT_EQ(rma_win_flush(0, win), RMA_SUCCESS);
          if (old == guess) break;
          guess = old;
        }
        guess = token;
      }
      mine.push_back(old);
      if (it % 8 != 0) continue;
      T read{};
      ASSERT_EQ(rma_get_accumulate(nullptr, 0, type, &read, 1, type, 0, 0, 1, type, RMA_NO_OP, win),
                RMA_SUCCESS);
      ASSERT_EQ(rma_win_flush(0, win), RMA_SUCCESS);
      reads.push_back(read);
    }
    ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    if (rank == 0) {
      ASSERT_EQ(rma_win_sync(win), RMA_SUCCESS);
      final_value = base[0];
    }
    {
      std::lock_guard g(reads_mutex);
      seen_reads.insert(seen_reads.end(), reads.begin(), reads.end());
    }
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
  std::vector<T> got{final_value};
  for (const auto& d : displaced) got.insert(got.end(), d.begin(), d.end());
  std::vector<T> want{T{}};
  for (int r = 0; r < ranks; ++r) {
    for (int it = 0; it < iters; ++it) {
      want.push_back(static_cast<T>((static_cast<std::uint64_t>(r + 1) << (4 * sizeof(T))) |
                                    static_cast<std::uint64_t>(it + 1)));
    }
  }
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want) << "a swap was lost or duplicated";
  // Every read saw a value that was written (no torn or invented values).
  for (T v : seen_reads) EXPECT_TRUE(std::binary_search(want.begin(), want.end(), v)) << v;
}

TEST(ApiAtomicity, SwapCompareAndSwapAndNoOpStayAtomicOnWords) {
  swap_tokens<std::int64_t>(RMA_INT64_T, 4, 1500);
}

TEST(ApiAtomicity, SwapCompareAndSwapAndNoOpStayAtomicOnSmallIntegers) {
  // 4-byte integers: no NIC atomic fits, every op takes the accumulate lock.
  swap_tokens<std::uint32_t>(RMA_UINT32_T, 4, 100);
}

// Other ops on 8-byte words (MAX on int64, SUM on double) and REPLACE mixed
// on neighbouring words from several origins: each word ends as the serial
// result of what was applied to it.
TEST(ApiAtomicity, CompareAndSwapLoopsGiveSerialResults) {
  constexpr int kIters = 100;
  run_ranks(4, [](int rank, int size) {
    unsigned char* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(64, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
    for (int it = 0; it < kIters; ++it) {
      const double quarter = 0.25;
      const std::int64_t v = rank * 1000 + it;
      ASSERT_EQ(rma_accumulate(&quarter, 1, RMA_DOUBLE, 0, 0, 1, RMA_DOUBLE, RMA_SUM, win), RMA_SUCCESS);
      ASSERT_EQ(rma_accumulate(&v, 1, RMA_INT64_T, 0, 8, 1, RMA_INT64_T, RMA_MAX, win), RMA_SUCCESS);
      const std::int64_t one = 1;
      ASSERT_EQ(rma_accumulate(&one, 1, RMA_INT64_T, 0, 16, 1, RMA_INT64_T, RMA_SUM, win), RMA_SUCCESS);
    }
    ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    if (rank == 0) {
      ASSERT_EQ(rma_win_sync(win), RMA_SUCCESS);
      double d = 0;
      std::int64_t mx = 0, n = 0;
      std::memcpy(&d, base, 8);
      std::memcpy(&mx, base + 8, 8);
      std::memcpy(&n, base + 16, 8);
      EXPECT_EQ(d, 0.25 * kIters * size);
      EXPECT_EQ(mx, (size - 1) * 1000 + kIters - 1);
      EXPECT_EQ(n, std::int64_t{kIters} * size);
    }
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

}  // namespace
