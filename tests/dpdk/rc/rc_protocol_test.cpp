// RC protocol over the fault link: segmentation, PSNs (with wrap-around),
// ACK coalescing, the requester window, NAK / timeout retransmission, RNR,
// duplicate READ replay and duplicate atomics executed once.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <fstream>
#include <iterator>
#include <memory>

#include "harness.hpp"
#include "rc/qp.hpp"
#include "wire/byte_order.hpp"

namespace rma::softroce::testing {
namespace {

using roce::Opcode;
using std::chrono::milliseconds;

// A link that says whether its transmit enters the kernel (af_packet,
// af_xdp, tap) and counts the device's transmit calls, which are what cost a
// system call there.
class SyscallLink final : public roce::Link {
 public:
  SyscallLink(std::unique_ptr<roce::FaultLink> inner, bool enters_kernel)
      : inner_(std::move(inner)), info_(inner_->info()) {
    info_.transmit_enters_kernel = enters_kernel;
  }
  std::size_t transmit(std::span<const roce::TxFrame> frames) noexcept override {
    ++calls_;
    if (first_ == 0) first_ = 't';
    return inner_->transmit(frames);
  }
  std::size_t poll(roce::FrameSink& sink, std::size_t max) noexcept override {
    if (first_ == 0) first_ = 'p';
    return inner_->poll(sink, max);
  }
  const roce::LinkInfo& info() const noexcept override { return info_; }
  roce::LinkCounters counters() const noexcept override { return inner_->counters(); }
  std::uint64_t calls() const { return calls_; }
  // 't' or 'p': whether a transmit or a receive came first since forget().
  char first() const { return first_; }
  void forget() { first_ = 0; }

 private:
  std::unique_ptr<roce::FaultLink> inner_;
  roce::LinkInfo info_;
  std::uint64_t calls_ = 0;
  char first_ = 0;
};

class RcProtocol : public ::testing::Test {
 protected:
  void open(PairOptions o = default_options()) {
    pair_ = Pair::make(o);
    ASSERT_NE(pair_, nullptr);
    src_ = make_buffer(*pair_->a.pd, kSize);
    dst_ = make_buffer(*pair_->b.pd, kSize);
  }
  WcStatus write(std::size_t off, std::uint32_t len, std::uint64_t id = 1) {
    Sge s = src_.sge(off, len);
    WorkRequest w = wr(rma::Opcode::kRdmaWrite, &s, 1, dst_.addr(off), dst_.rkey(), id);
    EXPECT_TRUE(pair_->a.qp->post({&w, 1}).ok());
    return pair_->wait_one(pair_->a).status;
  }
  WcStatus read(std::size_t off, std::uint32_t len, std::uint64_t id = 2) {
    Sge s = src_.sge(off, len);
    WorkRequest w = wr(rma::Opcode::kRdmaRead, &s, 1, dst_.addr(off), dst_.rkey(), id);
    EXPECT_TRUE(pair_->a.qp->post({&w, 1}).ok());
    Completion c = pair_->wait_one(pair_->a);
    if (c.status == WcStatus::kSuccess) {
      EXPECT_EQ(c.byte_len, len);
    }
    return c.status;
  }
  // n 64-byte WRITEs from src_ to dst_, one packet each, wr_id i; all
  // signalled, or only the last.
  void writes_of_64(int n, std::vector<Sge>& sges, std::vector<WorkRequest>& wrs, bool signal_all = true) {
    sges.resize(n);
    wrs.resize(n);
    for (int i = 0; i < n; ++i) {
      sges[i] = src_.sge(i * 64, 64);
      wrs[i] = wr(rma::Opcode::kRdmaWrite, &sges[i], 1, dst_.addr(i * 64), dst_.rkey(), i,
                  signal_all || i + 1 == n ? kWrSignaled : 0u);
    }
  }
  // `rounds` rounds of an 8-byte WRITE ping-pong as rma_write_lat drives it: A
  // writes a word into B; B's program polls once, sees it, and answers with
  // a WRITE into A as its next call; A polls once, sees that, and its next
  // call is the next round's post. Where posts wait for a poll
  // (`posts_wait`), each side polls once more to send its post. Checks that
  // B's ACK of each WRITE leaves in the call that received it until B has
  // answered kAnswersBeforeHold WRITEs in a row, and from then on in the
  // transmit that carries the answer (`b_link`, when given, counts B's
  // transmits). Completions taken go to a_wc_ / b_wc_.
  void ping_pong(int rounds, bool posts_wait, SyscallLink* b_link) {
    constexpr int kHold = roce::rc::RcQp::kAnswersBeforeHold;
    auto poll = [](Side& s, std::vector<Completion>& into) {
      Completion c[8];
      const int k = s.cq->poll({c, 8});
      ASSERT_GE(k, 0);
      into.insert(into.end(), c, c + k);
    };
    for (int round = 0; round < rounds; ++round) {
      SCOPED_TRACE("round " + std::to_string(round));
      const std::uint64_t word = 0x7000 + static_cast<std::uint64_t>(round);
      src_.set_u64(0, word);
      Sge sa = src_.sge(0, 8);
      WorkRequest wa = wr(rma::Opcode::kRdmaWrite, &sa, 1, dst_.addr(64), dst_.rkey(), static_cast<std::uint64_t>(round));
      ASSERT_TRUE(pair_->a.qp->post({&wa, 1}).ok());
      if (posts_wait) poll(pair_->a, a_wc_);
      // A's WRITE, after the first round with A's ACK of B's last answer.
      ASSERT_EQ(pair_->b.link->pending_rx(), round == 0 ? 1u : 2u);
      const std::uint64_t b_calls = b_link != nullptr ? b_link->calls() : 0;
      poll(pair_->b, b_wc_);
      ASSERT_EQ(dst_.u64(64), word);
      const bool held = round >= kHold;
      EXPECT_EQ(pair_->a.link->pending_rx(), held ? 0u : 1u) << (held ? "the ACK did not wait for the answer"
                                                                      : "the ACK did not leave with the data");
      dst_.set_u64(128, word + 0x100);
      Sge sb = dst_.sge(128, 8);
      WorkRequest wb = wr(rma::Opcode::kRdmaWrite, &sb, 1, src_.addr(128), src_.rkey(), 1000 + static_cast<std::uint64_t>(round));
      ASSERT_TRUE(pair_->b.qp->post({&wb, 1}).ok());
      if (posts_wait) poll(pair_->b, b_wc_);
      EXPECT_EQ(pair_->a.link->pending_rx(), 2u) << "the ACK and the answer";
      if (b_link != nullptr) {
        EXPECT_EQ(b_link->calls() - b_calls, held ? 1u : 2u) << "transmits for the ACK and the answer";
      }
      poll(pair_->a, a_wc_);
      ASSERT_EQ(src_.u64(128), word + 0x100);
    }
  }
  // Takes the completions of every WRITE of rounds [0, rounds) that the
  // ping-pong left, and checks them all and that nothing was resent.
  void finish_ping_pong(int rounds) {
    const auto a_rest = pair_->wait(pair_->a, static_cast<std::size_t>(rounds) - a_wc_.size());
    a_wc_.insert(a_wc_.end(), a_rest.begin(), a_rest.end());
    const auto b_rest = pair_->wait(pair_->b, static_cast<std::size_t>(rounds) - b_wc_.size());
    b_wc_.insert(b_wc_.end(), b_rest.begin(), b_rest.end());
    ASSERT_EQ(a_wc_.size(), static_cast<std::size_t>(rounds));
    ASSERT_EQ(b_wc_.size(), static_cast<std::size_t>(rounds));
    for (std::size_t i = 0; i < a_wc_.size(); ++i) {
      EXPECT_EQ(a_wc_[i].status, WcStatus::kSuccess);
      EXPECT_EQ(a_wc_[i].wr_id, i);
      EXPECT_EQ(b_wc_[i].status, WcStatus::kSuccess);
      EXPECT_EQ(b_wc_[i].wr_id, 1000 + i);
    }
    for (Side* s : {&pair_->a, &pair_->b}) {
      EXPECT_EQ(s->sdev->qp_counters(s->qp->qp_num()).value().retransmitted_packets, 0u);
    }
  }

