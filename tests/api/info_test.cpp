// Info objects (MPI 4.x chapter 10) and the window hints librma acts on.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "api_test_util.hpp"
#include "rma/rma.h"
#include "rma/rma.hpp"

namespace {

using api_test::last_message;
using api_test::run_ranks;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string get(rma_Info info, const char* key) {
  int len = 0, flag = 0;
  EXPECT_EQ(rma_info_get_string(info, key, &len, nullptr, &flag), RMA_SUCCESS);
  if (flag == 0) return "<absent>";
  std::string v(static_cast<std::size_t>(len), '\0');
  EXPECT_EQ(rma_info_get_string(info, key, &len, v.data(), &flag), RMA_SUCCESS);
  v.resize(static_cast<std::size_t>(len) - 1);
  return v;
}

TEST(ApiInfo, KeysAreSetReadDeletedAndDuplicatedInInsertionOrder) {
  rma_Info info = RMA_INFO_NULL;
  ASSERT_EQ(rma_info_create(&info), RMA_SUCCESS);
  ASSERT_EQ(rma_info_set(info, "b_key", "first"), RMA_SUCCESS);
  ASSERT_EQ(rma_info_set(info, "a_key", "second"), RMA_SUCCESS);
  ASSERT_EQ(rma_info_set(info, "b_key", "replaced"), RMA_SUCCESS);
  int n = -1;
  ASSERT_EQ(rma_info_get_nkeys(info, &n), RMA_SUCCESS);
  EXPECT_EQ(n, 2);
  char key[RMA_MAX_INFO_KEY + 1];
  ASSERT_EQ(rma_info_get_nthkey(info, 0, key), RMA_SUCCESS);
  EXPECT_STREQ(key, "b_key");
  ASSERT_EQ(rma_info_get_nthkey(info, 1, key), RMA_SUCCESS);
  EXPECT_STREQ(key, "a_key");
  EXPECT_EQ(get(info, "b_key"), "replaced");
  EXPECT_EQ(get(info, "missing"), "<absent>");

  // A short buffer gets a truncated, terminated value and the full length.
  char small[4] = {'x', 'x', 'x', 'x'};
  int buflen = 4, flag = 0;
  ASSERT_EQ(rma_info_get_string(info, "b_key", &buflen, small, &flag), RMA_SUCCESS);
  EXPECT_EQ(flag, 1);
  EXPECT_EQ(buflen, 9);
  EXPECT_STREQ(small, "rep");
  // MPI 3 forms.
  int len = 0;
  ASSERT_EQ(rma_info_get_valuelen(info, "a_key", &len, &flag), RMA_SUCCESS);
  EXPECT_EQ(flag, 1);
  EXPECT_EQ(len, 6);
  char v[4];
  ASSERT_EQ(rma_info_get(info, "a_key", 3, v, &flag), RMA_SUCCESS);
  EXPECT_STREQ(v, "sec");

  rma_Info copy = RMA_INFO_NULL;
  ASSERT_EQ(rma_info_dup(info, &copy), RMA_SUCCESS);
  ASSERT_EQ(rma_info_delete(info, "b_key"), RMA_SUCCESS);
  EXPECT_EQ(get(info, "b_key"), "<absent>");
  EXPECT_EQ(get(copy, "b_key"), "replaced");  // the duplicate is independent
  ASSERT_EQ(rma_info_free(&info), RMA_SUCCESS);
  EXPECT_EQ(info, RMA_INFO_NULL);
  ASSERT_EQ(rma_info_free(&copy), RMA_SUCCESS);
}

TEST(ApiInfo, BadArgumentsAreNamedAndChangeNothing) {
  run_ranks(1, [](int, int) {
    ASSERT_EQ(rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN), RMA_SUCCESS);
    rma_Info info = RMA_INFO_NULL;
    ASSERT_EQ(rma_info_create(&info), RMA_SUCCESS);
    ASSERT_EQ(rma_info_set(info, "kept", "1"), RMA_SUCCESS);
    const std::string long_key(RMA_MAX_INFO_KEY + 1, 'k');
    EXPECT_EQ(rma_info_set(info, long_key.c_str(), "v"), RMA_ERR_INFO_KEY);
    EXPECT_TRUE(contains(last_message(), "RMA_MAX_INFO_KEY is 255")) << last_message();
    EXPECT_EQ(rma_info_set(info, "", "v"), RMA_ERR_INFO_KEY);
    EXPECT_EQ(rma_info_set(info, nullptr, "v"), RMA_ERR_INFO_KEY);
    const std::string long_value(RMA_MAX_INFO_VAL + 1, 'v');
    EXPECT_EQ(rma_info_set(info, "kept", long_value.c_str()), RMA_ERR_INFO_VALUE);
    EXPECT_EQ(rma_info_set(info, "kept", nullptr), RMA_ERR_INFO_VALUE);
    EXPECT_EQ(rma_info_delete(info, "absent"), RMA_ERR_INFO_NOKEY);
    EXPECT_TRUE(contains(last_message(), "\"absent\"")) << last_message();
    EXPECT_EQ(rma_info_set(RMA_INFO_NULL, "k", "v"), RMA_ERR_INFO);
    EXPECT_TRUE(contains(last_message(), "RMA_INFO_NULL")) << last_message();
    int bogus[8] = {};
    EXPECT_EQ(rma_info_set(reinterpret_cast<rma_Info>(bogus), "k", "v"), RMA_ERR_INFO);
    char key[RMA_MAX_INFO_KEY + 1];
    EXPECT_EQ(rma_info_get_nthkey(info, 1, key), RMA_ERR_ARG);
    EXPECT_EQ(rma_info_get_nthkey(info, -1, key), RMA_ERR_ARG);
    int len = -1, flag = 0;
    EXPECT_EQ(rma_info_get_string(info, "kept", &len, key, &flag), RMA_ERR_ARG);
    EXPECT_EQ(rma_info_free(nullptr), RMA_ERR_ARG);
    int n = 0;
    ASSERT_EQ(rma_info_get_nkeys(info, &n), RMA_SUCCESS);
    EXPECT_EQ(n, 1);
    EXPECT_EQ(get(info, "kept"), "1");
    ASSERT_EQ(rma_info_free(&info), RMA_SUCCESS);
  });
}

