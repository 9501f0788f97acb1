// The window API against the engine directly, on the same provider:
// RMA_API_BENCH_PROVIDER=self (default: in-process, an operation is a mutex
// and a memcpy) or softroce (the software RoCE NIC over an in-process DPDK
// ring pair: frames, ICRC, ACKs).
//
// Engine_*: one QP pair, buffers registered once, post a signaled work
// request and poll its completion (inline for writes up to 256 bytes, as the
// API does). Api_*: rank 0 of a two-rank job (rank 1 is a thread that only
// exposes its window) inside a lock_all epoch: the call, then
// rma_win_flush(1). The difference at 8 B is the API's overhead: argument
// and epoch checks, bounds check, request bookkeeping.
//
// On softroce each side is its own device and its peer side is driven by a
// thread that polls it while the benchmark runs (a NIC serves its target
// without the target's program), for the engine and the API alike.
//
// *_Batch: 64 operations, then one completion wait: bandwidth.
// *_FlushLocal: the same, ended by rma_win_flush_local instead of
// rma_win_flush (local completion: an inline put's origin is free at post).
//
// RMA_API_BENCH_THREAD_LEVEL=multiple runs the ranks at RMA_THREAD_MULTIPLE
// (default single): the cost of the API lock and the thread-safe endpoint
// manager on one thread, against the same run at RMA_THREAD_SINGLE.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <memory>
#include <thread>
#include <vector>

#include "thread_group.hpp"
#include "window/testing.hpp"
#include "rma/rma.h"
#include "rma/sdk/registration_cache.hpp"
#include "rma/sdk/registry.hpp"

namespace {

constexpr std::size_t kWindowBytes = 4 << 20;
constexpr int kBatch = 64;
rma_Win g_win = RMA_WIN_NULL;
std::atomic<bool> g_peer_busy{false};  // rank 1 drives its NIC while an Api_* benchmark runs

std::string provider() {
  const char* p = std::getenv("RMA_API_BENCH_PROVIDER");
  return p == nullptr || *p == '\0' ? "self" : p;
}
bool on_softroce() { return provider() == "softroce"; }
int thread_level() {
  const char* l = std::getenv("RMA_API_BENCH_THREAD_LEVEL");
  return l != nullptr && std::string(l) == "multiple" ? RMA_THREAD_MULTIPLE : RMA_THREAD_SINGLE;
}

// Opens a device; on softroce the two opens of one ring name are wired
// together (the first is side A, the second side B).
rma::Result<std::shared_ptr<rma::Device>> open_device(const char* ring) {
  if (on_softroce()) ::setenv("RMA_SOFTROCE_PORT", (std::string("ring:") + ring + ",ip=10.83.0.1").c_str(), 1);
  return rma::ProviderRegistry::global().open(provider());
}

// While alive, a thread calls `poll` in a loop (the passive side's NIC).
class PeerDriver {
 public:
  template <typename F>
  explicit PeerDriver(bool enabled, F poll) {
    if (!enabled) return;
    thread_ = std::thread([this, poll] {
      while (!stop_.load(std::memory_order_relaxed)) poll();
    });
  }
  ~PeerDriver() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// ---------------------------------------------------------------- engine

struct Engine {
  std::shared_ptr<rma::Device> dev, dev_b;  // dev_b: softroce's second device (else dev)
  std::shared_ptr<rma::ProtectionDomain> pd, pd_b;
  std::shared_ptr<rma::CompletionQueue> cq, cq_b;
  std::unique_ptr<rma::QueuePair> a, b;
  std::unique_ptr<rma::RegistrationCache> cache;
  std::unique_ptr<rma::RegistrationCache> cache_b;  // softroce: side B's registrations (before the handles)
  std::vector<char> src, dst;
  rma::RegistrationCache::Handle sreg, dreg;
  bool ok = false;

