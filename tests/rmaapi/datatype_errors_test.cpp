// Every argument check of the C datatype API returns its MPI-like class and
// leaves the outputs alone.
#include <gtest/gtest.h>

#include <climits>
#include <cstring>
#include <string>

#include "datatype/errors.hpp"
#include "dt_test_util.hpp"

extern "C" int rma_c99_datatype_check(void);

namespace rma::api::test {
namespace {

rma_Datatype const kSentinel = reinterpret_cast<rma_Datatype>(0x1);

// Calls `call` and checks its code and that *out was not written.
#define EXPECT_ERR(code, call)                                           \
  do {                                                                   \
    out = kSentinel;                                                     \
    EXPECT_EQ(call, code) << #call << ": " << last_error_message();      \
    EXPECT_EQ(out, kSentinel) << #call << " wrote its output on error"; \
    EXPECT_FALSE(last_error_message().empty());                          \
  } while (0)

TEST(DatatypeErrors, NegativeCountsAndBlocklengths) {
  rma_Datatype out;
  int bl[2] = {1, -1};
  int d[2] = {0, 1};
  rma_Aint hd[2] = {0, 8};
  rma_Datatype ty[2] = {RMA_INT, RMA_INT};
  EXPECT_ERR(RMA_ERR_COUNT, rma_type_contiguous(-1, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_COUNT, rma_type_vector(-2, 1, 1, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_vector(2, -1, 1, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_COUNT, rma_type_create_hvector(-2, 1, 1, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_hvector(2, -1, 1, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_COUNT, rma_type_indexed(-1, bl, d, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_indexed(2, bl, d, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_hindexed(2, bl, hd, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_COUNT, rma_type_create_indexed_block(-1, 1, d, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_indexed_block(2, -1, d, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_hindexed_block(2, -1, hd, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_COUNT, rma_type_create_struct(-1, bl, hd, ty, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_struct(2, bl, hd, ty, &out));
}

TEST(DatatypeErrors, NullArraysWithPositiveCount) {
  rma_Datatype out;
  int bl[1] = {1};
  int d[1] = {0};
  rma_Aint hd[1] = {0};
  rma_Datatype ty[1] = {RMA_INT};
  EXPECT_ERR(RMA_ERR_ARG, rma_type_indexed(1, nullptr, d, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_indexed(1, bl, nullptr, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_hindexed(1, nullptr, hd, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_hindexed(1, bl, nullptr, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_indexed_block(1, 1, nullptr, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_hindexed_block(1, 1, nullptr, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_struct(1, nullptr, hd, ty, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_struct(1, bl, nullptr, ty, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_struct(1, bl, hd, nullptr, &out));
  int s[1] = {4};
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_subarray(1, nullptr, s, s, RMA_ORDER_C, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_subarray(1, s, nullptr, s, RMA_ORDER_C, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_subarray(1, s, s, nullptr, RMA_ORDER_C, RMA_INT, &out));
}

TEST(DatatypeErrors, BadTypeHandles) {
  rma_Datatype out;
  int bl[2] = {1, 1};
  rma_Aint hd[2] = {0, 8};
  rma_Datatype ty[2] = {RMA_INT, RMA_DATATYPE_NULL};
  EXPECT_ERR(RMA_ERR_TYPE, rma_type_contiguous(1, RMA_DATATYPE_NULL, &out));
  EXPECT_ERR(RMA_ERR_TYPE, rma_type_vector(1, 1, 1, RMA_DATATYPE_NULL, &out));
  EXPECT_ERR(RMA_ERR_TYPE, rma_type_create_resized(RMA_DATATYPE_NULL, 0, 4, &out));
  EXPECT_ERR(RMA_ERR_TYPE, rma_type_dup(RMA_DATATYPE_NULL, &out));
  EXPECT_ERR(RMA_ERR_TYPE, rma_type_create_struct(2, bl, hd, ty, &out));
  // A pointer that is not a datatype (wrong magic).
  struct rma_datatype_s fake;
  fake.magic = 0;
  EXPECT_ERR(RMA_ERR_TYPE, rma_type_contiguous(1, &fake, &out));
  int size = 7;
  EXPECT_EQ(rma_type_size(RMA_DATATYPE_NULL, &size), RMA_ERR_TYPE);
  EXPECT_EQ(size, 7);
  rma_Aint lb = 7, ext = 7;
  EXPECT_EQ(rma_type_get_extent(RMA_DATATYPE_NULL, &lb, &ext), RMA_ERR_TYPE);
  EXPECT_EQ(rma_type_get_true_extent(RMA_DATATYPE_NULL, &lb, &ext), RMA_ERR_TYPE);
  EXPECT_EQ(lb, 7);
  rma_Count sx = 7;
  EXPECT_EQ(rma_type_size_x(RMA_DATATYPE_NULL, &sx), RMA_ERR_TYPE);
}

TEST(DatatypeErrors, NullOutputs) {
  EXPECT_EQ(rma_type_contiguous(1, RMA_INT, nullptr), RMA_ERR_ARG);
  EXPECT_EQ(rma_type_dup(RMA_INT, nullptr), RMA_ERR_ARG);
  EXPECT_EQ(rma_type_create_struct(0, nullptr, nullptr, nullptr, nullptr), RMA_ERR_ARG);
  EXPECT_EQ(rma_type_size(RMA_INT, nullptr), RMA_ERR_ARG);
  EXPECT_EQ(rma_type_size_x(RMA_INT, nullptr), RMA_ERR_ARG);
  rma_Aint lb = 0;
  EXPECT_EQ(rma_type_get_extent(RMA_INT, &lb, nullptr), RMA_ERR_ARG);
  EXPECT_EQ(rma_type_get_true_extent(RMA_INT, nullptr, &lb), RMA_ERR_ARG);
  EXPECT_EQ(rma_type_commit(nullptr), RMA_ERR_ARG);
  EXPECT_EQ(rma_type_free(nullptr), RMA_ERR_ARG);
}

TEST(DatatypeErrors, SubarrayArguments) {
  rma_Datatype out;
  int sizes[2] = {4, 5}, sub[2] = {2, 3}, st[2] = {1, 2};
  int bad_sub[2] = {5, 3}, neg_sub[2] = {-1, 3}, bad_st[2] = {3, 2}, neg_st[2] = {-1, 0};
  int zero_size[2] = {0, 5};
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_subarray(0, sizes, sub, st, RMA_ORDER_C, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_subarray(2, sizes, sub, st, 99, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_subarray(2, sizes, bad_sub, st, RMA_ORDER_C, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_subarray(2, sizes, neg_sub, st, RMA_ORDER_C, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_subarray(2, sizes, sub, bad_st, RMA_ORDER_C, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_subarray(2, sizes, sub, neg_st, RMA_ORDER_C, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_subarray(2, zero_size, sub, st, RMA_ORDER_C, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_TYPE, rma_type_create_subarray(2, sizes, sub, st, RMA_ORDER_C, RMA_DATATYPE_NULL, &out));
}

TEST(DatatypeErrors, SixtyFourBitOverflow) {
  TypeGuard g;
  rma_Datatype out;
  rma_Datatype big = RMA_DATATYPE_NULL;
  ASSERT_EQ(rma_type_contiguous(1 << 30, RMA_DOUBLE, &big), RMA_SUCCESS);  // 2^33 bytes
  g.add(big);
  rma_Datatype bigger = RMA_DATATYPE_NULL;
  ASSERT_EQ(rma_type_contiguous(1 << 29, big, &bigger), RMA_SUCCESS);  // 2^62 bytes
  g.add(bigger);
  EXPECT_ERR(RMA_ERR_ARG, rma_type_contiguous(2, bigger, &out));  // size 2^63
  EXPECT_NE(last_error_message().find("overflow"), std::string::npos);
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_hvector(2, 1, INTPTR_MAX, RMA_INT, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_vector(3, 1, INT_MAX, bigger, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_resized(RMA_INT, INTPTR_MAX, 8, &out));
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_resized(RMA_INT, INTPTR_MIN, -1, &out));
  rma_Aint hd[2] = {INTPTR_MIN + 8, INTPTR_MAX - 8};
  int bl[2] = {1, 1};
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_hindexed(2, bl, hd, RMA_INT, &out));  // extent overflows
  int sizes[2] = {INT_MAX, INT_MAX}, sub[2] = {1, 1}, st[2] = {0, 0};
  EXPECT_ERR(RMA_ERR_ARG, rma_type_create_subarray(2, sizes, sub, st, RMA_ORDER_C, bigger, &out));
}

TEST(DatatypeErrors, FreeAndCommit) {
  rma_Datatype t = RMA_INT;
  EXPECT_EQ(rma_type_free(&t), RMA_ERR_TYPE);  // predefined
  EXPECT_EQ(t, RMA_INT);
  EXPECT_NE(last_error_message().find("RMA_INT"), std::string::npos);
  rma_Datatype n = RMA_DATATYPE_NULL;
  EXPECT_EQ(rma_type_free(&n), RMA_ERR_TYPE);
  EXPECT_EQ(rma_type_commit(&n), RMA_ERR_TYPE);
  rma_Datatype v = RMA_DATATYPE_NULL;
  ASSERT_EQ(rma_type_vector(2, 1, 2, RMA_INT, &v), RMA_SUCCESS);
  rma_Datatype c = RMA_DATATYPE_NULL;
  ASSERT_EQ(rma_type_contiguous(3, v, &c), RMA_SUCCESS);
  EXPECT_EQ(rma_type_commit(&v), RMA_SUCCESS);
  EXPECT_EQ(rma_type_commit(&v), RMA_SUCCESS);  // twice is fine
  EXPECT_EQ(rma_type_free(&v), RMA_SUCCESS);
  EXPECT_EQ(v, RMA_DATATYPE_NULL);
  // Types built from a freed type stay valid.
  EXPECT_EQ(blocks_of(c), (Blocks{{0, 4}, {8, 8}, {20, 8}, {32, 4}}));
  EXPECT_EQ(rma_type_free(&c), RMA_SUCCESS);
  EXPECT_TRUE(last_error_message().empty());
}

TEST(DatatypeErrors, ErrorStrings) {
  char text[RMA_MAX_ERROR_STRING];
  int len = -1;
  for (int code : {RMA_SUCCESS, RMA_ERR_BUFFER, RMA_ERR_COUNT, RMA_ERR_TYPE, RMA_ERR_RANK, RMA_ERR_OP,
                   RMA_ERR_ARG, RMA_ERR_OTHER, RMA_ERR_INTERN, RMA_ERR_WIN, RMA_ERR_RMA_RANGE,
                   RMA_ERR_RMA_SYNC, RMA_ERR_RMA_CONFLICT, RMA_ERR_LASTCODE}) {
    ASSERT_EQ(rma_error_string(code, text, &len), RMA_SUCCESS) << code;
    EXPECT_EQ(static_cast<std::size_t>(len), std::strlen(text));
    EXPECT_GT(len, 0);
  }
  EXPECT_EQ(rma_error_string(RMA_ERR_TYPE, text, &len), RMA_SUCCESS);
  EXPECT_NE(std::string(text).find("datatype"), std::string::npos);
  EXPECT_EQ(rma_error_string(12345, text, &len), RMA_ERR_ARG);
  EXPECT_NE(std::string(text).find("12345"), std::string::npos);
  EXPECT_EQ(rma_error_string(RMA_ERR_TYPE, nullptr, &len), RMA_ERR_ARG);
  EXPECT_EQ(rma_error_string(RMA_ERR_TYPE, text, nullptr), RMA_ERR_ARG);
}

TEST(DatatypeErrors, StatusMapping) {
  EXPECT_EQ(error_code(Status()), RMA_SUCCESS);
  EXPECT_EQ(error_code(type_error("x")), RMA_ERR_TYPE);
  EXPECT_EQ(error_code(count_error("x")), RMA_ERR_COUNT);
  EXPECT_EQ(error_code(arg_error("x")), RMA_ERR_ARG);
  EXPECT_EQ(error_code(buffer_error("x")), RMA_ERR_BUFFER);
  EXPECT_EQ(error_code(internal_error("x")), RMA_ERR_INTERN);
  EXPECT_EQ(error_code(Status(StatusCode::kResourceExhausted, "oom")), RMA_ERR_NO_MEM);
  EXPECT_EQ(error_code(Status(StatusCode::kTimeout, "slow")), RMA_ERR_OTHER);
  EXPECT_EQ(error_code(class_error(RMA_ERR_RMA_RANGE, "x")), RMA_ERR_RMA_RANGE);
  EXPECT_EQ(error_code(class_error(RMA_ERR_RMA_SYNC, "x")), RMA_ERR_RMA_SYNC);
}

TEST(DatatypeErrors, HeaderWorksFromC99) { EXPECT_EQ(rma_c99_datatype_check(), RMA_SUCCESS); }

}  // namespace
}  // namespace rma::api::test
