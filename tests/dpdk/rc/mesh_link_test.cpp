// MeshLink: routing by destination MAC, loopback, unroutable frames, a full
// member keeping the order, shutting members down before destroying them;
// the uplink (broadcasts flooded, unknown MACs to the uplink, member routes
// learned from their own frames only); three softroce devices joined by
// meshes of fault links (each also talking to itself through loopback); the
// device's background progress thread answering for a target nobody polls.
// (Devices on mesh links with an uplink: bridged_hosts_test.cpp.)
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "link/fault_link.hpp"
#include "link/mesh_link.hpp"
#include "wire/packet_template.hpp"

namespace rma::softroce::testing {
namespace {

using roce::FaultConfig;
using roce::LinkInfo;
using roce::MacAddress;
using roce::MeshLink;
using roce::MeshMember;
using roce::TxFrame;

MacAddress mac(std::uint8_t n) { return {2, 0, 0, 0, 0, n}; }

struct Collect : roce::FrameSink {
  std::vector<std::vector<std::uint8_t>> frames;
  void on_frame(std::span<const std::uint8_t> f) noexcept override { frames.emplace_back(f.begin(), f.end()); }
};

// A 64-byte frame to `dst` whose byte 20 carries `tag`.
std::vector<std::uint8_t> frame_to(const MacAddress& dst, std::uint8_t tag) {
  std::vector<std::uint8_t> f(64, 0);
  std::copy(dst.begin(), dst.end(), f.begin());
  f[20] = tag;
  return f;
}

LinkInfo self_info(std::uint8_t n) {
  LinkInfo i;
  i.name = "mesh" + std::to_string(n);
  i.mac = mac(n);
  i.ipv4 = 0x0A000000u + n;
  i.max_frame = 9000;
  return i;
}

// A member that hands frames on by their pieces (completes_icrc false).
class PiecesMember final : public roce::Link {
 public:
  explicit PiecesMember(bool enters_kernel = false) {
    info_.name = "pieces";
    info_.max_frame = 9000;
    info_.transmit_enters_kernel = enters_kernel;
  }
  std::size_t transmit(std::span<const TxFrame> frames) noexcept override { return frames.size(); }
  std::size_t poll(roce::FrameSink&, std::size_t) noexcept override { return 0; }
  const LinkInfo& info() const noexcept override { return info_; }
  roce::LinkCounters counters() const noexcept override { return {}; }

