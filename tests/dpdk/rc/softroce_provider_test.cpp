// The softroce provider surface: device info, endpoint addresses, QP state
// rules, registration, the provider in a registry, and the receive path's
// drop counters (corrupt frames, unknown QPNs) and responder checks that a
// well-behaved requester never triggers (misaligned atomic) via a raw peer.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <thread>

#include "harness.hpp"
#include "rma/sdk/config.hpp"
#include "rma/sdk/registry.hpp"

namespace rma::softroce::testing {
namespace {

std::unique_ptr<roce::Link> lone_link(std::uint32_t max_frame = 1514, std::uint32_t ip = 0x0A000001) {
  roce::LinkEndpointConfig a;
  a.max_frame = max_frame;
  a.ipv4 = ip;
  auto p = roce::make_fault_link_pair({}, a);
  return std::move(p.a);
}

TEST(SoftRoceDevice, InfoAndMtuFromTheLink) {
  auto dev = open_softroce_device(lone_link(1514)).value();
  const DeviceInfo& i = dev->info();
  EXPECT_EQ(i.name, "softroce0");
  EXPECT_EQ(i.provider, "softroce");
  EXPECT_EQ(i.transport, "RoCE v2");
  EXPECT_EQ(i.link_layer, "Ethernet");
  EXPECT_EQ(i.caps.path_mtu, 1024u);  // as rxe on a 1500-byte netdev
  EXPECT_EQ(i.caps.max_qp_rd_atom, 128u);
  EXPECT_EQ(i.caps.max_sge, 32u);
  EXPECT_TRUE(i.caps.atomics);
  EXPECT_EQ(i.gid, roce::ipv4_gid(0x0A000001));
  EXPECT_EQ(i.gid[10], 0xFF);
  EXPECT_EQ(i.gid[15], 1);
  EXPECT_EQ(open_softroce_device(lone_link(9000)).value()->caps().path_mtu, 4096u);
  DeviceOptions o;
  o.path_mtu = 2048;
  auto st = open_softroce_device(lone_link(1514), o).status();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("does not fit"), std::string::npos) << st.message();
  EXPECT_FALSE(open_softroce_device(lone_link(200)).ok());
}

TEST(SoftRoceDevice, TransmitRingMustBeAPowerOfTwo) {
  for (std::uint32_t slots : {0u, 3u, 100u, 257u}) {
    DeviceOptions o;
    o.tx_ring = slots;
    auto st = open_softroce_device(lone_link(1514), o).status();
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << slots;
    EXPECT_NE(st.message().find("power of two"), std::string::npos) << st.message();
  }
  for (std::uint32_t slots : {1u, 32u, 512u}) {
    DeviceOptions o;
    o.tx_ring = slots;
    EXPECT_TRUE(open_softroce_device(lone_link(1514), o).ok()) << slots;
  }
}

TEST(SoftRoceDevice, EndpointAddressRoundTripAndValidation) {
  EndpointFields f;
  f.mac = {2, 0, 0, 0, 0, 9};
  f.ipv4 = 0x0A000002;
  f.qpn = 0x123;
  f.psn = 0xABCDEF;
  f.mtu = 1024;
  EndpointAddress a = encode_endpoint(f);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(a.bytes.data()), 8), "softroce");
  auto d = decode_endpoint(a).value();
  EXPECT_EQ(d.qpn, 0x123u);
  EXPECT_EQ(d.psn, 0xABCDEFu);
  EXPECT_EQ(d.mtu, 1024u);
  EXPECT_EQ(d.mac, f.mac);

  EndpointAddress bad = a;
  bad.bytes[0] = 'x';
  EXPECT_NE(decode_endpoint(bad).status().message().find("not made by the softroce provider"), std::string::npos);
  bad = a;
  bad.size -= 1;
  EXPECT_NE(decode_endpoint(bad).status().message().find("truncated"), std::string::npos);
  f.mtu = 1000;
  EXPECT_NE(decode_endpoint(encode_endpoint(f)).status().message().find("MTU 1000"), std::string::npos);
  f.mtu = 1024;
  f.qpn = 0;
  EXPECT_FALSE(decode_endpoint(encode_endpoint(f)).ok());
  f.qpn = 5;
  f.psn = 1u << 24;
  EXPECT_FALSE(decode_endpoint(encode_endpoint(f)).ok());
}

