// The lazy walker: order, merging, resumption, deep trees, pack/unpack.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <functional>
#include <numeric>
#include <vector>

#include "datatype/pack.hpp"
#include "dt_test_util.hpp"

namespace rma::api::test {
namespace {

#define MAKE(var, call)                                  \
  rma_Datatype var = RMA_DATATYPE_NULL;                  \
  ASSERT_EQ(call, RMA_SUCCESS) << last_error_message(); \
  g.add(var)

TEST(DatatypeWalker, MergesAcrossElementsAndLevels) {
  TypeGuard g;
  // resized(int, 0, 4) x 3 with stride 1: adjacent everywhere: one block.
  MAKE(v, rma_type_vector(3, 1, 1, RMA_INT, &v));
  EXPECT_EQ(blocks_of(v, 4), (Blocks{{0, 48}}));
  // struct {int@4, int@0}: typemap order breaks adjacency; no merge backwards.
  int bl[2] = {1, 1};
  rma_Aint d[2] = {4, 0};
  rma_Datatype ty[2] = {RMA_INT, RMA_INT};
  MAKE(s, rma_type_create_struct(2, bl, d, ty, &s));
  EXPECT_EQ(blocks_of(s, 2), (Blocks{{4, 4}, {0, 4}, {12, 4}, {8, 4}}));
  // Blocks of the inner level meet blocks of the outer one.
  int bl2[2] = {1, 1};
  rma_Aint d2[2] = {0, 8};
  rma_Datatype ty2[2] = {v, RMA_SHORT};  // v: 12 bytes at 0; short at 8 -> overlap, no merge
  MAKE(o, rma_type_create_struct(2, bl2, d2, ty2, &o));
  EXPECT_EQ(blocks_of(o), (Blocks{{0, 12}, {8, 2}}));
  rma_Aint d3[2] = {0, 12};
  MAKE(m, rma_type_create_struct(2, bl2, d3, ty2, &m));  // short right after: merged
  EXPECT_EQ(blocks_of(m), (Blocks{{0, 14}}));
}

TEST(DatatypeWalker, ResumesAfterPartialConsumption) {
  TypeGuard g;
  MAKE(v, rma_type_vector(4, 3, 5, RMA_INT, &v));  // 12 bytes every 20
  BlockCursor c(v->layout, 2);
  EXPECT_EQ(c.total_bytes(), 96);
  Block b;
  ASSERT_TRUE(c.peek(b));
  EXPECT_EQ(b.offset, 0);
  EXPECT_EQ(b.length, 12);
  c.consume(5);
  ASSERT_TRUE(c.peek(b));
  EXPECT_EQ(b.offset, 5);
  EXPECT_EQ(b.length, 7);
  c.consume(7);
  // Moving the cursor keeps its place.
  BlockCursor moved = std::move(c);
  ASSERT_TRUE(moved.next(b));
  EXPECT_EQ(b.offset, 20);
  EXPECT_EQ(b.length, 12);
  std::int64_t sum = 24;
  while (moved.next(b)) sum += b.length;
  EXPECT_EQ(sum, 96);
  EXPECT_TRUE(moved.done());
  EXPECT_FALSE(moved.next(b));
}

// A tree deeper than the cursor's inline frames.
TEST(DatatypeWalker, DeepTreeUsesHeapFramesAndMatchesReference) {
  TypeGuard g;
  rma_Datatype t = RMA_INT;
  for (int level = 0; level < 11; ++level) {
    rma_Datatype n = RMA_DATATYPE_NULL;
    ASSERT_EQ(rma_type_vector(2, 1, 2, t, &n), RMA_SUCCESS);
    g.add(n);
    t = n;
  }
  EXPECT_GT(t->layout.depth(), BlockCursor::kInlineDepth);
  // Reference: expand the typemap recursively. Level l is two copies of
  // level l-1, 2 * extent(l-1) apart; extent(l) = 3 * extent(l-1), extent(int) = 4.
  std::vector<std::int64_t> expect;
  std::function<void(int, std::int64_t)> expand = [&](int level, std::int64_t base) {
    if (level < 0) {
      expect.push_back(base);
      return;
    }
    // extent of level-`level` type = 3 * extent(level-1) ; extent(-1) = 4
    std::int64_t e = 4;
    for (int k = 0; k < level; ++k) e *= 3;
    expand(level - 1, base);
    expand(level - 1, base + 2 * e);
  };
  expand(10, 0);
  Blocks want;
  for (auto off : expect) want.emplace_back(off, 4);
  EXPECT_EQ(blocks_of(t), want);
}

TEST(DatatypeWalker, PackUnpackRoundTrip) {
  TypeGuard g;
  int bl[3] = {1, 2, 1};
  rma_Aint d[3] = {0, 8, 24};
  rma_Datatype ty[3] = {RMA_CHAR, RMA_INT, RMA_DOUBLE};
  MAKE(s, rma_type_create_struct(3, bl, d, ty, &s));  // 17 bytes, extent 32
  EXPECT_EQ(info_of(s), (Info{17, 0, 32, 0, 32}));
  std::vector<std::byte> src(32 * 3), dst(32 * 3, std::byte{0});
  for (std::size_t k = 0; k < src.size(); ++k) src[k] = static_cast<std::byte>(k);
  std::vector<std::byte> packed(17 * 3);
  auto n = pack(src.data(), 3, s->layout, packed);
  ASSERT_TRUE(n.ok()) << n.status().to_string();
  EXPECT_EQ(*n, 51);
  EXPECT_EQ(packed[0], std::byte{0});
  EXPECT_EQ(packed[1], std::byte{8});
  EXPECT_EQ(packed[9], std::byte{24});
  EXPECT_EQ(packed[17], std::byte{32});
  auto m = unpack(packed, dst.data(), 3, s->layout);
  ASSERT_TRUE(m.ok());
  for (std::size_t k = 0; k < src.size(); ++k) {
    std::size_t r = k % 32;
    bool data = r == 0 || (r >= 8 && r < 16) || (r >= 24 && r < 32);
    EXPECT_EQ(dst[k], data ? src[k] : std::byte{0}) << "byte " << k;
  }
  // Too small an output buffer is an error, nothing written.
  std::vector<std::byte> small(10);
  auto bad = pack(src.data(), 3, s->layout, small);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(error_code(bad.status()), RMA_ERR_BUFFER);
}

TEST(DatatypeWalker, MillionBlocksStreamWithoutMaterialising) {
  TypeGuard g;
  MAKE(v, rma_type_vector(1000000, 1, 2, RMA_INT, &v));
  BlockCursor c(v->layout, 1);
  Block b;
  std::int64_t n = 0, expect_off = 0;
  bool ordered = true;
  while (c.next(b)) {
    ordered = ordered && b.offset == expect_off && b.length == 4;
    expect_off += 8;
    ++n;
  }
  EXPECT_TRUE(ordered);
  EXPECT_EQ(n, 1000000);
}

}  // namespace
}  // namespace rma::api::test
