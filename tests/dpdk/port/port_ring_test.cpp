// In-process ports (one EAL for the whole binary): ring pairs, error paths,
// leak checks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "port/port.hpp"
#include "port/port_link.hpp"
#include "test_frames.hpp"

using namespace rma::roce;
using namespace rma::roce::port;
using namespace rma::roce::testing;

namespace {

class EalEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    rma::Status st = ensure_eal();
    ASSERT_TRUE(st.ok()) << st.to_string();
  }
};
const auto* const g_env = ::testing::AddGlobalTestEnvironment(new EalEnvironment);

std::string unique(const char* stem) {
  static int n = 0;
  return std::string(stem) + std::to_string(getpid()) + "-" + std::to_string(++n);
}

PortLink* as_port(const std::unique_ptr<Link>& l) { return dynamic_cast<PortLink*>(l.get()); }

struct Pair {
  std::unique_ptr<Link> a, b;
};
Pair open_pair(const std::string& name) {
  auto a = open_port("ring:" + name);
  EXPECT_TRUE(a.ok()) << a.status().to_string();
  auto b = open_port("ring:" + name);
  EXPECT_TRUE(b.ok()) << b.status().to_string();
  if (!a.ok() || !b.ok()) return {};
  return {std::move(a).value(), std::move(b).value()};
}

void expect_same_objects(const DpdkObjectCounts& before) {
  auto now = dpdk_object_counts();
  EXPECT_EQ(now.ports, before.ports);
  EXPECT_EQ(now.mempools, before.mempools);
  EXPECT_EQ(now.open_links, before.open_links);
}

}  // namespace

TEST(PortEal, EnsureEalIsIdempotent) {
  rma::Status a = ensure_eal();
  rma::Status b = ensure_eal();
  EXPECT_TRUE(a.ok());
  EXPECT_EQ(a, b);
  EXPECT_NE(eal_arguments().find("--no-pci"), std::string::npos) << eal_arguments();
}

TEST(PortRing, FramesCrossBothWaysIntact) {
  const auto before = dpdk_object_counts();
  {
    Pair p = open_pair(unique("cross"));
    ASSERT_TRUE(p.a && p.b);
    EXPECT_GE(p.a->info().max_frame, 4154u);
    EXPECT_NE(p.a->info().mac, MacAddress{});
    const std::size_t sizes[] = {64, 1082, 4154, 9000};
    std::uint64_t bytes = 0;
    std::uint32_t seq = 0;
    for (std::size_t sz : sizes) {
      auto f1 = make_frame(sz, ++seq);
      auto f2 = make_frame(sz, ++seq);
      TxFrame t1 = as_tx(f1), t2 = as_tx(f2);
      ASSERT_EQ(p.a->transmit(std::span<const TxFrame>(&t1, 1)), 1u);
      ASSERT_EQ(p.b->transmit(std::span<const TxFrame>(&t2, 1)), 1u);
      CollectSink sa, sb;
      EXPECT_EQ(p.b->poll(sb, 16), 1u);
      EXPECT_EQ(p.a->poll(sa, 16), 1u);
      ASSERT_EQ(sb.frames.size(), 1u);
      ASSERT_EQ(sa.frames.size(), 1u);
      EXPECT_EQ(sb.frames[0], f1) << "size " << sz;
      EXPECT_EQ(sa.frames[0], f2) << "size " << sz;
      bytes += sz;
    }
    for (auto* l : {p.a.get(), p.b.get()}) {
      auto c = l->counters();
      EXPECT_EQ(c.tx_frames, 4u);
      EXPECT_EQ(c.rx_frames, 4u);
      EXPECT_EQ(c.tx_bytes, bytes);
      EXPECT_EQ(c.rx_bytes, bytes);
      EXPECT_EQ(c.tx_dropped, 0u);
    }
  }
  expect_same_objects(before);
}