  // A writes `word` into B (wr_id `id`); B's program polls once and sees it.
  void write_seen_by_b(std::uint64_t word, std::uint64_t id) {
    src_.set_u64(0, word);
    Sge s = src_.sge(0, 8);
    WorkRequest w = wr(rma::Opcode::kRdmaWrite, &s, 1, dst_.addr(64), dst_.rkey(), id);
    ASSERT_TRUE(pair_->a.qp->post({&w, 1}).ok());
    Completion c[4];
    ASSERT_GE(pair_->b.cq->poll({c, 4}), 0);
    ASSERT_EQ(dst_.u64(64), word);
  }

  static constexpr std::size_t kSize = 2u << 20;
  std::vector<Completion> a_wc_, b_wc_;
  std::unique_ptr<Pair> pair_;
  Buffer src_, dst_;
};

TEST_F(RcProtocol, WriteAndReadEverySegmentationBoundary) {
  PairOptions o = default_options();
  o.dev.path_mtu = 1024;
  open(o);
  const std::uint32_t sizes[] = {0, 1, 3, 255, 1023, 1024, 1025, 2048, 4097, 64 * 1024 + 7, 1u << 20};
  std::uint64_t seed = 1;
  for (std::uint32_t len : sizes) {
    fill_pattern(src_.data, len, seed);
    ASSERT_EQ(write(0, len), WcStatus::kSuccess) << len;
    ASSERT_EQ(std::memcmp(src_.data, dst_.data, len), 0) << len;
    fill_pattern(dst_.data + 4096, len, seed + 1000);
    std::memset(src_.data + 4096, 0, len);
    ASSERT_EQ(read(4096, len), WcStatus::kSuccess) << len;
    ASSERT_EQ(std::memcmp(src_.data + 4096, dst_.data + 4096, len), 0) << len;
    ++seed;
  }
}

TEST_F(RcProtocol, SegmentsByPathMtuAndRequestsAcks) {
  PairOptions o = default_options();
  o.dev.path_mtu = 512;
  open(o);
  const std::uint32_t len = 512 * 200 + 1;  // 201 packets
  ASSERT_EQ(write(0, len), WcStatus::kSuccess);
  auto ca = pair_->a.sdev->qp_counters(pair_->a.qp->qp_num()).value();
  auto cb = pair_->b.sdev->qp_counters(pair_->b.qp->qp_num()).value();
  EXPECT_EQ(ca.tx_frames, 201u);
  EXPECT_EQ(cb.rx_frames, 201u);
  // AckReq every 64 packets and on the last: at most 4 ACKs, at least 1.
  EXPECT_GE(cb.acks_sent, 1u);
  EXPECT_LE(cb.acks_sent, 4u);
  EXPECT_EQ(ca.retransmitted_packets, 0u);
}

// A payload of 256 B or more leaves with its ICRC open, completed by the link while it
// copies the payload (FaultLink, like a DPDK port, writes frames out with
// write_tx_frame): the receiver checks every ICRC, so a wrong one would be
// an icrc_error and a retransmission. Small payloads keep the ICRC the
// sender computes. The requester checks the READ responses' ICRCs in the
// copy that places them (rx_icrc_in_copy).
TEST_F(RcProtocol, PayloadsLeaveWithAnIcrcTheLinkCompletes) {
  PairOptions o = default_options();
  o.dev.path_mtu = 4096;
  open(o);
  const bool opens = roce::icrc_folds_in_copy();
  for (std::uint32_t len : {64u * 1024u, 64u * 1024u + 4097u, 1u << 20}) {
    const auto a0 = pair_->a.sdev->counters();
    const auto b0 = pair_->b.sdev->counters();
    fill_pattern(src_.data, len, len);
    ASSERT_EQ(write(0, len), WcStatus::kSuccess) << len;
    ASSERT_EQ(std::memcmp(src_.data, dst_.data, len), 0) << len;
    fill_pattern(dst_.data + 4096, len, len + 1);
    ASSERT_EQ(read(4096, len), WcStatus::kSuccess) << len;
    ASSERT_EQ(std::memcmp(src_.data + 4096, dst_.data + 4096, len), 0) << len;
    const auto a1 = pair_->a.sdev->counters();
    const auto b1 = pair_->b.sdev->counters();
    const std::uint64_t full_frames = len / 4096;  // payloads of 4 KiB: WRITE requests, then READ responses
    EXPECT_EQ(a1.tx_icrc_open - a0.tx_icrc_open, opens ? full_frames : 0u) << len;
    EXPECT_EQ(b1.tx_icrc_open - b0.tx_icrc_open, opens ? full_frames : 0u) << len;
    // The same CPUs check a READ response's ICRC in the copy that places it.
    EXPECT_EQ(a1.rx_icrc_in_copy - a0.rx_icrc_in_copy, opens ? full_frames : 0u) << len;
    EXPECT_EQ(b1.rx_icrc_in_copy, 0u);
    EXPECT_EQ(a1.icrc_errors, 0u);
    EXPECT_EQ(b1.icrc_errors, 0u);
    EXPECT_EQ(a1.qp.retransmitted_packets, 0u);
  }
  const auto before = pair_->a.sdev->counters().tx_icrc_open;
  ASSERT_EQ(write(0, 255), WcStatus::kSuccess);  // below 256 B: the sender's ICRC
  EXPECT_EQ(pair_->a.sdev->counters().tx_icrc_open, before);
}

// A link that hands frames on by their pieces (LinkInfo::completes_icrc
// false) is never given an open ICRC, and its frames arrive whole.
TEST_F(RcProtocol, ALinkThatDoesNotCompleteIcrcsIsGivenWholeFrames) {
  class PiecesLink final : public roce::Link {
   public:
    explicit PiecesLink(std::unique_ptr<roce::FaultLink> inner) : inner_(std::move(inner)), info_(inner_->info()) {
      info_.completes_icrc = false;
    }
    std::size_t transmit(std::span<const roce::TxFrame> frames) noexcept override {
      for (const roce::TxFrame& f : frames) open_frames_ += f.icrc_open ? 1 : 0;
      return inner_->transmit(frames);
    }
    std::size_t poll(roce::FrameSink& sink, std::size_t max) noexcept override { return inner_->poll(sink, max); }
    const roce::LinkInfo& info() const noexcept override { return info_; }
    roce::LinkCounters counters() const noexcept override { return inner_->counters(); }
    std::uint64_t open_frames() const { return open_frames_; }

   private:
    std::unique_ptr<roce::FaultLink> inner_;
    roce::LinkInfo info_;
    std::uint64_t open_frames_ = 0;
  };
  std::vector<PiecesLink*> links;
  PairOptions o = default_options();
  o.dev.path_mtu = 4096;
  o.wrap_link = [&links](std::unique_ptr<roce::FaultLink> inner) -> std::unique_ptr<roce::Link> {
    auto l = std::make_unique<PiecesLink>(std::move(inner));
    links.push_back(l.get());
    return l;
  };
  open(o);
  ASSERT_EQ(links.size(), 2u);
  const std::uint32_t len = 256 * 1024;
  fill_pattern(src_.data, len, 3);
  ASSERT_EQ(write(0, len), WcStatus::kSuccess);
  ASSERT_EQ(std::memcmp(src_.data, dst_.data, len), 0);
  fill_pattern(dst_.data + 4096, len, 4);
  ASSERT_EQ(read(4096, len), WcStatus::kSuccess);
  ASSERT_EQ(std::memcmp(src_.data + 4096, dst_.data + 4096, len), 0);
  EXPECT_EQ(links[0]->open_frames() + links[1]->open_frames(), 0u);
  EXPECT_EQ(pair_->a.sdev->counters().tx_icrc_open + pair_->b.sdev->counters().tx_icrc_open, 0u);
  EXPECT_EQ(pair_->b.sdev->counters().icrc_errors + pair_->a.sdev->counters().icrc_errors, 0u);
}

// A capture writes the frames as the device holds them, after they were
// sent: with a capture on, no ICRC is left open, and every captured frame,
// 4 KiB payloads included, carries its real ICRC.
TEST_F(RcProtocol, CapturedFramesCarryTheirIcrc) {
  char path[] = "/tmp/rma-rc-capture-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  PairOptions o = default_options();
  o.dev.path_mtu = 4096;
  o.dev.pcap_path = path;
  open(o);
  const std::uint32_t len = 64 * 1024;
  fill_pattern(src_.data, len, 11);
  ASSERT_EQ(write(0, len), WcStatus::kSuccess);
  ASSERT_EQ(std::memcmp(src_.data, dst_.data, len), 0);
  EXPECT_EQ(pair_->a.sdev->counters().tx_icrc_open, 0u);
  src_ = Buffer{};  // the registrations hold the devices open
  dst_ = Buffer{};
  pair_.reset();  // closes the capture
  std::ifstream in(path, std::ios::binary);
  const std::vector<std::uint8_t> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ::unlink(path);
  std::size_t frames = 0, full = 0;
  for (std::size_t off = 24; off + 16 <= file.size();) {  // classic pcap, little endian
    std::uint32_t incl;
    std::memcpy(&incl, file.data() + off + 8, 4);
    ASSERT_LE(off + 16 + incl, file.size());
    roce::Packet p;
    const std::span<const std::uint8_t> frame(file.data() + off + 16, incl);
    EXPECT_EQ(roce::parse_packet(frame, p), roce::ParseError::kOk) << "captured frame " << frames;
    if (p.payload.size() == 4096) ++full;
    ++frames;
    off += 16 + incl;
  }
  EXPECT_EQ(full, 16u);  // the WRITE's, each with its ICRC
}

TEST_F(RcProtocol, ReadReservesOnePsnPerResponsePacket) {
  PairOptions o = default_options();
  o.dev.path_mtu = 1024;
  open(o);
  fill_pattern(dst_.data, 10 * 1024, 7);
  ASSERT_EQ(read(0, 10 * 1024), WcStatus::kSuccess);
  // The next write's PSN follows the 10 PSNs of the READ: the responder
  // accepts it in order (no sequence NAK, nothing dropped).
  ASSERT_EQ(write(0, 100), WcStatus::kSuccess);
  auto cb = pair_->b.sdev->qp_counters(pair_->b.qp->qp_num()).value();
  EXPECT_EQ(cb.naks_sent[0], 0u);
  EXPECT_EQ(cb.out_of_sequence, 0u);
  EXPECT_EQ(cb.tx_frames, 10u + 1u);  // 10 read responses + 1 ACK
}

TEST_F(RcProtocol, PsnWrapsAround) {
  PairOptions o = default_options();
  o.dev.path_mtu = 256;
  o.dev.initial_psn = 0xFFFFF0;
  open(o);
  for (int i = 0; i < 4; ++i) {
    fill_pattern(src_.data, 64 * 1024, 50 + i);
    ASSERT_EQ(write(0, 64 * 1024), WcStatus::kSuccess);
    ASSERT_EQ(std::memcmp(src_.data, dst_.data, 64 * 1024), 0);
    fill_pattern(dst_.data + 100000, 9000, 90 + i);
    ASSERT_EQ(read(100000, 9000), WcStatus::kSuccess);
    ASSERT_EQ(std::memcmp(src_.data + 100000, dst_.data + 100000, 9000), 0);
  }
  Buffer a = make_buffer(*pair_->a.pd, 8);
  dst_.set_u64(8, 5);
  Sge s = a.sge(0, 8);
  WorkRequest w = wr(rma::Opcode::kAtomicFetchAdd, &s, 1, dst_.addr(8), dst_.rkey(), 9);
  w.compare_add = 3;
  ASSERT_TRUE(pair_->a.qp->post({&w, 1}).ok());
  ASSERT_EQ(pair_->wait_one(pair_->a).status, WcStatus::kSuccess);
  EXPECT_EQ(a.u64(0), 5u);
  EXPECT_EQ(dst_.u64(8), 8u);
}

TEST_F(RcProtocol, AcksAreCoalesced) {
  open();
  constexpr int kN = 64;
  std::vector<Sge> sges;
  std::vector<WorkRequest> wrs;
  writes_of_64(kN, sges, wrs);
  ASSERT_TRUE(pair_->a.qp->post(wrs).ok());
  auto got = pair_->wait(pair_->a, kN);
  ASSERT_EQ(got.size(), static_cast<std::size_t>(kN));
  for (int i = 0; i < kN; ++i) EXPECT_EQ(got[i].wr_id, static_cast<std::uint64_t>(i));
  auto cb = pair_->b.sdev->qp_counters(pair_->b.qp->qp_num()).value();
  EXPECT_LT(cb.acks_sent, 8u) << "one ACK per message would be " << kN;
}

// The transmit ring's payload slots are faulted in when the device opens:
// inline WRITEs copy their payload into a slot, and a pass through the ring
// (256 slots of a page or more) took a page fault per slot, tens of
// microseconds each on a VM, in the first round trips of a ping-pong.
TEST_F(RcProtocol, TransmitRingTakesNoPageFaultOnItsFirstPass) {
  open();
  Sge s = src_.sge(0, 8);
  WorkRequest w = wr(rma::Opcode::kRdmaWrite, &s, 1, dst_.addr(0), dst_.rkey(), 1, kWrSignaled | kWrInline);
  ASSERT_TRUE(pair_->a.qp->post({&w, 1}).ok());
  ASSERT_EQ(pair_->wait_one(pair_->a).status, WcStatus::kSuccess);  // the path itself is warm
  // Page faults of 1024 WRITEs (four passes through the 256 slots), the
  // first time and again: the harness and a sanitizer's allocator fault in
  // fresh memory at the same rate both times, the ring only the first time.
  constexpr int kWrites = 1024;
  auto faults_of_writes = [&]() -> long {
    rusage before{};
    getrusage(RUSAGE_SELF, &before);
    for (int i = 0; i < kWrites; ++i) {
      EXPECT_TRUE(pair_->a.qp->post({&w, 1}).ok());
      if (pair_->wait_one(pair_->a).status != WcStatus::kSuccess) {
        ADD_FAILURE() << "WRITE " << i << " failed";
        break;
      }
    }
    rusage after{};
    getrusage(RUSAGE_SELF, &after);
    return after.ru_minflt - before.ru_minflt;
  };
  const long first = faults_of_writes();
  const long again = faults_of_writes();
  EXPECT_LT(first - again, 64) << first << " page faults in the first " << kWrites << " inline 8 B WRITEs, " << again
                               << " in the next " << kWrites;
}

// A post list goes to the link inside post() (the doorbell) and asks for
// one ACK (AckReq on its last packet only). The responder acknowledges what
// a call received in that same call, a burst or a single packet.
TEST_F(RcProtocol, PostListIsOneBurstWithOneAckRequestAndAcksLeaveInTheReceivingCall) {
  open();
  std::vector<bool> ack_req;  // per frame A sends
  pair_->a.link->set_drop_filter([&](std::uint64_t, std::span<const std::uint8_t> head) {
    ack_req.push_back((head[roce::detail::kBthOff + roce::detail::kBthAckReq] & roce::detail::kBthAckReqBit) != 0);
    return false;
  });
  auto list = [&](int n, std::vector<Sge>& sges, std::vector<WorkRequest>& wrs) {
    writes_of_64(n, sges, wrs, /*signal_all=*/false);
  };
  std::vector<Sge> sges;
  std::vector<WorkRequest> wrs;
  list(32, sges, wrs);
  ASSERT_TRUE(pair_->a.qp->post(wrs).ok());
  EXPECT_EQ(pair_->b.link->pending_rx(), 32u) << "post() sends before it returns";
  ASSERT_EQ(ack_req.size(), 32u);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(ack_req[i], i == 31) << "frame " << i;
  pair_->b.sdev->progress();  // a burst of 32: one ACK, in the same call
  EXPECT_EQ(pair_->a.link->pending_rx(), 1u);
  ASSERT_EQ(pair_->wait(pair_->a, 1).size(), 1u);

  list(4, sges, wrs);
  ASSERT_TRUE(pair_->a.qp->post(wrs).ok());
  pair_->b.sdev->progress();  // 4 packets: acknowledged in the same call too
  EXPECT_EQ(pair_->b.link->pending_rx(), 0u);
  EXPECT_EQ(pair_->a.link->pending_rx(), 1u);
  auto got = pair_->wait(pair_->a, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].wr_id, 3u);
  EXPECT_EQ(got[0].status, WcStatus::kSuccess);
  EXPECT_EQ(pair_->b.sdev->qp_counters(pair_->b.qp->qp_num()).value().acks_sent, 2u);
}

// A responder whose program sees a WRITE land may exit at once, and a
// software NIC dies with its process: the ACK must be on the link when the
// call that made the data visible returns, not held for a later call that
// never comes (api_mp.hardening.peerdeath.n3: rank 0 exited as soon as it
// saw rank 1's last put, and rank 1 failed with RETRY_EXC_ERR).
TEST_F(RcProtocol, AckIsOnTheLinkWhenTheWriteIsVisible) {
  PairOptions o = default_options();
  o.qp.retry_cnt = 1;  // A gives up within a few ms if the ACK never comes
  open(o);
  // Polls A's CQ alone (Pair::wait would progress B too).
  auto wait_a = [&] {
    Completion c[1];
    const auto deadline = std::chrono::steady_clock::now() + milliseconds(2000);
    while (std::chrono::steady_clock::now() < deadline) {
      const int k = pair_->a.cq->poll({c, 1});
      if (k != 0) {
        EXPECT_EQ(k, 1);
        return c[0];
      }
    }
    ADD_FAILURE() << "no completion";
    c[0].status = WcStatus::kGeneralErr;
    return c[0];
  };
  for (int round = 0; round < 3; ++round) {
    const std::uint64_t word = 0x1000 + static_cast<std::uint64_t>(round);
    src_.set_u64(0, word);
    Sge s = src_.sge(0, 8);
    WorkRequest w = wr(rma::Opcode::kRdmaWrite, &s, 1, dst_.addr(255 * 8), dst_.rkey(), 40 + round);
    ASSERT_TRUE(pair_->a.qp->post({&w, 1}).ok());
    ASSERT_EQ(pair_->b.link->pending_rx(), 1u);
    // B's program polls once (a CQ poll drives the device), sees the word
    // and would exit: B is never called again.
    Completion wc[1];
    EXPECT_EQ(pair_->b.cq->poll({wc, 1}), 0);
    ASSERT_EQ(dst_.u64(255 * 8), word);
    EXPECT_EQ(pair_->a.link->pending_rx(), 1u) << "round " << round << ": the ACK did not leave with the data";
    const Completion got = wait_a();
    ASSERT_EQ(got.status, WcStatus::kSuccess) << "round " << round;
    EXPECT_EQ(got.wr_id, static_cast<std::uint64_t>(40 + round));
  }
  EXPECT_EQ(pair_->a.sdev->qp_counters(pair_->a.qp->qp_num()).value().retransmitted_packets, 0u);
}

// The ping-pong rule (RcQp::transmit_responses): a program that answers
// every WRITE with a post on the same QP as its very next call gets, once it
// has answered kAnswersBeforeHold in a row, the ACK of the next WRITE sent
// in its answer's transmit: one transmit a hop instead of two, a system call
// less a hop on a kernel interface.
TEST_F(RcProtocol, APingPongsAckLeavesInTheAnswersTransmit) {
  for (const bool enters_kernel : {false, true}) {
    SCOPED_TRACE(enters_kernel ? "transmit enters the kernel" : "transmit does not enter the kernel");
    std::vector<SyscallLink*> links;
    PairOptions o = default_options();
    o.wrap_link = [&links, enters_kernel](std::unique_ptr<roce::FaultLink> inner) -> std::unique_ptr<roce::Link> {
      auto l = std::make_unique<SyscallLink>(std::move(inner), enters_kernel);
      links.push_back(l.get());
      return l;
    };
    a_wc_.clear();
    b_wc_.clear();
    open(o);
    ASSERT_EQ(links.size(), 2u);
    constexpr int kRounds = roce::rc::RcQp::kAnswersBeforeHold + 4;
    ping_pong(kRounds, enters_kernel, links[1]);
    finish_ping_pong(kRounds);
  }
}

// A held ACK waits for the device's next call of any kind: a program that
// stops answering sends it with its next poll, and the hold ends there.
TEST_F(RcProtocol, AHeldAckLeavesWithTheNextCallOfAnyKind) {
  open();
  constexpr int kRounds = roce::rc::RcQp::kAnswersBeforeHold + 1;
  ping_pong(kRounds, false, nullptr);
  finish_ping_pong(kRounds);
  for (int i = 0; i < 2; ++i) {
    ASSERT_NO_FATAL_FAILURE(write_seen_by_b(0x9000 + static_cast<std::uint64_t>(i), 77));
    if (i == 0) {
      EXPECT_EQ(pair_->a.link->pending_rx(), 0u) << "B answered every WRITE so far: its ACK waits for the answer";
      Completion c[4];
      ASSERT_GE(pair_->b.cq->poll({c, 4}), 0);  // no answer: a poll
      EXPECT_EQ(pair_->a.link->pending_rx(), 1u) << "the held ACK did not leave with the next call";
    } else {
      EXPECT_EQ(pair_->a.link->pending_rx(), 1u) << "the hold did not end when B stopped answering";
    }
    const Completion got = pair_->wait_one(pair_->a);
    EXPECT_EQ(got.status, WcStatus::kSuccess);
    EXPECT_EQ(got.wr_id, 77u);
  }
  EXPECT_EQ(pair_->a.sdev->qp_counters(pair_->a.qp->qp_num()).value().retransmitted_packets, 0u);
}

// A QP that is destroyed sends the ACK it holds: a program that ends a
// ping-pong and closes normally leaves its peer nothing to retry.
TEST_F(RcProtocol, AHeldAckLeavesWhenItsQpIsDestroyed) {
  open();
  constexpr int kRounds = roce::rc::RcQp::kAnswersBeforeHold + 1;
  ping_pong(kRounds, false, nullptr);
  finish_ping_pong(kRounds);
  ASSERT_NO_FATAL_FAILURE(write_seen_by_b(0xA000, 88));
  EXPECT_EQ(pair_->a.link->pending_rx(), 0u) << "held for the answer";
  pair_->b.qp.reset();
  EXPECT_EQ(pair_->a.link->pending_rx(), 1u) << "the destroyed QP kept its ACK";
  const Completion got = pair_->wait_one(pair_->a);
  EXPECT_EQ(got.status, WcStatus::kSuccess);
  EXPECT_EQ(got.wr_id, 88u);
  EXPECT_EQ(pair_->a.sdev->qp_counters(pair_->a.qp->qp_num()).value().retransmitted_packets, 0u);
}

// On a link whose transmit enters the kernel (af_packet, af_xdp, tap), a
// post hands nothing to the link: the requests of every post since wait
// for the next progress() (here a CQ poll), which sends them in one burst,
// so a loop of single posts costs one system call per burst, not per post;
// posts that fill a burst send it themselves. Elsewhere a post's requests
// leave before post() returns.
TEST_F(RcProtocol, PostsOnAKernelInterfaceLeaveWithTheNextPoll) {
  for (const bool enters_kernel : {true, false}) {
    SCOPED_TRACE(enters_kernel ? "transmit enters the kernel" : "transmit does not enter the kernel");
    std::vector<SyscallLink*> links;
    PairOptions o = default_options();
    o.dev.path_mtu = 1024;
    o.wrap_link = [&links, enters_kernel](std::unique_ptr<roce::FaultLink> inner) -> std::unique_ptr<roce::Link> {
      auto l = std::make_unique<SyscallLink>(std::move(inner), enters_kernel);
      links.push_back(l.get());
      return l;
    };
    open(o);
    ASSERT_EQ(links.size(), 2u);
    SyscallLink* a_link = links[0];
    constexpr int kPosts = 10;
    std::vector<Sge> sges(kPosts);
    const std::uint64_t calls_before = a_link->calls();
    for (int i = 0; i < kPosts; ++i) {
      src_.set_u64(static_cast<std::size_t>(i) * 8, 0x5000 + static_cast<std::uint64_t>(i));
      sges[static_cast<std::size_t>(i)] = src_.sge(static_cast<std::size_t>(i) * 8, 8);
      WorkRequest w = wr(rma::Opcode::kRdmaWrite, &sges[static_cast<std::size_t>(i)], 1,
                         dst_.addr(static_cast<std::size_t>(i) * 8), dst_.rkey(), 100 + static_cast<std::uint64_t>(i));
      ASSERT_TRUE(pair_->a.qp->post({&w, 1}).ok());
    }
    if (enters_kernel) {
      EXPECT_EQ(a_link->calls(), calls_before) << "a post handed frames to the link";
      EXPECT_EQ(pair_->b.link->pending_rx(), 0u);
      a_link->forget();
      Completion c[1];
      EXPECT_EQ(pair_->a.cq->poll({c, 1}), 0);  // sends; the ACKs are not back yet
      EXPECT_EQ(a_link->calls(), calls_before + 1) << "the poll sent the ten WRITEs in more than one burst";
      // Before it receives: a receive may be a system call too (af_xdp).
      EXPECT_EQ(a_link->first(), 't');
      EXPECT_EQ(pair_->b.link->pending_rx(), static_cast<std::size_t>(kPosts));
    } else {
      EXPECT_EQ(a_link->calls(), calls_before + kPosts);
      EXPECT_EQ(pair_->b.link->pending_rx(), static_cast<std::size_t>(kPosts));
    }
    const auto done = pair_->wait(pair_->a, kPosts);
    ASSERT_EQ(done.size(), static_cast<std::size_t>(kPosts));
    for (std::size_t i = 0; i < done.size(); ++i) {
      EXPECT_EQ(done[i].status, WcStatus::kSuccess);
      EXPECT_EQ(done[i].wr_id, 100 + i);
      EXPECT_EQ(dst_.u64(i * 8), 0x5000 + i);
    }
    if (!enters_kernel) continue;
    // Large messages leave as they are posted: once the posts since the
    // last send fill a burst (32 frames), the post sends them.
    constexpr std::uint32_t kHalf = 16 * 1024;  // 16 frames of the path MTU, 1 KiB
    fill_pattern(src_.data, 2 * kHalf, 9);
    Sge halves[2] = {src_.sge(0, kHalf), src_.sge(kHalf, kHalf)};
    const std::uint64_t before_large = a_link->calls();
    WorkRequest w1 = wr(rma::Opcode::kRdmaWrite, &halves[0], 1, dst_.addr(0), dst_.rkey(), 200);
    ASSERT_TRUE(pair_->a.qp->post({&w1, 1}).ok());
    EXPECT_EQ(a_link->calls(), before_large) << "16 frames went at the post";
    WorkRequest w2 = wr(rma::Opcode::kRdmaWrite, &halves[1], 1, dst_.addr(kHalf), dst_.rkey(), 201);
    ASSERT_TRUE(pair_->a.qp->post({&w2, 1}).ok());
    EXPECT_GT(a_link->calls(), before_large) << "32 frames waited for a poll";
    EXPECT_EQ(pair_->b.link->pending_rx(), 32u);
    const auto large = pair_->wait(pair_->a, 2);
    ASSERT_EQ(large.size(), 2u);
    EXPECT_EQ(large[0].status, WcStatus::kSuccess);
    EXPECT_EQ(large[1].status, WcStatus::kSuccess);
    EXPECT_EQ(std::memcmp(src_.data, dst_.data, 2 * kHalf), 0);
  }
}

// The requester leaves AckReq off only when it sends another packet at once:
// the last packet it can send before the window closes asks.
TEST_F(RcProtocol, WindowEdgeAsksForAnAck) {
  PairOptions o = default_options();
  o.dev.path_mtu = 256;
  o.dev.max_unacked_psns = 128;
  open(o);
  std::vector<bool> ack_req;
  pair_->a.link->set_drop_filter([&](std::uint64_t, std::span<const std::uint8_t> head) {
    ack_req.push_back((head[roce::detail::kBthOff + roce::detail::kBthAckReq] & roce::detail::kBthAckReqBit) != 0);
    return false;
  });
  constexpr int kN = 200;  // one packet each, more than the 128-PSN window
  std::vector<Sge> sges;
  std::vector<WorkRequest> wrs;
  writes_of_64(kN, sges, wrs);
  ASSERT_TRUE(pair_->a.qp->post(wrs).ok());
  ASSERT_EQ(ack_req.size(), 128u);
  EXPECT_TRUE(ack_req[127]) << "the window's last packet";
  EXPECT_TRUE(ack_req[63]) << "at least every ack_req_every (64) packets";
  EXPECT_FALSE(ack_req[0]);
  EXPECT_EQ(pair_->wait(pair_->a, kN).size(), static_cast<std::size_t>(kN));
}

TEST_F(RcProtocol, RequesterStopsAt128UnackedPsns) {
  PairOptions o = default_options();
  o.dev.path_mtu = 256;
  o.dev.max_unacked_psns = 128;  // the default is 512; any window is kept to
  open(o);
  Sge s = src_.sge(0, 256 * 1000);
  WorkRequest w = wr(rma::Opcode::kRdmaWrite, &s, 1, dst_.addr(0), dst_.rkey(), 1);
  ASSERT_TRUE(pair_->a.qp->post({&w, 1}).ok());  // post() runs A once; B has not run
  EXPECT_EQ(pair_->b.link->pending_rx(), 128u);
  EXPECT_EQ(pair_->wait_one(pair_->a).status, WcStatus::kSuccess);
}

TEST_F(RcProtocol, LostPacketIsNakedOnceAndResent) {
  PairOptions o = default_options();
  o.dev.path_mtu = 1024;
  o.qp.timeout = 18;  // 1 s: recovery must come from the NAK, not the timer
  open(o);
  pair_->a.link->set_drop_filter([](std::uint64_t i, std::span<const std::uint8_t>) { return i == 3; });
  fill_pattern(src_.data, 20 * 1024, 3);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(write(0, 20 * 1024), WcStatus::kSuccess);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(900));
  EXPECT_EQ(std::memcmp(src_.data, dst_.data, 20 * 1024), 0);
  auto ca = pair_->a.sdev->qp_counters(pair_->a.qp->qp_num()).value();
  auto cb = pair_->b.sdev->qp_counters(pair_->b.qp->qp_num()).value();
  EXPECT_EQ(cb.naks_sent[roce::kNakPsnSequenceError], 1u);
  EXPECT_EQ(cb.out_of_sequence, 16u);  // packets 4..19 dropped silently after one NAK
  EXPECT_EQ(ca.naks_received[roce::kNakPsnSequenceError], 1u);
  EXPECT_EQ(ca.retransmitted_packets, 17u);  // go-back-N from packet 3
  EXPECT_EQ(ca.retry_timeouts, 0u);
}

