#include "rma/sdk/registration_cache.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <limits>

#include "rcache/memory_monitor.hpp"
#include "self_loopback.hpp"

namespace rma {
namespace {

using testing_support::SelfLoopback;

const std::size_t kPage = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));

// Anonymous pages, unmapped at the end of the test unless already gone.
class Pages {
 public:
  explicit Pages(std::size_t pages) : len_(pages * kPage) {
    base_ = static_cast<char*>(mmap(nullptr, len_, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (base_ == MAP_FAILED) base_ = nullptr;
    else std::memset(base_, 0, len_);
  }
  ~Pages() {
    if (base_ != nullptr) munmap(base_, len_);
  }
  char* page(std::size_t i) const { return base_ + i * kPage; }
  std::size_t size() const { return len_; }
  void forget() { base_ = nullptr; }

 private:
  char* base_;
  std::size_t len_;
};

class RegistrationCacheTest : public ::testing::TestWithParam<MemoryMonitorKind> {
 protected:
  void SetUp() override {
    auto l = SelfLoopback::make();
    ASSERT_TRUE(l.ok()) << l.status().to_string();
    self_ = std::move(*l);
  }
  std::unique_ptr<RegistrationCache> make_cache(std::uint64_t max_bytes = ~0ull,
                                                std::uint64_t max_regions = 1u << 20) {
    RegistrationCacheOptions o;
    o.max_bytes = max_bytes;
    o.max_regions = max_regions;
    o.monitor = GetParam();
    auto c = RegistrationCache::create(self_.pd, o);
    if (!c.ok()) {
      ADD_FAILURE() << c.status().to_string();
      return nullptr;
    }
    return std::move(*c);
  }
  SelfLoopback self_;
};

TEST_P(RegistrationCacheTest, RejectsBadRanges) {
  auto cache = make_cache();
  ASSERT_TRUE(cache);
  Pages p(1);
  EXPECT_EQ(cache->acquire(nullptr, 8, Access::kLocalWrite).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cache->acquire(p.page(0), 0, Access::kLocalWrite).status().code(), StatusCode::kInvalidArgument);
  auto wrap = cache->acquire(reinterpret_cast<void*>(std::numeric_limits<std::uintptr_t>::max() - 10), 100,
                             Access::kLocalWrite);
  EXPECT_EQ(wrap.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrap.status().message().find("wraps"), std::string::npos) << wrap.status().message();
  auto huge = cache->acquire(p.page(0), std::size_t{1} << 62, Access::kLocalWrite);
  EXPECT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("largest registration"), std::string::npos) << huge.status().message();
  auto st = cache->stats();
  EXPECT_EQ(st.misses + st.hits, 0u);
  EXPECT_EQ(st.regions, 0u);
}

TEST_P(RegistrationCacheTest, UnmappedMemoryIsAnError) {
  auto cache = make_cache();
  ASSERT_TRUE(cache);
  Pages p(2);
  ASSERT_EQ(munmap(p.page(1), kPage), 0);
  auto r = cache->acquire(p.page(0), 2 * kPage, Access::kLocalWrite);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(cache->stats().regions, 0u);
}

TEST_P(RegistrationCacheTest, SecondLookupHitsAndCoversTheRange) {
  auto cache = make_cache();
  ASSERT_TRUE(cache);
  Pages p(4);
  auto a = cache->acquire(p.page(1) + 100, 200, Access::kLocalWrite);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_TRUE(a->mr().contains(reinterpret_cast<std::uint64_t>(p.page(1) + 100), 200));
  // Page granular: the whole page is registered.
  EXPECT_EQ(a->mr().addr(), reinterpret_cast<std::uint64_t>(p.page(1)));
  EXPECT_EQ(a->mr().length(), kPage);
  auto b = cache->acquire(p.page(1) + 3000 % kPage, 8, Access::kLocalWrite);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->generation(), b->generation());
  auto st = cache->stats();
  EXPECT_EQ(st.misses, 1u);
  EXPECT_EQ(st.hits, 1u);
  EXPECT_EQ(st.regions, 1u);
  EXPECT_EQ(st.bytes, kPage);
  EXPECT_EQ(st.in_use, 1u);
}