TEST(SoftRoceDevice, QpStateRules) {
  auto p = Pair::make(default_options());
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->a.qp->state(), QpState::kRts);
  auto again = p->a.qp->connect(p->b.qp->local_address().value());
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition);
  QpConfig c = fast_qp_config();
  c.send_cq = c.recv_cq = p->a.cq;
  auto qp = p->a.pd->create_qp(c).value();
  EXPECT_EQ(qp->state(), QpState::kReset);
  Buffer b = make_buffer(*p->a.pd, 64);
  Sge s = b.sge(0, 8);
  WorkRequest w = wr(Opcode::kRdmaWrite, &s, 1, 0, 0, 1);
  PostResult pr = qp->post({&w, 1});
  EXPECT_EQ(pr.code, StatusCode::kFailedPrecondition);
  RecvRequest rr{1, {&s, 1}};
  EXPECT_FALSE(qp->post_recv({&rr, 1}).ok());
  c.max_send_wr = 5000;
  EXPECT_FALSE(p->a.pd->create_qp(c).ok());
  c.max_send_wr = 4;
  c.path_mtu = 1000;
  EXPECT_FALSE(p->a.pd->create_qp(c).ok());
  // Post-time validation, messages as the self provider.
  WorkRequest at = wr(Opcode::kAtomicFetchAdd, &s, 1, b.addr(1), b.rkey(), 1);
  EXPECT_STREQ(p->a.qp->post({&at, 1}).reason, "atomic remote_addr not 8-byte aligned");
  std::vector<Sge> many(5, s);
  WorkRequest ms = wr(Opcode::kRdmaWrite, many.data(), many.size(), b.addr(), b.rkey(), 1);
  EXPECT_STREQ(p->a.qp->post({&ms, 1}).reason, "too many SGEs");
}

TEST(SoftRoceDevice, SendQueueSlotsRetireWhenCompletionsArePolled) {
  PairOptions o = default_options();
  o.qp.max_send_wr = 4;
  auto p = Pair::make(o);
  ASSERT_NE(p, nullptr);
  Buffer src = make_buffer(*p->a.pd, 64), dst = make_buffer(*p->b.pd, 64);
  Sge s = src.sge(0, 8);
  std::vector<WorkRequest> w(5, wr(Opcode::kRdmaWrite, &s, 1, dst.addr(), dst.rkey(), 1));
  PostResult pr = p->a.qp->post(w);
  EXPECT_EQ(pr.code, StatusCode::kResourceExhausted);
  EXPECT_EQ(pr.bad_index, 4u);
  EXPECT_EQ(p->wait(p->a, 4).size(), 4u);
  EXPECT_TRUE(p->a.qp->post({w.data(), 4}).ok());
  EXPECT_EQ(p->wait(p->a, 4).size(), 4u);
}

TEST(SoftRoceDevice, RegistrationRules) {
  auto dev = open_softroce_device(lone_link()).value();
  auto pd = dev->alloc_pd().value();
  std::vector<std::uint8_t> mem(4096);
  EXPECT_FALSE(pd->register_memory(nullptr, 10, kAllAccess).ok());
  EXPECT_FALSE(pd->register_memory(mem.data(), 0, kAllAccess).ok());
  EXPECT_FALSE(pd->register_memory(mem.data(), 10, Access::kRemoteWrite).ok());
  auto mr = pd->register_memory(mem.data(), 4096, kAllAccess).value();
  EXPECT_NE(mr->lkey(), mr->rkey());
  EXPECT_EQ(mr->addr(), reinterpret_cast<std::uint64_t>(mem.data()));
}

