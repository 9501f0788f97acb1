// Window attribute caching, names and the collective rma_win_set_info
// (window/attributes.cpp).
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "api_test_util.hpp"

namespace {

using api_test::last_message;
using api_test::run_ranks;

std::atomic<int> g_deleted{0};
std::atomic<int> g_delete_sum{0};
int count_delete(rma_Win, int, void* value, void* extra) {
  g_deleted.fetch_add(1);
  g_delete_sum.fetch_add(*static_cast<int*>(value) + (extra != nullptr ? 1000 : 0));
  return RMA_SUCCESS;
}
// Refuses while *extra_state is non-zero.
int refuse_delete(rma_Win, int, void*, void* extra) { return *static_cast<int*>(extra) != 0 ? RMA_ERR_OTHER : RMA_SUCCESS; }

TEST(ApiWinAttr, KeyvalsValuesDeleteCallbacksAndNames) {
  g_deleted = 0;
  g_delete_sum = 0;
  run_ranks(2, [](int rank, int) {
    int* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(16, 4, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
    ASSERT_EQ(rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN), RMA_SUCCESS);
    int extra = 0;
    int key = RMA_KEYVAL_INVALID;
    ASSERT_EQ(rma_win_create_keyval(RMA_WIN_NULL_COPY_FN, count_delete, &key, &extra), RMA_SUCCESS);
    EXPECT_GE(key, 100);
    int v1 = 1 + rank, v2 = 10 + rank;
    void* got = nullptr;
    int flag = -1;
    ASSERT_EQ(rma_win_get_attr(win, key, &got, &flag), RMA_SUCCESS);
    EXPECT_EQ(flag, 0);
    ASSERT_EQ(rma_win_set_attr(win, key, &v1), RMA_SUCCESS);
    ASSERT_EQ(rma_win_get_attr(win, key, &got, &flag), RMA_SUCCESS);
    EXPECT_EQ(flag, 1);
    EXPECT_EQ(got, &v1);
    ASSERT_EQ(rma_win_set_attr(win, key, &v2), RMA_SUCCESS);  // deletes v1
    ASSERT_EQ(rma_win_get_attr(win, key, &got, &flag), RMA_SUCCESS);
    EXPECT_EQ(got, &v2);
    // Predefined keys still answer.
    ASSERT_EQ(rma_win_get_attr(win, RMA_WIN_BASE, &got, &flag), RMA_SUCCESS);
    EXPECT_EQ(got, base);
    // Freeing the keyval keeps the window's value (and its callback).
    int keep = key;
    ASSERT_EQ(rma_win_free_keyval(&key), RMA_SUCCESS);
    EXPECT_EQ(key, RMA_KEYVAL_INVALID);
    EXPECT_EQ(rma_win_set_attr(win, keep, &v1), RMA_ERR_KEYVAL);
    EXPECT_EQ(rma_win_free_keyval(&keep), RMA_ERR_KEYVAL);
    // Bad input.
    EXPECT_EQ(rma_win_get_attr(win, 99, &got, &flag), RMA_ERR_KEYVAL);
    EXPECT_EQ(rma_win_create_keyval(RMA_WIN_NULL_COPY_FN, RMA_WIN_NULL_DELETE_FN, nullptr, nullptr), RMA_ERR_ARG);
    EXPECT_EQ(rma_win_set_attr(RMA_WIN_NULL, 100, &v1), RMA_ERR_WIN);
    // A delete callback that fails stops rma_win_delete_attr.
    int strict = 0, refuse = 1;
    ASSERT_EQ(rma_win_create_keyval(RMA_WIN_NULL_COPY_FN, refuse_delete, &strict, &refuse), RMA_SUCCESS);
    ASSERT_EQ(rma_win_set_attr(win, strict, &v1), RMA_SUCCESS);
    EXPECT_EQ(rma_win_delete_attr(win, strict), RMA_ERR_OTHER);
    EXPECT_TRUE(last_message().find("delete callback") != std::string::npos) << last_message();
    ASSERT_EQ(rma_win_get_attr(win, strict, &got, &flag), RMA_SUCCESS);
    EXPECT_EQ(flag, 1);
    // ... and rma_win_free, which then frees nothing.
    EXPECT_EQ(rma_win_free(&win), RMA_ERR_OTHER);
    EXPECT_NE(win, RMA_WIN_NULL);
    // Replace it with a deletable value: a callback-less keyval.
    int plain = 0;
    ASSERT_EQ(rma_win_create_keyval(RMA_WIN_NULL_COPY_FN, RMA_WIN_NULL_DELETE_FN, &plain, nullptr), RMA_SUCCESS);
    ASSERT_EQ(rma_win_set_attr(win, plain, &v1), RMA_SUCCESS);
    ASSERT_EQ(rma_win_delete_attr(win, plain), RMA_SUCCESS);
    EXPECT_EQ(rma_win_delete_attr(win, plain), RMA_ERR_KEYVAL);  // no value any more
    ASSERT_EQ(rma_win_free_keyval(&plain), RMA_SUCCESS);

    char name[RMA_MAX_OBJECT_NAME];
    int len = -1;
    ASSERT_EQ(rma_win_get_name(win, name, &len), RMA_SUCCESS);
    EXPECT_EQ(len, 0);
    ASSERT_EQ(rma_win_set_name(win, "halo"), RMA_SUCCESS);
    ASSERT_EQ(rma_win_get_name(win, name, &len), RMA_SUCCESS);
    EXPECT_STREQ(name, "halo");
    EXPECT_EQ(rma_win_set_name(win, std::string(RMA_MAX_OBJECT_NAME, 'n').c_str()), RMA_ERR_ARG);

    ASSERT_EQ(rma_win_free_keyval(&strict), RMA_SUCCESS);
    refuse = 0;
    g_deleted = 0;
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    // Now the free runs both remaining callbacks (v2's and the strict one).
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
  // Each rank: v1 (replaced) then, at the free, v2; extra_state was set.
  EXPECT_EQ(g_delete_sum.load(), (1000 + 1) + (1000 + 2) + (1000 + 10) + (1000 + 11));
}

TEST(ApiWinAttr, SetInfoIsCollectiveAndRanksMustAgree) {
  run_ranks(3, [](int rank, int) {
    int* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(16, 4, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    rma_win_set_errhandler(win, RMA_ERRORS_RETURN);
    rma_Info info = RMA_INFO_NULL;
    ASSERT_EQ(rma_info_create(&info), RMA_SUCCESS);
    ASSERT_EQ(rma_info_set(info, "accumulate_ops", "same_op"), RMA_SUCCESS);
    ASSERT_EQ(rma_win_set_info(win, info), RMA_SUCCESS);
    // Rank 2 disagrees: every rank fails, naming a rank, and nothing changes.
    ASSERT_EQ(rma_info_set(info, "accumulate_ordering", rank == 2 ? "none" : "rar"), RMA_SUCCESS);
    EXPECT_EQ(rma_win_set_info(win, info), RMA_ERR_INFO_VALUE);
    EXPECT_NE(last_message().find("rank "), std::string::npos) << last_message();
    rma_Info used = RMA_INFO_NULL;
    ASSERT_EQ(rma_win_get_info(win, &used), RMA_SUCCESS);
    char v[64];
    int flag = 0, len = sizeof v;
    ASSERT_EQ(rma_info_get_string(used, "accumulate_ordering", &len, v, &flag), RMA_SUCCESS);
    EXPECT_STREQ(v, "rar,raw,war,waw");
    len = sizeof v;
    ASSERT_EQ(rma_info_get_string(used, "accumulate_ops", &len, v, &flag), RMA_SUCCESS);
    EXPECT_STREQ(v, "same_op");
    rma_info_free(&used);
    rma_info_free(&info);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

// accumulate_ops=same_op lets REPLACE go as an RDMA WRITE: concurrent
// REPLACEs from every rank still leave each element whole (one origin's).
TEST(ApiWinAttr, SameOpReplaceStaysElementwiseAtomic) {
  run_ranks(4, [](int rank, int size) {
    rma_Info info = RMA_INFO_NULL;
    ASSERT_EQ(rma_info_create(&info), RMA_SUCCESS);
    ASSERT_EQ(rma_info_set(info, "accumulate_ops", "same_op"), RMA_SUCCESS);
    double* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(64 * 8, 8, info, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    rma_info_free(&info);
    std::vector<double> mine(64);
    ASSERT_EQ(rma_win_lock_all(0, win), RMA_SUCCESS);
    for (int it = 0; it < 50; ++it) {
      for (int i = 0; i < 64; ++i) mine[static_cast<std::size_t>(i)] = rank * 1e6 + it * 1000 + i;
      ASSERT_EQ(rma_accumulate(mine.data(), 64, RMA_DOUBLE, 0, 0, 64, RMA_DOUBLE, RMA_REPLACE, win), RMA_SUCCESS);
      ASSERT_EQ(rma_win_flush(0, win), RMA_SUCCESS);
    }
    ASSERT_EQ(rma_win_unlock_all(win), RMA_SUCCESS);
    ASSERT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    ASSERT_EQ(rma_win_sync(win), RMA_SUCCESS);
    if (rank == 0) {
      for (int i = 0; i < 64; ++i) {
        const double v = base[i];
        const int who = static_cast<int>(v / 1e6);
        const int it = static_cast<int>((v - who * 1e6) / 1000);
        EXPECT_GE(who, 0);
        EXPECT_LT(who, size);
        EXPECT_EQ(v, who * 1e6 + it * 1000 + i) << "element " << i << " is torn: " << v;
      }
    }
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

}  // namespace
