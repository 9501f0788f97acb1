// The in-process thread group and the singleton bootstrap.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "rma/sdk/bootstrap.hpp"

namespace rma {
namespace {

std::vector<std::uint8_t> b(const std::string& s) { return {s.begin(), s.end()}; }
std::string s(const std::vector<std::uint8_t>& v) { return {v.begin(), v.end()}; }

template <typename F>
void run_ranks(std::vector<std::unique_ptr<Bootstrap>>& ranks, F body) {
  std::vector<std::thread> t;
  for (auto& r : ranks) t.emplace_back([&body, &r] { body(*r); });
  for (auto& x : t) x.join();
}

TEST(ThreadBootstrap, PutFenceGetBarrierAllgather) {
  for (int n : {1, 2, 5, 8}) {
    auto ranks = make_thread_bootstrap_group(n).value();
    run_ranks(ranks, [n](Bootstrap& me) {
      EXPECT_EQ(me.size(), n);
      EXPECT_EQ(me.kind(), "threads");
      ASSERT_TRUE(me.put("ep", b("rank" + std::to_string(me.rank()))).ok());
      // Not visible before the fence.
      EXPECT_EQ(me.get(me.rank(), "ep").status().code(), StatusCode::kNotFound);
      ASSERT_TRUE(me.fence().ok());
      for (int r = 0; r < n; ++r) EXPECT_EQ(s(me.get(r, "ep").value()), "rank" + std::to_string(r));
      ASSERT_TRUE(me.barrier().ok());
      for (int round = 0; round < 20; ++round) {
        auto all = me.allgather(b(std::string(static_cast<std::size_t>(me.rank() + round), 'a'))).value();
        ASSERT_EQ(all.size(), static_cast<std::size_t>(n));
        for (int r = 0; r < n; ++r) EXPECT_EQ(all[static_cast<std::size_t>(r)].size(), static_cast<std::size_t>(r + round));
      }
      EXPECT_EQ(me.get(n, "ep").status().code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(me.put("", b("x")).code(), StatusCode::kInvalidArgument);
    });
  }
}

TEST(ThreadBootstrap, AMissingRankTimesOutNamingIt) {
  ::setenv("RMA_BOOTSTRAP_TIMEOUT", "1", 1);
  auto ranks = make_thread_bootstrap_group(4).value();
  ::unsetenv("RMA_BOOTSTRAP_TIMEOUT");
  std::vector<Status> got(4);
  std::vector<std::thread> t;
  for (int r : {0, 1, 3}) t.emplace_back([&, r] { got[static_cast<std::size_t>(r)] = ranks[static_cast<std::size_t>(r)]->barrier(); });
  for (auto& x : t) x.join();
  for (int r : {0, 1, 3}) {
    const Status& st = got[static_cast<std::size_t>(r)];
    EXPECT_EQ(st.code(), StatusCode::kTimeout);
    EXPECT_NE(st.message().find("rank 2 (of 4)"), std::string::npos) << st.message();
  }
}

TEST(ThreadBootstrap, MismatchedCollectivesAreAnErrorNotAHang) {
  ::setenv("RMA_BOOTSTRAP_TIMEOUT", "2", 1);
  auto ranks = make_thread_bootstrap_group(2).value();
  ::unsetenv("RMA_BOOTSTRAP_TIMEOUT");
  Status a, c;
  std::thread t0([&] { a = ranks[0]->barrier(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  c = ranks[1]->fence();
  t0.join();
  EXPECT_EQ(c.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(c.message().find("called fence while other ranks are in barrier"), std::string::npos) << c.message();
  EXPECT_EQ(a.code(), StatusCode::kTimeout);
}

TEST(ThreadBootstrap, BadSizesAndTimeouts) {
  EXPECT_EQ(make_thread_bootstrap_group(0).status().code(), StatusCode::kInvalidArgument);
  ::setenv("RMA_BOOTSTRAP_TIMEOUT", "0", 1);
  auto r = make_thread_bootstrap_group(2);
  ::unsetenv("RMA_BOOTSTRAP_TIMEOUT");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("RMA_BOOTSTRAP_TIMEOUT=0"), std::string::npos);
}

TEST(ThreadBootstrapDeathTest, AbortStopsTheJobWithTheMessage) {
  auto ranks = make_thread_bootstrap_group(2).value();
  EXPECT_EXIT(ranks[1]->abort(7, "inconsistent window"), ::testing::ExitedWithCode(7),
              "rank 1 of 2 aborted the job: inconsistent window");
}

TEST(SingletonBootstrap, IsRankZeroOfOne) {
  ::unsetenv("RMA_BOOTSTRAP_ADDR");
  auto boot = open_bootstrap().value();
  EXPECT_EQ(boot->kind(), "singleton");
  EXPECT_EQ(boot->rank(), 0);
  EXPECT_EQ(boot->size(), 1);
  ASSERT_TRUE(boot->put("k", b("v")).ok());
  EXPECT_FALSE(boot->get(0, "k").ok());
  ASSERT_TRUE(boot->fence().ok());
  EXPECT_EQ(s(boot->get(0, "k").value()), "v");
  EXPECT_TRUE(boot->barrier().ok());
  EXPECT_EQ(boot->allgather(b("x")).value().size(), 1u);
}

TEST(OpenBootstrap, ForcedRmarunWithoutItsEnvironmentFailsClearly) {
  ::setenv("RMA_BOOTSTRAP", "rmarun", 1);
  ::unsetenv("RMA_BOOTSTRAP_ADDR");
  ::unsetenv("RMA_SIZE");
  auto r = open_bootstrap();
  ::unsetenv("RMA_BOOTSTRAP");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("start the program with rmarun"), std::string::npos) << r.status().message();
  ::setenv("PMIX_RANK", "0", 1);
  r = open_bootstrap();
  ::unsetenv("PMIX_RANK");
  ASSERT_FALSE(r.ok());
  // No PMIx server behind these variables: PMIx_Init fails, and says so.
  EXPECT_NE(r.status().message().find("PMIx init"), std::string::npos) << r.status().message();
  ::setenv("RMA_BOOTSTRAP", "bogus", 1);
  r = open_bootstrap();
  ::unsetenv("RMA_BOOTSTRAP");
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace rma