TEST(ApiInfo, WindowHintsAreReadReportedAndNoLocksIsEnforced) {
  run_ranks(2, [](int rank, int) {
    const int peer = 1 - rank;
    rma_Info info = RMA_INFO_NULL;
    ASSERT_EQ(rma_info_create(&info), RMA_SUCCESS);
    ASSERT_EQ(rma_info_set(info, "no_locks", "true"), RMA_SUCCESS);
    ASSERT_EQ(rma_info_set(info, "accumulate_ordering", "rar,waw"), RMA_SUCCESS);
    ASSERT_EQ(rma_info_set(info, "some_other_mpi_hint", "whatever"), RMA_SUCCESS);  // ignored
    int* base = nullptr;
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_allocate(64, 4, info, RMA_COMM_WORLD, &base, &win), RMA_SUCCESS);
    ASSERT_EQ(rma_info_free(&info), RMA_SUCCESS);  // the window keeps its own copy
    ASSERT_EQ(rma_win_set_errhandler(win, RMA_ERRORS_RETURN), RMA_SUCCESS);

    rma_Info used = RMA_INFO_NULL;
    ASSERT_EQ(rma_win_get_info(win, &used), RMA_SUCCESS);
    EXPECT_EQ(get(used, "no_locks"), "true");
    EXPECT_EQ(get(used, "accumulate_ordering"), "rar,waw");
    EXPECT_EQ(get(used, "accumulate_ops"), "same_op_no_op");
    EXPECT_EQ(get(used, "same_size"), "false");
    ASSERT_EQ(rma_info_free(&used), RMA_SUCCESS);

    EXPECT_EQ(rma_win_lock(RMA_LOCK_SHARED, peer, 0, win), RMA_ERR_RMA_SYNC);
    EXPECT_TRUE(contains(last_message(), "no_locks=true")) << last_message();
    EXPECT_EQ(rma_win_lock_all(0, win), RMA_ERR_RMA_SYNC);
    // Active-target epochs still work.
    for (int i = 0; i < 16; ++i) base[i] = 0;
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    const int v = 40 + rank;
    ASSERT_EQ(rma_put(&v, 1, RMA_INT, peer, 3, 1, RMA_INT, win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_fence(0, win), RMA_SUCCESS);
    EXPECT_EQ(base[3], 40 + peer);

    // Lifting the hint allows locks; setting it inside a lock epoch is refused.
    ASSERT_EQ(rma_info_create(&info), RMA_SUCCESS);
    ASSERT_EQ(rma_info_set(info, "no_locks", "false"), RMA_SUCCESS);
    ASSERT_EQ(rma_win_set_info(win, info), RMA_SUCCESS);
    ASSERT_EQ(rma_win_lock(RMA_LOCK_SHARED, peer, 0, win), RMA_SUCCESS);
    ASSERT_EQ(rma_info_set(info, "no_locks", "true"), RMA_SUCCESS);
    EXPECT_EQ(rma_win_set_info(win, info), RMA_ERR_RMA_SYNC);
    ASSERT_EQ(rma_win_unlock(peer, win), RMA_SUCCESS);
    ASSERT_EQ(rma_info_free(&info), RMA_SUCCESS);
    ASSERT_EQ(rma_win_get_info(win, &used), RMA_SUCCESS);
    EXPECT_EQ(get(used, "no_locks"), "false");  // the refused call changed nothing
    ASSERT_EQ(rma_info_free(&used), RMA_SUCCESS);
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
  });
}

