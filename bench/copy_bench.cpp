// copy_bytes against glibc's memcpy (copy_bytes.hpp says why it differs):
// page-aligned source and destination, either the same two buffers every
// time (in the caches) or blocks spread over 64 MiB each (from memory).
#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <cstddef>
#include <cstring>

#include "rma/sdk/copy_bytes.hpp"

namespace {

constexpr std::size_t kSpread = std::size_t{64} << 20;

struct Mapping {
  explicit Mapping(std::size_t n) : size(n) {
    void* p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    data = p == MAP_FAILED ? nullptr : static_cast<unsigned char*>(p);
    if (data != nullptr) std::memset(data, 1, n);
  }
  ~Mapping() {
    if (data != nullptr) ::munmap(data, size);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  std::size_t size;
  unsigned char* data;
};

template <bool kCopyBytes>
void copy(unsigned char* d, const unsigned char* s, std::size_t n) {
  if constexpr (kCopyBytes) {
    rma::copy_bytes(d, s, n);
  } else {
    std::memcpy(d, s, n);
  }
  benchmark::DoNotOptimize(d);
  benchmark::ClobberMemory();
}

// range(0): bytes; range(1): 0 = the same buffers (cached), 1 = spread over 64 MiB.
template <bool kCopyBytes>
void BM_Copy(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const bool spread = state.range(1) != 0;
  Mapping src(spread ? kSpread : n), dst(spread ? kSpread : n);
  if (src.data == nullptr || dst.data == nullptr) {
    state.SkipWithError("mmap failed");
    return;
  }
  const std::size_t blocks = spread ? kSpread / n : 1;
  std::size_t i = 0;
  for (auto _ : state) {
    // A stride prime to the block count visits every block, not in address order.
    const std::size_t b = (i++ * 7919) % blocks;
    copy<kCopyBytes>(dst.data + b * n, src.data + b * n, n);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(n));
}

void Sizes(benchmark::internal::Benchmark* b) {
  for (int spread : {0, 1}) {
    for (int n : {512, 1024, 2048, 4096, 8192, 16384, 65536}) b->Args({n, spread});
  }
}

BENCHMARK(BM_Copy<true>)->Name("BM_CopyBytes")->Apply(Sizes);
BENCHMARK(BM_Copy<false>)->Name("BM_Memcpy")->Apply(Sizes);

}  // namespace