TEST(SoftRoceDevice, CorruptFramesAreDroppedAndCounted) {
  PairOptions o = default_options();
  o.faults.corrupt = 0.3;
  o.faults.seed = 5;
  auto p = Pair::make(o);
  ASSERT_NE(p, nullptr);
  Buffer src = make_buffer(*p->a.pd, 65536), dst = make_buffer(*p->b.pd, 65536);
  fill_pattern(src.data, 65536, 3);
  Sge s = src.sge(0, 65536);
  for (int i = 0; i < 20; ++i) {
    WorkRequest w = wr(Opcode::kRdmaWrite, &s, 1, dst.addr(), dst.rkey(), i);
    ASSERT_TRUE(p->a.qp->post({&w, 1}).ok());
    ASSERT_EQ(p->wait_one(p->a).status, WcStatus::kSuccess);
  }
  EXPECT_EQ(std::memcmp(src.data, dst.data, 65536), 0);
  auto cb = p->b.sdev->counters();
  std::uint64_t errors = 0;
  for (auto e : cb.parse_errors) errors += e;
  EXPECT_GT(errors, 0u);
  EXPECT_GT(cb.icrc_errors, 0u);
  EXPECT_GT(p->a.sdev->counters().qp.retransmitted_packets, 0u);
}

// A raw peer: B is a softroce device; the test speaks for A's side of the link.
struct RawPeer : roce::FrameSink {
  std::vector<roce::Packet> got;
  std::vector<std::vector<std::uint8_t>> store;
  void on_frame(std::span<const std::uint8_t> f) noexcept override {
    store.emplace_back(f.begin(), f.end());
    roce::Packet pk;
    if (roce::parse_packet(store.back(), pk) == roce::ParseError::kOk) got.push_back(pk);
  }
};

TEST(SoftRoceDevice, MisalignedAtomicFromTheWireIsAnInvalidRequest) {
  auto links = roce::make_fault_link_pair({});
  roce::FaultLink* raw = links.a.get();
  auto dev = open_softroce_device(std::move(links.b)).value();
  auto pd = dev->alloc_pd().value();
  auto cq = dev->create_cq(16).value();
  QpConfig c;
  c.send_cq = c.recv_cq = cq;
  auto qp = pd->create_qp(c).value();
  Buffer t = make_buffer(*pd, 64);
  t.set_u64(8, 1);
  EndpointFields me;
  me.mac = raw->info().mac;
  me.ipv4 = raw->info().ipv4;
  me.qpn = 0x77;
  me.psn = 100;
  me.mtu = 1024;
  ASSERT_TRUE(qp->connect(encode_endpoint(me)).ok());
  const EndpointFields them = decode_endpoint(qp->local_address().value()).value();

  roce::Headers h;
  h.src_mac = me.mac;
  h.dst_mac = them.mac;
  h.src_ip = me.ipv4;
  h.dst_ip = them.ipv4;
  h.ip_id = 1;
  h.opcode = static_cast<std::uint8_t>(roce::Opcode::kFetchAdd);
  h.dest_qp = them.qpn;
  h.psn = me.psn;  // the QP expects the PSN "we" announced
  h.ack_req = true;
  h.atomic_va = t.addr(9);
  h.atomic_rkey = t.rkey();
  h.atomic_swap_add = 1;
  std::uint8_t head[128], tail[8];
  const std::size_t hl = roce::header_length(h.opcode);
  const std::size_t tl = roce::build_packet(h, {head, hl}, {}, {tail, 8});
  ASSERT_GT(tl, 0u);
  roce::TxFrame f{{head, hl}, {}, {tail, tl}};
  ASSERT_EQ(raw->transmit({&f, 1}), 1u);
  // A frame for a QPN that does not exist is dropped and counted.
  h.dest_qp = 0xFFFFF;
  roce::build_packet(h, {head, hl}, {}, {tail, 8});
  ASSERT_EQ(raw->transmit({&f, 1}), 1u);

  Completion wc;
  EXPECT_EQ(cq->poll({&wc, 1}), 0);  // drives the device
  RawPeer peer;
  raw->poll(peer, 10);
  ASSERT_EQ(peer.got.size(), 1u);
  EXPECT_EQ(peer.got[0].h.opcode, static_cast<std::uint8_t>(roce::Opcode::kAcknowledge));
  EXPECT_EQ(peer.got[0].h.aeth_syndrome, roce::make_syndrome(roce::AckType::kNak, roce::kNakInvalidRequest));
  EXPECT_EQ(peer.got[0].h.psn, me.psn);
  EXPECT_EQ(t.u64(8), 1u);
  EXPECT_EQ(qp->state(), QpState::kError);
  auto* sdev = dynamic_cast<SoftRoceDevice*>(dev.get());
  EXPECT_EQ(sdev->counters().unknown_qpn, 1u);
  EXPECT_EQ(sdev->counters().qp.naks_sent[roce::kNakInvalidRequest], 1u);
}