TEST_F(RcProtocol, LostLastPacketIsResentAfterTimeout) {
  PairOptions o = default_options();
  o.dev.path_mtu = 1024;
  open(o);
  pair_->a.link->set_drop_filter([](std::uint64_t i, std::span<const std::uint8_t>) { return i == 4; });
  fill_pattern(src_.data, 5 * 1024, 4);
  ASSERT_EQ(write(0, 5 * 1024), WcStatus::kSuccess);
  EXPECT_EQ(std::memcmp(src_.data, dst_.data, 5 * 1024), 0);
  auto ca = pair_->a.sdev->qp_counters(pair_->a.qp->qp_num()).value();
  EXPECT_GE(ca.retry_timeouts, 1u);
  EXPECT_EQ(ca.retransmitted_packets, 5u);  // go-back-N from the oldest unacknowledged PSN
}

TEST_F(RcProtocol, LostAckIsRecoveredByDuplicateReack) {
  open();
  // Drop B's first ACK: A times out, resends, B sees a duplicate and re-ACKs.
  pair_->b.link->set_drop_filter([](std::uint64_t i, std::span<const std::uint8_t>) { return i == 0; });
  fill_pattern(src_.data, 3000, 5);
  ASSERT_EQ(write(0, 3000), WcStatus::kSuccess);
  EXPECT_EQ(std::memcmp(src_.data, dst_.data, 3000), 0);
  auto cb = pair_->b.sdev->qp_counters(pair_->b.qp->qp_num()).value();
  EXPECT_EQ(cb.duplicate_requests, 1u);
}