  Engine() : src(kWindowBytes), dst(kWindowBytes) {
    auto d = open_device("rma-api-bench-engine");
    if (!d.ok()) return;
    dev = *d;
    if (on_softroce()) {
      auto d2 = open_device("rma-api-bench-engine");
      if (!d2.ok()) return;
      dev_b = *d2;
    } else {
      dev_b = dev;
    }
    pd = *dev->alloc_pd();
    pd_b = dev_b == dev ? pd : *dev_b->alloc_pd();
    cq = *dev->create_cq(1024);
    cq_b = dev_b == dev ? cq : *dev_b->create_cq(1024);
    rma::QpConfig cfg;
    cfg.send_cq = cfg.recv_cq = cq;
    cfg.max_send_wr = 256;
    cfg.max_inline_data = 256;
    // As many READs in flight as the device answers, as the API's endpoints
    // keep (the smaller of both sides' max_qp_rd_atom; the same device here).
    cfg.max_rd_atomic = std::min(dev->caps().max_qp_rd_atom, dev_b->caps().max_qp_rd_atom);
    a = *pd->create_qp(cfg);
    cfg.send_cq = cfg.recv_cq = cq_b;
    b = *pd_b->create_qp(cfg);
    if (!a->connect(*b->local_address()).ok() || !b->connect(*a->local_address()).ok()) return;
    cache = *rma::RegistrationCache::create(pd);
    sreg = *cache->acquire(src.data(), src.size(), rma::kAllAccess);
    if (pd_b != pd) {
      cache_b = *rma::RegistrationCache::create(pd_b);
      dreg = *cache_b->acquire(dst.data(), dst.size(), rma::kAllAccess);
    } else {
      dreg = *cache->acquire(dst.data(), dst.size(), rma::kAllAccess);
    }
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
      // Only the last is signaled: RC completes a QP's requests in order,
      // so its completion covers the batch (reads and atomics too).
      if (!a->post({&wr, 1}).ok()) return false;
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
    state.SkipWithError("provider unavailable (RMA_API_BENCH_PROVIDER)");
    return;
  }
  const auto size = static_cast<std::uint32_t>(state.range(0));
  PeerDriver peer(e.dev_b != e.dev, [&e] {
    rma::Completion c;
    (void)e.cq_b->poll({&c, 1});
  });
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

// What ends each iteration: rma_win_flush (remote completion) or
// rma_win_flush_local (origin buffers free; an inline put needs no ACK).
enum class Flush { kRemote, kLocal };

template <typename F>
void api_bench(benchmark::State& state, int n, F&& op, const rma_Win* win = nullptr,
               Flush flush = Flush::kRemote) {
  const auto size = static_cast<int>(state.range(0));
  static std::vector<char> buf(kWindowBytes);
  g_peer_busy = on_softroce();
  struct Idle {
    ~Idle() { g_peer_busy = false; }
  } idle;
  for (auto _ : state) {
    for (int i = 0; i < n; ++i) {
      if (op(buf.data(), size) != RMA_SUCCESS) {
        state.SkipWithError("API call failed");
        return;
      }
    }
    const rma_Win w = win != nullptr ? *win : g_win;
    if ((flush == Flush::kLocal ? rma_win_flush_local(1, w) : rma_win_flush(1, w)) != RMA_SUCCESS) {
      state.SkipWithError("flush failed");
      return;
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * n * size);
}

// Info objects (never freed: the benchmark's life) with one hint.
rma_Info hint_info(const char* key, const char* value) {
  rma_Info i = RMA_INFO_NULL;
  rma_info_create(&i);
  rma_info_set(i, key, value);
  return i;
}
rma_Info same_op_info() {
  static rma_Info info = hint_info("accumulate_ops", "same_op");
  return info;
}
rma_Info unordered_info() {
  static rma_Info info = hint_info("accumulate_ordering", "none");
  return info;
}

int put(char* b, int size) { return rma_put(b, size, RMA_BYTE, 1, 0, size, RMA_BYTE, g_win); }
int get(char* b, int size) { return rma_get(b, size, RMA_BYTE, 1, 0, size, RMA_BYTE, g_win); }
int acc_i64(char* b, int size) {
  return rma_accumulate(b, size / 8, RMA_INT64_T, 1, 0, size / 8, RMA_INT64_T, RMA_SUM, g_win);
}
int acc_double(char* b, int size) {
  return rma_accumulate(b, size / 8, RMA_DOUBLE, 1, 0, size / 8, RMA_DOUBLE, RMA_SUM, g_win);
}
// REPLACE on doubles: the accumulate lock by default; an RDMA WRITE on a
// window whose info says accumulate_ops=same_op (g_win_same_op).
rma_Win g_win_same_op = RMA_WIN_NULL;
int acc_replace(char* b, int size) {
  return rma_accumulate(b, size / 8, RMA_DOUBLE, 1, 0, size / 8, RMA_DOUBLE, RMA_REPLACE, g_win);
}
int acc_replace_same_op(char* b, int size) {
  return rma_accumulate(b, size / 8, RMA_DOUBLE, 1, 0, size / 8, RMA_DOUBLE, RMA_REPLACE, g_win_same_op);
}
// double SUM of 1.0 (the target changes, so a compare-and-swap loop's
// first guess is wrong, as in real use) on the default window and on one
// whose info says accumulate_ordering=none (g_win_unordered). The batch
// forms spread their calls over kBatch elements.
rma_Win g_win_unordered = RMA_WIN_NULL;
int acc_ones_on(rma_Win w, int size) {
  static const std::vector<double> ones(kWindowBytes / 8, 1.0);
  static int call = 0;
  const int n = size / 8;
  const rma_Aint disp = static_cast<rma_Aint>(call++ % kBatch) * size;
  return rma_accumulate(ones.data(), n, RMA_DOUBLE, 1, disp, n, RMA_DOUBLE, RMA_SUM, w);
}
int acc_ones(char*, int size) { return acc_ones_on(g_win, size); }
int acc_ones_unordered(char*, int size) { return acc_ones_on(g_win_unordered, size); }
int fop(char* b, int) {
  static std::int64_t result;
  return rma_fetch_and_op(b, &result, RMA_INT64_T, 1, 0, RMA_SUM, g_win);
}

void BM_Api_Put(benchmark::State& s) { api_bench(s, 1, put); }
void BM_Api_Get(benchmark::State& s) { api_bench(s, 1, get); }
void BM_Api_AccumulateInt64Sum(benchmark::State& s) { api_bench(s, 1, acc_i64); }
void BM_Api_AccumulateDoubleSum(benchmark::State& s) { api_bench(s, 1, acc_double); }
void BM_Api_FetchAndOp(benchmark::State& s) { api_bench(s, 1, fop); }
void BM_Api_AccumulateDoubleReplace(benchmark::State& s) { api_bench(s, 1, acc_replace); }
void BM_Api_AccumulateDoubleReplaceSameOp(benchmark::State& s) {
  api_bench(s, 1, acc_replace_same_op, &g_win_same_op);
}
void BM_Api_AccumulateDoubleSumOnes(benchmark::State& s) { api_bench(s, 1, acc_ones); }
void BM_Api_AccumulateDoubleSumOnes_OrderingNone(benchmark::State& s) {
  api_bench(s, 1, acc_ones_unordered, &g_win_unordered);
}
void BM_Api_AccumulateDoubleSumOnes_Batch(benchmark::State& s) { api_bench(s, kBatch, acc_ones); }
void BM_Api_AccumulateDoubleSumOnes_Batch_OrderingNone(benchmark::State& s) {
  api_bench(s, kBatch, acc_ones_unordered, &g_win_unordered);
}
void BM_Api_Put_FlushLocal(benchmark::State& s) { api_bench(s, 1, put, nullptr, Flush::kLocal); }
void BM_Api_Put_Batch(benchmark::State& s) { api_bench(s, kBatch, put); }
void BM_Api_Put_Batch_FlushLocal(benchmark::State& s) { api_bench(s, kBatch, put, nullptr, Flush::kLocal); }
void BM_Api_Get_Batch(benchmark::State& s) { api_bench(s, kBatch, get); }

BENCHMARK(BM_Engine_Write)->Arg(8)->Arg(4096)->Arg(65536);
BENCHMARK(BM_Api_Put)->Arg(8)->Arg(4096)->Arg(65536);
BENCHMARK(BM_Api_Put_FlushLocal)->Arg(8)->Arg(4096)->Arg(65536);
BENCHMARK(BM_Engine_Read)->Arg(8)->Arg(4096)->Arg(65536);
BENCHMARK(BM_Api_Get)->Arg(8)->Arg(4096)->Arg(65536);
BENCHMARK(BM_Engine_FetchAdd)->Arg(8);
BENCHMARK(BM_Api_FetchAndOp)->Arg(8);
BENCHMARK(BM_Api_AccumulateInt64Sum)->Arg(8)->Arg(64);
BENCHMARK(BM_Api_AccumulateDoubleSum)->Arg(8)->Arg(4096);
BENCHMARK(BM_Api_AccumulateDoubleReplace)->Arg(8)->Arg(4096);
BENCHMARK(BM_Api_AccumulateDoubleReplaceSameOp)->Arg(8)->Arg(4096);
BENCHMARK(BM_Api_AccumulateDoubleSumOnes)->Arg(8)->Arg(4096);
BENCHMARK(BM_Api_AccumulateDoubleSumOnes_OrderingNone)->Arg(8)->Arg(4096);
BENCHMARK(BM_Api_AccumulateDoubleSumOnes_Batch)->Arg(8);
BENCHMARK(BM_Api_AccumulateDoubleSumOnes_Batch_OrderingNone)->Arg(8);
BENCHMARK(BM_Engine_Write_Batch)->Arg(8)->Arg(65536);
BENCHMARK(BM_Api_Put_Batch)->Arg(8)->Arg(65536);
BENCHMARK(BM_Api_Put_Batch_FlushLocal)->Arg(8)->Arg(65536);
BENCHMARK(BM_Engine_Read_Batch)->Arg(8)->Arg(65536);
BENCHMARK(BM_Api_Get_Batch)->Arg(8)->Arg(65536);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  auto group = api_test::make_group(2);
  if (group.size() != 2) return 1;
  const std::string prov = provider();
  std::printf("rma_api_bench: provider %s, thread level %s\n", prov.c_str(),
              thread_level() == RMA_THREAD_MULTIPLE ? "multiple" : "single");
  (void)engine();  // opens its devices before the ranks open theirs
  // The ranks' two devices: the two ends of one ring pair (whichever
  // rank opens first gets the first end).
  if (on_softroce()) ::setenv("RMA_SOFTROCE_PORT", "ring:rma-api-bench,ip=10.83.0.2", 1);
  std::atomic<bool> done{false};
  std::thread peer([&] {
    if (rma::api::testing::init_thread(std::move(group[1]), prov, thread_level()) != RMA_SUCCESS) std::abort();
    void* base = nullptr;
    rma_Win w = RMA_WIN_NULL;
    if (rma_win_allocate(kWindowBytes, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &w) != RMA_SUCCESS) std::abort();
    rma_Win w2 = RMA_WIN_NULL;
    void* base2 = nullptr;
    if (rma_win_allocate(kWindowBytes, 1, same_op_info(), RMA_COMM_WORLD, &base2, &w2) != RMA_SUCCESS) std::abort();
    rma_Win w3 = RMA_WIN_NULL;
    void* base3 = nullptr;
    if (rma_win_allocate(kWindowBytes, 1, unordered_info(), RMA_COMM_WORLD, &base3, &w3) != RMA_SUCCESS) std::abort();
    while (!done.load()) {
      if (g_peer_busy.load(std::memory_order_relaxed)) (void)rma_win_sync(w);  // progresses the NIC
      else std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    rma_win_free(&w3);
    rma_win_free(&w2);
    rma_win_free(&w);
    rma_finalize();
  });
  if (rma::api::testing::init_thread(std::move(group[0]), prov, thread_level()) != RMA_SUCCESS) return 1;
  void* base = nullptr;
  if (rma_win_allocate(kWindowBytes, 1, RMA_INFO_NULL, RMA_COMM_WORLD, &base, &g_win) != RMA_SUCCESS) return 1;
  void* base2 = nullptr;
  if (rma_win_allocate(kWindowBytes, 1, same_op_info(), RMA_COMM_WORLD, &base2, &g_win_same_op) != RMA_SUCCESS) return 1;
  void* base3 = nullptr;
  if (rma_win_allocate(kWindowBytes, 1, unordered_info(), RMA_COMM_WORLD, &base3, &g_win_unordered) != RMA_SUCCESS) return 1;
  rma_win_lock_all(RMA_MODE_NOCHECK, g_win);
  rma_win_lock_all(RMA_MODE_NOCHECK, g_win_same_op);
  rma_win_lock_all(RMA_MODE_NOCHECK, g_win_unordered);
  benchmark::RunSpecifiedBenchmarks();
  rma_win_unlock_all(g_win);
  rma_win_unlock_all(g_win_same_op);
  rma_win_unlock_all(g_win_unordered);
  done = true;
  rma_win_free(&g_win_unordered);
  rma_win_free(&g_win_same_op);
  rma_win_free(&g_win);
  rma_finalize();
  peer.join();
  benchmark::Shutdown();
  return 0;
}
