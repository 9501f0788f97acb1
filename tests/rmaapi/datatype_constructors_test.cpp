// Size, extent, true extent and blocks of every constructor, against values
// computed by hand from MPI 4.x chapter 5 (and checked against MPICH 4.0).
#include <gtest/gtest.h>

#include <climits>

#include "dt_test_util.hpp"

namespace rma::api::test {
namespace {

#define MAKE(var, call)                        \
  rma_Datatype var = RMA_DATATYPE_NULL;        \
  ASSERT_EQ(call, RMA_SUCCESS) << last_error_message(); \
  g.add(var)

TEST(DatatypePredefined, SizesAndPairLayouts) {
  EXPECT_EQ(info_of(RMA_INT), (Info{4, 0, 4, 0, 4}));
  EXPECT_EQ(info_of(RMA_CHAR), (Info{1, 0, 1, 0, 1}));
  EXPECT_EQ(info_of(RMA_DOUBLE), (Info{8, 0, 8, 0, 8}));
  EXPECT_EQ(info_of(RMA_LONG_DOUBLE), (Info{16, 0, 16, 0, 16}));
  EXPECT_EQ(info_of(RMA_C_DOUBLE_COMPLEX), (Info{16, 0, 16, 0, 16}));
  EXPECT_EQ(info_of(RMA_FLOAT_INT), (Info{8, 0, 8, 0, 8}));
  EXPECT_EQ(info_of(RMA_DOUBLE_INT), (Info{12, 0, 16, 0, 12}));
  EXPECT_EQ(info_of(RMA_LONG_INT), (Info{12, 0, 16, 0, 12}));
  EXPECT_EQ(info_of(RMA_2INT), (Info{8, 0, 8, 0, 8}));
  EXPECT_EQ(info_of(RMA_SHORT_INT), (Info{6, 0, 8, 0, 8}));
  EXPECT_EQ(info_of(RMA_LONG_DOUBLE_INT), (Info{20, 0, 32, 0, 20}));
  EXPECT_EQ(blocks_of(RMA_SHORT_INT), (Blocks{{0, 2}, {4, 4}}));
  EXPECT_EQ(blocks_of(RMA_DOUBLE_INT, 2), (Blocks{{0, 12}, {16, 12}}));
  EXPECT_EQ(blocks_of(RMA_INT, 5), (Blocks{{0, 20}}));
  EXPECT_TRUE(RMA_INT->committed);
  EXPECT_TRUE(RMA_INT->predefined);
}

TEST(DatatypeConstructors, ContiguousIsOneRun) {
  TypeGuard g;
  MAKE(t, rma_type_contiguous(3, RMA_INT, &t));
  EXPECT_EQ(info_of(t), (Info{12, 0, 12, 0, 12}));
  EXPECT_EQ(blocks_of(t, 2), (Blocks{{0, 24}}));
  EXPECT_TRUE(t->layout.is_dense());
  EXPECT_FALSE(t->committed);
  MAKE(u, rma_type_contiguous(2, RMA_DOUBLE_INT, &u));
  EXPECT_EQ(info_of(u), (Info{24, 0, 32, 0, 28}));
  EXPECT_EQ(blocks_of(u), (Blocks{{0, 12}, {16, 12}}));
}

TEST(DatatypeConstructors, Vector) {
  TypeGuard g;
  MAKE(t, rma_type_vector(3, 2, 4, RMA_INT, &t));
  EXPECT_EQ(info_of(t), (Info{24, 0, 40, 0, 40}));
  EXPECT_EQ(blocks_of(t), (Blocks{{0, 8}, {16, 8}, {32, 8}}));
  // Two elements: the second starts one extent (40) later; 32+8 == 40 merges.
  EXPECT_EQ(blocks_of(t, 2), (Blocks{{0, 8}, {16, 8}, {32, 16}, {56, 8}, {72, 8}}));
  // stride == blocklength: contiguous.
  MAKE(c, rma_type_vector(4, 2, 2, RMA_INT, &c));
  EXPECT_EQ(blocks_of(c), (Blocks{{0, 32}}));
  EXPECT_TRUE(c->layout.is_run());
}

TEST(DatatypeConstructors, VectorNegativeStride) {
  TypeGuard g;
  MAKE(t, rma_type_vector(3, 1, -2, RMA_DOUBLE, &t));
  // Blocks at 0, -16, -32 in that (typemap) order.
  EXPECT_EQ(info_of(t), (Info{24, -32, 40, -32, 40}));
  EXPECT_EQ(blocks_of(t), (Blocks{{0, 8}, {-16, 8}, {-32, 8}}));
  MAKE(v, rma_type_vector(2, 1, -3, RMA_INT, &v));  // MPICH: lb -12 extent 16
  EXPECT_EQ(info_of(v), (Info{8, -12, 16, -12, 16}));
  // Contiguous copies running backwards still form one run each.
  MAKE(h, rma_type_create_hvector(3, 1, -4, RMA_INT, &h));
  EXPECT_EQ(blocks_of(h), (Blocks{{0, 4}, {-4, 4}, {-8, 4}}));
}

TEST(DatatypeConstructors, Hvector) {
  TypeGuard g;
  MAKE(t, rma_type_create_hvector(2, 3, 5, RMA_CHAR, &t));
  EXPECT_EQ(info_of(t), (Info{6, 0, 8, 0, 8}));
  EXPECT_EQ(blocks_of(t), (Blocks{{0, 3}, {5, 3}}));
  MAKE(m, rma_type_create_hvector(4, 2, 8, RMA_INT, &m));
  EXPECT_EQ(blocks_of(m), (Blocks{{0, 32}}));
  // hvector of a vector: copies of the inner tree.
  MAKE(inner, rma_type_vector(2, 1, 2, RMA_INT, &inner));  // (0,4) (8,4), extent 12
  MAKE(outer, rma_type_create_hvector(2, 1, 100, inner, &outer));
  EXPECT_EQ(info_of(outer), (Info{16, 0, 112, 0, 112}));
  EXPECT_EQ(blocks_of(outer), (Blocks{{0, 4}, {8, 4}, {100, 4}, {108, 4}}));
}

TEST(DatatypeConstructors, IndexedAndHindexed) {
  TypeGuard g;
  int bl[3] = {2, 1, 3};
  int d[3] = {0, 3, 7};
  MAKE(t, rma_type_indexed(3, bl, d, RMA_INT, &t));
  EXPECT_EQ(info_of(t), (Info{24, 0, 40, 0, 40}));
  EXPECT_EQ(blocks_of(t), (Blocks{{0, 8}, {12, 4}, {28, 12}}));
  int bl2[2] = {2, 2};
  int d2[2] = {0, 2};
  MAKE(m, rma_type_indexed(2, bl2, d2, RMA_INT, &m));
  EXPECT_EQ(blocks_of(m), (Blocks{{0, 16}}));
  int bl3[2] = {1, 1};
  rma_Aint hd[2] = {8, 0};  // unsorted: typemap order is kept
  MAKE(h, rma_type_create_hindexed(2, bl3, hd, RMA_DOUBLE, &h));
  EXPECT_EQ(info_of(h), (Info{16, 0, 16, 0, 16}));
  EXPECT_EQ(blocks_of(h), (Blocks{{8, 8}, {0, 8}}));
  // Zero-length blocks contribute nothing, not even bounds.
  int bl4[3] = {0, 1, 0};
  rma_Aint hd4[3] = {-100, 40, 200};
  MAKE(z, rma_type_create_hindexed(3, bl4, hd4, RMA_INT, &z));
  EXPECT_EQ(info_of(z), (Info{4, 40, 4, 40, 4}));
}

TEST(DatatypeConstructors, IndexedBlockRegularBecomesVector) {
  TypeGuard g;
  int d[3] = {0, 4, 8};
  MAKE(t, rma_type_create_indexed_block(3, 2, d, RMA_INT, &t));
  EXPECT_EQ(info_of(t), (Info{24, 0, 40, 0, 40}));
  EXPECT_EQ(blocks_of(t), (Blocks{{0, 8}, {16, 8}, {32, 8}}));
  ASSERT_NE(t->layout.node, nullptr);
  EXPECT_EQ(t->layout.node->kind, Node::Kind::kVector);
  rma_Aint hd[3] = {16, 0, 40};
  MAKE(h, rma_type_create_hindexed_block(3, 1, hd, RMA_DOUBLE, &h));
  EXPECT_EQ(blocks_of(h), (Blocks{{16, 8}, {0, 8}, {40, 8}}));
  EXPECT_EQ(h->layout.node->kind, Node::Kind::kList);
}

TEST(DatatypeConstructors, StructPaddingFollowsMpich) {
  TypeGuard g;
  int bl[2] = {1, 1};
  rma_Aint d[2] = {0, 4};
  rma_Datatype ty[2] = {RMA_INT, RMA_CHAR};
  MAKE(a, rma_type_create_struct(2, bl, d, ty, &a));
  EXPECT_EQ(info_of(a), (Info{5, 0, 8, 0, 5}));  // epsilon: extent rounded to alignof(int)
  EXPECT_EQ(blocks_of(a, 2), (Blocks{{0, 5}, {8, 5}}));
  rma_Aint d2[2] = {0, 8};
  rma_Datatype ty2[2] = {RMA_DOUBLE, RMA_CHAR};
  MAKE(b, rma_type_create_struct(2, bl, d2, ty2, &b));
  EXPECT_EQ(info_of(b), (Info{9, 0, 16, 0, 9}));
  // All members the same type: no padding (MPICH treats it as hindexed).
  rma_Aint d3[2] = {0, 5};
  rma_Datatype ty3[2] = {RMA_INT, RMA_INT};
  MAKE(c, rma_type_create_struct(2, bl, d3, ty3, &c));
  EXPECT_EQ(info_of(c), (Info{8, 0, 9, 0, 9}));
  // Negative displacement: extent 13 rounded up to 16.
  rma_Aint d4[2] = {-3, 9};
  MAKE(e, rma_type_create_struct(2, bl, d4, ty2, &e));
  EXPECT_EQ(info_of(e), (Info{9, -3, 16, -3, 13}));
  // A resized member keeps its alignment: struct{resized(int,-4,16)@0, char@13}.
  MAKE(r, rma_type_create_resized(RMA_INT, -4, 16, &r));
  rma_Datatype ty5[2] = {r, RMA_CHAR};
  rma_Aint d5[2] = {0, 13};
  MAKE(f, rma_type_create_struct(2, bl, d5, ty5, &f));
  EXPECT_EQ(info_of(f), (Info{5, -4, 20, 0, 14}));
}

// MPICH pads a struct only when its members are not all "the same type";
// librma follows its notion of sameness (see TypeLayout::identity).
TEST(DatatypeConstructors, StructPaddingSameTypeRules) {
  TypeGuard g;
  int bl[2] = {1, 1};
  rma_Aint d5[2] = {0, 5};
  rma_Datatype ints[2] = {RMA_INT, RMA_UNSIGNED};  // integers of one size: one type
  MAKE(a, rma_type_create_struct(2, bl, d5, ints, &a));
  EXPECT_EQ(info_of(a).extent, 9);
  rma_Datatype mixed[2] = {RMA_INT, RMA_FLOAT};
  MAKE(b, rma_type_create_struct(2, bl, d5, mixed, &b));
  EXPECT_EQ(info_of(b).extent, 12);
  MAKE(dd, rma_type_dup(RMA_DOUBLE, &dd));
  rma_Aint d9[2] = {0, 9};
  rma_Datatype dups[2] = {dd, RMA_DOUBLE};  // a duplicate is the same type
  MAKE(c, rma_type_create_struct(2, bl, d9, dups, &c));
  EXPECT_EQ(info_of(c).extent, 17);
  MAKE(one, rma_type_contiguous(1, RMA_DOUBLE, &one));
  rma_Datatype ones[2] = {one, RMA_DOUBLE};
  MAKE(e, rma_type_create_struct(2, bl, d9, ones, &e));
  EXPECT_EQ(info_of(e).extent, 17);
  MAKE(two, rma_type_contiguous(2, RMA_CHAR, &two));  // a new type
  rma_Aint d3[2] = {0, 3};
  rma_Datatype ts[2] = {two, RMA_SHORT};
  MAKE(f, rma_type_create_struct(2, bl, d3, ts, &f));
  EXPECT_EQ(info_of(f), (Info{4, 0, 6, 0, 5}));
  // Empty members neither pad nor align.
  MAKE(empty, rma_type_contiguous(0, RMA_DOUBLE, &empty));
  int bl2[2] = {1, 5};
  rma_Aint d0[2] = {0, 0};
  rma_Datatype te[2] = {empty, RMA_CHAR};
  MAKE(h, rma_type_create_struct(2, bl2, d0, te, &h));
  EXPECT_EQ(info_of(h), (Info{5, 0, 5, 0, 5}));
}

TEST(DatatypeConstructors, NestedStructOfVectors) {
  TypeGuard g;
  MAKE(v, rma_type_vector(2, 1, 2, RMA_INT, &v));  // (0,4) (8,4), extent 12
  int bl[2] = {2, 1};
  rma_Aint d[2] = {0, 40};
  rma_Datatype ty[2] = {v, RMA_DOUBLE};
  MAKE(s, rma_type_create_struct(2, bl, d, ty, &s));
  EXPECT_EQ(info_of(s), (Info{24, 0, 48, 0, 48}));
  EXPECT_EQ(blocks_of(s), (Blocks{{0, 4}, {8, 8}, {20, 4}, {40, 8}}));
  // Two elements of the struct: the second at +48.
  EXPECT_EQ(blocks_of(s, 2),
            (Blocks{{0, 4}, {8, 8}, {20, 4}, {40, 12}, {56, 8}, {68, 4}, {88, 8}}));
  // A vector of the struct.
  MAKE(w, rma_type_vector(2, 1, 2, s, &w));
  EXPECT_EQ(info_of(w), (Info{48, 0, 144, 0, 144}));
  EXPECT_EQ(blocks_of(w), (Blocks{{0, 4}, {8, 8}, {20, 4}, {40, 8}, {96, 4}, {104, 8}, {116, 4}, {136, 8}}));
}

TEST(DatatypeConstructors, Resized) {
  TypeGuard g;
  MAKE(r, rma_type_create_resized(RMA_INT, -4, 16, &r));
  EXPECT_EQ(info_of(r), (Info{4, -4, 16, 0, 4}));
  MAKE(c, rma_type_contiguous(3, r, &c));
  EXPECT_EQ(info_of(c), (Info{12, -4, 48, 0, 36}));
  EXPECT_EQ(blocks_of(c), (Blocks{{0, 4}, {16, 4}, {32, 4}}));
  // Negative extent (MPICH: contig(3, resized(double, 0, -8)) has lb -16, extent 8).
  MAKE(n, rma_type_create_resized(RMA_DOUBLE, 0, -8, &n));
  EXPECT_EQ(info_of(n), (Info{8, 0, -8, 0, 8}));
  MAKE(nc, rma_type_contiguous(3, n, &nc));
  EXPECT_EQ(info_of(nc), (Info{24, -16, 8, -16, 24}));
  EXPECT_EQ(blocks_of(nc), (Blocks{{0, 8}, {-8, 8}, {-16, 8}}));
  // Resizing to the natural extent changes nothing.
  MAKE(same, rma_type_create_resized(RMA_INT, 0, 4, &same));
  EXPECT_TRUE(same->layout.is_dense());
}

TEST(DatatypeConstructors, SubarrayCAndFortran) {
  TypeGuard g;
  int sizes[2] = {4, 5}, sub[2] = {2, 3}, starts[2] = {1, 2};
  MAKE(c, rma_type_create_subarray(2, sizes, sub, starts, RMA_ORDER_C, RMA_INT, &c));
  EXPECT_EQ(info_of(c), (Info{24, 0, 80, 28, 32}));
  EXPECT_EQ(blocks_of(c), (Blocks{{28, 12}, {48, 12}}));
  MAKE(f, rma_type_create_subarray(2, sizes, sub, starts, RMA_ORDER_FORTRAN, RMA_INT, &f));
  EXPECT_EQ(info_of(f), (Info{24, 0, 80, 36, 40}));
  EXPECT_EQ(blocks_of(f), (Blocks{{36, 8}, {52, 8}, {68, 8}}));
  // 3-D, C order: [2][3][4] doubles, sub [1][2][2] at (1,1,1).
  int s3[3] = {2, 3, 4}, u3[3] = {1, 2, 2}, t3[3] = {1, 1, 1};
  MAKE(d, rma_type_create_subarray(3, s3, u3, t3, RMA_ORDER_C, RMA_DOUBLE, &d));
  const std::int64_t first = (1 * 12 + 1 * 4 + 1) * 8;
  EXPECT_EQ(info_of(d), (Info{32, 0, 192, first, 48}));
  EXPECT_EQ(blocks_of(d), (Blocks{{first, 16}, {first + 32, 16}}));
  // Over a resized type (MPICH: size 24, lb 0, extent 240, true lb 84, true extent 88).
  MAKE(r, rma_type_create_resized(RMA_INT, -4, 12, &r));
  MAKE(cr, rma_type_create_subarray(2, sizes, sub, starts, RMA_ORDER_C, r, &cr));
  EXPECT_EQ(info_of(cr), (Info{24, 0, 240, 84, 88}));
  // Empty subarray keeps the full extent (as MPICH).
  int s1[1] = {4}, u1[1] = {0}, t1[1] = {0};
  MAKE(e, rma_type_create_subarray(1, s1, u1, t1, RMA_ORDER_C, RMA_INT, &e));
  EXPECT_EQ(info_of(e), (Info{0, 0, 16, 0, 0}));
  EXPECT_TRUE(blocks_of(e, 3).empty());
}

TEST(DatatypeConstructors, DupKeepsLayoutAndCommitState) {
  TypeGuard g;
  MAKE(v, rma_type_vector(3, 2, 4, RMA_INT, &v));
  MAKE(d, rma_type_dup(v, &d));
  EXPECT_EQ(info_of(d), info_of(v));
  EXPECT_FALSE(d->committed);
  ASSERT_EQ(rma_type_commit(&v), RMA_SUCCESS);
  MAKE(d2, rma_type_dup(v, &d2));
  EXPECT_TRUE(d2->committed);
  EXPECT_EQ(blocks_of(d2), blocks_of(v));
  rma_Datatype p = RMA_DATATYPE_NULL;  // a duplicate of a predefined type can be freed
  ASSERT_EQ(rma_type_dup(RMA_DOUBLE, &p), RMA_SUCCESS);
  EXPECT_FALSE(p->predefined);
  EXPECT_EQ(rma_type_free(&p), RMA_SUCCESS);
  EXPECT_EQ(p, RMA_DATATYPE_NULL);
}

TEST(DatatypeConstructors, ZeroCountsMakeEmptyTypes) {
  TypeGuard g;
  MAKE(c, rma_type_contiguous(0, RMA_INT, &c));
  EXPECT_EQ(info_of(c), (Info{0, 0, 0, 0, 0}));
  MAKE(v, rma_type_vector(0, 1, 3, RMA_INT, &v));
  EXPECT_EQ(info_of(v), (Info{0, 0, 0, 0, 0}));
  MAKE(b, rma_type_vector(3, 0, 3, RMA_INT, &b));
  EXPECT_EQ(info_of(b), (Info{0, 0, 0, 0, 0}));
  MAKE(i, rma_type_indexed(0, nullptr, nullptr, RMA_INT, &i));
  EXPECT_EQ(info_of(i), (Info{0, 0, 0, 0, 0}));
  MAKE(s, rma_type_create_struct(0, nullptr, nullptr, nullptr, &s));
  EXPECT_EQ(info_of(s), (Info{0, 0, 0, 0, 0}));
  MAKE(n, rma_type_contiguous(5, c, &n));  // of an empty type
  EXPECT_EQ(info_of(n), (Info{0, 0, 0, 0, 0}));
  EXPECT_TRUE(blocks_of(n, 10).empty());
  EXPECT_TRUE(blocks_of(RMA_INT, 0).empty());
}

TEST(DatatypeConstructors, MillionBlockVectorIsCompact) {
  TypeGuard g;
  MAKE(v, rma_type_vector(1000000, 1, 2, RMA_INT, &v));
  EXPECT_EQ(info_of(v), (Info{4000000, 0, 7999996, 0, 7999996}));
  EXPECT_LE(v->layout.description_words(), 16u);
  EXPECT_EQ(v->layout.depth(), 1u);
  // A vector of it is still a handful of words.
  MAKE(w, rma_type_create_hvector(1000, 1, 8000000, v, &w));
  EXPECT_LE(w->layout.description_words(), 32u);
  EXPECT_EQ(w->layout.size, 4000000000LL);
}

TEST(DatatypeConstructors, SizeQueriesAboveIntMax) {
  TypeGuard g;
  MAKE(big, rma_type_contiguous(1 << 30, RMA_DOUBLE, &big));  // 8 GiB
  int size = 0;
  EXPECT_EQ(rma_type_size(big, &size), RMA_SUCCESS);
  EXPECT_EQ(size, RMA_UNDEFINED);
  rma_Count sx = 0;
  EXPECT_EQ(rma_type_size_x(big, &sx), RMA_SUCCESS);
  EXPECT_EQ(sx, 8LL << 30);
}

}  // namespace
}  // namespace rma::api::test
