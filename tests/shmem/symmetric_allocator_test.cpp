// The symmetric heap's allocator (rmaapi/shmem/heap.hpp): placement at a
// phase past an alignment, reuse of the gaps placement leaves, and the
// same offsets for the same call sequence (what makes the heap symmetric).
#include "shmem/heap.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace rma::shmem {
namespace {

TEST(SymmetricAllocator, PlacesBlocksAtTheRequestedPhase) {
  SymmetricAllocator a;
  a.reset(4096, 1 << 20);
  auto coloured = a.allocate(8192, 4096, 2064);
  ASSERT_TRUE(coloured);
  EXPECT_EQ(*coloured, 4096u + 2064u);
  auto next = a.allocate(8192, 4096, 2064);
  ASSERT_TRUE(next);
  EXPECT_EQ(*next % 4096, 2064u);
  EXPECT_GE(*next, *coloured + 8192);
  // The 2064 bytes skipped before the first block serve small blocks.
  auto small = a.allocate(1000, 64, 0);
  ASSERT_TRUE(small);
  EXPECT_EQ(*small, 4096u);
  EXPECT_EQ(a.size_of(*coloured), 8192u);
}

TEST(SymmetricAllocator, PhaseZeroIsPlainAlignment) {
  SymmetricAllocator a;
  a.reset(100, 100000);
  auto off = a.allocate(10, 64);
  ASSERT_TRUE(off);
  EXPECT_EQ(*off, 128u);
  auto page = a.allocate(10, 4096);
  ASSERT_TRUE(page);
  EXPECT_EQ(*page, 4096u);
}

TEST(SymmetricAllocator, RejectsBadArguments) {
  SymmetricAllocator a;
  a.reset(0, 1 << 16);
  EXPECT_FALSE(a.allocate(0, 64));
  EXPECT_FALSE(a.allocate(64, 48));        // not a power of two
  EXPECT_FALSE(a.allocate(64, 64, 64));    // phase not below the alignment
  EXPECT_FALSE(a.allocate(1 << 16, 4096, 16));  // fits only without the phase
  EXPECT_TRUE(a.allocate(1 << 16, 4096, 0));
}

TEST(SymmetricAllocator, NoFitNearTheEndOfTheRange) {
  SymmetricAllocator a;
  a.reset(0, 3 * 4096);
  // Phase 2064 in the last page leaves less than 4096 bytes.
  auto first = a.allocate(2 * 4096, 4096, 0);
  ASSERT_TRUE(first);
  EXPECT_FALSE(a.allocate(4096, 4096, 2064));
  EXPECT_TRUE(a.allocate(2000, 4096, 2064));
}

TEST(SymmetricAllocator, SameCallsGiveSameOffsets) {
  auto run = [] {
    SymmetricAllocator a;
    a.reset(4096, 1 << 22);
    std::vector<std::size_t> out;
    for (std::size_t i = 1; i < 40; ++i) {
      const std::size_t bytes = i * 997;
      auto off = bytes >= 2048 ? a.allocate(bytes, 4096, 2064) : a.allocate(bytes, 64);
      out.push_back(off.value_or(0));
      if (i % 3 == 0) a.release(out[i / 2]);
    }
    return out;
  };
  EXPECT_EQ(run(), run());
}

}  // namespace
}  // namespace rma::shmem
