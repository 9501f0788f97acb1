// Registration-cache micro-benchmarks: the hit path with many cached
// regions, and the miss path (register + insert + evict).
#include <benchmark/benchmark.h>
#include <sys/mman.h>
#include <unistd.h>

#include <memory>
#include <random>
#include <vector>

#include "rma/sdk/registration_cache.hpp"
#include "rma/sdk/registry.hpp"

namespace {

const std::size_t kPage = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));

struct Arena {
  explicit Arena(std::size_t pages) : len(pages * kPage) {
    base = static_cast<char*>(mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  }
  ~Arena() { munmap(base, len); }
  char* base;
  std::size_t len;
};

std::shared_ptr<rma::ProtectionDomain> self_pd() {
  auto dev = rma::ProviderRegistry::global().open("self");
  if (!dev.ok()) return nullptr;
  auto pd = (*dev)->alloc_pd();
  return pd.ok() ? *pd : nullptr;
}

std::unique_ptr<rma::RegistrationCache> make_cache(std::uint64_t max_regions) {
  auto pd = self_pd();
  if (!pd) return nullptr;
  rma::RegistrationCacheOptions o;
  o.max_regions = max_regions;
  o.max_bytes = ~0ull;
  auto c = rma::RegistrationCache::create(pd, o);
  return c.ok() ? std::move(*c) : nullptr;
}

// acquire() + release of a cached region, chosen at random among N cached
// regions (one page each, a page apart so they do not merge).
void BM_RcacheHit(benchmark::State& state) {
  const auto regions = static_cast<std::size_t>(state.range(0));
  auto cache = make_cache(regions * 2);
  Arena arena(2 * regions);
  if (!cache || arena.base == MAP_FAILED) {
    state.SkipWithError("setup failed");
    return;
  }
  for (std::size_t i = 0; i < regions; ++i) {
    auto h = cache->acquire(arena.base + 2 * i * kPage + 64, 256, rma::Access::kLocalWrite);
    if (!h.ok()) {
      state.SkipWithError(h.status().to_string().c_str());
      return;
    }
  }
  std::vector<char*> order(4096);
  std::mt19937 rng(1);
  for (auto& p : order) p = arena.base + 2 * (rng() % regions) * kPage + 128;
  std::size_t i = 0;
  for (auto _ : state) {
    auto h = cache->acquire(order[i++ & 4095], 64, rma::Access::kLocalWrite);
    benchmark::DoNotOptimize(h);
  }
  auto st = cache->stats();
  state.counters["regions"] = static_cast<double>(st.regions);
  state.counters["hit_ratio"] = static_cast<double>(st.hits) / static_cast<double>(st.hits + st.misses);
}
BENCHMARK(BM_RcacheHit)->Arg(10)->Arg(1000)->Arg(10000);

// The same with 10,000 regions cached but the lookups going to a hot set of
// 16 buffers, as an application that reuses its buffers does.
void BM_RcacheHitHotSet(benchmark::State& state) {
  constexpr std::size_t kRegions = 10000;
  auto cache = make_cache(kRegions * 2);
  Arena arena(2 * kRegions);
  if (!cache || arena.base == MAP_FAILED) {
    state.SkipWithError("setup failed");
    return;
  }
  for (std::size_t i = 0; i < kRegions; ++i) {
    auto h = cache->acquire(arena.base + 2 * i * kPage + 64, 256, rma::Access::kLocalWrite);
    if (!h.ok()) {
      state.SkipWithError(h.status().to_string().c_str());
      return;
    }
  }
  std::vector<char*> order(16);
  std::mt19937 rng(2);
  for (auto& p : order) p = arena.base + 2 * (rng() % kRegions) * kPage + 128;
  std::size_t i = 0;
  for (auto _ : state) {
    auto h = cache->acquire(order[i++ & 15], 64, rma::Access::kLocalWrite);
    benchmark::DoNotOptimize(h);
  }
  state.counters["regions"] = static_cast<double>(cache->stats().regions);
}
BENCHMARK(BM_RcacheHitHotSet);

// acquire() of a range not in the cache: watch + register + insert, and with
// a full cache one eviction; then release.
void BM_RcacheMissAndRegister(benchmark::State& state) {
  constexpr std::size_t kPages = 16384;
  auto cache = make_cache(1024);
  Arena arena(2 * kPages);
  if (!cache || arena.base == MAP_FAILED) {
    state.SkipWithError("setup failed");
    return;
  }
  std::size_t i = 0;
  for (auto _ : state) {
    auto h = cache->acquire(arena.base + 2 * (i++ % kPages) * kPage, 64, rma::Access::kLocalWrite);
    benchmark::DoNotOptimize(h);
  }
  auto st = cache->stats();
  state.counters["miss_ratio"] = static_cast<double>(st.misses) / static_cast<double>(st.hits + st.misses);
}
BENCHMARK(BM_RcacheMissAndRegister);

}  // namespace