TEST(SoftRoceProvider, RegistersAndDescribesThePortFromTheSpec) {
  ProviderRegistry reg;
  ASSERT_TRUE(providers::register_softroce(reg).ok());
  Provider* p = reg.find("softroce").value();
  EXPECT_EQ(p->priority(), 50);
  bool declared = false;
  for (const auto& v : config::variables()) declared |= v.name == "RMA_SOFTROCE_PORT";
  EXPECT_TRUE(declared);
  ::setenv("RMA_SOFTROCE_PORT", "ring:rc-test,ip=10.1.2.3", 1);
  auto devs = p->query_devices().value();
  ASSERT_EQ(devs.size(), 1u);
  EXPECT_EQ(devs[0].name, "softroce0");
  EXPECT_EQ(devs[0].gid, roce::ipv4_gid(0x0A010203));
  ::setenv("RMA_SOFTROCE_PORT", "bogus:thing", 1);
  auto st = p->query_devices().status();
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("RMA_SOFTROCE_PORT"), std::string::npos) << st.message();
  EXPECT_EQ(p->open_device("nope").status().code(), StatusCode::kNotFound);
  ::setenv("RMA_SOFTROCE_MTU", "1000", 1);
  ::setenv("RMA_SOFTROCE_PORT", "ring:rc-test,ip=10.1.2.3", 1);
  EXPECT_NE(p->query_devices().status().message().find("RMA_SOFTROCE_MTU"), std::string::npos);
  ::unsetenv("RMA_SOFTROCE_MTU");
  ::unsetenv("RMA_SOFTROCE_PORT");
}

}  // namespace
}  // namespace rma::softroce::testing

namespace rma::softroce::testing {
namespace {

// post() on one thread, poll() on another, the peer driven by a third: the
// device lock serialises them (run under TSan).
TEST(SoftRoceDevice, PostAndPollFromDifferentThreads) {
  PairOptions o = default_options();
  o.qp.timeout = 14;  // 67 ms: three threads on one lock (and TSan) stretch round trips
  auto p = Pair::make(o);
  ASSERT_NE(p, nullptr);
  Buffer src = make_buffer(*p->a.pd, 1 << 16), dst = make_buffer(*p->b.pd, 1 << 16);
  fill_pattern(src.data, 1 << 16, 11);
  constexpr int kOps = 2000;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::atomic<int> completed{0}, failed{0};
  std::atomic<bool> stop{false};
  std::thread poller([&] {
    Completion c[16];
    while (completed.load() + failed.load() < kOps && std::chrono::steady_clock::now() < deadline) {
      const int n = p->a.cq->poll({c, 16});
      if (n < 0) break;
      for (int i = 0; i < n; ++i) (c[i].status == WcStatus::kSuccess ? completed : failed)++;
      if (n == 0) std::this_thread::yield();
    }
  });
  std::thread peer([&] {
    while (!stop.load()) {
      p->b.sdev->progress();
      std::this_thread::yield();
    }
  });
  int posted = 0;
  while (posted < kOps && std::chrono::steady_clock::now() < deadline && p->a.qp->state() == QpState::kRts) {
    Sge s = src.sge((posted % 16) * 4096, 4096);
    WorkRequest w = wr(Opcode::kRdmaWrite, &s, 1, dst.addr((posted % 16) * 4096), dst.rkey(), posted);
    if (p->a.qp->post({&w, 1}).ok()) {
      ++posted;
    } else {
      std::this_thread::yield();  // send queue full until the poller retires slots
    }
  }
  poller.join();
  stop = true;
  peer.join();
  EXPECT_EQ(posted, kOps);
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(completed.load(), kOps);
  EXPECT_EQ(std::memcmp(src.data, dst.data, 1 << 16), 0);
}

}  // namespace
}  // namespace rma::softroce::testing
