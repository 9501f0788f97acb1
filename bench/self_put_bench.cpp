// Put (RDMA WRITE) latency on the in-process provider: post one signaled
// write and poll its completion, buffers registered through the cache.
#include <benchmark/benchmark.h>

#include <vector>

#include "rma/sdk/registration_cache.hpp"
#include "rma/sdk/registry.hpp"

namespace {

void BM_SelfPutLatency(benchmark::State& state) {
  const auto size = static_cast<std::uint32_t>(state.range(0));
  auto dev = rma::ProviderRegistry::global().open("self");
  if (!dev.ok()) {
    state.SkipWithError(dev.status().to_string().c_str());
    return;
  }
  auto pd = *(*dev)->alloc_pd();
  auto cq = *(*dev)->create_cq(256);
  rma::QpConfig cfg;
  cfg.send_cq = cfg.recv_cq = cq;
  auto a = *pd->create_qp(cfg);
  auto b = *pd->create_qp(cfg);
  if (!a->connect(*b->local_address()).ok() || !b->connect(*a->local_address()).ok()) {
    state.SkipWithError("connect failed");
    return;
  }
  auto cache = *rma::RegistrationCache::create(pd);
  std::vector<char> src(size), dst(size);
  auto sreg = *cache->acquire(src.data(), size, rma::Access::kLocalWrite);
  auto dreg = *cache->acquire(dst.data(), size, rma::Access::kLocalWrite | rma::Access::kRemoteWrite);
  rma::Sge sge{reinterpret_cast<std::uint64_t>(src.data()), size, sreg.lkey()};
  rma::WorkRequest wr;
  wr.opcode = rma::Opcode::kRdmaWrite;
  wr.sgl = {&sge, 1};
  wr.remote_addr = reinterpret_cast<std::uint64_t>(dst.data());
  wr.rkey = dreg.rkey();
  rma::Completion c;
  for (auto _ : state) {
    if (!a->post({&wr, 1}).ok()) {
      state.SkipWithError("post failed");
      return;
    }
    while (cq->poll({&c, 1}) == 0) {
    }
    if (c.status != rma::WcStatus::kSuccess) {
      state.SkipWithError("completion error");
      return;
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * size);
}
BENCHMARK(BM_SelfPutLatency)->Arg(8)->Arg(64)->Arg(4096)->Arg(65536);

}  // namespace