TEST_P(RegistrationCacheTest, OverlappingRegistrationsMerge) {
  auto cache = make_cache();
  ASSERT_TRUE(cache);
  Pages p(8);
  auto a = cache->acquire(p.page(1), 2 * kPage, Access::kLocalWrite);
  ASSERT_TRUE(a.ok());
  auto b = cache->acquire(p.page(2), 2 * kPage, Access::kLocalWrite);
  ASSERT_TRUE(b.ok());
  EXPECT_NE(a->generation(), b->generation());
  EXPECT_EQ(b->mr().addr(), reinterpret_cast<std::uint64_t>(p.page(1)));
  EXPECT_EQ(b->mr().length(), 3 * kPage);
  auto st = cache->stats();
  EXPECT_EQ(st.merges, 1u);
  EXPECT_EQ(st.regions, 1u);
  // The absorbed registration stays valid for its holder.
  EXPECT_EQ(a->mr().length(), 2 * kPage);
  // And the merged one now serves the first range.
  auto c = cache->acquire(p.page(1), kPage, Access::kLocalWrite);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->generation(), b->generation());
}

TEST_P(RegistrationCacheTest, AdjacentRegistrationsMerge) {
  auto cache = make_cache();
  ASSERT_TRUE(cache);
  Pages p(8);
  { auto a = cache->acquire(p.page(2), kPage, Access::kLocalWrite); ASSERT_TRUE(a.ok()); }
  { auto b = cache->acquire(p.page(4), kPage, Access::kLocalWrite); ASSERT_TRUE(b.ok()); }
  auto c = cache->acquire(p.page(3), kPage, Access::kLocalWrite);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->mr().addr(), reinterpret_cast<std::uint64_t>(p.page(2)));
  EXPECT_EQ(c->mr().length(), 3 * kPage);
  EXPECT_EQ(cache->stats().regions, 1u);
  EXPECT_EQ(cache->stats().merges, 2u);
}

TEST_P(RegistrationCacheTest, MissingRightsRegisterAgainWithTheUnion) {
  auto cache = make_cache();
  ASSERT_TRUE(cache);
  Pages p(2);
  auto a = cache->acquire(p.page(0), 64, Access::kLocalWrite);
  ASSERT_TRUE(a.ok());
  auto b = cache->acquire(p.page(0), 64, Access::kLocalWrite | Access::kRemoteRead);
  ASSERT_TRUE(b.ok());
  EXPECT_NE(a->generation(), b->generation());
  EXPECT_TRUE(has_access(b->mr().access(), Access::kLocalWrite | Access::kRemoteRead));
  auto c = cache->acquire(p.page(0), 64, Access::kLocalWrite);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->generation(), b->generation());
}