TEST(PortRing, BatchPollRespectsMax) {
  Pair p = open_pair(unique("batch"));
  ASSERT_TRUE(p.a && p.b);
  std::vector<std::vector<std::uint8_t>> frames;
  std::vector<TxFrame> tx;
  for (std::uint32_t i = 0; i < 100; ++i) frames.push_back(make_frame(60 + i * 13, i));
  for (auto& f : frames) tx.push_back(as_tx(f));
  ASSERT_EQ(p.a->transmit(tx), 100u);
  CollectSink s;
  EXPECT_EQ(p.b->poll(s, 7), 7u);
  EXPECT_EQ(p.b->poll(s, 1000), 93u);
  ASSERT_EQ(s.frames.size(), 100u);
  for (std::size_t i = 0; i < 100; ++i) EXPECT_EQ(s.frames[i], frames[i]);
  EXPECT_EQ(p.b->poll(s, 1000), 0u);
}

TEST(PortRing, FullRingReportsNotTaken) {
  Pair p = open_pair(unique("full"));
  ASSERT_TRUE(p.a && p.b);
  auto f = make_frame(1082, 1);
  std::vector<TxFrame> tx(2000, as_tx(f));
  const std::size_t taken = p.a->transmit(tx);
  EXPECT_LT(taken, 2000u);
  EXPECT_GE(taken, 1000u);
  auto c = p.a->counters();
  EXPECT_EQ(c.tx_frames, taken);
  EXPECT_EQ(c.tx_dropped, 2000u - taken);
  EXPECT_EQ(p.a->transmit(std::span<const TxFrame>(tx.data(), 1)), 0u);  // still full, never blocks
  CountSink s;
  std::size_t got = 0;
  while (std::size_t n = p.b->poll(s, 256)) got += n;
  EXPECT_EQ(got, taken);
  EXPECT_EQ(p.a->transmit(std::span<const TxFrame>(tx.data(), 10)), 10u);  // room again
  // A ring hands the receiver the mbuf itself, read after transmit returns:
  // a payload is never attached there, only copied.
  EXPECT_EQ(as_port(p.a)->port_counters().tx_payload_attached, 0u);
}

TEST(PortRing, OversizeFrameIsTakenAndDropped) {
  Pair p = open_pair(unique("big"));
  ASSERT_TRUE(p.a && p.b);
  auto big = make_frame(p.a->info().max_frame + 1, 1);
  auto ok = make_frame(100, 2);
  TxFrame tx[2] = {as_tx(big), as_tx(ok)};
  EXPECT_EQ(p.a->transmit(tx), 2u);
  EXPECT_EQ(as_port(p.a)->port_counters().tx_oversize, 1u);
  CollectSink s;
  EXPECT_EQ(p.b->poll(s, 8), 1u);
  ASSERT_EQ(s.frames.size(), 1u);
  EXPECT_EQ(s.frames[0], ok);
}

TEST(PortRing, ThirdEndRefusedAndNameReusable) {
  const std::string name = unique("three");
  const auto before = dpdk_object_counts();
  {
    Pair p = open_pair(name);
    ASSERT_TRUE(p.a && p.b);
    auto c = open_port("ring:" + name);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), rma::StatusCode::kAlreadyExists);
  }
  expect_same_objects(before);
  Pair again = open_pair(name);
  EXPECT_TRUE(again.a && again.b);
}

TEST(PortRing, PeerCloseStopsTheOtherEnd) {
  Pair p = open_pair(unique("peerclose"));
  ASSERT_TRUE(p.a && p.b);
  auto f = make_frame(500, 1);
  TxFrame t = as_tx(f);
  ASSERT_EQ(p.a->transmit(std::span<const TxFrame>(&t, 1)), 1u);  // left in b's rx ring
  EXPECT_TRUE(as_port(p.a)->close().ok());
  EXPECT_EQ(as_port(p.a)->state(), PortState::kClosed);
  CountSink s;
  EXPECT_EQ(p.b->poll(s, 8), 0u);
  EXPECT_EQ(as_port(p.b)->state(), PortState::kPeerClosed);
  EXPECT_EQ(p.b->transmit(std::span<const TxFrame>(&t, 1)), 1u);  // taken and dropped
  EXPECT_EQ(as_port(p.b)->port_counters().tx_link_down, 1u);
  p.a.reset();
  p.b.reset();  // frees the ring still holding a's mbuf
}