TEST_F(RcProtocol, DuplicateReadIsReplayedFromTheRequestedPsn) {
  PairOptions o = default_options();
  o.dev.path_mtu = 1024;
  open(o);
  // Drop the 3rd read response (B -> A): A sees a gap, asks again from
  // there; B replays from its responder resource.
  pair_->b.link->set_drop_filter([](std::uint64_t i, std::span<const std::uint8_t>) { return i == 2; });
  fill_pattern(dst_.data, 8 * 1024, 6);
  ASSERT_EQ(read(0, 8 * 1024), WcStatus::kSuccess);
  EXPECT_EQ(std::memcmp(src_.data, dst_.data, 8 * 1024), 0);
  auto ca = pair_->a.sdev->qp_counters(pair_->a.qp->qp_num()).value();
  auto cb = pair_->b.sdev->qp_counters(pair_->b.qp->qp_num()).value();
  EXPECT_EQ(cb.read_replays, 1u);
  EXPECT_EQ(ca.fast_retries, 1u);
  // Replay starts at the lost PSN: 8 original responses + 6 replayed.
  EXPECT_EQ(cb.tx_frames, 14u);
}

TEST_F(RcProtocol, DuplicateAtomicIsNotExecutedTwice) {
  open();
  Buffer res = make_buffer(*pair_->a.pd, 16);
  dst_.set_u64(64, 100);
  dst_.set_u64(128, 7);
  // Drop B's atomic acknowledgements once each: A retries after its timer.
  pair_->b.link->set_drop_filter([](std::uint64_t i, std::span<const std::uint8_t>) { return i == 0 || i == 2; });
  Sge s0 = res.sge(0, 8), s1 = res.sge(8, 8);
  WorkRequest w[2] = {wr(rma::Opcode::kAtomicFetchAdd, &s0, 1, dst_.addr(64), dst_.rkey(), 1),
                      wr(rma::Opcode::kAtomicCmpSwap, &s1, 1, dst_.addr(128), dst_.rkey(), 2)};
  w[0].compare_add = 11;
  w[1].compare_add = 7;
  w[1].swap = 99;
  ASSERT_TRUE(pair_->a.qp->post({w, 2}).ok());
  auto got = pair_->wait(pair_->a, 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].status, WcStatus::kSuccess);
  EXPECT_EQ(got[1].status, WcStatus::kSuccess);
  EXPECT_EQ(got[0].byte_len, 8u);
  EXPECT_EQ(res.u64(0), 100u);
  EXPECT_EQ(res.u64(8), 7u);
  EXPECT_EQ(dst_.u64(64), 111u);  // added once
  EXPECT_EQ(dst_.u64(128), 99u);
  auto cb = pair_->b.sdev->qp_counters(pair_->b.qp->qp_num()).value();
  EXPECT_GE(cb.atomic_replays, 2u);
}