// acquire_exact: exactly the bytes and rights asked for, never shared with
// or merged into cached registrations, gone when released.
TEST_P(RegistrationCacheTest, ExactRegistrationsAreNeitherRoundedNorShared) {
  auto cache = make_cache();
  ASSERT_TRUE(cache);
  Pages p(3);
  auto cached = cache->acquire(p.page(1), kPage, Access::kLocalWrite);
  ASSERT_TRUE(cached.ok());
  auto e = cache->acquire_exact(p.page(1) + 100, 50, Access::kRemoteRead | Access::kLocalWrite);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  EXPECT_EQ(e->mr().addr(), reinterpret_cast<std::uint64_t>(p.page(1) + 100));
  EXPECT_EQ(e->mr().length(), 50u);
  EXPECT_EQ(e->mr().access(), Access::kRemoteRead | Access::kLocalWrite);
  EXPECT_NE(e->generation(), cached->generation());
  EXPECT_EQ(cache->stats().exact, 1u);
  // A lookup inside the exact range is served by the cache's own region,
  // which did not gain the exact one's remote rights.
  auto inside = cache->acquire(p.page(1) + 120, 8, Access::kLocalWrite);
  ASSERT_TRUE(inside.ok());
  EXPECT_EQ(inside->generation(), cached->generation());
  EXPECT_FALSE(has_access(inside->mr().access(), Access::kRemoteRead));
  // A neighbour asking for remote rights merges with cached regions only.
  auto next = cache->acquire(p.page(2), 8, Access::kRemoteRead);
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->mr().contains(reinterpret_cast<std::uint64_t>(p.page(1) + 100), 50) &&
               next->generation() == e->generation());
  e->reset();
  EXPECT_EQ(cache->stats().exact, 0u);
  EXPECT_EQ(cache->acquire_exact(nullptr, 8, Access::kLocalWrite).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(cache->acquire_exact(p.page(0), 0, Access::kLocalWrite).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_P(RegistrationCacheTest, EvictsLeastRecentlyReleasedByCount) {
  auto cache = make_cache(~0ull, 2);
  ASSERT_TRUE(cache);
  Pages p(8);
  std::uint64_t gen[3];
  for (int i = 0; i < 3; ++i) {
    auto h = cache->acquire(p.page(2 * i), kPage, Access::kLocalWrite);
    ASSERT_TRUE(h.ok());
    gen[i] = h->generation();
  }
  auto st = cache->stats();
  EXPECT_EQ(st.regions, 2u);
  EXPECT_EQ(st.evictions, 1u);
  // Page 0 was released first, so it went; pages 2 and 4 are still cached.
  auto h2 = cache->acquire(p.page(2), kPage, Access::kLocalWrite);
  EXPECT_EQ(h2->generation(), gen[1]);
  auto h4 = cache->acquire(p.page(4), kPage, Access::kLocalWrite);
  EXPECT_EQ(h4->generation(), gen[2]);
  auto h0 = cache->acquire(p.page(0), kPage, Access::kLocalWrite);
  EXPECT_NE(h0->generation(), gen[0]);
}

TEST_P(RegistrationCacheTest, EvictsByBytes) {
  auto cache = make_cache(3 * kPage, 1000);
  ASSERT_TRUE(cache);
  Pages p(16);
  for (int i = 0; i < 4; ++i) {
    auto h = cache->acquire(p.page(4 * i), 2 * kPage, Access::kLocalWrite);
    ASSERT_TRUE(h.ok());
  }
  auto st = cache->stats();
  EXPECT_LE(st.bytes, 3 * kPage);
  EXPECT_EQ(st.regions, 1u);
  EXPECT_EQ(st.evictions, 3u);
}

TEST_P(RegistrationCacheTest, RegionsInUseAreNeverEvicted) {
  auto cache = make_cache(~0ull, 1);
  ASSERT_TRUE(cache);
  Pages p(8);
  std::vector<RegistrationCache::Handle> held;
  for (int i = 0; i < 3; ++i) {
    auto h = cache->acquire(p.page(2 * i), kPage, Access::kLocalWrite);
    ASSERT_TRUE(h.ok());
    held.push_back(std::move(*h));
  }
  EXPECT_EQ(cache->stats().regions, 3u);
  EXPECT_EQ(cache->stats().evictions, 0u);
  EXPECT_EQ(cache->stats().in_use, 3u);
  held.clear();
  EXPECT_EQ(cache->stats().regions, 1u);
  EXPECT_EQ(cache->stats().evictions, 2u);
  EXPECT_EQ(cache->stats().in_use, 0u);
}

TEST_P(RegistrationCacheTest, ExplicitInvalidateDropsButHandlesStayValid) {
  auto cache = make_cache();
  ASSERT_TRUE(cache);
  Pages dst(2), src(1);
  auto h = cache->acquire(dst.page(0), 2 * kPage, Access::kLocalWrite | Access::kRemoteWrite);
  ASSERT_TRUE(h.ok());
  auto s = cache->acquire(src.page(0), kPage, Access::kLocalWrite);
  ASSERT_TRUE(s.ok());
  cache->invalidate(dst.page(1) + 5, 1);
  EXPECT_EQ(cache->stats().invalidations, 1u);
  // The holder can still use its registration...
  std::memcpy(src.page(0), "fresh", 5);
  EXPECT_EQ(self_.write(src.page(0), s->lkey(), reinterpret_cast<std::uint64_t>(dst.page(0)), h->rkey(), 5),
            WcStatus::kSuccess);
  EXPECT_EQ(std::memcmp(dst.page(0), "fresh", 5), 0);
  // ...but no new lookup is served by it.
  auto again = cache->acquire(dst.page(0), 8, Access::kLocalWrite);
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->generation(), h->generation());
}

TEST_P(RegistrationCacheTest, PurgeDropsUnusedOnly) {
  auto cache = make_cache();
  ASSERT_TRUE(cache);
  Pages p(8);
  auto held = cache->acquire(p.page(0), kPage, Access::kLocalWrite);
  { auto tmp = cache->acquire(p.page(4), kPage, Access::kLocalWrite); }
  cache->purge();
  EXPECT_EQ(cache->stats().regions, 1u);
  auto again = cache->acquire(p.page(0), kPage, Access::kLocalWrite);
  EXPECT_EQ(again->generation(), held->generation());
}

TEST_P(RegistrationCacheTest, HandlesMove) {
  auto cache = make_cache();
  ASSERT_TRUE(cache);
  Pages p(1);
  auto r = cache->acquire(p.page(0), 8, Access::kLocalWrite);
  ASSERT_TRUE(r.ok());
  RegistrationCache::Handle a = std::move(*r);
  RegistrationCache::Handle b;
  EXPECT_FALSE(b);
  b = std::move(a);
  EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_TRUE(b);
  EXPECT_EQ(cache->stats().in_use, 1u);
  b.reset();
  EXPECT_EQ(cache->stats().in_use, 0u);
}

// The monitors: memory that goes away is never served again.
class MonitoredCacheTest : public RegistrationCacheTest {};

TEST_P(MonitoredCacheTest, MunmapInvalidates) {
  auto cache = make_cache();
  ASSERT_TRUE(cache);
  Pages p(4);
  char* base = p.page(0);
  std::uint64_t gen;
  {
    auto h = cache->acquire(base, 4 * kPage, Access::kLocalWrite);
    ASSERT_TRUE(h.ok());
    gen = h->generation();
  }
  ASSERT_EQ(munmap(base, 4 * kPage), 0);
  p.forget();
  EXPECT_EQ(cache->stats().regions, 0u);
  EXPECT_EQ(cache->stats().invalidations, 1u);
  bool relocated = false;
  base = static_cast<char*>(testing_support::map_again(base, 4 * kPage, &relocated));
  ASSERT_NE(base, nullptr);
  auto h = cache->acquire(base, 4 * kPage, Access::kLocalWrite);
  ASSERT_TRUE(h.ok());
  EXPECT_NE(h->generation(), gen);
  h->reset();
  munmap(base, 4 * kPage);
}

TEST_P(MonitoredCacheTest, PartialMunmapInvalidatesTheWholeRegistration) {
  auto cache = make_cache();
  ASSERT_TRUE(cache);
  Pages p(4);
  { auto h = cache->acquire(p.page(0), 4 * kPage, Access::kLocalWrite); ASSERT_TRUE(h.ok()); }
  ASSERT_EQ(munmap(p.page(3), kPage), 0);
  EXPECT_EQ(cache->stats().regions, 0u);
  auto again = cache->acquire(p.page(0), kPage, Access::kLocalWrite);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(cache->stats().misses, 2u);
  again->reset();
  munmap(p.page(0), 3 * kPage);
  p.forget();
}

TEST_P(MonitoredCacheTest, MadviseDontneedInvalidates) {
  auto cache = make_cache();
  ASSERT_TRUE(cache);
  Pages p(2);
  { auto h = cache->acquire(p.page(0), 2 * kPage, Access::kLocalWrite); ASSERT_TRUE(h.ok()); }
  ASSERT_EQ(madvise(p.page(1), kPage, MADV_DONTNEED), 0);
  EXPECT_EQ(cache->stats().regions, 0u);
  EXPECT_EQ(cache->stats().invalidations, 1u);
}

TEST_P(MonitoredCacheTest, MremapInvalidatesTheOldRange) {
  auto cache = make_cache();
  ASSERT_TRUE(cache);
  Pages p(2);
  { auto h = cache->acquire(p.page(0), 2 * kPage, Access::kLocalWrite); ASSERT_TRUE(h.ok()); }
  void* moved = mremap(p.page(0), 2 * kPage, 64 * kPage, MREMAP_MAYMOVE);
  ASSERT_NE(moved, MAP_FAILED);
  p.forget();
  EXPECT_EQ(cache->stats().regions, 0u);
  munmap(moved, 64 * kPage);
}

TEST_P(MonitoredCacheTest, MapFixedOverARegionInvalidates) {
  auto cache = make_cache();
  ASSERT_TRUE(cache);
  Pages p(2);
  { auto h = cache->acquire(p.page(0), 2 * kPage, Access::kLocalWrite); ASSERT_TRUE(h.ok()); }
  void* r = mmap(p.page(0), kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  ASSERT_EQ(r, p.page(0));
  EXPECT_EQ(cache->stats().regions, 0u);
}

INSTANTIATE_TEST_SUITE_P(Monitors, RegistrationCacheTest,
                         ::testing::Values(MemoryMonitorKind::kUserfaultfd, MemoryMonitorKind::kHooks,
                                           MemoryMonitorKind::kNone),
                         testing_support::monitor_param_name);
INSTANTIATE_TEST_SUITE_P(Monitors, MonitoredCacheTest,
                         ::testing::Values(MemoryMonitorKind::kUserfaultfd, MemoryMonitorKind::kHooks),
                         testing_support::monitor_param_name);

// File-backed memory cannot be watched by userfaultfd: it is registered for
// each use and never cached, so it can never be served stale.
TEST(RegistrationCacheUserfaultfd, UnwatchableMemoryIsNotCached) {
  auto l = SelfLoopback::make();
  ASSERT_TRUE(l.ok());
  RegistrationCacheOptions o;
  o.monitor = MemoryMonitorKind::kUserfaultfd;
  auto cache = RegistrationCache::create(l->pd, o);
  ASSERT_TRUE(cache.ok()) << cache.status().to_string();
  char path[] = "/tmp/rma-rcache-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  unlink(path);
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(kPage)), 0);
  void* m = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(m, MAP_FAILED);
  {
    auto a = (*cache)->acquire(m, 16, Access::kLocalWrite);
    ASSERT_TRUE(a.ok()) << a.status().to_string();
  }
  auto b = (*cache)->acquire(m, 16, Access::kLocalWrite);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*cache)->stats().misses, 2u);
  EXPECT_EQ((*cache)->stats().regions, 0u);
  b->reset();
  munmap(m, kPage);
  close(fd);
}

