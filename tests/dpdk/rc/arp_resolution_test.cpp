// Peer MAC resolution by ARP (issue 15): a softroce device on a link that
// finds its peers by ARP (a kernel interface; here the fault link told so)
// asks "who has <peer IPv4>?" when a QP connects, uses the MAC of the
// station that answers, and fails the connect naming the port, the peer
// and the timeout when nobody does. The test plays the network on the
// other end of the link, attacker included: replies it did not ask for,
// replies for somebody else, forged or malformed replies and a second
// answer must not change where the QP's traffic goes.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "harness.hpp"
#include "rma/sdk/registry.hpp"
#include "wire/arp.hpp"
#include "wire/byte_order.hpp"

namespace rma::softroce::testing {
namespace {

using namespace std::chrono_literals;
using roce::MacAddress;

constexpr std::uint32_t kPeerIp = 0x0A000001;  // 10.0.0.1: the fault link's side A
constexpr std::uint32_t kOtherIp = 0x0A000007;
const MacAddress kGood{0x02, 0x11, 0x11, 0x11, 0x11, 0x01};
const MacAddress kEvil{0x02, 0x66, 0x66, 0x66, 0x66, 0x66};
const MacAddress kAnnounced{0x02, 0x77, 0x77, 0x77, 0x77, 0x77};  // what the endpoint address says

std::vector<std::uint8_t> arp_frame(std::uint16_t op, const MacAddress& eth_dst, const MacAddress& eth_src,
                                    const MacAddress& sender_mac, std::uint32_t sender_ip,
                                    const MacAddress& target_mac, std::uint32_t target_ip) {
  std::vector<std::uint8_t> f(60, 0);
  std::copy(eth_dst.begin(), eth_dst.end(), f.begin());
  std::copy(eth_src.begin(), eth_src.end(), f.begin() + 6);
  roce::detail::store_be16(f.data() + 12, roce::kEtherTypeArp);
  std::uint8_t* a = f.data() + 14;
  roce::detail::store_be16(a, 1);
  roce::detail::store_be16(a + 2, 0x0800);
  a[4] = 6;
  a[5] = 4;
  roce::detail::store_be16(a + 6, op);
  std::copy(sender_mac.begin(), sender_mac.end(), a + 8);
  roce::detail::store_be32(a + 14, sender_ip);
  std::copy(target_mac.begin(), target_mac.end(), a + 18);
  roce::detail::store_be32(a + 24, target_ip);
  return f;
}

struct Collect : roce::FrameSink {
  std::vector<std::vector<std::uint8_t>> frames;
  void on_frame(std::span<const std::uint8_t> f) noexcept override { frames.emplace_back(f.begin(), f.end()); }
};

class ArpResolution : public ::testing::Test {
 protected:
  void open(std::uint32_t arp_timeout_ms, bool by_arp = true) {
    roce::LinkEndpointConfig ea, eb;
    eb.neighbours_by_arp = by_arp;
    eb.name = "fault:B";
    auto links = roce::make_fault_link_pair({}, ea, eb);
    raw_ = links.a.get();
    raw_owner_ = std::move(links.a);
    DeviceOptions o;
    o.arp_timeout_ms = arp_timeout_ms;
    dev_ = open_softroce_device(std::move(links.b), o).value();
    sdev_ = dynamic_cast<SoftRoceDevice*>(dev_.get());
    pd_ = dev_->alloc_pd().value();
    cq_ = dev_->create_cq(64).value();
    src_ = make_buffer(*pd_, 4096);
    me_ = dev_->info().mac;
    my_ip_ = raw_->info().ipv4 + 1;  // side B: 10.0.0.2
  }
  std::unique_ptr<QueuePair> new_qp() {
    QpConfig c;
    c.send_cq = c.recv_cq = cq_;
    return pd_->create_qp(c).value();
  }
  EndpointAddress peer_address(std::uint32_t ip, const MacAddress& announced = kAnnounced) {
    EndpointFields f;
    f.mac = announced;
    f.ipv4 = ip;
    f.qpn = 0x123;
    f.psn = 5;
    f.mtu = 1024;
    return encode_endpoint(f);
  }
  void inject(const std::vector<std::uint8_t>& f) {
    roce::TxFrame t{f, {}, {}};
    ASSERT_EQ(raw_->transmit({&t, 1}), 1u);
  }
  // The device's frames seen on the wire so far.
  std::vector<std::vector<std::uint8_t>> take() {
    Collect c;
    raw_->poll(c, 256);
    return c.frames;
  }
  // Waits until the device has asked for `ip` (it progresses itself inside connect()).
  bool wait_for_request(std::uint32_t ip) {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (std::chrono::steady_clock::now() < deadline) {
      for (const auto& f : take()) {
        roce::ArpMessage m;
        if (roce::parse_arp(f, m) && m.op == roce::kArpOpRequest && m.target_ip == ip) {
          EXPECT_EQ(m.sender_mac, me_);
          EXPECT_EQ(m.sender_ip, my_ip_);
          EXPECT_EQ(m.eth_dst, (MacAddress{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})) << "a request is broadcast";
          return true;
        }
      }
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }
  std::vector<std::uint8_t> reply(const MacAddress& from, std::uint32_t from_ip) {
    return arp_frame(roce::kArpOpReply, me_, from, from, from_ip, me_, my_ip_);
  }
  // The destination MAC of the first RoCE frame the device sent after a WRITE on `qp`.
  MacAddress write_goes_to(QueuePair& qp) {
    Sge s = src_.sge(0, 64);
    WorkRequest w = wr(rma::Opcode::kRdmaWrite, &s, 1, 0x1000, 0x55, 1);
    EXPECT_TRUE(qp.post({&w, 1}).ok());
    sdev_->progress();
    for (const auto& f : take()) {
      roce::Packet p;
      if (roce::parse_packet(f, p) == roce::ParseError::kOk) return p.h.dst_mac;
    }
    ADD_FAILURE() << "no RoCE frame on the wire";
    return {};
  }
  roce::rc::DeviceCounters counters() const { return sdev_->counters(); }

  std::unique_ptr<roce::FaultLink> raw_owner_;
  roce::FaultLink* raw_ = nullptr;
  std::shared_ptr<Device> dev_;
  SoftRoceDevice* sdev_ = nullptr;
  std::shared_ptr<ProtectionDomain> pd_;
  std::shared_ptr<CompletionQueue> cq_;
  Buffer src_;
  MacAddress me_{};
  std::uint32_t my_ip_ = 0;
};

TEST_F(ArpResolution, ConnectUsesTheMacThatAnswersAndNothingForgedChangesIt) {
  open(5000);
  // Before anybody asked: an unsolicited reply for kOtherIp plants nothing.
  inject(reply(kEvil, kOtherIp));
  sdev_->progress();
  EXPECT_EQ(counters().arp_replies_ignored, 1u);

  auto qp = new_qp();
  auto connected = std::async(std::launch::async, [&] { return qp->connect(peer_address(kPeerIp)); });
  ASSERT_TRUE(wait_for_request(kPeerIp));
  const MacAddress bcast{0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  // Each of these is answered wrongly or is not an answer: none is believed.
  inject(reply(kEvil, kOtherIp));                                               // another address than asked
  inject(arp_frame(roce::kArpOpReply, me_, kEvil, kEvil, kPeerIp, kGood, my_ip_));    // for another MAC
  inject(arp_frame(roce::kArpOpReply, me_, kEvil, kEvil, kPeerIp, me_, my_ip_ + 1));  // for another IPv4
  inject(arp_frame(roce::kArpOpReply, me_, kGood, kEvil, kPeerIp, me_, my_ip_));      // Ethernet source differs
  inject(arp_frame(roce::kArpOpReply, bcast, kEvil, kEvil, kPeerIp, me_, my_ip_));    // not sent to us
  inject(arp_frame(roce::kArpOpReply, bcast, kEvil, kEvil, kPeerIp, bcast, kPeerIp));  // gratuitous (reply form)
  inject(arp_frame(roce::kArpOpRequest, bcast, kEvil, kEvil, kPeerIp, {}, kPeerIp));   // gratuitous (request form)
  auto truncated = reply(kEvil, kPeerIp);
  truncated.resize(41);
  inject(truncated);
  auto multicast = reply(kEvil, kPeerIp);
  multicast[14 + 8] |= 1;  // a multicast sender
  inject(multicast);
  // The answer, then a second, different one.
  inject(reply(kGood, kPeerIp));
  inject(reply(kEvil, kPeerIp));
  ASSERT_EQ(connected.wait_for(10s), std::future_status::ready);
  const Status st = connected.get();
  ASSERT_TRUE(st.ok()) << st.to_string();
  sdev_->progress();  // whatever came after the answer
  EXPECT_EQ(counters().arp_replies_accepted, 1u);
  EXPECT_EQ(counters().arp_replies_ignored, 1u + 6u + 1u) << "5 wrong answers, the gratuitous reply, the second answer";
  EXPECT_EQ(write_goes_to(*qp), kGood) << "the QP sends to the station that answered first, not the announced MAC";

  // A second QP to the same peer asks nobody: the device remembers.
  const std::uint64_t asked = counters().arp_requests_sent;
  auto qp2 = new_qp();
  ASSERT_TRUE(qp2->connect(peer_address(kPeerIp)).ok());
  EXPECT_EQ(counters().arp_requests_sent, asked);
  EXPECT_EQ(write_goes_to(*qp2), kGood);

  // The address that got the unsolicited reply is asked for like any other.
  auto qp3 = new_qp();
  auto connected3 = std::async(std::launch::async, [&] { return qp3->connect(peer_address(kOtherIp)); });
  ASSERT_TRUE(wait_for_request(kOtherIp));
  const MacAddress other{0x02, 0x22, 0x22, 0x22, 0x22, 0x07};
  inject(reply(other, kOtherIp));
  ASSERT_EQ(connected3.wait_for(10s), std::future_status::ready);
  ASSERT_TRUE(connected3.get().ok());
  EXPECT_EQ(write_goes_to(*qp3), other);
}

TEST_F(ArpResolution, UnansweredPeerFailsConnectNamingPortPeerAndTimeout) {
  open(200);
  auto qp = new_qp();
  const auto t0 = std::chrono::steady_clock::now();
  const Status st = qp->connect(peer_address(kPeerIp));
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kTimeout) << st.to_string();
  EXPECT_NE(st.message().find("fault:B"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("10.0.0.1"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("200 ms"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("RMA_SOFTROCE_ARP_TIMEOUT_MS"), std::string::npos) << st.message();
  EXPECT_GE(took, 200ms);
  EXPECT_LT(took, 3s) << "the timeout bounds the wait";
  // Asked at once, then after 10, 20, 40, 80 ms: the schedule's five in 200 ms (three
  // at least on a machine too busy to run the loop on time).
  std::size_t requests = 0;
  for (const auto& f : take()) {
    roce::ArpMessage m;
    if (roce::parse_arp(f, m) && m.op == roce::kArpOpRequest && m.target_ip == kPeerIp) ++requests;
  }
  EXPECT_GE(requests, 3u);
  EXPECT_LE(requests, 5u);
  EXPECT_EQ(qp->state(), QpState::kReset) << "nothing changed: the connect may be tried again";
  // A late answer resolves the next attempt at once.
  inject(reply(kGood, kPeerIp));
  const Status again = qp->connect(peer_address(kPeerIp));
  EXPECT_TRUE(again.ok()) << again.to_string();
  EXPECT_EQ(write_goes_to(*qp), kGood);
}

TEST_F(ArpResolution, AStationClaimingOurAddressIsCountedNotAnswered) {
  open(1000);
  const MacAddress bcast{0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  inject(arp_frame(roce::kArpOpRequest, bcast, kEvil, kEvil, my_ip_, {}, kPeerIp));
  inject(arp_frame(roce::kArpOpReply, me_, kEvil, kEvil, my_ip_, me_, my_ip_));
  sdev_->progress();
  EXPECT_EQ(counters().arp_address_conflicts, 2u);
  EXPECT_EQ(counters().arp_requests_answered, 0u);
  EXPECT_EQ(counters().arp_replies_accepted, 0u);
  EXPECT_TRUE(take().empty());
}

TEST_F(ArpResolution, OffOrOnALinkWithoutArpTheEndpointMacIsUsed) {
  open(0);  // RMA_SOFTROCE_ARP_TIMEOUT_MS=0
  auto qp = new_qp();
  ASSERT_TRUE(qp->connect(peer_address(kPeerIp)).ok());
  EXPECT_EQ(counters().arp_requests_sent, 0u);
  EXPECT_EQ(write_goes_to(*qp), kAnnounced);
}

TEST_F(ArpResolution, PointToPointLinksNeverAsk) {
  open(1000, /*by_arp=*/false);
  auto qp = new_qp();
  ASSERT_TRUE(qp->connect(peer_address(kPeerIp)).ok());
  EXPECT_EQ(counters().arp_requests_sent, 0u);
  EXPECT_EQ(write_goes_to(*qp), kAnnounced);
}

// Two devices on a segment that resolve each other: each one's progress
// thread answers while the other connects; then traffic both ways.
TEST(ArpResolutionPair, TwoDevicesResolveEachOtherAndTalk) {
  roce::LinkEndpointConfig ea, eb;
  ea.neighbours_by_arp = eb.neighbours_by_arp = true;
  auto links = roce::make_fault_link_pair({}, ea, eb);
  DeviceOptions o;
  o.arp_timeout_ms = 5000;
  o.progress_interval_us = 200;
  Side s[2];
  std::unique_ptr<roce::FaultLink> l[2] = {std::move(links.a), std::move(links.b)};
  for (int i = 0; i < 2; ++i) {
    s[i].dev = open_softroce_device(std::move(l[i]), o).value();
    s[i].pd = s[i].dev->alloc_pd().value();
    s[i].cq = s[i].dev->create_cq(64).value();
    QpConfig c = fast_qp_config();
    c.timeout = 14;  // the target answers from its progress thread
    c.send_cq = c.recv_cq = s[i].cq;
    s[i].qp = s[i].pd->create_qp(c).value();
  }
  EndpointFields a = decode_endpoint(s[0].qp->local_address().value()).value();
  EndpointFields b = decode_endpoint(s[1].qp->local_address().value()).value();
  a.mac = kAnnounced;  // wrong on purpose: ARP, not the address, must decide
  b.mac = kAnnounced;
  ASSERT_TRUE(s[0].qp->connect(encode_endpoint(b)).ok());
  ASSERT_TRUE(s[1].qp->connect(encode_endpoint(a)).ok());
  Buffer src = make_buffer(*s[0].pd, 256), dst = make_buffer(*s[1].pd, 256);
  fill_pattern(src.data, 256, 7);
  Sge sge = src.sge(0, 256);
  WorkRequest w = wr(rma::Opcode::kRdmaWrite, &sge, 1, dst.addr(0), dst.rkey(), 1);
  ASSERT_TRUE(s[0].qp->post({&w, 1}).ok());
  Completion c{};
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  int got = 0;
  while (got == 0 && std::chrono::steady_clock::now() < deadline) got = s[0].cq->poll({&c, 1});
  ASSERT_EQ(got, 1);
  EXPECT_EQ(c.status, WcStatus::kSuccess);
  EXPECT_EQ(std::memcmp(src.data, dst.data, 256), 0);
  auto* d0 = dynamic_cast<SoftRoceDevice*>(s[0].dev.get());
  EXPECT_EQ(d0->counters().arp_replies_accepted, 1u);
  EXPECT_GE(d0->counters().arp_requests_answered, 1u);
}

// RMA_SOFTROCE_ARP_TIMEOUT_MS: a malformed or out-of-range value is refused
// naming the variable, and 0 (no ARP) on a port that must find its own
// host's ranks by ARP is refused naming both, before any port opens.
TEST(ArpTimeoutVariable, BadValuesAreRefusedNamingTheVariable) {
  ProviderRegistry reg;
  ASSERT_TRUE(providers::register_softroce(reg).ok());
  Provider* p = reg.find("softroce").value();
  ::setenv("RMA_SOFTROCE_PORT", "ring:arp-timeout-test,ip=10.1.2.3", 1);
  for (const char* bad : {"soon", "-1", "600001", "3s"}) {
    ::setenv("RMA_SOFTROCE_ARP_TIMEOUT_MS", bad, 1);
    auto dev = p->open_device("");
    ASSERT_FALSE(dev.ok()) << bad;
    EXPECT_NE(dev.status().message().find("RMA_SOFTROCE_ARP_TIMEOUT_MS"), std::string::npos)
        << dev.status().message();
  }
  ::setenv("RMA_SOFTROCE_ARP_TIMEOUT_MS", "0", 1);
  ::setenv("RMA_SOFTROCE_PORT",
           "af_packet:rmaNoSuch9,ip=169.254.1.1,mac=06:00:00:00:00:01,mesh=j,mesh_rank=0,mesh_size=2", 1);
  auto dev = p->open_device("");
  ASSERT_FALSE(dev.ok());
  EXPECT_NE(dev.status().message().find("RMA_SOFTROCE_ARP_TIMEOUT_MS=0 turns ARP off, but this port finds the other "
                                        "ranks of its host by ARP"),
            std::string::npos)
      << dev.status().message();
  EXPECT_NE(dev.status().message().find("RMA_SOFTROCE_PORT=\"af_packet:rmaNoSuch9"), std::string::npos)
      << dev.status().message();
  ::setenv("RMA_SOFTROCE_ARP_TIMEOUT_MS", "250", 1);
  ::setenv("RMA_SOFTROCE_PORT", "ring:arp-timeout-test,ip=10.1.2.3", 1);
  auto good = p->open_device("");
  EXPECT_TRUE(good.ok()) << good.status().message();
  ::unsetenv("RMA_SOFTROCE_ARP_TIMEOUT_MS");
  ::unsetenv("RMA_SOFTROCE_PORT");
}

}  // namespace
}  // namespace rma::softroce::testing
