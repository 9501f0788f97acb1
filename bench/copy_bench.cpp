// copy_bytes against glibc's memcpy (copy_bytes.hpp says why it differs):
// either the same two buffers every time (in the caches) or blocks spread
// over 64 MiB each (from memory); source and destination page-aligned, or
// where a SHMEM program's copies put them (third argument, kLayouts).
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

// range(0): bytes; range(1): 0 = the same buffers (cached), 1 = spread over 64 MiB;
// range(2): the layout, kLayouts below.
// Where the copy's source and destination start, past a page boundary:
// 0 both on it; 1 from malloc's data (page + 16) to a SHMEM heap block of
// 2 KiB or more (page + 2064: rmaapi/shmem/c_setup.cpp), a put; 2 the get
// back; 3 both 16 bytes past a line at the same page offset.
struct Layout {
  std::size_t src_off, dst_off;
};
constexpr Layout kLayouts[] = {{0, 0}, {16, 2064}, {2064, 16}, {16, 16}};
constexpr std::size_t kMaxOffset = 2064;

template <bool kCopyBytes>
void BM_Copy(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const bool spread = state.range(1) != 0;
  const Layout at = kLayouts[state.range(2)];
  Mapping src(spread ? kSpread : n + kMaxOffset), dst(spread ? kSpread : n + kMaxOffset);
  if (src.data == nullptr || dst.data == nullptr) {
    state.SkipWithError("mmap failed");
    return;
  }
  // Blocks of n bytes plus a page, so that an offset block stays inside.
  const std::size_t stride = spread ? n + 4096 : 0;
  const std::size_t blocks = spread ? kSpread / stride - 1 : 1;
  std::size_t i = 0;
  for (auto _ : state) {
    // A stride prime to the block count visits every block, not in address order.
    const std::size_t b = (i++ * 7919) % blocks;
    copy<kCopyBytes>(dst.data + b * stride + at.dst_off, src.data + b * stride + at.src_off, n);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(n));
}

void Sizes(benchmark::internal::Benchmark* b) {
  for (int spread : {0, 1}) {
    for (int n : {512, 1024, 2048, 4096, 8192, 16384, 65536}) b->Args({n, spread, 0});
  }
  for (int layout : {1, 2, 3}) {
    for (int spread : {0, 1}) {
      for (int n : {1024, 2048, 4096, 8192}) b->Args({n, spread, layout});
    }
  }
}

BENCHMARK(BM_Copy<true>)->Name("BM_CopyBytes")->Apply(Sizes);
BENCHMARK(BM_Copy<false>)->Name("BM_Memcpy")->Apply(Sizes);

}  // namespace