TEST(ApiInfo, AKnownHintWithAnUnknownValueIsRejectedBeforeCreation) {
  run_ranks(2, [](int, int) {
    ASSERT_EQ(rma_comm_set_errhandler(RMA_COMM_WORLD, RMA_ERRORS_RETURN), RMA_SUCCESS);
    struct Case {
      const char* key;
      const char* value;
    };
    for (const Case c : {Case{"no_locks", "yes"}, Case{"accumulate_ordering", "rar,bogus"},
                         Case{"accumulate_ordering", ""}, Case{"accumulate_ops", "any"},
                         Case{"same_size", "1"}}) {
      rma_Info info = RMA_INFO_NULL;
      ASSERT_EQ(rma_info_create(&info), RMA_SUCCESS);
      ASSERT_EQ(rma_info_set(info, c.key, c.value), RMA_SUCCESS);
      int* base = nullptr;
      rma_Win win = RMA_WIN_NULL;
      EXPECT_EQ(rma_win_allocate(64, 4, info, RMA_COMM_WORLD, &base, &win), RMA_ERR_INFO_VALUE) << c.key;
      const std::string m = last_message();
      EXPECT_TRUE(contains(m, std::string("\"") + c.key + "\" has value \"" + c.value + "\"")) << m;
      EXPECT_EQ(win, RMA_WIN_NULL);
      EXPECT_EQ(rma_win_create_dynamic(info, RMA_COMM_WORLD, &win), RMA_ERR_INFO_VALUE);
      ASSERT_EQ(rma_info_free(&info), RMA_SUCCESS);
    }
  });
}

TEST(ApiInfo, CxxInfoAndWindowHints) {
  run_ranks(2, [](int, int) {
    rma::Info hints{{"no_locks", "true"}, {"accumulate_ops", "same_op"}};
    EXPECT_EQ(hints.size(), 2);
    EXPECT_EQ(hints.get("accumulate_ops").value_or(""), "same_op");
    EXPECT_FALSE(hints.get("absent").has_value());
    auto win = rma::Window::allocate<int>(8, hints);
    rma::Info used = win.info();
    EXPECT_EQ(used.get("no_locks").value_or(""), "true");
    EXPECT_EQ(used.get("accumulate_ops").value_or(""), "same_op");
    hints.set("no_locks", "false");
    win.set_info(hints);
    EXPECT_EQ(win.info().get("no_locks").value_or(""), "false");
    win.reset();
  });
}

}  // namespace