TEST(RegistrationCacheConfig, BadEnvironmentValuesNameTheVariable) {
  auto l = SelfLoopback::make();
  ASSERT_TRUE(l.ok());
  setenv("RMA_RCACHE_MONITOR", "telepathy", 1);
  auto c = RegistrationCache::create(l->pd);
  unsetenv("RMA_RCACHE_MONITOR");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("RMA_RCACHE_MONITOR"), std::string::npos) << c.status().message();
  setenv("RMA_RCACHE_MAX_BYTES", "0", 1);
  auto c2 = RegistrationCache::create(l->pd);
  unsetenv("RMA_RCACHE_MAX_BYTES");
  ASSERT_FALSE(c2.ok());
  EXPECT_NE(c2.status().message().find("RMA_RCACHE_MAX_BYTES"), std::string::npos);
  setenv("RMA_RCACHE_MAX_REGIONS", "many", 1);
  auto c3 = RegistrationCache::create(l->pd);
  unsetenv("RMA_RCACHE_MAX_REGIONS");
  ASSERT_FALSE(c3.ok());
  EXPECT_NE(c3.status().message().find("RMA_RCACHE_MAX_REGIONS"), std::string::npos);
  EXPECT_FALSE(RegistrationCache::create(nullptr).ok());
}

TEST(RegistrationCacheConfig, EnvironmentSetsBudgetAndMonitor) {
  auto l = SelfLoopback::make();
  ASSERT_TRUE(l.ok());
  setenv("RMA_RCACHE_MONITOR", "hooks", 1);
  setenv("RMA_RCACHE_MAX_BYTES", "1M", 1);
  setenv("RMA_RCACHE_MAX_REGIONS", "7", 1);
  auto c = RegistrationCache::create(l->pd);
  unsetenv("RMA_RCACHE_MONITOR");
  unsetenv("RMA_RCACHE_MAX_BYTES");
  unsetenv("RMA_RCACHE_MAX_REGIONS");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ((*c)->monitor(), MemoryMonitorKind::kHooks);
  EXPECT_EQ((*c)->max_bytes(), 1u << 20);
  EXPECT_EQ((*c)->max_regions(), 7u);
}

// After fork() the child's cache must not serve the parent's registrations.
TEST(RegistrationCacheFork, ChildStartsEmpty) {
  auto l = SelfLoopback::make();
  ASSERT_TRUE(l.ok());
  auto c = RegistrationCache::create(l->pd);
  ASSERT_TRUE(c.ok());
  Pages p(1);
  { auto h = (*c)->acquire(p.page(0), 8, Access::kLocalWrite); ASSERT_TRUE(h.ok()); }
  ASSERT_EQ((*c)->stats().regions, 1u);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit((*c)->stats().regions == 0 ? 0 : 1);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ((*c)->stats().regions, 1u);
}

}  // namespace
}  // namespace rma
