// Test support for tests/dpdk/rc: two softroce devices (A and B) joined by
// the fault-injecting in-memory link, a PD, CQ and one connected QP pair,
// registered buffers, and helpers that drive both devices while waiting.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "link/fault_link.hpp"
#include "provider/softroce_device.hpp"
#include "rma/sdk/provider.hpp"
#include "wire/wire.hpp"

namespace rma::softroce::testing {

struct Buffer {
  std::vector<std::uint8_t> storage;
  std::uint8_t* data = nullptr;
  std::size_t size = 0;
  std::unique_ptr<MemoryRegion> mr;

  std::uint64_t addr(std::size_t off = 0) const { return reinterpret_cast<std::uint64_t>(data + off); }
  Sge sge(std::size_t off, std::uint32_t len) const { return Sge{addr(off), len, mr->lkey()}; }
  std::uint32_t rkey() const { return mr->rkey(); }
  std::uint32_t lkey() const { return mr->lkey(); }
  std::uint64_t u64(std::size_t off) const {
    std::uint64_t v;
    std::memcpy(&v, data + off, 8);
    return v;
  }
  void set_u64(std::size_t off, std::uint64_t v) { std::memcpy(data + off, &v, 8); }
};

inline Buffer make_buffer(ProtectionDomain& pd, std::size_t size, Access access = kAllAccess) {
  Buffer b;
  b.storage.assign(size + 64, 0);
  b.data = b.storage.data() + (64 - reinterpret_cast<std::uintptr_t>(b.storage.data()) % 64) % 64;
  b.size = size;
  auto mr = pd.register_memory(b.data, size, access);
  EXPECT_TRUE(mr.ok()) << mr.status().to_string();
  if (mr.ok()) b.mr = std::move(mr).value();
  return b;
}

struct Side {
  std::shared_ptr<Device> dev;
  SoftRoceDevice* sdev = nullptr;
  std::shared_ptr<ProtectionDomain> pd;
  std::shared_ptr<CompletionQueue> cq;
  std::unique_ptr<QueuePair> qp;
  roce::FaultLink* link = nullptr;
};

struct PairOptions {
  roce::FaultConfig faults;
  DeviceOptions dev;
  QpConfig qp;  // cq fields are filled in
  std::uint32_t cq_depth = 4096;
  std::uint32_t max_frame = 4096 + 128;
  // Puts each side's link in another Link before the device gets it (a
  // test link that watches or changes what the device sees).
  std::function<std::unique_ptr<roce::Link>(std::unique_ptr<roce::FaultLink>)> wrap_link;
};

inline QpConfig fast_qp_config() {
  QpConfig c;
  c.max_send_wr = 256;
  c.max_recv_wr = 256;
  c.max_send_sge = 4;
  c.max_recv_sge = 4;
  c.max_inline_data = 128;
  c.max_rd_atomic = 16;
  c.timeout = 9;  // 2.1 ms
  c.retry_cnt = 7;
  c.rnr_retry = 7;
  c.min_rnr_timer = 1;  // 10 us
  return c;
}

class Pair {
 public:
  Side a, b;

  static std::unique_ptr<Pair> make(const PairOptions& o) {
    auto p = std::make_unique<Pair>();
    roce::LinkEndpointConfig ea, eb;
    ea.max_frame = eb.max_frame = o.max_frame;
    roce::FaultLinkPair links = roce::make_fault_link_pair(o.faults, ea, eb);
    p->a.link = links.a.get();
    p->b.link = links.b.get();
    if (!p->init(p->a, std::move(links.a), o, "softroce-a") || !p->init(p->b, std::move(links.b), o, "softroce-b")) {
      return nullptr;
    }
    auto aa = p->a.qp->local_address();
    auto ba = p->b.qp->local_address();
    EXPECT_TRUE(aa.ok() && ba.ok());
    Status s1 = p->a.qp->connect(*ba);
    Status s2 = p->b.qp->connect(*aa);
    EXPECT_TRUE(s1.ok()) << s1.to_string();
    EXPECT_TRUE(s2.ok()) << s2.to_string();
    if (!s1.ok() || !s2.ok()) return nullptr;
    return p;
  }

  // Polls `s`'s CQ (driving both devices) until `n` completions arrived or
  // `limit` passed.
  std::vector<Completion> wait(Side& s, std::size_t n,
                               std::chrono::milliseconds limit = std::chrono::milliseconds(10000)) {
    std::vector<Completion> got;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    Completion c[32];
    while (got.size() < n && std::chrono::steady_clock::now() < deadline) {
      pump_other(s);
      const int k = s.cq->poll({c, 32});
      if (k < 0) {
        ADD_FAILURE() << "CQ overrun: " << s.cq->overrun_reason();
        break;
      }
      got.insert(got.end(), c, c + k);
    }
    return got;
  }
  Completion wait_one(Side& s) {
    auto v = wait(s, 1);
    if (v.empty()) {
      ADD_FAILURE() << "no completion";
      Completion c;
      c.status = WcStatus::kGeneralErr;
      return c;
    }
    return v[0];
  }
  // Drives both devices for `d` without taking completions.
  void run_for(std::chrono::milliseconds d) {
    const auto deadline = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < deadline) {
      a.sdev->progress();
      b.sdev->progress();
    }
  }
  void pump_other(Side& s) { (&s == &a ? b : a).sdev->progress(); }

 private:
  bool init(Side& s, std::unique_ptr<roce::FaultLink> link, const PairOptions& o, const char* name) {
    DeviceOptions d = o.dev;
    d.name = name;
    std::unique_ptr<roce::Link> l = o.wrap_link ? o.wrap_link(std::move(link)) : std::move(link);
    auto dev = open_softroce_device(std::move(l), d);
    EXPECT_TRUE(dev.ok()) << dev.status().to_string();
    if (!dev.ok()) return false;
    s.dev = *dev;
    s.sdev = dynamic_cast<SoftRoceDevice*>(s.dev.get());
    s.pd = s.dev->alloc_pd().value();
    s.cq = s.dev->create_cq(o.cq_depth).value();
    QpConfig c = o.qp;
    c.send_cq = s.cq;
    c.recv_cq = s.cq;
    auto qp = s.pd->create_qp(c);
    EXPECT_TRUE(qp.ok()) << qp.status().to_string();
    if (!qp.ok()) return false;
    s.qp = std::move(qp).value();
    return true;
  }
};

inline PairOptions default_options() {
  PairOptions o;
  o.qp = fast_qp_config();
  return o;
}

inline WorkRequest wr(Opcode op, const Sge* sge, std::size_t nsge, std::uint64_t raddr, std::uint32_t rkey,
                      std::uint64_t id, std::uint32_t flags = kWrSignaled) {
  WorkRequest w;
  w.wr_id = id;
  w.opcode = op;
  w.flags = flags;
  w.sgl = {sge, nsge};
  w.remote_addr = raddr;
  w.rkey = rkey;
  return w;
}

inline void fill_pattern(std::uint8_t* p, std::size_t n, std::uint64_t seed) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (std::size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p[i] = static_cast<std::uint8_t>(x);
  }
}

// Opcode of a RoCE frame as handed to Link::transmit (head = Ethernet..).
inline std::uint8_t frame_opcode(std::span<const std::uint8_t> head) {
  return head.size() > roce::kOuterHeadersLen ? head[roce::kOuterHeadersLen] : 0xFF;
}

}  // namespace rma::softroce::testing