// The device offers rdma_rxe's 128 responder resources, and a requester
// that keeps 128 READs and atomics outstanding puts all of them on the link
// at once; each is answered, in order, with nothing replayed.
TEST_F(RcProtocol, EveryResponderResourceServesAnOutstandingReadOrAtomic) {
  PairOptions o = default_options();
  o.dev.path_mtu = 1024;
  o.qp.max_rd_atomic = 128;
  open(o);
  ASSERT_EQ(pair_->a.dev->info().caps.max_qp_rd_atom, 128u);
  constexpr int kN = 128;
  constexpr std::size_t kLen = 2048;     // two response packets each
  constexpr std::size_t kWords = kN * kLen;
  Buffer res = make_buffer(*pair_->a.pd, kN * 8);
  fill_pattern(dst_.data, kWords, 21);
  std::memset(src_.data, 0, kWords);
  for (int i = 0; i < kN; ++i) dst_.set_u64(kWords + i * 8, 1000 + i);
  std::vector<Sge> sges(kN);
  std::vector<WorkRequest> wrs(kN);
  for (int i = 0; i < kN; ++i) {
    if (i % 8 == 7) {  // every 8th a fetch-and-add on a word of its own
      sges[i] = res.sge(i * 8, 8);
      wrs[i] = wr(rma::Opcode::kAtomicFetchAdd, &sges[i], 1, dst_.addr(kWords + i * 8), dst_.rkey(), i);
      wrs[i].compare_add = static_cast<std::uint64_t>(i) + 1;
    } else {
      sges[i] = src_.sge(i * kLen, kLen);
      wrs[i] = wr(rma::Opcode::kRdmaRead, &sges[i], 1, dst_.addr(i * kLen), dst_.rkey(), i);
    }
  }
  ASSERT_TRUE(pair_->a.qp->post({wrs.data(), wrs.size()}).ok());
  pair_->a.sdev->progress();  // A alone: every request leaves in this call
  EXPECT_EQ(pair_->a.sdev->qp_counters(pair_->a.qp->qp_num()).value().tx_frames, std::uint64_t{kN});
  auto got = pair_->wait(pair_->a, kN);
  ASSERT_EQ(got.size(), std::size_t{kN});
  for (int i = 0; i < kN; ++i) {
    EXPECT_EQ(got[i].wr_id, std::uint64_t(i));
    EXPECT_EQ(got[i].status, WcStatus::kSuccess) << i;
    if (i % 8 == 7) {
      EXPECT_EQ(res.u64(i * 8), std::uint64_t(1000 + i)) << i;
      EXPECT_EQ(dst_.u64(kWords + i * 8), std::uint64_t(1000 + 2 * i + 1)) << i;
    } else {
      EXPECT_EQ(std::memcmp(src_.data + i * kLen, dst_.data + i * kLen, kLen), 0) << i;
    }
  }
  auto ca = pair_->a.sdev->qp_counters(pair_->a.qp->qp_num()).value();
  auto cb = pair_->b.sdev->qp_counters(pair_->b.qp->qp_num()).value();
  EXPECT_EQ(ca.retransmitted_packets, 0u);
  EXPECT_EQ(cb.read_replays, 0u);
  EXPECT_EQ(cb.stale_duplicates, 0u);
  EXPECT_EQ(cb.tx_frames, std::uint64_t{kN / 8 * 7 * 2 + kN / 8});  // 2 per READ, 1 per atomic
}

