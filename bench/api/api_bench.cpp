// The window API against the engine directly, both on the self provider.
//
// Engine_*: one QP pair, buffers registered once, post a signaled work
// request and poll its completion (inline for writes up to 256 bytes, as the
// API does). Api_*: rank 0 of a two-rank job (rank 1 is a thread that only
// exposes its window) inside a lock_all epoch: the call, then
// rma_win_flush(1). The difference at 8 B is the API's overhead: argument
// and epoch checks, bounds check, request bookkeeping.
//
// *_Batch: 64 operations, then one completion wait: bandwidth.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "thread_group.hpp"
#include "window/testing.hpp"
#include "rma/rma.h"
#include "rma/registration_cache.hpp"
#include "rma/registry.hpp"

namespace {

constexpr std::size_t kWindowBytes = 4 << 20;
constexpr int kBatch = 64;
rma_Win g_win = RMA_WIN_NULL;

// ---------------------------------------------------------------- engine

struct Engine {
  std::shared_ptr<rma::Device> dev;
  std::shared_ptr<rma::ProtectionDomain> pd;
  std::shared_ptr<rma::CompletionQueue> cq;
  std::unique_ptr<rma::QueuePair> a, b;
  std::unique_ptr<rma::RegistrationCache> cache;
  std::vector<char> src, dst;
  rma::RegistrationCache::Handle sreg, dreg;
  bool ok = false;

  Engine() : src(kWindowBytes), dst(kWindowBytes) {
    auto d = rma::ProviderRegistry::global().open("self");
    if (!d.ok()) return;
    dev = *d;
    pd = *dev->alloc_pd();
    cq = *dev->create_cq(1024);
    rma::QpConfig cfg;
    cfg.send_cq = cfg.recv_cq = cq;
    cfg.max_send_wr = 256;
    cfg.max_inline_data = 256;
    cfg.max_rd_atomic = 16;
    a = *pd->create_qp(cfg);
    b = *pd->create_qp(cfg);
    if (!a->connect(*b->local_address()).ok() || !b->connect(*a->local_address()).ok()) return;
    cache = *rma::RegistrationCache::create(pd);
    sreg = *cache->acquire(src.data(), src.size(), rma::kAllAccess);
    dreg = *cache->acquire(dst.data(), dst.size(), rma::kAllAccess);
    ok = true;
  }