// Regression (issue 12, defect 1): a control frame (EtherType 0x88B5, the
// memif FIN) used to be honoured on every port kind, so one forged broadcast
// put a ring/af_packet/tap/PCI port into peer-closed for good. Only memif
// has a control channel; elsewhere it is dropped and counted.
TEST(PortRing, ForgedControlFrameIsDroppedAndCounted) {
  Pair p = open_pair(unique("ctl"));
  ASSERT_TRUE(p.a && p.b);
  // The FIN exactly as a memif port builds it (broadcast, 0x88B5, magic, type 1).
  std::vector<std::uint8_t> fin(60, 0);
  std::memset(fin.data(), 0xff, 6);
  fin[6] = 0x02;
  fin[11] = 0x66;
  fin[12] = 0x88;
  fin[13] = 0xB5;
  const char magic[8] = {'R', 'M', 'A', 'P', 'O', 'R', 'T', 1};
  std::memcpy(fin.data() + 14, magic, sizeof magic);
  fin[22] = 1;  // FIN
  std::vector<std::uint8_t> fin_ack = fin;
  fin_ack[22] = 2;  // FIN-ACK
  auto data = make_frame(300, 7);
  TxFrame tx[3] = {as_tx(fin), as_tx(fin_ack), as_tx(data)};
  ASSERT_EQ(p.a->transmit(tx), 3u);
  CollectSink s;
  EXPECT_EQ(p.b->poll(s, 8), 1u);
  ASSERT_EQ(s.frames.size(), 1u);
  EXPECT_EQ(s.frames[0], data);  // the frame behind the FIN is still delivered
  EXPECT_EQ(as_port(p.b)->state(), PortState::kUp);
  EXPECT_EQ(p.b->counters().rx_control_dropped, 2u);
  EXPECT_EQ(as_port(p.b)->port_counters().rx_control, 0u);
  EXPECT_EQ(as_port(p.b)->port_counters().tx_control, 0u);  // no FIN-ACK answered
  // And the port keeps serving both ways.
  auto back = make_frame(200, 8);
  TxFrame t = as_tx(back);
  ASSERT_EQ(p.b->transmit(std::span<const TxFrame>(&t, 1)), 1u);
  CollectSink sa;
  EXPECT_EQ(p.a->poll(sa, 8), 1u);
  ASSERT_EQ(sa.frames.size(), 1u);
  EXPECT_EQ(sa.frames[0], back);
}

TEST(PortRing, InfoFromSpec) {
  const std::string name = unique("info");
  auto a = open_port("ring:" + name + ",ip=192.168.7.1,mac=02:11:22:33:44:55");
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ((*a)->info().ipv4, 0xc0a80701u);
  EXPECT_EQ((*a)->info().mac, (MacAddress{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}));
  EXPECT_EQ((*a)->info().name, "ring:" + name);
  auto b = open_port("ring:" + name);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)->info().ipv4, 0u);
  EXPECT_NE((*b)->info().mac, (*a)->info().mac);
}

struct BadOpen {
  std::string spec;
  rma::StatusCode code;
  std::string message_part;
};

TEST(PortErrors, BadSpecsLeaveNothingBehind) {
  const auto before = dpdk_object_counts();
  const BadOpen cases[] = {
      {"nic:eth0", rma::StatusCode::kInvalidArgument, "unknown kind"},
      {"ring:", rma::StatusCode::kInvalidArgument, "missing name"},
      {"ring:x,colour=red", rma::StatusCode::kInvalidArgument, "unknown option"},
      {"ring:x,ip=300.1.1.1", rma::StatusCode::kInvalidArgument, "IPv4"},
      {"ring:x,mac=zz", rma::StatusCode::kInvalidArgument, "MAC"},
      {"pci:0000:7f:1f.7", rma::StatusCode::kNotFound, "rte_dev_probe"},
      {"pci:00:00.0", rma::StatusCode::kNotFound, "RMA_SOFTROCE_EAL_ARGS"},
      {"af_packet:rmanoiface0", rma::StatusCode::kNotFound, "no network interface"},
      {"memif:client:rma-nobody-" + std::to_string(getpid()) + ",wait=300", rma::StatusCode::kTimeout,
       "no server listening"},
  };
  for (const auto& c : cases) {
    auto r = open_port(c.spec);
    ASSERT_FALSE(r.ok()) << c.spec;
    EXPECT_EQ(r.status().code(), c.code) << c.spec << ": " << r.status().to_string();
    EXPECT_NE(r.status().message().find(c.message_part), std::string::npos) << r.status().to_string();
    expect_same_objects(before);
  }
}
