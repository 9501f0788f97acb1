// A program that uses librma the way an outside project would: only the
// installed headers <rma/...> and the installed library. It opens the
// in-process ("self") provider, connects two queue pairs to each other and
// moves one buffer with an RDMA WRITE. Prints "consumer ok" on success.
#include <rma/sdk/provider.hpp>
#include <rma/sdk/registry.hpp>
#include <rma/sdk/status.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

int fail(const std::string& what, const rma::Status& status) {
  std::fprintf(stderr, "consumer: %s: %s\n", what.c_str(), status.to_string().c_str());
  return 1;
}

}  // namespace

int main() {
  auto device = rma::ProviderRegistry::global().open("self");
  if (!device.ok()) return fail("open provider \"self\"", device.status());

  auto pd = (*device)->alloc_pd();
  if (!pd.ok()) return fail("alloc_pd", pd.status());
  auto cq = (*device)->create_cq(16);
  if (!cq.ok()) return fail("create_cq", cq.status());

  rma::QpConfig qp_config;
  qp_config.send_cq = *cq;
  qp_config.recv_cq = *cq;
  auto qp_a = (*pd)->create_qp(qp_config);
  if (!qp_a.ok()) return fail("create_qp (a)", qp_a.status());
  auto qp_b = (*pd)->create_qp(qp_config);
  if (!qp_b.ok()) return fail("create_qp (b)", qp_b.status());

  auto addr_a = (*qp_a)->local_address();
  if (!addr_a.ok()) return fail("local_address (a)", addr_a.status());
  auto addr_b = (*qp_b)->local_address();
  if (!addr_b.ok()) return fail("local_address (b)", addr_b.status());
  if (auto s = (*qp_a)->connect(*addr_b); !s.ok()) return fail("connect a -> b", s);
  if (auto s = (*qp_b)->connect(*addr_a); !s.ok()) return fail("connect b -> a", s);

  constexpr std::size_t kSize = 4096;
  std::vector<std::uint8_t> source(kSize), target(kSize, 0);
  for (std::size_t i = 0; i < kSize; ++i) source[i] = static_cast<std::uint8_t>(i * 7 + 1);

  auto source_mr = (*pd)->register_memory(source.data(), source.size(), rma::Access::kLocalWrite);
  if (!source_mr.ok()) return fail("register source", source_mr.status());
  auto target_mr = (*pd)->register_memory(target.data(), target.size(),
                                          rma::Access::kLocalWrite | rma::Access::kRemoteWrite);
  if (!target_mr.ok()) return fail("register target", target_mr.status());

  const rma::Sge sge{reinterpret_cast<std::uint64_t>(source.data()),
                     static_cast<std::uint32_t>(kSize), (*source_mr)->lkey()};
  rma::WorkRequest wr;
  wr.wr_id = 42;
  wr.opcode = rma::Opcode::kRdmaWrite;
  wr.flags = rma::kWrSignaled;
  wr.sgl = std::span<const rma::Sge>(&sge, 1);
  wr.remote_addr = reinterpret_cast<std::uint64_t>(target.data());
  wr.rkey = (*target_mr)->rkey();
  const rma::PostResult posted = (*qp_a)->post(std::span<const rma::WorkRequest>(&wr, 1));
  if (!posted.ok()) return fail("post RDMA_WRITE", posted.to_status());

  std::array<rma::Completion, 4> completions{};
  int got = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (got == 0) {
    got = (*cq)->poll(completions);
    if (got < 0) {
      std::fprintf(stderr, "consumer: completion queue overrun: %s\n", (*cq)->overrun_reason());
      return 1;
    }
    if (got == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        std::fprintf(stderr, "consumer: no completion within 10 s\n");
        return 1;
      }
      std::this_thread::yield();
    }
  }
  const rma::Completion& c = completions[0];
  if (got != 1 || c.wr_id != 42 || c.status != rma::WcStatus::kSuccess ||
      c.opcode != rma::Opcode::kRdmaWrite) {
    std::fprintf(stderr, "consumer: unexpected completion: %d completion(s), wr_id %llu, %s, %s\n",
                 got, static_cast<unsigned long long>(c.wr_id),
                 std::string(rma::wc_status_name(c.status)).c_str(),
                 std::string(rma::opcode_name(c.opcode)).c_str());
    return 1;
  }
  if (std::memcmp(source.data(), target.data(), kSize) != 0) {
    std::fprintf(stderr, "consumer: RDMA_WRITE completed but the target bytes differ\n");
    return 1;
  }
  std::printf("consumer ok\n");
  return 0;
}
