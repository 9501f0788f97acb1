// The software NIC's counters through the contract (Device::read_counters,
// read_qp_counters, QueuePair::read_counters): they move with traffic, show
// loss as retransmissions and corruption as ICRC errors, are safe to read
// from another thread, and RMA_SOFTROCE_TIMEOUT / _RETRY_CNT apply.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <thread>

#include "harness.hpp"
#include "rma/sdk/registry.hpp"

namespace rma::softroce::testing {
namespace {

std::uint64_t value(const std::vector<CounterSample>& v, std::string_view name) {
  for (const auto& c : v) {
    if (c.name == name) return c.value;
  }
  ADD_FAILURE() << "no counter named " << name;
  return 0;
}

// Writes `n` messages of `len` bytes from A to B and waits for them.
void write_messages(Pair& p, Buffer& src, Buffer& dst, int n, std::uint32_t len) {
  for (int i = 0; i < n; ++i) {
    Sge s = src.sge(0, len);
    WorkRequest w = wr(Opcode::kRdmaWrite, &s, 1, dst.addr(), dst.rkey(), static_cast<std::uint64_t>(i));
    ASSERT_TRUE(p.a.qp->post({&w, 1}).ok());
    Completion c = p.wait_one(p.a);
    ASSERT_EQ(c.status, WcStatus::kSuccess) << wc_status_name(c.status);
  }
}

TEST(SoftRoceCounters, MoveWithTrafficPerDeviceAndPerQp) {
  auto p = Pair::make(default_options());
  ASSERT_TRUE(p);
  Buffer src = make_buffer(*p->a.pd, 65536), dst = make_buffer(*p->b.pd, 65536);
  write_messages(*p, src, dst, 4, 65536);

  auto dev = p->a.dev->read_counters().value();
  auto qp = p->a.qp->read_counters().value();
  auto per_qp = p->a.dev->read_qp_counters().value();
  ASSERT_EQ(per_qp.size(), 1u);
  EXPECT_EQ(per_qp[0].qp_num, p->a.qp->qp_num());
  // 4 x 64 KiB at path MTU 4096: at least 64 request packets.
  EXPECT_GE(value(qp, "tx_frames"), 64u);
  EXPECT_GE(value(qp, "tx_bytes"), 4u * 65536u);
  EXPECT_GE(value(qp, "acks_received"), 1u);
  EXPECT_EQ(value(qp, "retransmitted_packets"), 0u);
  EXPECT_EQ(value(dev, "tx_frames"), value(qp, "tx_frames"));  // the only QP
  EXPECT_GE(value(dev, "dev_tx_frames"), value(qp, "tx_frames"));
  EXPECT_EQ(value(dev, "link_tx_frames"), value(dev, "dev_tx_frames"));
  EXPECT_EQ(value(dev, "icrc_errors"), 0u);
  EXPECT_EQ(value(per_qp[0].counters, "tx_frames"), value(qp, "tx_frames"));
  auto b = p->b.dev->read_counters().value();
  EXPECT_GE(value(b, "rx_bytes"), 4u * 65536u);
  EXPECT_GE(value(b, "acks_sent"), 1u);
}

TEST(SoftRoceCounters, LossShowsAsRetransmissionsAndCorruptionAsIcrcErrors) {
  PairOptions o = default_options();
  o.faults.drop = 0.05;
  o.faults.corrupt = 0.05;
  o.faults.seed = 7;
  auto p = Pair::make(o);
  ASSERT_TRUE(p);
  Buffer src = make_buffer(*p->a.pd, 65536), dst = make_buffer(*p->b.pd, 65536);
  write_messages(*p, src, dst, 20, 65536);
  auto a = p->a.dev->read_counters().value();
  auto b = p->b.dev->read_counters().value();
  EXPECT_GT(value(a, "retransmitted_packets"), 0u);
  EXPECT_GT(value(a, "icrc_errors") + value(b, "icrc_errors") + value(a, "malformed_frames_dropped") +
                value(b, "malformed_frames_dropped"),
            0u);
  // Counters survive the QP: destroyed QPs fold into the device's sums.
  const std::uint64_t before = value(a, "tx_frames");
  p->a.qp.reset();
  EXPECT_EQ(value(p->a.dev->read_counters().value(), "tx_frames"), before);
  EXPECT_TRUE(p->a.dev->read_qp_counters().value().empty());
}

TEST(SoftRoceCounters, ReadableFromAnotherThreadWhileTrafficRuns) {
  auto p = Pair::make(default_options());
  ASSERT_TRUE(p);
  Buffer src = make_buffer(*p->a.pd, 4096), dst = make_buffer(*p->b.pd, 4096);
  std::atomic<bool> done{false};
  std::uint64_t last = 0;
  bool monotonic = true;
  std::thread reader([&] {
    while (!done.load()) {
      auto v = p->a.dev->read_counters();
      if (!v.ok()) continue;
      const std::uint64_t now = value(*v, "tx_frames");
      monotonic = monotonic && now >= last;
      last = now;
    }
  });
  write_messages(*p, src, dst, 200, 4096);
  done = true;
  reader.join();
  EXPECT_TRUE(monotonic);
  EXPECT_GE(value(p->a.dev->read_counters().value(), "tx_frames"), 200u);
}

TEST(SoftRoceCounters, TimerDefaultsFromDeviceOptionsApplyOnlyToDefaultConfigs) {
  // A link with no peer: every request times out.
  roce::LinkEndpointConfig e;
  e.ipv4 = 0x0A000001;
  auto links = roce::make_fault_link_pair({}, e);
  DeviceOptions o;
  o.timeout = 8;     // ~1 ms
  o.retry_cnt = 0;   // give up after the first timeout
  auto dev = open_softroce_device(std::move(links.a), o).value();
  auto pd = dev->alloc_pd().value();
  auto cq = dev->create_cq(16).value();
  QpConfig c;  // timeout and retry_cnt left at the contract's defaults
  c.send_cq = c.recv_cq = cq;
  auto qp = pd->create_qp(c).value();
  EndpointFields peer;
  peer.mac = {2, 0, 0, 0, 0, 2};
  peer.ipv4 = 0x0A000002;
  peer.qpn = 99;
  peer.psn = 0;
  peer.mtu = 1024;
  ASSERT_TRUE(qp->connect(encode_endpoint(peer)).ok());
  Buffer b = make_buffer(*pd, 64);
  Sge s = b.sge(0, 64);
  WorkRequest w = wr(Opcode::kRdmaWrite, &s, 1, 0x1000, 1, 1);
  ASSERT_TRUE(qp->post({&w, 1}).ok());
  Completion got;
  int n = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (n == 0 && std::chrono::steady_clock::now() < deadline) n = cq->poll({&got, 1});
  ASSERT_EQ(n, 1) << "no completion within 5 s: the configured timeout did not apply";
  EXPECT_EQ(got.status, WcStatus::kRetryExcErr);
  EXPECT_EQ(value(qp->read_counters().value(), "retry_timeouts"), 1u);  // retry_cnt 0: one try
}

TEST(SoftRoceCounters, BadTimerVariablesAreRejectedNamingTheVariable) {
  ::setenv("RMA_SOFTROCE_TIMEOUT", "40", 1);
  auto d = ProviderRegistry::global().open("softroce");
  ::unsetenv("RMA_SOFTROCE_TIMEOUT");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("RMA_SOFTROCE_TIMEOUT=40: must be 0..31"), std::string::npos)
      << d.status().message();
  ::setenv("RMA_SOFTROCE_RETRY_CNT", "8", 1);
  d = ProviderRegistry::global().open("softroce");
  ::unsetenv("RMA_SOFTROCE_RETRY_CNT");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("RMA_SOFTROCE_RETRY_CNT=8: must be 0..7"), std::string::npos)
      << d.status().message();
  ::setenv("RMA_SOFTROCE_RNR_RETRY", "x", 1);
  d = ProviderRegistry::global().open("softroce");
  ::unsetenv("RMA_SOFTROCE_RNR_RETRY");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("RMA_SOFTROCE_RNR_RETRY"), std::string::npos) << d.status().message();
}

}  // namespace
}  // namespace rma::softroce::testing
