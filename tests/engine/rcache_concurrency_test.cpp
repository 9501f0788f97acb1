// Several threads register, look up, invalidate and unmap at once. Checked:
// every handle covers what was asked with the rights asked for, writes
// through it land, and a range that was unmapped is never served by a
// registration made before the unmap. Meant to run under TSan too.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "rma/sdk/registration_cache.hpp"
#include "self_loopback.hpp"

namespace rma {
namespace {

const std::size_t kPage = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));

class RcacheConcurrency : public ::testing::TestWithParam<MemoryMonitorKind> {};

TEST_P(RcacheConcurrency, MixedOperationsStayConsistent) {
  auto self = testing_support::SelfLoopback::make();
  ASSERT_TRUE(self.ok());
  RegistrationCacheOptions o;
  o.monitor = GetParam();
  o.max_regions = 24;  // small, so eviction runs concurrently too
  auto created = RegistrationCache::create(self->pd, o);
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  RegistrationCache& cache = **created;

  constexpr std::size_t kSharedPages = 256;
  auto* shared = static_cast<char*>(mmap(nullptr, kSharedPages * kPage, PROT_READ | PROT_WRITE,
                                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(shared, MAP_FAILED);

  constexpr int kLookupThreads = 3;
  constexpr int kIterations = 4000;
  std::atomic<std::uint64_t> failures{0};
  std::vector<std::thread> threads;

  for (int t = 0; t < kLookupThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(t) * 7919 + 1);
      const Access rights[] = {Access::kLocalWrite, Access::kLocalWrite | Access::kRemoteRead,
                               Access::kLocalWrite | Access::kRemoteWrite};
      for (int i = 0; i < kIterations; ++i) {
        std::size_t off = rng() % (kSharedPages * kPage - 1);
        std::size_t len = 1 + rng() % std::min<std::size_t>(3 * kPage, kSharedPages * kPage - off);
        Access want = rights[rng() % 3];
        auto h = cache.acquire(shared + off, len, want);
        if (!h.ok() || !h->mr().contains(reinterpret_cast<std::uint64_t>(shared + off), len) ||
            !has_access(h->mr().access(), want)) {
          failures.fetch_add(1);
          continue;
        }
        if (rng() % 16 == 0) cache.invalidate(shared + rng() % (kSharedPages * kPage), 1 + rng() % kPage);
      }
    });
  }

  // One thread keeps unmapping and remapping its own buffer and checks that
  // each new mapping gets a registration younger than the unmap.
  threads.emplace_back([&] {
    void* reserved = mmap(nullptr, 2 * kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(reserved, 2 * kPage);
    char* base = static_cast<char*>(reserved);
    std::uint64_t newest = 0;
    for (int i = 0; i < kIterations; ++i) {
      bool relocated = false;
      void* m = testing_support::map_again(base, 2 * kPage, &relocated);
      if (m == nullptr) {
        failures.fetch_add(1);
        return;
      }
      base = static_cast<char*>(m);
      auto h = cache.acquire(base + 10, kPage, Access::kLocalWrite | Access::kRemoteWrite);
      if (!h.ok() || h->generation() <= newest) failures.fetch_add(1);
      if (h.ok()) newest = std::max(newest, h->generation());
      if (h.ok()) h->reset();
      munmap(base, 2 * kPage);
    }
  });

  // Readers of the statistics.
  threads.emplace_back([&] {
    for (int i = 0; i < kIterations; ++i) {
      auto s = cache.stats();
      if (s.in_use > s.regions + 64) failures.fetch_add(1);
    }
  });

  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0u);
  auto s = cache.stats();
  EXPECT_EQ(s.in_use, 0u);
  EXPECT_LE(s.regions, 24u);
  EXPECT_GT(s.hits, 0u);
  EXPECT_GT(s.evictions, 0u);
  munmap(shared, kSharedPages * kPage);
}

INSTANTIATE_TEST_SUITE_P(Monitors, RcacheConcurrency,
                         ::testing::Values(MemoryMonitorKind::kUserfaultfd, MemoryMonitorKind::kHooks),
                         testing_support::monitor_param_name);

}  // namespace
}  // namespace rma
