// Issue 12 defect 9: origins at RMA_BOTTOM with absolute displacements from
// rma_get_address, in every operation that takes a buffer; address
// arithmetic. Before the fix every such call failed with RMA_ERR_BUFFER
// ("origin_addr is null").
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "api_test_util.hpp"

namespace {

using api_test::run_ranks;

// Three scattered int64 "fields" of a user's structure, described by their
// absolute addresses.
struct Scattered {
  std::int64_t a = 0;
  char pad1[24] = {};
  std::int64_t b = 0;
  char pad2[8] = {};
  std::int64_t c = 0;
};

rma_Datatype absolute_type(Scattered& s, rma_Datatype elem) {
  rma_Aint disps[3];
  EXPECT_EQ(rma_get_address(&s.a, &disps[0]), RMA_SUCCESS);
  EXPECT_EQ(rma_get_address(&s.b, &disps[1]), RMA_SUCCESS);
  EXPECT_EQ(rma_get_address(&s.c, &disps[2]), RMA_SUCCESS);
  const int blens[3] = {1, 1, 1};
  rma_Datatype t = RMA_DATATYPE_NULL;
  EXPECT_EQ(rma_type_create_hindexed(3, blens, disps, elem, &t), RMA_SUCCESS);
  EXPECT_EQ(rma_type_commit(&t), RMA_SUCCESS);
  return t;
}

TEST(ApiBottom, AddressArithmetic) {
  int x[4] = {};
  rma_Aint a0 = 0, a3 = 0;
  ASSERT_EQ(rma_get_address(&x[0], &a0), RMA_SUCCESS);
  ASSERT_EQ(rma_get_address(&x[3], &a3), RMA_SUCCESS);
  EXPECT_EQ(static_cast<std::uintptr_t>(a0), reinterpret_cast<std::uintptr_t>(&x[0]));
  EXPECT_EQ(rma_aint_diff(a3, a0), static_cast<rma_Aint>(3 * sizeof(int)));
  EXPECT_EQ(rma_aint_add(a0, 3 * sizeof(int)), a3);
  EXPECT_EQ(rma_aint_add(a3, -static_cast<rma_Aint>(3 * sizeof(int))), a0);
  EXPECT_EQ(rma_get_address(&x[0], nullptr), RMA_ERR_ARG);
}

TEST(ApiBottom, EveryOperationTakesBottomOrigins) {
  run_ranks(2, [](int rank, int) {
    std::int64_t* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(16 * 8, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
    const int peer = 1 - rank;
    Scattered src;
    src.a = 100 + rank;
    src.b = 200 + rank;
    src.c = 300 + rank;
    rma_Datatype st = absolute_type(src, RMA_INT64_T);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    // put: peer's [0, 3) = a, b, c.
    ASSERT_EQ(rma_put(RMA_BOTTOM, 1, st, peer, 0, 3, RMA_INT64_T, win), RMA_SUCCESS)
        << api_test::last_message();
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    EXPECT_EQ(base[0], 100 + peer);
    EXPECT_EQ(base[1], 200 + peer);
    EXPECT_EQ(base[2], 300 + peer);

    // get into scattered fields.
    Scattered back;
    rma_Datatype bt = absolute_type(back, RMA_INT64_T);
    ASSERT_EQ(rma_get(RMA_BOTTOM, 1, bt, peer, 0, 3, RMA_INT64_T, win), RMA_SUCCESS)
        << api_test::last_message();
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    EXPECT_EQ(back.a, 100 + rank);
    EXPECT_EQ(back.b, 200 + rank);
    EXPECT_EQ(back.c, 300 + rank);

    // accumulate int64 SUM (the NIC-atomic path packs the origin) and
    // get_accumulate with a RMA_BOTTOM result.
    ASSERT_EQ(rma_accumulate(RMA_BOTTOM, 1, st, peer, 0, 3, RMA_INT64_T, RMA_SUM, win), RMA_SUCCESS)
        << api_test::last_message();
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    EXPECT_EQ(base[0], 2 * (100 + peer));
    EXPECT_EQ(base[2], 2 * (300 + peer));
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);  // both checked before the next change
    Scattered fetched;
    rma_Datatype ft = absolute_type(fetched, RMA_INT64_T);
    ASSERT_EQ(rma_get_accumulate(RMA_BOTTOM, 1, st, RMA_BOTTOM, 1, ft, peer, 0, 3, RMA_INT64_T,
                                 RMA_SUM, win),
              RMA_SUCCESS)
        << api_test::last_message();
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    EXPECT_EQ(fetched.a, 2 * (100 + rank));
    EXPECT_EQ(fetched.b, 2 * (200 + rank));
    EXPECT_EQ(base[1], 3 * (200 + peer));
    ASSERT_EQ(rma_win_fence(RMA_MODE_NOSUCCEED, win), RMA_SUCCESS);

    // The lock path (MAX on int64 packs and unpacks through scratch) and the
    // request forms.
    ASSERT_EQ(rma_win_lock(RMA_LOCK_EXCLUSIVE, peer, 0, win), RMA_SUCCESS);
    src.a = 1000;
    src.b = 0;
    src.c = 1000;
    rma_Request reqs[3];
    ASSERT_EQ(rma_raccumulate(RMA_BOTTOM, 1, st, peer, 0, 3, RMA_INT64_T, RMA_MAX, win, &reqs[0]),
              RMA_SUCCESS)
        << api_test::last_message();
    ASSERT_EQ(rma_rget(RMA_BOTTOM, 1, bt, peer, 0, 3, RMA_INT64_T, win, &reqs[1]), RMA_SUCCESS);
    ASSERT_EQ(rma_rput(RMA_BOTTOM, 1, st, peer, 4, 3, RMA_INT64_T, win, &reqs[2]), RMA_SUCCESS);
    ASSERT_EQ(rma_waitall(3, reqs, RMA_STATUSES_IGNORE), RMA_SUCCESS);
    ASSERT_EQ(rma_win_unlock(peer, win), RMA_SUCCESS);
    EXPECT_EQ(back.a, 1000);
    EXPECT_EQ(back.b, 3 * (200 + rank));
    EXPECT_EQ(back.c, 1000);
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_sync(win), RMA_SUCCESS);
    EXPECT_EQ(base[4], 1000);
    EXPECT_EQ(base[5], 0);

    // A null buffer with a type relative to it is still a null pointer.
    ASSERT_EQ(rma_win_lock(RMA_LOCK_SHARED, peer, 0, win), RMA_SUCCESS);
    EXPECT_EQ(rma_put(RMA_BOTTOM, 3, RMA_INT64_T, peer, 0, 3, RMA_INT64_T, win), RMA_ERR_BUFFER);
    EXPECT_NE(api_test::last_message().find("RMA_BOTTOM"), std::string::npos) << api_test::last_message();
    EXPECT_EQ(rma_get(RMA_BOTTOM, 3, RMA_INT64_T, peer, 0, 3, RMA_INT64_T, win), RMA_ERR_BUFFER);
    EXPECT_EQ(rma_accumulate(RMA_BOTTOM, 3, RMA_INT64_T, peer, 0, 3, RMA_INT64_T, RMA_SUM, win),
              RMA_ERR_BUFFER);
    ASSERT_EQ(rma_win_unlock(peer, win), RMA_SUCCESS);

    rma_type_free(&st);
    rma_type_free(&bt);
    rma_type_free(&ft);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

}  // namespace
