// Test support for tests/engine/self_*_test.cpp (header-only; not part of
// librma). A fixture with a self device, a PD, a CQ, registered buffers and
// small helpers to build work requests and drain completions.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/registry.hpp"
#include "self/self_provider.hpp"

namespace rma::self::testing {

// A registry of our own holding only the self provider, so the tests do not
// depend on which providers the build compiled in.
inline Provider& self_provider() {
  static ProviderRegistry* registry = [] {
    auto* r = new ProviderRegistry();
    EXPECT_TRUE(providers::register_self(*r).ok());
    return r;
  }();
  return *registry->find("self").value();
}

// Page-aligned heap buffer plus its registration.
struct Buffer {
  std::unique_ptr<std::uint8_t[]> storage;
  std::uint8_t* data = nullptr;
  std::size_t size = 0;
  std::unique_ptr<MemoryRegion> mr;

  std::uint64_t addr(std::size_t off = 0) const { return reinterpret_cast<std::uint64_t>(data + off); }
  Sge sge(std::size_t off, std::uint32_t len) const { return Sge{addr(off), len, mr->lkey()}; }
  std::uint32_t rkey() const { return mr->rkey(); }
  std::uint64_t u64(std::size_t off = 0) const {
    std::uint64_t v;
    std::memcpy(&v, data + off, 8);
    return v;
  }
  void set_u64(std::size_t off, std::uint64_t v) { std::memcpy(data + off, &v, 8); }
  void fill(std::uint8_t b) { std::memset(data, b, size); }
  bool all(std::uint8_t b) const {
    for (std::size_t i = 0; i < size; ++i) {
      if (data[i] != b) return false;
    }
    return true;
  }
};

inline WorkRequest make_wr(Opcode op, std::span<const Sge> sgl, std::uint64_t remote_addr = 0,
                           std::uint32_t rkey = 0, std::uint64_t wr_id = 1,
                           std::uint32_t flags = kWrSignaled) {
  WorkRequest wr;
  wr.wr_id = wr_id;
  wr.opcode = op;
  wr.flags = flags;
  wr.sgl = sgl;
  wr.remote_addr = remote_addr;
  wr.rkey = rkey;
  return wr;
}

class SelfFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = self_provider().open_device("self0");
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    device = *d;
    auto p = device->alloc_pd();
    ASSERT_TRUE(p.ok());
    pd = *p;
    auto c = device->create_cq(4096);
    ASSERT_TRUE(c.ok());
    cq = *c;
  }

  QpConfig config(std::uint32_t sge = 32) const {
    QpConfig c;
    c.send_cq = cq;
    c.recv_cq = cq;
    c.max_send_wr = 256;
    c.max_recv_wr = 256;
    c.max_send_sge = sge;
    c.max_recv_sge = sge;
    c.max_inline_data = 256;
    c.max_rd_atomic = 16;
    return c;
  }

  std::unique_ptr<QueuePair> make_qp(const QpConfig& c, ProtectionDomain* on = nullptr) {
    auto q = (on != nullptr ? on : pd.get())->create_qp(c);
    EXPECT_TRUE(q.ok()) << q.status().to_string();
    return q.ok() ? std::move(*q) : nullptr;
  }

  static void connect(QueuePair& x, QueuePair& y) {
    auto xa = x.local_address();
    auto ya = y.local_address();
    ASSERT_TRUE(xa.ok() && ya.ok());
    ASSERT_TRUE(x.connect(*ya).ok());
    if (&x != &y) {
      ASSERT_TRUE(y.connect(*xa).ok());
    }
  }

  // Two connected QPs a -> b on the fixture's PD and CQ.
  void make_pair(const QpConfig& ca, const QpConfig& cb) {
    a = make_qp(ca);
    b = make_qp(cb);
    ASSERT_TRUE(a && b);
    connect(*a, *b);
  }
  void make_pair() { make_pair(config(), config()); }

  Buffer buffer(std::size_t size, Access access = kAllAccess, std::uint8_t fill = 0,
                ProtectionDomain* on = nullptr) {
    Buffer buf;
    buf.size = size;
    buf.storage.reset(new std::uint8_t[size + 4096]);
    buf.data = reinterpret_cast<std::uint8_t*>(
        (reinterpret_cast<std::uintptr_t>(buf.storage.get()) + 4095) & ~std::uintptr_t{4095});
    std::memset(buf.data, fill, size);
    auto mr = (on != nullptr ? on : pd.get())->register_memory(buf.data, size == 0 ? 1 : size, access);
    EXPECT_TRUE(mr.ok()) << mr.status().to_string();
    if (mr.ok()) buf.mr = std::move(*mr);
    return buf;
  }

  // Every completion currently in `q` (everything here executes inside post).
  static std::vector<Completion> drain(CompletionQueue& q) {
    std::vector<Completion> out;
    Completion buf[64];
    for (;;) {
      int n = q.poll(buf);
      EXPECT_GE(n, 0) << q.overrun_reason();
      if (n <= 0) break;
      out.insert(out.end(), buf, buf + n);
    }
    return out;
  }
  std::vector<Completion> drain() { return drain(*cq); }

  // Exactly one completion; fails the test otherwise.
  Completion one() {
    auto v = drain();
    EXPECT_EQ(v.size(), 1u);
    return v.empty() ? Completion{0, WcStatus::kGeneralErr} : v.front();
  }

  PostResult post1(QueuePair& q, const WorkRequest& wr) { return q.post({&wr, 1}); }
  PostResult recv1(QueuePair& q, std::span<const Sge> sgl, std::uint64_t wr_id = 100) {
    RecvRequest r;
    r.wr_id = wr_id;
    r.sgl = sgl;
    return q.post_recv({&r, 1});
  }

  std::shared_ptr<Device> device;
  std::shared_ptr<ProtectionDomain> pd;
  std::shared_ptr<CompletionQueue> cq;
  std::unique_ptr<QueuePair> a, b;
};

}  // namespace rma::self::testing