// Lost responses after the resource ring has wrapped several times (its
// oldest slot then in the middle): the requester asks again, the responder
// replays READs and answers atomics from their slots, oldest first.
TEST_F(RcProtocol, ResponsesLostAfterTheResourceRingWrapsAreReplayed) {
  PairOptions o = default_options();
  o.dev.path_mtu = 1024;
  o.qp.max_rd_atomic = 128;
  open(o);
  constexpr int kN = 100;      // per round: the ring's oldest slot moves by 100 each time
  constexpr int kRounds = 4;
  constexpr std::size_t kLen = 2048;
  constexpr std::size_t kWords = kN * kLen;
  Buffer res = make_buffer(*pair_->a.pd, kN * 8);
  // B sends 188 frames a round (88 READs of two responses, 12 atomic
  // acknowledgements): from its 400th frame on (the third round), drop the
  // first READ response that ends a READ, and a little later the first
  // atomic acknowledgement, once each.
  auto dropped = std::make_shared<std::array<bool, 2>>();
  pair_->b.link->set_drop_filter([dropped](std::uint64_t i, std::span<const std::uint8_t> head) {
    const std::uint8_t op = frame_opcode(head);
    if (i >= 400 && !(*dropped)[0] && op == static_cast<std::uint8_t>(Opcode::kReadResponseLast)) {
      return (*dropped)[0] = true;
    }
    if (i >= 460 && !(*dropped)[1] && op == static_cast<std::uint8_t>(Opcode::kAtomicAcknowledge)) {
      return (*dropped)[1] = true;
    }
    return false;
  });
  std::uint64_t expect_word[kN];
  for (int i = 0; i < kN; ++i) {
    dst_.set_u64(kWords + i * 8, 5000 + i);
    expect_word[i] = 5000 + i;
  }
  for (int round = 0; round < kRounds; ++round) {
    fill_pattern(dst_.data, kWords, 40 + round);
    std::memset(src_.data, 0, kWords);
    std::vector<Sge> sges(kN);
    std::vector<WorkRequest> wrs(kN);
    for (int i = 0; i < kN; ++i) {
      if (i % 8 == 7) {
        sges[i] = res.sge(i * 8, 8);
        wrs[i] = wr(rma::Opcode::kAtomicFetchAdd, &sges[i], 1, dst_.addr(kWords + i * 8), dst_.rkey(), i);
        wrs[i].compare_add = 3;
      } else {
        sges[i] = src_.sge(i * kLen, kLen);
        wrs[i] = wr(rma::Opcode::kRdmaRead, &sges[i], 1, dst_.addr(i * kLen), dst_.rkey(), i);
      }
    }
    ASSERT_TRUE(pair_->a.qp->post({wrs.data(), wrs.size()}).ok());
    auto got = pair_->wait(pair_->a, kN);
    ASSERT_EQ(got.size(), std::size_t{kN}) << "round " << round;
    for (int i = 0; i < kN; ++i) {
      ASSERT_EQ(got[i].status, WcStatus::kSuccess) << "round " << round << " request " << i;
      if (i % 8 == 7) {
        EXPECT_EQ(res.u64(i * 8), expect_word[i]) << "round " << round << " request " << i;
        expect_word[i] += 3;
        EXPECT_EQ(dst_.u64(kWords + i * 8), expect_word[i]) << "added once";
      } else {
        EXPECT_EQ(std::memcmp(src_.data + i * kLen, dst_.data + i * kLen, kLen), 0) << "round " << round;
      }
    }
    if (round == 1) {
      // The second round's slots ran past the ring's end (100..127, then
      // 0..71) with nothing lost: answered oldest first, so in order, and
      // nothing was asked twice.
      EXPECT_EQ(pair_->a.sdev->qp_counters(pair_->a.qp->qp_num()).value().retransmitted_packets, 0u);
      EXPECT_EQ(pair_->b.sdev->qp_counters(pair_->b.qp->qp_num()).value().duplicate_requests, 0u);
    }
  }
  EXPECT_TRUE((*dropped)[0] && (*dropped)[1]);
  auto cb = pair_->b.sdev->qp_counters(pair_->b.qp->qp_num()).value();
  EXPECT_GE(cb.read_replays, 1u);
  EXPECT_GE(cb.atomic_replays, 1u);
}

