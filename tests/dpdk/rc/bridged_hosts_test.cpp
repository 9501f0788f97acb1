// Two "hosts" of two ranks each, wired the way the softroce provider wires
// a job across hosts with nothing configured (dpdk/provider/job_port.hpp):
// every rank is its own NIC (its own MAC and IPv4) on its host's interface
// (here a segment that carries every frame a host sends to every rank of
// the other host, as a veth pair does for af_packet, which sees everything
// the interface receives, and nothing back to the sending host), and the
// two ranks of a host are also joined by a point-to-point link (memif in
// the provider) whose peer MAC is learned. Peers are found by ARP only:
// the endpoint addresses carry a wrong MAC. Every rank has a QP to every
// rank, itself included; WRITE, READ and FETCH_ADD along each of the 16
// ordered pairs, every byte and every fetched value checked, and a frame
// for a sibling never leaves its host.
#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <mutex>

#include "harness.hpp"
#include "link/fault_link.hpp"
#include "link/mesh_link.hpp"

namespace rma::softroce::testing {
namespace {

using namespace std::chrono_literals;
using roce::MacAddress;

// Two hosts' interfaces joined by a wire: what a port of one host sends,
// every port of the other host receives.
class Hub {
 public:
  class Port final : public roce::Link {
   public:
    Port(Hub& hub, std::size_t index, roce::LinkInfo info) : hub_(hub), index_(index), info_(std::move(info)) {}
    std::size_t transmit(std::span<const roce::TxFrame> frames) noexcept override {
      for (const roce::TxFrame& f : frames) hub_.send(index_, f);
      return frames.size();
    }
    std::size_t poll(roce::FrameSink& sink, std::size_t max) noexcept override {
      std::size_t n = 0;
      std::vector<std::uint8_t> f;
      while (n < max && hub_.take(index_, f)) {
        sink.on_frame(f);
        ++n;
      }
      return n;
    }
    const roce::LinkInfo& info() const noexcept override { return info_; }
    roce::LinkCounters counters() const noexcept override { return {}; }

   private:
    Hub& hub_;
    std::size_t index_;
    roce::LinkInfo info_;
  };

  std::unique_ptr<Port> port(int host, const MacAddress& mac, std::uint32_t ip) {
    std::lock_guard lock(mutex_);
    queues_.emplace_back();
    hosts_.push_back(host);
    roce::LinkInfo i;
    i.name = "hub:" + std::to_string(queues_.size() - 1);
    i.mac = mac;
    i.ipv4 = ip;
    i.max_frame = 4096 + 128;
    i.neighbours_by_arp = true;
    return std::make_unique<Port>(*this, queues_.size() - 1, i);
  }
  std::uint64_t frames_from(std::size_t port) {
    std::lock_guard lock(mutex_);
    return sent_.size() > port ? sent_[port] : 0;
  }
  // Unicast frames sent to a MAC of the sender's own host (lost on a real
  // interface: nothing comes back to the host that sent it).
  std::uint64_t misrouted() {
    std::lock_guard lock(mutex_);
    return misrouted_;
  }