 private:
  LinkInfo info_;
};

// A mesh whose uplink is a kernel interface (the default port of a job
// across hosts) batches its posts as the uplink would alone
// (LinkInfo::transmit_enters_kernel); the memif members do not enter the
// kernel, and a mesh of them alone sends at every post.
TEST(MeshLink, BatchesPostsWhenItsUplinkEntersTheKernel) {
  // A mesh of one memif-like member and the given uplink (none: nullptr).
  auto enters_kernel = [](std::unique_ptr<roce::Link> uplink) {
    auto pair = roce::make_fault_link_pair(FaultConfig{});
    std::vector<MeshMember> m;
    m.push_back({mac(1), std::move(pair.a)});
    return MeshLink::create(self_info(0), std::move(m), std::move(uplink)).value()->info().transmit_enters_kernel;
  };
  EXPECT_FALSE(enters_kernel(nullptr));
  EXPECT_TRUE(enters_kernel(std::make_unique<PiecesMember>(true)));
  EXPECT_FALSE(enters_kernel(std::make_unique<PiecesMember>(false)));
}

// Open ICRCs (TxFrame::icrc_open) only where every link a frame may take
// completes them; the mesh's own loopback completes them as it copies.
TEST(MeshLink, CompletesIcrcsWhenEveryMemberDoes) {
  FaultConfig clean;
  auto p1 = roce::make_fault_link_pair(clean);
  std::vector<MeshMember> m;
  m.push_back({mac(1), std::move(p1.a)});
  auto mesh = MeshLink::create(self_info(0), std::move(m)).value();
  ASSERT_TRUE(mesh->info().completes_icrc);

  roce::Headers h;
  h.dst_mac = mac(0);  // itself: the loopback
  h.src_mac = mac(0);
  h.src_ip = h.dst_ip = 0x0A000000u;
  h.dest_qp = 7;
  roce::PacketTemplate t;
  t.init(h);
  roce::PacketFields f;
  f.opcode = static_cast<std::uint8_t>(roce::Opcode::kWriteMiddle);
  f.psn = 5;
  std::vector<std::uint8_t> payload(4096), head(128), tail(8);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::uint8_t>(i * 3);
  std::uint32_t partial = 0;
  const std::size_t tl = t.build(f, head, payload, tail, &partial);
  ASSERT_NE(tl, 0u);
  const TxFrame open{{head.data(), roce::header_length(f.opcode)}, payload, {tail.data(), tl}, true, partial};
  ASSERT_EQ(mesh->transmit({&open, 1}), 1u);
  Collect got;
  ASSERT_EQ(mesh->poll(got, 8), 1u);
  roce::Packet p;
  EXPECT_EQ(roce::parse_packet(got.frames[0], p), roce::ParseError::kOk);  // the ICRC included
  EXPECT_EQ(p.payload.size(), 4096u);

  auto p2 = roce::make_fault_link_pair(clean);
  std::vector<MeshMember> mixed;
  mixed.push_back({mac(1), std::move(p2.a)});
  mixed.push_back({mac(2), std::make_unique<PiecesMember>()});
  EXPECT_FALSE(MeshLink::create(self_info(0), std::move(mixed)).value()->info().completes_icrc);
  auto p3 = roce::make_fault_link_pair(clean);
  std::vector<MeshMember> up;
  up.push_back({mac(1), std::move(p3.a)});
  EXPECT_FALSE(MeshLink::create(self_info(0), std::move(up), std::make_unique<PiecesMember>()).value()->info().completes_icrc);
}

TEST(MeshLink, RoutesByDestinationMacAndLoopsBackItsOwn) {
  FaultConfig clean;
  auto p1 = roce::make_fault_link_pair(clean);
  auto p2 = roce::make_fault_link_pair(clean);
  std::vector<MeshMember> m;
  m.push_back({mac(1), std::move(p1.a)});
  m.push_back({mac(2), std::move(p2.a)});
  auto mesh = MeshLink::create(self_info(0), std::move(m)).value();
  EXPECT_EQ(mesh->info().max_frame, 4096u + 128);  // the members' (fault link default) bound it

  std::vector<std::vector<std::uint8_t>> bytes = {frame_to(mac(1), 1), frame_to(mac(1), 2), frame_to(mac(2), 3),
                                                  frame_to(mac(0), 4), frame_to(mac(9), 5), frame_to(mac(2), 6)};
  std::vector<TxFrame> frames;
  for (auto& b : bytes) frames.push_back(TxFrame{{b.data(), b.size()}, {}, {}});
  EXPECT_EQ(mesh->transmit(frames), frames.size());
  EXPECT_EQ(mesh->mesh_counters().unroutable_frames, 1u);
  EXPECT_EQ(mesh->mesh_counters().loopback_frames, 1u);

  Collect at1, at2, back;
  p1.b->poll(at1, 16);
  p2.b->poll(at2, 16);
  ASSERT_EQ(at1.frames.size(), 2u);
  EXPECT_EQ(at1.frames[0][20], 1);
  EXPECT_EQ(at1.frames[1][20], 2);
  ASSERT_EQ(at2.frames.size(), 2u);
  EXPECT_EQ(at2.frames[0][20], 3);
  EXPECT_EQ(at2.frames[1][20], 6);
  EXPECT_EQ(mesh->poll(back, 16), 1u);
  ASSERT_EQ(back.frames.size(), 1u);
  EXPECT_EQ(back.frames[0], bytes[3]);

  // Frames from the peers come up through the mesh.
  auto reply = frame_to(mac(0), 7);
  TxFrame r{{reply.data(), reply.size()}, {}, {}};
  EXPECT_EQ(p2.b->transmit({&r, 1}), 1u);
  Collect up;
  EXPECT_EQ(mesh->poll(up, 16), 1u);
  ASSERT_EQ(up.frames.size(), 1u);
  EXPECT_EQ(up.frames[0][20], 7);
  const auto c = mesh->counters();
  EXPECT_EQ(c.tx_frames, 5u);  // 4 to members + 1 looped back
  EXPECT_EQ(c.rx_frames, 2u);
}

TEST(MeshLink, AFullMemberStopsTransmitInOrderAndLoopbackHasABound) {
  FaultConfig small;
  small.capacity = 2;
  auto p1 = roce::make_fault_link_pair(small);
  std::vector<MeshMember> m;
  m.push_back({mac(1), std::move(p1.a)});
  auto mesh = MeshLink::create(self_info(0), std::move(m), nullptr, 2).value();
  std::vector<std::vector<std::uint8_t>> bytes;
  for (std::uint8_t i = 0; i < 4; ++i) bytes.push_back(frame_to(mac(1), i));
  std::vector<TxFrame> frames;
  for (auto& b : bytes) frames.push_back(TxFrame{{b.data(), b.size()}, {}, {}});
  EXPECT_EQ(mesh->transmit(frames), 2u);  // the member holds two
  Collect at1;
  p1.b->poll(at1, 16);
  EXPECT_EQ(mesh->transmit(std::span(frames).subspan(2)), 2u);
  p1.b->poll(at1, 16);
  ASSERT_EQ(at1.frames.size(), 4u);
  for (std::uint8_t i = 0; i < 4; ++i) EXPECT_EQ(at1.frames[i][20], i);

  std::vector<std::vector<std::uint8_t>> own;
  for (std::uint8_t i = 0; i < 3; ++i) own.push_back(frame_to(mac(0), i));
  std::vector<TxFrame> loops;
  for (auto& b : own) loops.push_back(TxFrame{{b.data(), b.size()}, {}, {}});
  EXPECT_EQ(mesh->transmit(loops), 2u);
  EXPECT_EQ(mesh->mesh_counters().loopback_full, 1u);
  Collect back;
  EXPECT_EQ(mesh->poll(back, 1), 1u);  // the budget counts loopback frames
  EXPECT_EQ(mesh->transmit(std::span(loops).subspan(2)), 1u);
  EXPECT_EQ(mesh->poll(back, 16), 2u);
  ASSERT_EQ(back.frames.size(), 3u);
  for (std::uint8_t i = 0; i < 3; ++i) EXPECT_EQ(back.frames[i][20], i);
}

TEST(MeshLink, RejectsAmbiguousOrSelfRoutes) {
  auto p1 = roce::make_fault_link_pair({});
  auto p2 = roce::make_fault_link_pair({});
  std::vector<MeshMember> dup;
  dup.push_back({mac(1), std::move(p1.a)});
  dup.push_back({mac(1), std::move(p2.a)});
  auto st = MeshLink::create(self_info(0), std::move(dup)).status();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("both lead to MAC 02:00:00:00:00:01"), std::string::npos) << st.message();
  std::vector<MeshMember> self;
  self.push_back({mac(0), std::move(p1.b)});
  st = MeshLink::create(self_info(0), std::move(self)).status();
  EXPECT_NE(st.message().find("own MAC"), std::string::npos) << st.message();
  std::vector<MeshMember> none;
  none.push_back({mac(3), nullptr});
  EXPECT_FALSE(MeshLink::create(self_info(0), std::move(none)).ok());
  EXPECT_FALSE(MeshLink::create(self_info(0), {}, nullptr, 0).ok());
}

// The ranks of a host sharing an interface: one member whose peer is known,
// one to be learned, and an uplink. Broadcasts reach every link, a MAC no
// member owns goes to the uplink, a member's route is learned from the
// first frame it delivers and never from the uplink, and stays.
TEST(MeshLink, UplinkCarriesWhatNoMemberOwnsAndMembersAreLearnedFromTheirOwnFrames) {
  auto p1 = roce::make_fault_link_pair({});
  auto p2 = roce::make_fault_link_pair({});
  roce::LinkEndpointConfig up_a, up_b;
  up_a.neighbours_by_arp = true;
  up_a.max_frame = 2000;
  auto p3 = roce::make_fault_link_pair({}, up_a, up_b);
  std::vector<MeshMember> m;
  m.push_back({mac(1), std::move(p1.a)});
  m.push_back({{}, std::move(p2.a), /*learn=*/true});
  auto mesh = MeshLink::create(self_info(0), std::move(m), std::move(p3.a)).value();
  EXPECT_TRUE(mesh->info().neighbours_by_arp) << "peers, the learned member's included, are found by ARP";
  EXPECT_EQ(mesh->info().max_frame, 2000u) << "the uplink bounds the frames too";
  EXPECT_FALSE(mesh->member_known(1));

  const MacAddress bcast{0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  std::vector<std::vector<std::uint8_t>> bytes = {frame_to(mac(1), 1), frame_to(mac(9), 2), frame_to(bcast, 3),
                                                  frame_to(mac(5), 4)};
  std::vector<TxFrame> frames;
  for (auto& b : bytes) frames.push_back(TxFrame{{b.data(), b.size()}, {}, {}});
  EXPECT_EQ(mesh->transmit(frames), frames.size());
  Collect at1, at2, at3;
  p1.b->poll(at1, 16);
  p2.b->poll(at2, 16);
  p3.b->poll(at3, 16);
  ASSERT_EQ(at1.frames.size(), 2u);  // its own and the broadcast
  EXPECT_EQ(at1.frames[0][20], 1);
  EXPECT_EQ(at1.frames[1][20], 3);
  ASSERT_EQ(at2.frames.size(), 1u);  // the broadcast only: its peer is not known yet
  EXPECT_EQ(at2.frames[0][20], 3);
  ASSERT_EQ(at3.frames.size(), 3u);  // unknown MAC, broadcast, not-yet-learned MAC
  EXPECT_EQ(at3.frames[0][20], 2);
  EXPECT_EQ(at3.frames[1][20], 3);
  EXPECT_EQ(at3.frames[2][20], 4);
  EXPECT_EQ(mesh->mesh_counters().flooded_frames, 1u);
  EXPECT_EQ(mesh->mesh_counters().unroutable_frames, 0u);

  // The uplink claims mac(5) and mac(1): it teaches nothing.
  auto from = [](const MacAddress& src, std::uint8_t tag) {
    auto f = frame_to(mac(0), tag);
    std::copy(src.begin(), src.end(), f.begin() + 6);
    return f;
  };
  auto claim5 = from(mac(5), 10), claim1 = from(mac(1), 11);
  for (auto* f : {&claim5, &claim1}) {
    TxFrame t{*f, {}, {}};
    ASSERT_EQ(p3.b->transmit({&t, 1}), 1u);
  }
  Collect got;
  EXPECT_EQ(mesh->poll(got, 16), 2u);
  EXPECT_FALSE(mesh->member_known(1));
  // The learning member's own frame (its source mac(5)) teaches its route.
  auto hello = from(mac(5), 12);
  TxFrame th{hello, {}, {}};
  ASSERT_EQ(p2.b->transmit({&th, 1}), 1u);
  EXPECT_EQ(mesh->poll(got, 16), 1u);
  ASSERT_TRUE(mesh->member_known(1));
  EXPECT_EQ(mesh->member_peer(1), mac(5));
  EXPECT_EQ(mesh->mesh_counters().peers_learned, 1u);
  // Now mac(5) goes to the member; a later frame with another source does not move it.
  auto again = from(mac(6), 13);
  TxFrame ta{again, {}, {}};
  ASSERT_EQ(p2.b->transmit({&ta, 1}), 1u);
  EXPECT_EQ(mesh->poll(got, 16), 1u);
  EXPECT_EQ(mesh->member_peer(1), mac(5));
  auto to5 = frame_to(mac(5), 14);
  TxFrame t5{to5, {}, {}};
  EXPECT_EQ(mesh->transmit({&t5, 1}), 1u);
  Collect at2b, at3b;
  p2.b->poll(at2b, 16);
  p3.b->poll(at3b, 16);
  ASSERT_EQ(at2b.frames.size(), 1u);
  EXPECT_EQ(at2b.frames[0][20], 14);
  EXPECT_TRUE(at3b.frames.empty());
  const roce::LinkCounters c = mesh->counters();
  EXPECT_GE(c.tx_frames, 7u) << "members' and uplink's frames add up";
}

// A member that records its shutdown and destruction, and whose shutdown
// (like memif's FIN handshake) waits until every member has started its own.
class RecordingMember final : public roce::Link {
 public:
  struct Journal {
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<std::string> events;
    int shutting_down = 0;
    int members = 0;
  };
  RecordingMember(Journal& j, std::string name) : j_(j), name_(std::move(name)) { info_.name = name_; info_.max_frame = 9000; }
  ~RecordingMember() override {
    std::lock_guard lock(j_.mutex);
    j_.events.push_back("destroy " + name_);
  }
  std::size_t transmit(std::span<const TxFrame> frames) noexcept override { return frames.size(); }
  std::size_t poll(roce::FrameSink&, std::size_t) noexcept override { return 0; }
  const LinkInfo& info() const noexcept override { return info_; }
  roce::LinkCounters counters() const noexcept override { return {}; }
  void shutdown() noexcept override {
    std::unique_lock lock(j_.mutex);
    ++j_.shutting_down;
    j_.changed.notify_all();
    // Sequential shutdowns would wait here until the 5 s bound, each.
    const bool all = j_.changed.wait_for(lock, std::chrono::seconds(5), [&] { return j_.shutting_down == j_.members; });
    j_.events.push_back(std::string(all ? "shutdown " : "shutdown-alone ") + name_);
  }

 private:
  Journal& j_;
  std::string name_;
  LinkInfo info_;
};

// Destroying a mesh shuts every member down concurrently and destroys none
// before all handshakes are over (a memif teardown would stall the others).
TEST(MeshLink, ShutsEveryMemberDownConcurrentlyBeforeDestroyingAny) {
  RecordingMember::Journal journal;
  journal.members = 4;
  std::vector<MeshMember> members;
  for (std::uint8_t i = 1; i <= 4; ++i) {
    std::string name = "m";  // not "m" + to_string: GCC 12 warns (-Wstringop-overflow) on that
    name += std::to_string(i);
    members.push_back({mac(i), std::make_unique<RecordingMember>(journal, name)});
  }
  auto mesh = MeshLink::create(self_info(0), std::move(members));
  ASSERT_TRUE(mesh.ok()) << mesh.status().to_string();
  const auto t0 = std::chrono::steady_clock::now();
  mesh->reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(4));
  ASSERT_EQ(journal.events.size(), 8u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(journal.events[i].rfind("shutdown m", 0), 0u) << i << ": " << journal.events[i];
    EXPECT_EQ(journal.events[4 + i].rfind("destroy m", 0), 0u) << 4 + i << ": " << journal.events[4 + i];
  }
}

// Three devices, each with a mesh of fault links to the other two. Every
// device has a QP to each device, itself included; WRITE, READ and
// FETCH_ADD along every one of the nine ordered pairs, all bytes checked.
TEST(MeshLink, ThreeSoftroceDevicesIncludingLoopbackQps) {
  constexpr int kN = 3;
  FaultConfig lossy;
  lossy.drop = 0.02;
  lossy.reorder = 0.02;
  lossy.seed = 7;
  std::vector<std::vector<MeshMember>> members(kN);
  for (int i = 0; i < kN; ++i) {
    for (int j = i + 1; j < kN; ++j) {
      lossy.seed += 1;
      auto p = roce::make_fault_link_pair(lossy);
      members[i].push_back({mac(static_cast<std::uint8_t>(j)), std::move(p.a)});
      members[j].push_back({mac(static_cast<std::uint8_t>(i)), std::move(p.b)});
    }
  }
  struct Node {
    std::shared_ptr<Device> dev;
    SoftRoceDevice* sdev = nullptr;
    std::shared_ptr<ProtectionDomain> pd;
    std::shared_ptr<CompletionQueue> cq;
    std::vector<std::unique_ptr<QueuePair>> qp;  // qp[j]: to node j
    Buffer mem;
  };
  std::vector<Node> n(kN);
  for (int i = 0; i < kN; ++i) {
    auto mesh = MeshLink::create(self_info(static_cast<std::uint8_t>(i)), std::move(members[i])).value();
    DeviceOptions o;
    o.name = "mesh-dev" + std::to_string(i);
    n[i].dev = open_softroce_device(std::move(mesh), o).value();
    n[i].sdev = dynamic_cast<SoftRoceDevice*>(n[i].dev.get());
    n[i].pd = n[i].dev->alloc_pd().value();
    n[i].cq = n[i].dev->create_cq(256).value();
    n[i].mem = make_buffer(*n[i].pd, 3 * 8192);
    for (int j = 0; j < kN; ++j) {
      QpConfig c = fast_qp_config();
      c.send_cq = c.recv_cq = n[i].cq;
      n[i].qp.push_back(n[i].pd->create_qp(c).value());
    }
  }
  for (int i = 0; i < kN; ++i) {
    for (int j = 0; j < kN; ++j) {
      ASSERT_TRUE(n[i].qp[j]->connect(n[j].qp[i]->local_address().value()).ok()) << i << "->" << j;
    }
  }
  auto drive = [&](int who, std::uint64_t id) -> Completion {
    Completion c;
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < end) {
      for (int k = 0; k < kN; ++k) {
        if (k != who) n[k].sdev->progress();
      }
      if (n[who].cq->poll({&c, 1}) == 1) {
        EXPECT_EQ(c.wr_id, id);
        return c;
      }
    }
    ADD_FAILURE() << "node " << who << ": no completion for " << id;
    c.status = WcStatus::kGeneralErr;
    return c;
  };
  // Region layout on node j: slot i (8 KiB) is written by node i.
  for (int i = 0; i < kN; ++i) {
    for (int j = 0; j < kN; ++j) {
      const std::size_t slot = static_cast<std::size_t>(i) * 8192;
      std::vector<std::uint8_t> src(5000);
      fill_pattern(src.data(), src.size(), static_cast<std::uint64_t>(i * 10 + j));
      Buffer local = make_buffer(*n[i].pd, 8192);
      std::memcpy(local.data, src.data(), src.size());
      Sge s = local.sge(0, 5000);
      WorkRequest w = wr(Opcode::kRdmaWrite, &s, 1, n[j].mem.addr(slot), n[j].mem.rkey(), 1);
      ASSERT_TRUE(n[i].qp[j]->post({&w, 1}).ok());
      ASSERT_EQ(drive(i, 1).status, WcStatus::kSuccess) << i << "->" << j;
      EXPECT_EQ(std::memcmp(n[j].mem.data + slot, src.data(), src.size()), 0) << i << "->" << j;
      // Read it back into the second half of `local`.
      Sge r = local.sge(4096, 3000);
      w = wr(Opcode::kRdmaRead, &r, 1, n[j].mem.addr(slot + 100), n[j].mem.rkey(), 2);
      ASSERT_TRUE(n[i].qp[j]->post({&w, 1}).ok());
      ASSERT_EQ(drive(i, 2).status, WcStatus::kSuccess) << i << "->" << j;
      EXPECT_EQ(std::memcmp(local.data + 4096, src.data() + 100, 3000), 0) << i << "->" << j;
      // Fetch-add on the counter at node j's slot end.
      const std::size_t ctr = slot + 8000;
      const std::uint64_t before = n[j].mem.u64(ctr);
      Sge a = local.sge(8000, 8);
      w = wr(Opcode::kAtomicFetchAdd, &a, 1, n[j].mem.addr(ctr), n[j].mem.rkey(), 3);
      w.compare_add = 5;
      ASSERT_TRUE(n[i].qp[j]->post({&w, 1}).ok());
      ASSERT_EQ(drive(i, 3).status, WcStatus::kSuccess) << i << "->" << j;
      EXPECT_EQ(local.u64(8000), before);
      EXPECT_EQ(n[j].mem.u64(ctr), before + 5);
    }
  }
  auto* self = dynamic_cast<SoftRoceDevice*>(n[0].dev.get());
  EXPECT_GT(self->link_counters().tx_frames, 0u);
}

