// The provider contract suite (issue 13): one GoogleTest suite, every case a
// TEST_P instantiated once per provider in kProviders below. The suite sees a
// provider only as the engine does: ProviderRegistry::global() and the
// Device/ProtectionDomain/MemoryRegion/QueuePair/CompletionQueue interfaces of
// include/rma/sdk/provider.hpp. No provider header is included.
//
// Each test gets two "sides" A and B (device, PD, CQ, QP): B is the responder.
// Providers that cannot join two devices in one process (self, verbs) give
// both sides the same device (with one PD each); softroce opens two devices
// through the registry on the two ends of an in-process DPDK ring port.
//
// Waiting is polling with a deadline (never a sleep): wait() polls one CQ and
// nudges the other side's CQ with an empty poll(), which makes a software
// provider progress (softroce runs receive/timers/transmit inside poll()).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/registry.hpp"

namespace rma::contract {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Completions of a correct provider arrive in microseconds; the bound is for
// a loaded CI machine under sanitizers, or rxe inside a TCG guest.
inline constexpr milliseconds kDeadline{20000};

// ------------------------------------------------------------------ providers
// What the fixture needs from a provider: two devices that can reach each
// other (possibly one device twice), or the reason the provider cannot run
// here (the test then skips with that reason).
struct DevicePair {
  std::shared_ptr<Device> a, b;
  std::string skip_reason;  // non-empty: skip
};

// Opens the provider's first device through the registry and uses it for
// both sides (QPs of one device connect to each other: self, verbs/rxe).
DevicePair open_one_device_twice(const char* provider);
// Two softroce devices on the ends of an in-process DPDK ring port
// (RMA_SOFTROCE_PORT=ring:<unique name>), opened through the registry.
DevicePair open_softroce_ring_pair(const char* provider);

struct ProviderCase {
  const char* name;                           // provider name in the registry; test-name suffix
  DevicePair (*open)(const char* provider);   // how to get the two devices
  // Every QP the suite makes promises QpConfig::serialized (the suite's
  // calls come from one thread); the test-name suffix says "_serialized".
  bool serialized = false;
};

// Every provider the suite runs against. A new provider is one line here.
// shm runs twice: its serialized QPs take another data path (no locks,
// the CQ's owner ring).
inline const ProviderCase kProviders[] = {
    {"self", open_one_device_twice},
    {"softroce", open_softroce_ring_pair},
    {"verbs", open_one_device_twice},
    {"shm", open_one_device_twice},
    {"shm", open_one_device_twice, true},
};

inline std::string provider_case_name(const ProviderCase& p) {
  return std::string(p.name) + (p.serialized ? "_serialized" : "");
}

// Readable parameter in test output and ctest names ("self", not bytes).
inline void PrintTo(const ProviderCase& p, std::ostream* os) { *os << provider_case_name(p); }

inline std::string provider_param_name(const ::testing::TestParamInfo<ProviderCase>& p) {
  return provider_case_name(p.param);
}

// ------------------------------------------------------------------ buffers
// 64-byte aligned heap buffer and its registration.
struct Buffer {
  std::unique_ptr<std::uint8_t[]> storage;
  std::uint8_t* data = nullptr;
  std::size_t size = 0;
  std::unique_ptr<MemoryRegion> mr;

  std::uint64_t addr(std::size_t off = 0) const { return reinterpret_cast<std::uint64_t>(data + off); }
  Sge sge(std::size_t off, std::uint32_t len) const { return Sge{addr(off), len, mr->lkey()}; }
  std::uint32_t lkey() const { return mr->lkey(); }
  std::uint32_t rkey() const { return mr->rkey(); }
  std::uint64_t u64(std::size_t off) const {
    std::uint64_t v;
    std::memcpy(&v, data + off, 8);
    return v;
  }
  void set_u64(std::size_t off, std::uint64_t v) { std::memcpy(data + off, &v, 8); }
  bool all(std::uint8_t b, std::size_t from = 0, std::size_t to = SIZE_MAX) const {
    to = std::min(to, size);
    for (std::size_t i = from; i < to; ++i) {
      if (data[i] != b) return false;
    }
    return true;
  }
};

inline void fill_pattern(std::uint8_t* p, std::size_t n, std::uint64_t seed) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (std::size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p[i] = static_cast<std::uint8_t>(x);
  }
}

inline WorkRequest make_wr(Opcode op, std::span<const Sge> sgl, std::uint64_t remote_addr = 0, std::uint32_t rkey = 0,
                           std::uint64_t wr_id = 1, std::uint32_t flags = kWrSignaled) {
  WorkRequest wr;
  wr.wr_id = wr_id;
  wr.opcode = op;
  wr.flags = flags;
  wr.sgl = sgl;
  wr.remote_addr = remote_addr;
  wr.rkey = rkey;
  return wr;
}

// ------------------------------------------------------------------ fixture
struct Side {
  std::shared_ptr<Device> dev;
  std::shared_ptr<ProtectionDomain> pd;
  std::shared_ptr<CompletionQueue> cq;
  std::unique_ptr<QueuePair> qp;
};

class Contract : public ::testing::TestWithParam<ProviderCase> {
 protected:
  void SetUp() override;

  const char* provider() const { return GetParam().name; }
  const DeviceCaps& caps() const { return a.dev->caps(); }

  // A QP configuration every provider accepts: small queues, a few SGEs,
  // some inline, short RNR timer (10 us) so RNR retries are quick.
  QpConfig config(const Side& s) const;

  std::unique_ptr<QueuePair> make_qp(Side& s, const QpConfig& c);
  // Connects a.qp and b.qp (made from ca/cb, CQs filled in when null).
  void connect_pair(QpConfig ca, QpConfig cb);
  void connect_pair() { connect_pair(config(a), config(b)); }

  Buffer buffer(Side& s, std::size_t size, Access access = kAllAccess, std::uint8_t fill = 0);

  // Up to n completions from s's CQ, polled until n arrived or `limit`.
  // Fails the test on CQ overrun.
  std::vector<Completion> wait(Side& s, std::size_t n, milliseconds limit = kDeadline);
  // Exactly one completion; a failed completion with GENERAL_ERR otherwise.
  Completion wait_one(Side& s);
  // True when no completion arrives at s's CQ for `d` (the CQ is polled,
  // and the other side nudged, the whole time).
  bool quiet_for(Side& s, milliseconds d);
  // Polls until q reaches `want` (both sides nudged) or the deadline.
  bool wait_state(QueuePair& q, QpState want, milliseconds limit = kDeadline);
  // Runs progress on both sides once (empty polls).
  void nudge() {
    (void)a.cq->poll({});
    (void)b.cq->poll({});
  }

  PostResult post1(QueuePair& q, const WorkRequest& wr) { return q.post({&wr, 1}); }
  PostResult recv1(QueuePair& q, std::span<const Sge> sgl, std::uint64_t wr_id) {
    RecvRequest r;
    r.wr_id = wr_id;
    r.sgl = sgl;
    return q.post_recv({&r, 1});
  }

  Side a, b;
};

}  // namespace rma::contract
