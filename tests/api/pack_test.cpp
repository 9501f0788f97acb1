// rma_pack, rma_unpack, rma_pack_size and the _x extent queries
// (comm/pack_c_api.cpp); errors through the communicator's handler.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "api_test_util.hpp"

namespace {

using api_test::last_message;
using api_test::run_ranks;

TEST(ApiPack, PackUnpackVectorWithPositions) {
  run_ranks(1, [](int, int) {
    rma_Datatype every_other = RMA_DATATYPE_NULL;
    ASSERT_EQ(rma_type_vector(4, 1, 2, RMA_INT, &every_other), RMA_SUCCESS);
    ASSERT_EQ(rma_type_commit(&every_other), RMA_SUCCESS);
    int size = 0;
    ASSERT_EQ(rma_pack_size(2, every_other, RMA_COMM_WORLD, &size), RMA_SUCCESS);
    EXPECT_EQ(size, 2 * 4 * static_cast<int>(sizeof(int)));
    const int src[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    std::vector<char> buf(static_cast<std::size_t>(size) + 4);
    int pos = 0;
    const int head = 42;
    ASSERT_EQ(rma_pack(&head, 1, RMA_INT, buf.data(), static_cast<int>(buf.size()), &pos, RMA_COMM_WORLD),
              RMA_SUCCESS);
    EXPECT_EQ(pos, 4);
    // Two elements of extent 7 ints: 0,2,4,6 then 7,9,11,13.
    ASSERT_EQ(rma_pack(src, 2, every_other, buf.data(), static_cast<int>(buf.size()), &pos, RMA_COMM_WORLD),
              RMA_SUCCESS);
    EXPECT_EQ(pos, 4 + size);
    int dst[16] = {};
    int h = 0;
    pos = 0;
    ASSERT_EQ(rma_unpack(buf.data(), static_cast<int>(buf.size()), &pos, &h, 1, RMA_INT, RMA_COMM_WORLD), RMA_SUCCESS);
    EXPECT_EQ(h, 42);
    ASSERT_EQ(rma_unpack(buf.data(), static_cast<int>(buf.size()), &pos, dst, 2, every_other, RMA_COMM_WORLD),
              RMA_SUCCESS);
    const int want[14] = {0, 0, 2, 0, 4, 0, 6, 7, 0, 9, 0, 11, 0, 13};
    for (int i = 0; i < 14; ++i) EXPECT_EQ(dst[i], want[i]) << i;
    rma_Count lb = -1, extent = -1;
    ASSERT_EQ(rma_type_get_extent_x(every_other, &lb, &extent), RMA_SUCCESS);
    EXPECT_EQ(lb, 0);
    EXPECT_EQ(extent, 7 * static_cast<rma_Count>(sizeof(int)));
    ASSERT_EQ(rma_type_get_true_extent_x(every_other, &lb, &extent), RMA_SUCCESS);
    EXPECT_EQ(extent, 7 * static_cast<rma_Count>(sizeof(int)));

    // Errors go to the communicator's handler.
    rma_Comm dup = RMA_COMM_NULL;
    ASSERT_EQ(rma_comm_dup(RMA_COMM_SELF, &dup), RMA_SUCCESS);
    ASSERT_EQ(rma_comm_set_errhandler(dup, RMA_ERRORS_RETURN), RMA_SUCCESS);
    pos = 0;
    EXPECT_EQ(rma_pack(src, 2, every_other, buf.data(), 8, &pos, dup), RMA_ERR_BUFFER);  // too small
    EXPECT_EQ(pos, 0);
    pos = 99;
    EXPECT_EQ(rma_pack(src, 1, RMA_INT, buf.data(), 8, &pos, dup), RMA_ERR_ARG);
    EXPECT_NE(last_message().find("position"), std::string::npos) << last_message();
    pos = 0;
    EXPECT_EQ(rma_pack(src, -1, RMA_INT, buf.data(), 8, &pos, dup), RMA_ERR_COUNT);
    rma_Datatype uncommitted = RMA_DATATYPE_NULL;
    ASSERT_EQ(rma_type_contiguous(2, RMA_INT, &uncommitted), RMA_SUCCESS);
    EXPECT_EQ(rma_pack_size(1, uncommitted, dup, &size), RMA_ERR_TYPE);
    EXPECT_EQ(rma_unpack(buf.data(), 4, &pos, dst, 2, RMA_INT, dup), RMA_ERR_BUFFER);  // 8 bytes wanted
    rma_type_free(&uncommitted);
    ASSERT_EQ(rma_comm_free(&dup), RMA_SUCCESS);
    rma_type_free(&every_other);
  });
}

TEST(ApiDatatypeDecode, EnvelopeAndContentsOfEveryCombiner) {
  int ni = -1, na = -1, nt = -1, comb = -1;
  ASSERT_EQ(rma_type_get_envelope(RMA_DOUBLE, &ni, &na, &nt, &comb), RMA_SUCCESS);
  EXPECT_EQ(comb, RMA_COMBINER_NAMED);
  EXPECT_EQ(ni + na + nt, 0);
  int ints[16];
  rma_Aint aints[8];
  rma_Datatype types[4];
  EXPECT_EQ(rma_type_get_contents(RMA_DOUBLE, 16, 8, 4, ints, aints, types), RMA_ERR_TYPE);

  rma_Datatype vec = RMA_DATATYPE_NULL;
  ASSERT_EQ(rma_type_vector(3, 2, 5, RMA_INT, &vec), RMA_SUCCESS);
  ASSERT_EQ(rma_type_get_envelope(vec, &ni, &na, &nt, &comb), RMA_SUCCESS);
  EXPECT_EQ(comb, RMA_COMBINER_VECTOR);
  EXPECT_EQ(ni, 3);
  EXPECT_EQ(na, 0);
  EXPECT_EQ(nt, 1);
  ASSERT_EQ(rma_type_get_contents(vec, 16, 8, 4, ints, aints, types), RMA_SUCCESS);
  EXPECT_EQ(ints[0], 3);
  EXPECT_EQ(ints[1], 2);
  EXPECT_EQ(ints[2], 5);
  EXPECT_EQ(types[0], RMA_INT);  // predefined: itself
  EXPECT_EQ(rma_type_get_contents(vec, 2, 8, 4, ints, aints, types), RMA_ERR_ARG);

  // A struct of the vector and a double; the vector freed afterwards is
  // still described (and returned as a new handle).
  const int bl[2] = {1, 4};
  const rma_Aint disp[2] = {0, 64};
  const rma_Datatype members[2] = {vec, RMA_DOUBLE};
  rma_Datatype st = RMA_DATATYPE_NULL;
  ASSERT_EQ(rma_type_create_struct(2, bl, disp, members, &st), RMA_SUCCESS);
  ASSERT_EQ(rma_type_free(&vec), RMA_SUCCESS);
  ASSERT_EQ(rma_type_get_envelope(st, &ni, &na, &nt, &comb), RMA_SUCCESS);
  EXPECT_EQ(comb, RMA_COMBINER_STRUCT);
  EXPECT_EQ(ni, 3);
  EXPECT_EQ(na, 2);
  EXPECT_EQ(nt, 2);
  ASSERT_EQ(rma_type_get_contents(st, 16, 8, 4, ints, aints, types), RMA_SUCCESS);
  EXPECT_EQ(ints[0], 2);
  EXPECT_EQ(ints[2], 4);
  EXPECT_EQ(aints[1], 64);
  EXPECT_EQ(types[1], RMA_DOUBLE);
  ASSERT_EQ(rma_type_get_envelope(types[0], &ni, &na, &nt, &comb), RMA_SUCCESS);
  EXPECT_EQ(comb, RMA_COMBINER_VECTOR);
  rma_Count size = 0;
  ASSERT_EQ(rma_type_size_x(types[0], &size), RMA_SUCCESS);
  EXPECT_EQ(size, 6 * static_cast<rma_Count>(sizeof(int)));
  ASSERT_EQ(rma_type_free(&types[0]), RMA_SUCCESS);

  rma_Datatype res = RMA_DATATYPE_NULL, dup = RMA_DATATYPE_NULL, sub = RMA_DATATYPE_NULL;
  ASSERT_EQ(rma_type_create_resized(st, -8, 256, &res), RMA_SUCCESS);
  ASSERT_EQ(rma_type_get_contents(res, 16, 8, 4, ints, aints, types), RMA_SUCCESS);
  EXPECT_EQ(aints[0], -8);
  EXPECT_EQ(aints[1], 256);
  ASSERT_EQ(rma_type_free(&types[0]), RMA_SUCCESS);
  ASSERT_EQ(rma_type_dup(RMA_INT, &dup), RMA_SUCCESS);
  ASSERT_EQ(rma_type_get_envelope(dup, &ni, &na, &nt, &comb), RMA_SUCCESS);
  EXPECT_EQ(comb, RMA_COMBINER_DUP);
  EXPECT_EQ(nt, 1);
  const int sizes[2] = {4, 6}, subs[2] = {2, 3}, starts[2] = {1, 2};
  ASSERT_EQ(rma_type_create_subarray(2, sizes, subs, starts, RMA_ORDER_C, RMA_INT, &sub), RMA_SUCCESS);
  ASSERT_EQ(rma_type_get_envelope(sub, &ni, &na, &nt, &comb), RMA_SUCCESS);
  EXPECT_EQ(comb, RMA_COMBINER_SUBARRAY);
  EXPECT_EQ(ni, 8);
  ASSERT_EQ(rma_type_get_contents(sub, 16, 8, 4, ints, aints, types), RMA_SUCCESS);
  const int want[8] = {2, 4, 6, 2, 3, 1, 2, RMA_ORDER_C};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(ints[i], want[i]) << i;
  rma_type_free(&res);
  rma_type_free(&dup);
  rma_type_free(&sub);
  rma_type_free(&st);
}

// A 4 x 6 int array over a 2 x 2 grid: block rows, cyclic columns. Each
// rank puts its part of its own copy into rank 0's window with the darray
// as the target type; rank 0 then holds the whole array.
TEST(ApiDatatypeDecode, DarrayPutsAssembleTheGlobalArray) {
  run_ranks(4, [](int rank, int size) {
    const int g[2] = {4, 6}, dist[2] = {RMA_DISTRIBUTE_BLOCK, RMA_DISTRIBUTE_CYCLIC};
    const int dargs[2] = {RMA_DISTRIBUTE_DFLT_DARG, RMA_DISTRIBUTE_DFLT_DARG}, ps[2] = {2, 2};
    rma_Datatype part = RMA_DATATYPE_NULL;
    ASSERT_EQ(rma_type_create_darray(size, rank, 2, g, dist, dargs, ps, RMA_ORDER_C, RMA_INT, &part), RMA_SUCCESS);
    ASSERT_EQ(rma_type_commit(&part), RMA_SUCCESS);
    rma_Aint lb = -1, extent = -1;
    ASSERT_EQ(rma_type_get_extent(part, &lb, &extent), RMA_SUCCESS);
    EXPECT_EQ(lb, 0);
    EXPECT_EQ(extent, 24 * static_cast<rma_Aint>(sizeof(int)));
    int n = 0;
    ASSERT_EQ(rma_type_size(part, &n), RMA_SUCCESS);
    EXPECT_EQ(n, 6 * static_cast<int>(sizeof(int)));  // 2 rows x 3 columns
    // Row coordinate rank / 2 owns rows 2r, 2r+1; column coordinate rank % 2
    // owns columns c, c+2, c+4.
    int global[24];
    for (int i = 0; i < 24; ++i) global[i] = 100 * rank + i;
    int packed[6];
    int pos = 0;
    ASSERT_EQ(rma_pack(global, 1, part, packed, sizeof packed, &pos, RMA_COMM_SELF), RMA_SUCCESS);
    int k = 0;
    for (int r = 2 * (rank / 2); r < 2 * (rank / 2) + 2; ++r) {
      for (int c = rank % 2; c < 6; c += 2) EXPECT_EQ(packed[k++], 100 * rank + 6 * r + c);
    }
    int* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(24 * sizeof(int), sizeof(int), RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win),
              RMA_SUCCESS);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    ASSERT_EQ(rma_put(packed, 6, RMA_INT, 0, 0, 1, part, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    if (rank == 0) {
      for (int r = 0; r < 4; ++r) {
        for (int c = 0; c < 6; ++c) {
          const int owner = 2 * (r / 2) + c % 2;
          EXPECT_EQ(base[6 * r + c], 100 * owner + 6 * r + c) << r << "," << c;
        }
      }
    }
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
    rma_type_free(&part);
  });
}

}  // namespace