 private:
  void send(std::size_t from, const roce::TxFrame& f) {
    std::vector<std::uint8_t> bytes;
    for (auto piece : {f.head, f.payload, f.tail}) bytes.insert(bytes.end(), piece.begin(), piece.end());
    std::lock_guard lock(mutex_);
    if (sent_.size() <= from) sent_.resize(from + 1, 0);
    ++sent_[from];
    // The tests' MACs end in the rank; ranks 0, 1 are host 0, ranks 2, 3 host 1.
    if (bytes.size() >= 6 && (bytes[0] & 1u) == 0 && bytes[5] / 2 == static_cast<unsigned>(hosts_[from])) ++misrouted_;
    for (std::size_t i = 0; i < queues_.size(); ++i) {
      if (hosts_[i] != hosts_[from]) queues_[i].push_back(bytes);
    }
  }
  bool take(std::size_t index, std::vector<std::uint8_t>& out) {
    std::lock_guard lock(mutex_);
    auto& q = queues_[index];
    if (q.empty()) return false;
    out = std::move(q.front());
    q.pop_front();
    return true;
  }
  std::mutex mutex_;
  std::vector<std::deque<std::vector<std::uint8_t>>> queues_;
  std::vector<std::uint64_t> sent_;
  std::vector<int> hosts_;
  std::uint64_t misrouted_ = 0;
};

TEST(BridgedHosts, TwoHostsOfTwoRanksReachEveryRankByArp) {
  constexpr int kN = 4;  // ranks 0, 1 on host X; 2, 3 on host Y
  Hub segment;
  auto mac = [](int r) { return MacAddress{0x06, 0xAA, 0xBB, 0xCC, 0x00, static_cast<std::uint8_t>(r)}; };
  auto ip = [](int r) { return 0xA9FE0100u + static_cast<std::uint32_t>(r); };  // 169.254.1.r
  std::vector<std::vector<roce::MeshMember>> members(kN);
  for (int host = 0; host < 2; ++host) {
    auto sib = roce::make_fault_link_pair({});
    members[2 * host].push_back({{}, std::move(sib.a), true});
    members[2 * host + 1].push_back({{}, std::move(sib.b), true});
  }
  struct Rank {
    std::shared_ptr<Device> dev;
    SoftRoceDevice* sdev = nullptr;
    std::shared_ptr<ProtectionDomain> pd;
    std::shared_ptr<CompletionQueue> cq;
    std::vector<std::unique_ptr<QueuePair>> qp;
    Buffer mem;
  };
  std::vector<Rank> r(kN);
  for (int i = 0; i < kN; ++i) {
    roce::LinkInfo self;
    self.name = "bridged" + std::to_string(i);
    self.mac = mac(i);
    self.ipv4 = ip(i);
    self.max_frame = 9000;
    auto link = roce::MeshLink::create(self, std::move(members[i]), segment.port(i / 2, mac(i), ip(i))).value();
    ASSERT_TRUE(link->info().neighbours_by_arp);
    DeviceOptions o;
    o.name = "rank" + std::to_string(i);
    o.arp_timeout_ms = 10000;
    o.progress_interval_us = 200;  // each rank answers ARP while the others connect
    r[i].dev = open_softroce_device(std::move(link), o).value();
    r[i].sdev = dynamic_cast<SoftRoceDevice*>(r[i].dev.get());
    r[i].pd = r[i].dev->alloc_pd().value();
    r[i].cq = r[i].dev->create_cq(256).value();
    r[i].mem = make_buffer(*r[i].pd, kN * 4096);
    for (int j = 0; j < kN; ++j) {
      QpConfig c = fast_qp_config();
      c.timeout = 14;  // 67 ms: targets answer from their progress threads, on a busy machine
      c.send_cq = c.recv_cq = r[i].cq;
      r[i].qp.push_back(r[i].pd->create_qp(c).value());
    }
  }
  const MacAddress wrong{0x02, 0xDE, 0xAD, 0xBE, 0xEF, 0x00};
  for (int i = 0; i < kN; ++i) {
    for (int j = 0; j < kN; ++j) {
      EndpointFields f = decode_endpoint(r[j].qp[i]->local_address().value()).value();
      if (i != j) f.mac = wrong;  // the address is not what decides
      const Status st = r[i].qp[j]->connect(encode_endpoint(f));
      ASSERT_TRUE(st.ok()) << i << "->" << j << ": " << st.to_string();
    }
  }
  const std::uint64_t hub_before = segment.frames_from(0);
  auto wait = [&](int who, std::uint64_t id) {
    Completion c{};
    const auto end = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < end) {
      if (r[who].cq->poll({&c, 1}) == 1) {
        EXPECT_EQ(c.wr_id, id);
        return c.status;
      }
    }
    ADD_FAILURE() << "rank " << who << ": no completion for " << id;
    return WcStatus::kGeneralErr;
  };
  for (int i = 0; i < kN; ++i) {
    for (int j = 0; j < kN; ++j) {
      const std::size_t slot = static_cast<std::size_t>(i) * 4096;
      Buffer local = make_buffer(*r[i].pd, 4096);
      fill_pattern(local.data, 2000, static_cast<std::uint64_t>(i * 10 + j));
      Sge s = local.sge(0, 2000);
      WorkRequest w = wr(Opcode::kRdmaWrite, &s, 1, r[j].mem.addr(slot), r[j].mem.rkey(), 1);
      ASSERT_TRUE(r[i].qp[j]->post({&w, 1}).ok());
      ASSERT_EQ(wait(i, 1), WcStatus::kSuccess) << i << "->" << j;
      EXPECT_EQ(std::memcmp(r[j].mem.data + slot, local.data, 2000), 0) << i << "->" << j;
      Sge g = local.sge(2048, 1500);
      w = wr(Opcode::kRdmaRead, &g, 1, r[j].mem.addr(slot + 100), r[j].mem.rkey(), 2);
      ASSERT_TRUE(r[i].qp[j]->post({&w, 1}).ok());
      ASSERT_EQ(wait(i, 2), WcStatus::kSuccess) << i << "->" << j;
      EXPECT_EQ(std::memcmp(local.data + 2048, local.data + 100, 1500), 0) << i << "->" << j;
      const std::size_t ctr = slot + 4000;
      const std::uint64_t before = r[j].mem.u64(ctr);
      Sge a = local.sge(4000, 8);
      w = wr(Opcode::kAtomicFetchAdd, &a, 1, r[j].mem.addr(ctr), r[j].mem.rkey(), 3);
      w.compare_add = 3;
      ASSERT_TRUE(r[i].qp[j]->post({&w, 1}).ok());
      ASSERT_EQ(wait(i, 3), WcStatus::kSuccess) << i << "->" << j;
      EXPECT_EQ(local.u64(4000), before);
      EXPECT_EQ(r[j].mem.u64(ctr), before + 3);
    }
  }
  // Nothing for a rank of the same host went out on the interface (it
  // would be lost there): siblings over their link, a rank to itself
  // through loopback.
  EXPECT_EQ(segment.misrouted(), 0u);
  const auto c0 = r[0].sdev->counters();
  EXPECT_GE(c0.arp_replies_accepted, 3u) << "rank 0 resolved its three peers";
  for (int i = 0; i < kN; ++i) {
    EXPECT_EQ(r[i].sdev->counters().arp_address_conflicts, 0u);
  }
  EXPECT_GT(segment.frames_from(0), hub_before);
}

}  // namespace
}  // namespace rma::softroce::testing