// Nobody polls the target: its background progress thread answers.
TEST(SoftRoceProgressThread, AnswersForATargetNobodyPolls) {
  PairOptions o = default_options();
  o.dev.progress_interval_us = 100;
  auto p = Pair::make(o);
  ASSERT_NE(p, nullptr);
  Buffer src = make_buffer(*p->a.pd, 65536), dst = make_buffer(*p->b.pd, 65536);
  fill_pattern(src.data, src.size, 3);
  Sge s = src.sge(0, 65536);
  WorkRequest w = wr(Opcode::kRdmaWrite, &s, 1, dst.addr(), dst.rkey(), 9);
  ASSERT_TRUE(p->a.qp->post({&w, 1}).ok());
  Completion c;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int got = 0;
  while (got == 0 && std::chrono::steady_clock::now() < end) {
    got = p->a.cq->poll({&c, 1});  // drives a only; b runs on its own thread
    if (got == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  ASSERT_EQ(got, 1);
  EXPECT_EQ(c.status, WcStatus::kSuccess);
  EXPECT_EQ(std::memcmp(src.data, dst.data, 65536), 0);

  // Without the thread the same write waits for a poll of b that never comes.
  PairOptions off = default_options();
  off.qp.retry_cnt = 1;
  auto q = Pair::make(off);
  ASSERT_NE(q, nullptr);
  Buffer src2 = make_buffer(*q->a.pd, 4096), dst2 = make_buffer(*q->b.pd, 4096);
  Sge s2 = src2.sge(0, 4096);
  w = wr(Opcode::kRdmaWrite, &s2, 1, dst2.addr(), dst2.rkey(), 10);
  ASSERT_TRUE(q->a.qp->post({&w, 1}).ok());
  got = 0;
  const auto end2 = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (got == 0 && std::chrono::steady_clock::now() < end2) got = q->a.cq->poll({&c, 1});
  ASSERT_EQ(got, 1);
  EXPECT_EQ(c.status, WcStatus::kRetryExcErr);
}

}  // namespace
}  // namespace rma::softroce::testing