TEST_F(RcProtocol, SendAndWriteWithImmediate) {
  open();
  Buffer rbuf = make_buffer(*pair_->b.pd, 8192);
  Sge rs = rbuf.sge(0, 8192);
  RecvRequest rr[2] = {{501, {&rs, 1}}, {502, {&rs, 1}}};
  ASSERT_TRUE(pair_->b.qp->post_recv({rr, 2}).ok());
  fill_pattern(src_.data, 6000, 8);
  Sge s = src_.sge(0, 6000);
  WorkRequest w = wr(rma::Opcode::kSendWithImm, &s, 1, 0, 0, 1);
  w.imm_data = 0xABCD;
  ASSERT_TRUE(pair_->a.qp->post({&w, 1}).ok());
  EXPECT_EQ(pair_->wait_one(pair_->a).status, WcStatus::kSuccess);
  Completion rc = pair_->wait_one(pair_->b);
  EXPECT_EQ(rc.status, WcStatus::kSuccess);
  EXPECT_EQ(rc.wr_id, 501u);
  EXPECT_EQ(rc.opcode, rma::Opcode::kRecv);
  EXPECT_EQ(rc.byte_len, 6000u);
  EXPECT_TRUE(rc.has_imm);
  EXPECT_EQ(rc.imm_data, 0xABCDu);
  EXPECT_EQ(std::memcmp(rbuf.data, src_.data, 6000), 0);

  Sge s2 = src_.sge(0, 5000);
  WorkRequest w2 = wr(rma::Opcode::kRdmaWriteWithImm, &s2, 1, dst_.addr(0), dst_.rkey(), 2);
  w2.imm_data = 77;
  ASSERT_TRUE(pair_->a.qp->post({&w2, 1}).ok());
  Completion sc = pair_->wait_one(pair_->a);
  EXPECT_EQ(sc.status, WcStatus::kSuccess);
  EXPECT_EQ(sc.opcode, rma::Opcode::kRdmaWrite);
  rc = pair_->wait_one(pair_->b);
  EXPECT_EQ(rc.wr_id, 502u);
  EXPECT_EQ(rc.opcode, rma::Opcode::kRecvRdmaWithImm);
  EXPECT_EQ(rc.byte_len, 5000u);
  EXPECT_EQ(rc.imm_data, 77u);
  EXPECT_EQ(std::memcmp(dst_.data, src_.data, 5000), 0);
}

