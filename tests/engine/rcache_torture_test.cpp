// Torture: memory is mapped, registered through the cache, written through
// the self provider, unmapped and mapped again at the same address, 100,000
// times. Every write must land in the current mapping and the cache must
// never serve a registration made before the latest unmap (a stale hit).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "rma/sdk/registration_cache.hpp"
#include "self_loopback.hpp"

namespace rma {
namespace {

constexpr int kIterations = 100000;
const std::size_t kPage = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));

class RcacheTorture : public ::testing::TestWithParam<MemoryMonitorKind> {};

TEST_P(RcacheTorture, RemapAtSameAddressNeverServesStaleRegistration) {
  auto self = testing_support::SelfLoopback::make();
  ASSERT_TRUE(self.ok()) << self.status().to_string();
  RegistrationCacheOptions o;
  o.monitor = GetParam();
  auto created = RegistrationCache::create(self->pd, o);
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  RegistrationCache& cache = **created;

  constexpr std::size_t kMaxPages = 4;
  std::vector<char> src(kMaxPages * kPage);
  auto src_reg = cache.acquire(src.data(), src.size(), Access::kLocalWrite);
  ASSERT_TRUE(src_reg.ok());

  // Reserve an address, then release it so each iteration maps there anew.
  void* reserved = mmap(nullptr, kMaxPages * kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(reserved, MAP_FAILED);
  ASSERT_EQ(munmap(reserved, kMaxPages * kPage), 0);
  char* base = static_cast<char*>(reserved);
  int relocations = 0;

  std::uint64_t newest_before_unmap = 0;
  std::uint64_t stale_hits = 0, lost_writes = 0;
  for (int i = 0; i < kIterations; ++i) {
    const std::size_t pages = 1 + static_cast<std::size_t>(i) % kMaxPages;
    const std::size_t len = pages * kPage;
    bool relocated = false;
    void* m = testing_support::map_again(base, kMaxPages * kPage, &relocated);
    ASSERT_NE(m, nullptr) << "iteration " << i << ": mmap failed";
    if (relocated) {
      ++relocations;
      base = static_cast<char*>(m);
    }
    // Keep only `len` bytes of the mapping, so the size varies too.
    if (len < kMaxPages * kPage) {
      ASSERT_EQ(munmap(base + len, kMaxPages * kPage - len), 0);
    }

    auto h = cache.acquire(base, len, Access::kLocalWrite | Access::kRemoteWrite);
    ASSERT_TRUE(h.ok()) << "iteration " << i << ": " << h.status().to_string();
    if (h->generation() <= newest_before_unmap) ++stale_hits;

    // A pattern unique to this iteration, at an offset that moves around.
    const std::size_t off = (static_cast<std::size_t>(i) * 977) % (len - 64);
    std::uint64_t stamp = 0x5eed000000000000ull | static_cast<std::uint64_t>(i);
    std::memcpy(src.data(), &stamp, sizeof stamp);
    std::memset(src.data() + 8, static_cast<int>(i & 0xff), 56);
    WcStatus st = self->write(src.data(), src_reg->lkey(), reinterpret_cast<std::uint64_t>(base + off),
                              h->rkey(), 64);
    ASSERT_EQ(st, WcStatus::kSuccess) << "iteration " << i << ": " << wc_status_name(st);
    if (std::memcmp(base + off, src.data(), 64) != 0) ++lost_writes;

    newest_before_unmap = std::max(newest_before_unmap, h->generation());
    h->reset();
    ASSERT_EQ(munmap(base, len), 0);
  }
  EXPECT_EQ(stale_hits, 0u);
  // The point is reuse of one address; sanitizer runtimes may steal it now
  // and then, but not usually.
  EXPECT_LT(relocations, kIterations / 10);
  RecordProperty("relocations", std::to_string(relocations));
  EXPECT_EQ(lost_writes, 0u);
  auto stats = cache.stats();
  // Each iteration's target was registered anew; only the source hit.
  EXPECT_EQ(stats.misses, static_cast<std::uint64_t>(kIterations) + 1);
  EXPECT_GE(stats.invalidations, static_cast<std::uint64_t>(kIterations));
  RecordProperty("invalidations", std::to_string(stats.invalidations));
}

INSTANTIATE_TEST_SUITE_P(Monitors, RcacheTorture,
                         ::testing::Values(MemoryMonitorKind::kUserfaultfd, MemoryMonitorKind::kHooks),
                         testing_support::monitor_param_name);

}  // namespace
}  // namespace rma
