// Test helper: a self-provider device with one QP connected to itself, and a
// blocking RDMA WRITE through it.
#pragma once

#include <gtest/gtest.h>

#include <sys/mman.h>

#include <memory>
#include <string>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/registration_cache.hpp"
#include "rma/sdk/registry.hpp"

namespace rma::testing_support {

struct SelfLoopback {
  std::shared_ptr<Device> device;
  std::shared_ptr<ProtectionDomain> pd;
  std::shared_ptr<CompletionQueue> cq;
  std::unique_ptr<QueuePair> qp;

  static Result<SelfLoopback> make() {
    SelfLoopback l;
    RMA_ASSIGN_OR_RETURN(l.device, ProviderRegistry::global().open("self"));
    RMA_ASSIGN_OR_RETURN(l.pd, l.device->alloc_pd());
    RMA_ASSIGN_OR_RETURN(l.cq, l.device->create_cq(256));
    QpConfig cfg;
    cfg.send_cq = l.cq;
    cfg.recv_cq = l.cq;
    RMA_ASSIGN_OR_RETURN(l.qp, l.pd->create_qp(cfg));
    RMA_ASSIGN_OR_RETURN(EndpointAddress self_addr, l.qp->local_address());
    RMA_RETURN_IF_ERROR(l.qp->connect(self_addr));
    return l;
  }

  // Posts one signaled WRITE and waits for its completion.
  WcStatus write(const void* src, std::uint32_t lkey, std::uint64_t dst, std::uint32_t rkey,
                 std::uint32_t len) {
    Sge sge{reinterpret_cast<std::uint64_t>(src), len, lkey};
    WorkRequest wr;
    wr.wr_id = 77;
    wr.opcode = Opcode::kRdmaWrite;
    wr.sgl = {&sge, 1};
    wr.remote_addr = dst;
    wr.rkey = rkey;
    PostResult pr = qp->post({&wr, 1});
    if (!pr.ok()) {
      ADD_FAILURE() << pr.to_status().to_string();
      return WcStatus::kGeneralErr;
    }
    Completion c;
    for (int spins = 0; spins < 1000000; ++spins) {
      int n = cq->poll({&c, 1});
      if (n < 0) {
        ADD_FAILURE() << "CQ overrun: " << cq->overrun_reason();
        return WcStatus::kGeneralErr;
      }
      if (n == 1) return c.status;
    }
    ADD_FAILURE() << "no completion";
    return WcStatus::kGeneralErr;
  }
};

}  // namespace rma::testing_support

namespace rma {
// Readable names for value-parameterised tests ("userfaultfd", not "<01>").
inline void PrintTo(MemoryMonitorKind k, std::ostream* os) { *os << memory_monitor_name(k); }

namespace testing_support {
inline std::string monitor_param_name(const ::testing::TestParamInfo<MemoryMonitorKind>& p) {
  return std::string(memory_monitor_name(p.param));
}

// Maps `len` bytes of fresh anonymous memory at `want` if that address is
// free. Under sanitizers the runtime's own allocations sometimes take a hole
// the moment it appears; then the memory is mapped elsewhere and *relocated
// is set, so tests can count how often "the same address" really was.
inline void* map_again(void* want, std::size_t len, bool* relocated) {
  void* p = mmap(want, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  *relocated = false;
  if (p == want) return p;
  if (p != MAP_FAILED) munmap(p, len);  // kernels without NOREPLACE treat it as a hint
  *relocated = true;
  p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}
}  // namespace testing_support
}  // namespace rma
