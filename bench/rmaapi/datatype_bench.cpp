// Walking and pairing a vector type of 1,000,000 blocks: the per-block cost of
// the datatype engine, which must stay small and allocation-free.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

#include "datatype/block_cursor.hpp"
#include "datatype/datatype.hpp"
#include "datatype/pack.hpp"
#include "datatype/transfer_planner.hpp"
#include "rma/rma_datatype.h"

namespace {

// Counts heap allocations so the benchmark can prove the loop makes none.
std::uint64_t g_allocs = 0;

}  // namespace

// GCC 12 sees the malloc/free pairing through inlining and warns that free()
// gets a pointer "from operator new"; that is exactly this replacement's design.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) {
  ++g_allocs;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

constexpr int kBlocks = 1000000;

struct VectorType {
  rma_Datatype t = RMA_DATATYPE_NULL;
  explicit VectorType(int blocklength, int stride) {
    if (rma_type_vector(kBlocks, blocklength, stride, RMA_INT, &t) != RMA_SUCCESS ||
        rma_type_commit(&t) != RMA_SUCCESS) {
      std::abort();
    }
  }
  ~VectorType() { rma_type_free(&t); }
};

void BM_WalkVector(benchmark::State& state) {
  VectorType v(1, 2);
  std::uint64_t allocs = 0;
  for (auto _ : state) {
    rma::api::BlockCursor c(v.t->layout, 1);
    const std::uint64_t before = g_allocs;
    rma::api::Block b;
    std::int64_t sum = 0;
    while (c.next(b)) sum += b.length;
    allocs += g_allocs - before;
    benchmark::DoNotOptimize(sum);
  }
  state.counters["blocks/s"] = benchmark::Counter(static_cast<double>(kBlocks) * state.iterations(),
                                                  benchmark::Counter::kIsRate);
  state.counters["ns/block"] = benchmark::Counter(
      static_cast<double>(kBlocks) * state.iterations(),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert, benchmark::Counter::kIs1000);
  state.counters["allocs/iter"] = static_cast<double>(allocs) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_WalkVector)->Unit(benchmark::kMillisecond);

bool fixed_lkey(void*, std::uint64_t, std::uint64_t, rma::api::LocalKey* out) noexcept {
  *out = {0, ~0ull, 42};
  return true;
}

// Strided origin (4 bytes every 8) into a contiguous target, 30 SGEs per request.
void BM_PairVectorToContiguous(benchmark::State& state) {
  VectorType v(1, 2);
  const auto max_sge = static_cast<std::uint32_t>(state.range(0));
  std::vector<rma::Sge> sges(max_sge);
  std::uint64_t allocs = 0, wrs = 0;
  for (auto _ : state) {
    auto p = rma::api::TransferPlanner::create({0x10000, 1, &v.t->layout},
                                               {0x80000000, kBlocks, &RMA_INT->layout},
                                               {max_sge, 1u << 30}, {&fixed_lkey, nullptr});
    const std::uint64_t before = g_allocs;
    rma::api::TargetRange t;
    while (p->next(sges, t)) ++wrs;
    allocs += g_allocs - before;
    benchmark::DoNotOptimize(t);
  }
  state.counters["blocks/s"] = benchmark::Counter(static_cast<double>(kBlocks) * state.iterations(),
                                                  benchmark::Counter::kIsRate);
  state.counters["ns/block"] = benchmark::Counter(
      static_cast<double>(kBlocks) * state.iterations(),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert, benchmark::Counter::kIs1000);
  state.counters["WRs/iter"] = static_cast<double>(wrs) / static_cast<double>(state.iterations());
  state.counters["allocs/iter"] = static_cast<double>(allocs) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_PairVectorToContiguous)->Arg(1)->Arg(4)->Arg(30)->Unit(benchmark::kMillisecond);

// Both sides strided with different shapes: every block breaks a request.
void BM_PairVectorToVector(benchmark::State& state) {
  VectorType o(1, 2);
  VectorType t(1, 3);
  std::vector<rma::Sge> sges(30);
  std::uint64_t allocs = 0;
  for (auto _ : state) {
    auto p = rma::api::TransferPlanner::create({0x10000, 1, &o.t->layout},
                                               {0x80000000, 1, &t.t->layout}, {30, 1u << 30});
    const std::uint64_t before = g_allocs;
    rma::api::TargetRange r;
    while (p->next(sges, r)) {
    }
    allocs += g_allocs - before;
  }
  state.counters["ns/block"] = benchmark::Counter(
      static_cast<double>(kBlocks) * state.iterations(),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert, benchmark::Counter::kIs1000);
  state.counters["allocs/iter"] = static_cast<double>(allocs) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_PairVectorToVector)->Unit(benchmark::kMillisecond);

void BM_PackVector(benchmark::State& state) {
  VectorType v(1, 2);
  std::vector<std::byte> src(8 * kBlocks), dst(4 * kBlocks);
  for (auto _ : state) {
    auto n = rma::api::pack(src.data(), 1, v.t->layout, dst);
    benchmark::DoNotOptimize(n);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * 4 * kBlocks);
}
BENCHMARK(BM_PackVector)->Unit(benchmark::kMillisecond);

}  // namespace