  // Posts `n` requests (the last signaled) and polls the completion.
  bool run(rma::Opcode op, std::uint32_t size, int n) {
    rma::Sge sge{reinterpret_cast<std::uint64_t>(src.data()), size, sreg.lkey()};
    rma::WorkRequest wr;
    wr.opcode = op;
    wr.sgl = {&sge, 1};
    wr.remote_addr = reinterpret_cast<std::uint64_t>(dst.data());
    wr.rkey = dreg.rkey();
    wr.compare_add = 1;
    const bool inl = op == rma::Opcode::kRdmaWrite && size <= 256;
    for (int i = 0; i < n; ++i) {
      wr.flags = (i == n - 1 ? std::uint32_t{rma::kWrSignaled} : 0u) | (inl ? std::uint32_t{rma::kWrInline} : 0u);
      if (op == rma::Opcode::kRdmaRead || op == rma::Opcode::kAtomicFetchAdd) wr.flags |= rma::kWrSignaled;
      if (!a->post({&wr, 1}).ok()) return false;
      if ((wr.flags & rma::kWrSignaled) != 0 && i != n - 1) {
        rma::Completion c;
        while (cq->poll({&c, 1}) == 0) {
        }
      }
    }
    rma::Completion c;
    while (cq->poll({&c, 1}) == 0) {
    }
    return c.status == rma::WcStatus::kSuccess;
  }
};

Engine& engine() {
  static Engine e;
  return e;
}

void engine_bench(benchmark::State& state, rma::Opcode op, int n) {
  Engine& e = engine();
  if (!e.ok) {
    state.SkipWithError("self provider unavailable");
    return;
  }
  const auto size = static_cast<std::uint32_t>(state.range(0));
  for (auto _ : state) {
    if (!e.run(op, size, n)) {
      state.SkipWithError("engine operation failed");
      return;
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * n * size);
}

void BM_Engine_Write(benchmark::State& s) { engine_bench(s, rma::Opcode::kRdmaWrite, 1); }
void BM_Engine_Read(benchmark::State& s) { engine_bench(s, rma::Opcode::kRdmaRead, 1); }
void BM_Engine_FetchAdd(benchmark::State& s) { engine_bench(s, rma::Opcode::kAtomicFetchAdd, 1); }
void BM_Engine_Write_Batch(benchmark::State& s) { engine_bench(s, rma::Opcode::kRdmaWrite, kBatch); }
void BM_Engine_Read_Batch(benchmark::State& s) { engine_bench(s, rma::Opcode::kRdmaRead, kBatch); }

// ---------------------------------------------------------------- API

template <typename F>
void api_bench(benchmark::State& state, int n, F&& op) {
  const auto size = static_cast<int>(state.range(0));
  static std::vector<char> buf(kWindowBytes);
  for (auto _ : state) {
    for (int i = 0; i < n; ++i) {
      if (op(buf.data(), size) != RMA_SUCCESS) {
        state.SkipWithError("API call failed");
        return;
      }
    }
    if (rma_win_flush(1, g_win) != RMA_SUCCESS) {
      state.SkipWithError("flush failed");
      return;
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * n * size);
}

int put(char* b, int size) { return rma_put(b, size, RMA_BYTE, 1, 0, size, RMA_BYTE, g_win); }
int get(char* b, int size) { return rma_get(b, size, RMA_BYTE, 1, 0, size, RMA_BYTE, g_win); }
int acc_i64(char* b, int size) {
  return rma_accumulate(b, size / 8, RMA_INT64_T, 1, 0, size / 8, RMA_INT64_T, RMA_SUM, g_win);
}
int acc_double(char* b, int size) {
  return rma_accumulate(b, size / 8, RMA_DOUBLE, 1, 0, size / 8, RMA_DOUBLE, RMA_SUM, g_win);
}
int fop(char* b, int) {
  static std::int64_t result;
  return rma_fetch_and_op(b, &result, RMA_INT64_T, 1, 0, RMA_SUM, g_win);
}

void BM_Api_Put(benchmark::State& s) { api_bench(s, 1, put); }
void BM_Api_Get(benchmark::State& s) { api_bench(s, 1, get); }
void BM_Api_AccumulateInt64Sum(benchmark::State& s) { api_bench(s, 1, acc_i64); }
void BM_Api_AccumulateDoubleSum(benchmark::State& s) { api_bench(s, 1, acc_double); }
void BM_Api_FetchAndOp(benchmark::State& s) { api_bench(s, 1, fop); }
void BM_Api_Put_Batch(benchmark::State& s) { api_bench(s, kBatch, put); }
void BM_Api_Get_Batch(benchmark::State& s) { api_bench(s, kBatch, get); }

BENCHMARK(BM_Engine_Write)->Arg(8)->Arg(4096)->Arg(65536);
BENCHMARK(BM_Api_Put)->Arg(8)->Arg(4096)->Arg(65536);
BENCHMARK(BM_Engine_Read)->Arg(8)->Arg(4096)->Arg(65536);
BENCHMARK(BM_Api_Get)->Arg(8)->Arg(4096)->Arg(65536);
BENCHMARK(BM_Engine_FetchAdd)->Arg(8);
BENCHMARK(BM_Api_FetchAndOp)->Arg(8);
BENCHMARK(BM_Api_AccumulateInt64Sum)->Arg(8)->Arg(64);
BENCHMARK(BM_Api_AccumulateDoubleSum)->Arg(8)->Arg(4096);
BENCHMARK(BM_Engine_Write_Batch)->Arg(8)->Arg(65536);
BENCHMARK(BM_Api_Put_Batch)->Arg(8)->Arg(65536);
BENCHMARK(BM_Engine_Read_Batch)->Arg(8)->Arg(65536);
BENCHMARK(BM_Api_Get_Batch)->Arg(8)->Arg(65536);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  auto group = api_test::make_group(2);
  if (group.size() != 2) return 1;
  std::atomic<bool> done{false};
  std::thread peer([&] {
    if (rma::api::testing::init_thread(std::move(group[1])) != RMA_SUCCESS) std::abort();
    void* base = nullptr;
    rma_Win w = RMA_WIN_NULL;
    if (rma_win_allocate(kWindowBytes, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &w) != RMA_SUCCESS) std::abort();
    while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    rma_win_free(&w);
    rma_finalize();
  });
  if (rma::api::testing::init_thread(std::move(group[0])) != RMA_SUCCESS) return 1;
  void* base = nullptr;
  if (rma_win_allocate(kWindowBytes, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &g_win) != RMA_SUCCESS) return 1;
  rma_win_lock_all(RMA_MODE_NOCHECK, g_win);
  benchmark::RunSpecifiedBenchmarks();
  rma_win_unlock_all(g_win);
  done = true;
  rma_win_free(&g_win);
  rma_finalize();
  peer.join();
  benchmark::Shutdown();
  return 0;
}