TEST_F(RcProtocol, ReceiverNotReadyThenReceivePosted) {
  open();
  fill_pattern(src_.data, 100, 9);
  Sge s = src_.sge(0, 100);
  WorkRequest w = wr(rma::Opcode::kSend, &s, 1, 0, 0, 1);
  ASSERT_TRUE(pair_->a.qp->post({&w, 1}).ok());
  pair_->run_for(milliseconds(20));
  auto cb = pair_->b.sdev->qp_counters(pair_->b.qp->qp_num()).value();
  EXPECT_GE(cb.rnr_naks_sent, 1u);
  Buffer rbuf = make_buffer(*pair_->b.pd, 128);
  Sge rs = rbuf.sge(0, 128);
  RecvRequest rr{9, {&rs, 1}};
  ASSERT_TRUE(pair_->b.qp->post_recv({&rr, 1}).ok());
  EXPECT_EQ(pair_->wait_one(pair_->a).status, WcStatus::kSuccess);
  Completion rc = pair_->wait_one(pair_->b);
  EXPECT_EQ(rc.status, WcStatus::kSuccess);
  EXPECT_EQ(rc.byte_len, 100u);
  EXPECT_EQ(std::memcmp(rbuf.data, src_.data, 100), 0);
}

TEST_F(RcProtocol, RnrRetryExhausted) {
  PairOptions o = default_options();
  o.qp.rnr_retry = 2;
  open(o);
  Sge s = src_.sge(0, 10);
  WorkRequest w[2] = {wr(rma::Opcode::kSend, &s, 1, 0, 0, 1), wr(rma::Opcode::kRdmaWrite, &s, 1, dst_.addr(0), dst_.rkey(), 2, 0)};
  ASSERT_TRUE(pair_->a.qp->post({w, 2}).ok());
  auto got = pair_->wait(pair_->a, 2, milliseconds(3000));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].status, WcStatus::kRnrRetryExcErr);
  EXPECT_EQ(got[1].status, WcStatus::kWrFlushErr);  // unsignaled, flushed: still a CQE
  EXPECT_EQ(pair_->a.qp->state(), QpState::kError);
  auto ca = pair_->a.sdev->qp_counters(pair_->a.qp->qp_num()).value();
  EXPECT_EQ(ca.rnr_naks_received, 3u);
}

TEST_F(RcProtocol, FenceWaitsForEarlierReads) {
  open();
  fill_pattern(dst_.data, 4096, 10);
  Sge r = src_.sge(0, 4096);
  Sge wsrc = src_.sge(0, 4096);
  WorkRequest w[2] = {wr(rma::Opcode::kRdmaRead, &r, 1, dst_.addr(0), dst_.rkey(), 1),
                      wr(rma::Opcode::kRdmaWrite, &wsrc, 1, dst_.addr(8192), dst_.rkey(), 2, kWrSignaled | kWrFence)};
  ASSERT_TRUE(pair_->a.qp->post({w, 2}).ok());
  auto got = pair_->wait(pair_->a, 2);
  ASSERT_EQ(got.size(), 2u);
  // The write carried the data the read brought in.
  EXPECT_EQ(std::memcmp(dst_.data + 8192, dst_.data, 4096), 0);
}

}  // namespace
}  // namespace rma::softroce::testing
