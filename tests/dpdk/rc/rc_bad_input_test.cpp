// Bad frames from the wire, one kind after another, at a softroce device
// whose peer is played by the test (raw frames over the fault link): each is
// dropped or NAKed as the IB specification says, counted by kind, and
// changes no memory it should not.
//   truncated / bad ICRC          dropped, parse error counted
//   unknown destination QPN       dropped, unknown_qpn
//   source IP not the QP's peer   dropped, wrong_peer
//   PSN ahead of the expected one one sequence NAK (then silence), out_of_sequence
//   PSN behind (duplicate WRITE)  re-ACK, duplicate_requests, data not written again
//   unknown rkey                  NAK remote access error, nothing written, QP to error
//   out of the region's bounds    NAK remote access error (fresh QP), nothing written
//   not RoCE v2 (IPv6, TCP, UDP to another port)  ignored, counted apart from malformed frames
//   ARP                           "who has <our IPv4>?" answered; replies we did not ask for
//                                 taught nothing; any other ARP ignored
#include <gtest/gtest.h>

#include "wire/arp.hpp"
#include "wire/byte_order.hpp"

#include "harness.hpp"

namespace rma::softroce::testing {
namespace {

struct Frames : roce::FrameSink {
  std::vector<roce::Packet> got;
  std::vector<std::vector<std::uint8_t>> store;
  void on_frame(std::span<const std::uint8_t> f) noexcept override {
    store.emplace_back(f.begin(), f.end());
    roce::Packet pk;
    if (roce::parse_packet(store.back(), pk) == roce::ParseError::kOk) got.push_back(pk);
  }
};

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override { open_device({}); }
  // (Re)opens the device under test with `o`, and its PD, CQ, target and QP.
  void open_device(const DeviceOptions& o) {
    qp_.reset();
    target_ = Buffer{};
    cq_.reset();
    pd_.reset();
    dev_.reset();
    auto links = roce::make_fault_link_pair({});
    raw_ = links.a.get();
    raw_owner_ = std::move(links.a);
    dev_ = open_softroce_device(std::move(links.b), o).value();
    sdev_ = dynamic_cast<SoftRoceDevice*>(dev_.get());
    pd_ = dev_->alloc_pd().value();
    cq_ = dev_->create_cq(64).value();
    target_ = make_buffer(*pd_, 4096);
    std::memset(target_.data, 0x5A, 4096);
    new_qp();
  }
  void new_qp() {
    QpConfig c;
    c.send_cq = c.recv_cq = cq_;
    qp_ = pd_->create_qp(c).value();
    me_.mac = raw_->info().mac;
    me_.ipv4 = raw_->info().ipv4;
    me_.qpn = 0x77;
    me_.psn = 100;
    me_.mtu = 1024;
    ASSERT_TRUE(qp_->connect(encode_endpoint(me_)).ok());
    them_ = decode_endpoint(qp_->local_address().value()).value();
  }
  // A WRITE_ONLY from "us" to the device's QP; payload bytes all `fill`.
  std::vector<std::uint8_t> write_frame(std::uint32_t psn, std::uint64_t va, std::uint32_t rkey, std::uint32_t len,
                                        std::uint8_t fill) {
    return request_frame(roce::Opcode::kWriteOnly, psn, va, rkey, len, len, fill);
  }
  // Any request: RETH fields (used when the opcode has a RETH) and a payload
  // of `payload_len` bytes all `fill`.
  std::vector<std::uint8_t> request_frame(roce::Opcode op, std::uint32_t psn, std::uint64_t va, std::uint32_t rkey,
                                          std::uint32_t reth_len, std::uint32_t payload_len, std::uint8_t fill) {
    const std::uint32_t len = payload_len;
    roce::Headers h;
    h.src_mac = me_.mac;
    h.dst_mac = them_.mac;
    h.src_ip = me_.ipv4;
    h.dst_ip = them_.ipv4;
    h.ip_id = ++ip_id_;
    h.opcode = static_cast<std::uint8_t>(op);
    h.dest_qp = them_.qpn;
    h.psn = psn;
    h.ack_req = true;
    h.reth_va = va;
    h.reth_rkey = rkey;
    h.reth_length = reth_len;
    h.pkey = pkey_;
    std::vector<std::uint8_t> payload(len, fill);
    std::uint8_t head[128], tail[8];
    const std::size_t hl = roce::header_length(h.opcode);
    const std::size_t tl = roce::build_packet(h, {head, hl}, payload, {tail, 8});
    EXPECT_GT(tl, 0u);
    std::vector<std::uint8_t> f(head, head + hl);
    f.insert(f.end(), payload.begin(), payload.end());
    f.insert(f.end(), tail, tail + tl);
    return f;
  }
  // Sends one frame, drives the device, returns what it answered.
  std::vector<roce::Packet> exchange(const std::vector<std::uint8_t>& f, int completions = 0) {
    roce::TxFrame t{f, {}, {}};
    EXPECT_EQ(raw_->transmit({&t, 1}), 1u);
    Completion wc[4];
    EXPECT_EQ(cq_->poll({wc, 4}), completions);  // drives the device
    if (completions > 0) last_wc_ = wc[0];
    answers_ = Frames{};
    raw_->poll(answers_, 16);
    return answers_.got;
  }
  bool untouched(std::size_t from, std::size_t to) const {
    for (std::size_t i = from; i < to; ++i) {
      if (target_.data[i] != 0x5A) return false;
    }
    return true;
  }
  roce::rc::DeviceCounters counters() const { return sdev_->counters(); }

  std::unique_ptr<roce::FaultLink> raw_owner_;
  roce::FaultLink* raw_ = nullptr;
  std::shared_ptr<Device> dev_;
  SoftRoceDevice* sdev_ = nullptr;
  std::shared_ptr<ProtectionDomain> pd_;
  std::shared_ptr<CompletionQueue> cq_;
  std::unique_ptr<QueuePair> qp_;
  Buffer target_;
  EndpointFields me_, them_;
  std::uint16_t ip_id_ = 0;
  Frames answers_;
  Completion last_wc_;
  std::uint16_t pkey_ = roce::kDefaultPkey;
};

TEST_F(BadInput, EachKindIsDroppedOrNakedAndCounted) {
  const std::uint32_t epsn = me_.psn;  // the QP expects the PSN "we" announced
  const std::uint64_t va = target_.addr(0);
  const std::uint32_t rkey = target_.rkey();

  // Truncated: cut inside the payload.
  {
    auto f = write_frame(epsn, va, rkey, 64, 0x11);
    f.resize(f.size() - 20);
    EXPECT_TRUE(exchange(f).empty());
    EXPECT_EQ(counters().parse_errors[static_cast<int>(roce::ParseError::kTruncated)] +
                  counters().parse_errors[static_cast<int>(roce::ParseError::kBadLength)],
              1u);
  }
  // Bad ICRC: one payload byte flipped.
  {
    auto f = write_frame(epsn, va, rkey, 64, 0x11);
    f[roce::kOuterHeadersLen + roce::kBthLen + roce::kRethLen + 5] ^= 0x40;
    EXPECT_TRUE(exchange(f).empty());
    EXPECT_EQ(counters().icrc_errors, 1u);
  }
  // Unknown destination QPN.
  {
    auto f = write_frame(epsn, va, rkey, 64, 0x11);
    roce::Packet p;
    ASSERT_EQ(roce::parse_packet(f, p), roce::ParseError::kOk);
    roce::Headers h = p.h;
    h.dest_qp = 0xABCDE;
    std::uint8_t head[128], tail[8];
    const std::size_t hl = roce::header_length(h.opcode);
    const std::vector<std::uint8_t> payload(64, 0x11);
    const std::size_t tl = roce::build_packet(h, {head, hl}, payload, {tail, 8});
    std::vector<std::uint8_t> g(head, head + hl);
    g.insert(g.end(), payload.begin(), payload.end());
    g.insert(g.end(), tail, tail + tl);
    EXPECT_TRUE(exchange(g).empty());
    EXPECT_EQ(counters().unknown_qpn, 1u);
  }
  // A source IP that is not the QP's peer.
  {
    const std::uint32_t real = me_.ipv4;
    me_.ipv4 = real + 1;
    auto f = write_frame(epsn, va, rkey, 64, 0x11);
    me_.ipv4 = real;
    EXPECT_TRUE(exchange(f).empty());
    EXPECT_EQ(counters().wrong_peer, 1u);
  }
  EXPECT_TRUE(untouched(0, 4096)) << "a dropped frame wrote memory";

  // PSN ahead of ePSN: one sequence-error NAK naming ePSN, then silence.
  {
    auto r = exchange(write_frame(roce::psn_add(epsn, 5), va, rkey, 64, 0x22));
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].h.opcode, static_cast<std::uint8_t>(roce::Opcode::kAcknowledge));
    EXPECT_EQ(r[0].h.aeth_syndrome, roce::make_syndrome(roce::AckType::kNak, roce::kNakPsnSequenceError));
    EXPECT_EQ(r[0].h.psn, epsn);
    EXPECT_TRUE(exchange(write_frame(roce::psn_add(epsn, 6), va, rkey, 64, 0x22)).empty());
    EXPECT_EQ(counters().qp.out_of_sequence, 2u);
    EXPECT_EQ(counters().qp.naks_sent[roce::kNakPsnSequenceError], 1u);
    EXPECT_TRUE(untouched(0, 4096));
  }
  // The expected PSN is accepted; the same PSN again is a duplicate: re-ACKed,
  // not written again.
  {
    auto r = exchange(write_frame(epsn, va, rkey, 64, 0x33));
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(roce::syndrome_type(r[0].h.aeth_syndrome), roce::AckType::kAck);
    EXPECT_EQ(r[0].h.psn, epsn);
    EXPECT_EQ(target_.data[0], 0x33);
    r = exchange(write_frame(epsn, va, rkey, 64, 0x44));
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(roce::syndrome_type(r[0].h.aeth_syndrome), roce::AckType::kAck);
    EXPECT_EQ(r[0].h.psn, epsn);
    EXPECT_EQ(target_.data[0], 0x33) << "a duplicate WRITE was executed again";
    EXPECT_EQ(counters().qp.duplicate_requests, 1u);
  }
  const std::uint32_t next = roce::psn_add(epsn, 1);

  // Unknown rkey: NAK remote access error, nothing written, responder QP broken.
  {
    auto r = exchange(write_frame(next, target_.addr(128), rkey ^ 0x00F0F000u, 64, 0x55));
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].h.aeth_syndrome, roce::make_syndrome(roce::AckType::kNak, roce::kNakRemoteAccessError));
    EXPECT_EQ(r[0].h.psn, next);
    EXPECT_TRUE(untouched(64, 4096));
    EXPECT_EQ(counters().qp.naks_sent[roce::kNakRemoteAccessError], 1u);
    EXPECT_EQ(qp_->state(), QpState::kError);
  }
  // Out of the region's bounds (a fresh QP): NAK, nothing written.
  {
    ASSERT_NO_FATAL_FAILURE(new_qp());
    auto r = exchange(write_frame(me_.psn, target_.addr(4096 - 32), rkey, 64, 0x66));
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].h.aeth_syndrome, roce::make_syndrome(roce::AckType::kNak, roce::kNakRemoteAccessError));
    EXPECT_TRUE(untouched(64, 4096)) << "an out-of-bounds WRITE touched the region";
    EXPECT_EQ(counters().qp.naks_sent[roce::kNakRemoteAccessError], 2u);
    EXPECT_EQ(qp_->state(), QpState::kError);
  }
}

// A kernel peer (rxe) resolves our IPv4 with ARP before it sends: the
// device answers requests for its own address, once per request, and
// ignores every other ARP frame (other addresses, replies, truncated or
// malformed bodies, a broadcast sender), which are the host's business.
TEST_F(BadInput, ArpRequestForOurAddressIsAnsweredAndEverythingElseIgnored) {
  const roce::MacAddress asker{0x52, 0x54, 0x00, 0x77, 0x00, 0x02};
  const std::uint32_t asker_ip = 0xC0A84D02;  // 192.168.77.2
  auto request = [&](std::uint32_t target_ip) {
    std::vector<std::uint8_t> f(42, 0);
    std::memset(f.data(), 0xFF, 6);  // broadcast
    std::memcpy(f.data() + 6, asker.data(), 6);
    roce::detail::store_be16(f.data() + 12, roce::kEtherTypeArp);
    std::uint8_t* a = f.data() + 14;
    roce::detail::store_be16(a, 1);
    roce::detail::store_be16(a + 2, 0x0800);
    a[4] = 6;
    a[5] = 4;
    roce::detail::store_be16(a + 6, 1);
    std::memcpy(a + 8, asker.data(), 6);
    roce::detail::store_be32(a + 14, asker_ip);
    roce::detail::store_be32(a + 24, target_ip);
    return f;
  };
  auto send = [&](const std::vector<std::uint8_t>& f) {
    roce::TxFrame t{f, {}, {}};
    EXPECT_EQ(raw_->transmit({&t, 1}), 1u);
    Completion wc[4];
    EXPECT_EQ(cq_->poll({wc, 4}), 0);  // drives the device
    answers_ = Frames{};
    raw_->poll(answers_, 16);
    return answers_.store;
  };
  const std::uint32_t ours = them_.ipv4;
  ASSERT_NE(ours, 0u);
  auto replies = send(request(ours));
  ASSERT_EQ(replies.size(), 1u);
  const std::vector<std::uint8_t>& r = replies[0];
  ASSERT_EQ(r.size(), roce::kArpReplyLen);
  EXPECT_TRUE(std::equal(asker.begin(), asker.end(), r.begin())) << "sent to the asker";
  EXPECT_TRUE(std::equal(them_.mac.begin(), them_.mac.end(), r.begin() + 6)) << "from the device's MAC";
  EXPECT_EQ(roce::detail::load_be16(r.data() + 12), roce::kEtherTypeArp);
  EXPECT_EQ(roce::detail::load_be16(r.data() + 14 + 6), 2) << "an ARP reply";
  EXPECT_TRUE(std::equal(them_.mac.begin(), them_.mac.end(), r.begin() + 14 + 8)) << "sender hardware address";
  EXPECT_EQ(roce::detail::load_be32(r.data() + 14 + 14), ours) << "sender protocol address";
  EXPECT_TRUE(std::equal(asker.begin(), asker.end(), r.begin() + 14 + 18)) << "target hardware address";
  EXPECT_EQ(roce::detail::load_be32(r.data() + 14 + 24), asker_ip) << "target protocol address";
  EXPECT_EQ(counters().arp_requests_answered, 1u);

  EXPECT_TRUE(send(request(ours + 1)).empty()) << "somebody else's address";
  auto reply_op = request(ours);
  roce::detail::store_be16(reply_op.data() + 14 + 6, 2);
  EXPECT_TRUE(send(reply_op).empty()) << "an ARP reply is not answered";
  EXPECT_EQ(counters().arp_replies_ignored, 1u) << "a reply to a question never asked teaches nothing";
  auto truncated = request(ours);
  truncated.resize(41);
  EXPECT_TRUE(send(truncated).empty());
  auto bad_hlen = request(ours);
  bad_hlen[14 + 4] = 8;
  EXPECT_TRUE(send(bad_hlen).empty());
  auto bad_ptype = request(ours);
  roce::detail::store_be16(bad_ptype.data() + 14 + 2, 0x86DD);
  EXPECT_TRUE(send(bad_ptype).empty());
  auto multicast_sender = request(ours);
  multicast_sender[14 + 8] = 0x01;
  EXPECT_TRUE(send(multicast_sender).empty()) << "a broadcast or multicast sender is never answered";
  auto zero_sender = request(ours);
  std::fill(zero_sender.begin() + 14 + 8, zero_sender.begin() + 14 + 14, 0);
  EXPECT_TRUE(send(zero_sender).empty()) << "a zero sender MAC is never answered";
  EXPECT_EQ(counters().arp_requests_answered, 1u);
  EXPECT_EQ(counters().parse_errors[static_cast<int>(roce::ParseError::kNotIpv4)], 6u)
      << "the ARP frames neither answered nor taken as replies count as other traffic";
  EXPECT_TRUE(untouched(0, 4096));
  // The QP still works.
  EXPECT_FALSE(exchange(write_frame(me_.psn, target_.addr(0), target_.rkey(), 64, 0x44)).empty());
  EXPECT_EQ(target_.data[0], 0x44);
}

// Another protocol's frames on a shared interface (af_packet and tap see
// everything the kernel sends there) are ignored and counted as not RoCE,
// never as malformed RoCE frames; they touch nothing.
TEST_F(BadInput, OtherTrafficIsIgnoredAndCountedApartFromMalformedFrames) {
  const std::uint64_t va = target_.addr(0);
  const std::uint32_t rkey = target_.rkey();
  auto fix_ip_checksum = [](std::vector<std::uint8_t>& f) {
    constexpr std::size_t ip = 14;
    f[ip + 10] = f[ip + 11] = 0;
    std::uint32_t sum = 0;
    for (std::size_t i = 0; i < 20; i += 2) sum += static_cast<std::uint32_t>(f[ip + i] << 8 | f[ip + i + 1]);
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
    f[ip + 10] = static_cast<std::uint8_t>(~sum >> 8);
    f[ip + 11] = static_cast<std::uint8_t>(~sum);
  };
  auto ipv6 = write_frame(me_.psn, va, rkey, 64, 0x11);
  ipv6[12] = 0x86;
  ipv6[13] = 0xDD;
  auto tcp = write_frame(me_.psn, va, rkey, 64, 0x22);
  tcp[14 + 9] = 6;
  fix_ip_checksum(tcp);
  auto dns = write_frame(me_.psn, va, rkey, 64, 0x33);
  dns[14 + 20 + 2] = 0;
  dns[14 + 20 + 3] = 53;
  for (const auto* f : {&ipv6, &tcp, &dns}) EXPECT_TRUE(exchange(*f).empty());
  EXPECT_EQ(counters().parse_errors[static_cast<int>(roce::ParseError::kNotIpv4)], 1u);
  EXPECT_EQ(counters().parse_errors[static_cast<int>(roce::ParseError::kNotUdp)], 1u);
  EXPECT_EQ(counters().parse_errors[static_cast<int>(roce::ParseError::kNotRoce)], 1u);
  auto samples = dev_->read_counters();
  ASSERT_TRUE(samples.ok()) << samples.status().to_string();
  auto value = [&](const std::string& name) -> std::int64_t {
    for (const auto& s : *samples) {
      if (s.name == name) return static_cast<std::int64_t>(s.value);
    }
    return -1;
  };
  EXPECT_EQ(value("non_roce_frames_ignored"), 3);
  EXPECT_EQ(value("malformed_frames_dropped"), 0);
  EXPECT_EQ(value("rx_drop_not_roce"), 1);
  EXPECT_TRUE(untouched(0, 4096));
  // The QP still works: the same WRITE, unaltered, lands.
  EXPECT_FALSE(exchange(write_frame(me_.psn, va, rkey, 64, 0x44)).empty());  // its ACK
  EXPECT_EQ(target_.data[0], 0x44);
}

// Regression (issue 12, defect 2): the responder checked the rkey on
// FIRST only and copied MIDDLE/LAST to the saved address, so a requester
// pausing mid-message while the target deregistered (and freed) the region
// wrote into memory that was no longer registered. Every packet is checked:
// the MIDDLE after the deregistration is NAKed and writes nothing.
TEST_F(BadInput, WriteContinuedAfterDeregistrationWritesNothing) {
  Buffer victim = make_buffer(*pd_, 4096);
  std::memset(victim.data, 0x5A, 4096);
  const std::uint32_t mtu = me_.mtu;  // 1024: the smaller of both sides
  exchange(request_frame(roce::Opcode::kWriteFirst, me_.psn, victim.addr(0), victim.rkey(), 3 * mtu, mtu, 0x11));
  EXPECT_EQ(victim.data[0], 0x11);
  EXPECT_EQ(victim.data[mtu - 1], 0x11);
  victim.mr.reset();  // deregistered mid-message; the memory stays allocated, so a stray write shows
  auto r = exchange(request_frame(roce::Opcode::kWriteMiddle, roce::psn_add(me_.psn, 1), 0, 0, 0, mtu, 0x22));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].h.aeth_syndrome, roce::make_syndrome(roce::AckType::kNak, roce::kNakRemoteAccessError));
  EXPECT_EQ(r[0].h.psn, roce::psn_add(me_.psn, 1));
  exchange(request_frame(roce::Opcode::kWriteLast, roce::psn_add(me_.psn, 2), 0, 0, 0, mtu, 0x33));
  for (std::size_t i = mtu; i < 4096; ++i) {
    ASSERT_EQ(victim.data[i], 0x5A) << "byte " << i << " written after the region was deregistered";
  }
  EXPECT_EQ(qp_->state(), QpState::kError);
}

// The same for a SEND whose receive buffer is deregistered mid-message: the
// receiver sees a local protection error, nothing more is placed.
TEST_F(BadInput, SendContinuedAfterReceiveBufferDeregistrationPlacesNothing) {
  Buffer rbuf = make_buffer(*pd_, 4096);
  std::memset(rbuf.data, 0x5A, 4096);
  RecvRequest rr;
  rr.wr_id = 9;
  const Sge sge = rbuf.sge(0, 4096);
  rr.sgl = {&sge, 1};
  ASSERT_TRUE(qp_->post_recv({&rr, 1}).ok());
  const std::uint32_t mtu = me_.mtu;
  exchange(request_frame(roce::Opcode::kSendFirst, me_.psn, 0, 0, 0, mtu, 0x11));
  EXPECT_EQ(rbuf.data[0], 0x11);
  rbuf.mr.reset();
  auto r = exchange(request_frame(roce::Opcode::kSendMiddle, roce::psn_add(me_.psn, 1), 0, 0, 0, mtu, 0x22), 1);
  EXPECT_EQ(last_wc_.status, WcStatus::kLocProtErr);
  EXPECT_EQ(last_wc_.wr_id, 9u);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].h.aeth_syndrome, roce::make_syndrome(roce::AckType::kNak, roce::kNakRemoteOperationalError));
  for (std::size_t i = mtu; i < 4096; ++i) {
    ASSERT_EQ(rbuf.data[i], 0x5A) << "byte " << i << " placed after the receive buffer was deregistered";
  }
}

// READ responses carry their ICRC check into the copy that places their
// payload (IcrcCheck::kDeferReadPayload) where the CPU folds the CRC in:
// a corrupt response, expected or not, is counted as an ICRC error and
// changes nothing but the bytes the expected response will write again
// (the READ's own local buffer, undefined until it completes); the good
// responses then complete the READ.
TEST_F(BadInput, ReadResponseWithABadIcrcIsDroppedAndTheReadCompletesFromTheGoodOnes) {
  const std::uint32_t mtu = me_.mtu;  // 1024: two responses for 2048 bytes
  const Sge local = target_.sge(1024, 2 * mtu);
  WorkRequest w = wr(Opcode::kRdmaRead, &local, 1, 0x10000, 0x1234, 7);
  ASSERT_TRUE(qp_->post({&w, 1}).ok());
  Completion wc[2];
  EXPECT_EQ(cq_->poll({wc, 2}), 0);  // drives the device
  answers_ = Frames{};
  raw_->poll(answers_, 16);
  ASSERT_EQ(answers_.got.size(), 1u);
  ASSERT_EQ(answers_.got[0].h.opcode, static_cast<std::uint8_t>(roce::Opcode::kReadRequest));
  const std::uint32_t psn = answers_.got[0].h.psn;
  const auto response = [&](roce::Opcode op, std::uint32_t at, std::uint8_t fill) {
    return request_frame(op, at, 0, 0, 0, mtu, fill);
  };
  const auto corrupt = [](std::vector<std::uint8_t> f) {
    f[roce::kOuterHeadersLen + roce::kBthLen + roce::kAethLen + 100] ^= 0x08;  // a payload byte
    return f;
  };
  const roce::rc::DeviceCounters before = counters();

  // The expected FIRST, one payload byte flipped.
  EXPECT_TRUE(exchange(corrupt(response(roce::Opcode::kReadResponseFirst, psn, 0xC1))).empty());
  // The LAST ahead of its turn, corrupt too: had it been believed, it would
  // have asked for the responses again (a READ request on the wire).
  EXPECT_TRUE(exchange(corrupt(response(roce::Opcode::kReadResponseLast, roce::psn_add(psn, 1), 0xC2))).empty());
  roce::rc::DeviceCounters c = counters();
  EXPECT_EQ(c.icrc_errors - before.icrc_errors, 2u);
  EXPECT_EQ(c.parse_errors[static_cast<int>(roce::ParseError::kBadIcrc)] -
                before.parse_errors[static_cast<int>(roce::ParseError::kBadIcrc)],
            2u);
  EXPECT_EQ(c.qp.bad_responses, before.qp.bad_responses);
  EXPECT_EQ(c.qp.rx_frames, before.qp.rx_frames) << "a corrupt response counted as received by the QP";
  EXPECT_EQ(c.rx_icrc_in_copy, before.rx_icrc_in_copy);
  EXPECT_TRUE(untouched(0, 1024));
  EXPECT_TRUE(untouched(1024 + mtu, 4096)) << "a corrupt response wrote outside the place its good copy writes";

  // The good ones complete it.
  EXPECT_TRUE(exchange(response(roce::Opcode::kReadResponseFirst, psn, 0xC1)).empty());
  EXPECT_TRUE(exchange(response(roce::Opcode::kReadResponseLast, roce::psn_add(psn, 1), 0xC2), 1).empty());
  EXPECT_EQ(last_wc_.status, WcStatus::kSuccess);
  EXPECT_EQ(last_wc_.wr_id, 7u);
  for (std::size_t i = 0; i < mtu; ++i) {
    ASSERT_EQ(target_.data[1024 + i], 0xC1) << "byte " << i;
    ASSERT_EQ(target_.data[1024 + mtu + i], 0xC2) << "byte " << mtu + i;
  }
  EXPECT_TRUE(untouched(0, 1024));
  EXPECT_TRUE(untouched(1024 + 2 * mtu, 4096));
  c = counters();
  EXPECT_EQ(c.icrc_errors - before.icrc_errors, 2u);
  EXPECT_EQ(c.rx_icrc_in_copy - before.rx_icrc_in_copy, roce::icrc_folds_in_copy() ? 2u : 0u);
}

// A corrupt READ response the engine drops before any QP sees it (unknown
// QPN, a source that is not the peer, another partition) is still counted
// as corrupt, as when parse checks the ICRC, though its check was deferred.
TEST_F(BadInput, CorruptReadResponsesDroppedBeforeAQpAreCountedAsCorrupt) {
  const std::uint32_t mtu = me_.mtu;
  const auto corrupt = [](std::vector<std::uint8_t> f) {
    f[roce::kOuterHeadersLen + roce::kBthLen + roce::kAethLen + 7] ^= 0x01;
    return f;
  };
  const roce::rc::DeviceCounters before = counters();
  // Unknown destination QP: the BTH's QPN bytes changed after the ICRC.
  auto f = request_frame(roce::Opcode::kReadResponseOnly, me_.psn, 0, 0, 0, mtu, 0xE1);
  f[roce::kOuterHeadersLen + 5] ^= 0x40;
  EXPECT_TRUE(exchange(f).empty());
  // Not the peer: built from another address, then a payload byte flipped.
  const std::uint32_t peer = me_.ipv4;
  me_.ipv4 = peer + 1;
  EXPECT_TRUE(exchange(corrupt(request_frame(roce::Opcode::kReadResponseOnly, me_.psn, 0, 0, 0, mtu, 0xE2))).empty());
  me_.ipv4 = peer;
  // Another partition.
  pkey_ = 0x8123;
  EXPECT_TRUE(exchange(corrupt(request_frame(roce::Opcode::kReadResponseOnly, me_.psn, 0, 0, 0, mtu, 0xE3))).empty());
  pkey_ = roce::kDefaultPkey;
  const roce::rc::DeviceCounters c = counters();
  EXPECT_EQ(c.icrc_errors - before.icrc_errors, 3u);
  EXPECT_EQ(c.unknown_qpn, before.unknown_qpn);
  EXPECT_EQ(c.wrong_peer, before.wrong_peer);
  EXPECT_EQ(c.bad_pkey, before.bad_pkey);
  EXPECT_TRUE(untouched(0, 4096));
}

// Regression (review of the deferred ICRC): a READ response, ICRC and all
// valid, for PSNs whose READ request has not left yet (here the second
// chunk of a READ split one packet per request, answered in the same burst
// as the first) is a response to nothing we sent: dropped as a bad
// response, as on_response drops it, not placed and completed.
TEST_F(BadInput, ReadResponseForARequestNotYetSentIsABadResponse) {
  DeviceOptions o;
  o.max_read_request_packets = 1;
  open_device(o);
  const std::uint32_t mtu = me_.mtu;
  const Sge local = target_.sge(0, 2 * mtu);
  WorkRequest w = wr(Opcode::kRdmaRead, &local, 1, 0x10000, 0x1234, 8);
  ASSERT_TRUE(qp_->post({&w, 1}).ok());
  Completion wc[2];
  EXPECT_EQ(cq_->poll({wc, 2}), 0);
  answers_ = Frames{};
  raw_->poll(answers_, 16);
  ASSERT_EQ(answers_.got.size(), 1u) << "one READ request per chunk";
  const std::uint32_t psn = answers_.got[0].h.psn;
  const roce::rc::DeviceCounters before = counters();
  // Both answers in one burst: the second arrives before the device has sent
  // the request it answers.
  const auto first = request_frame(roce::Opcode::kReadResponseOnly, psn, 0, 0, 0, mtu, 0xD1);
  const auto second = request_frame(roce::Opcode::kReadResponseOnly, roce::psn_add(psn, 1), 0, 0, 0, mtu, 0xD2);
  roce::TxFrame t[2] = {{first, {}, {}}, {second, {}, {}}};
  ASSERT_EQ(raw_->transmit({t, 2}), 2u);
  EXPECT_EQ(cq_->poll({wc, 2}), 0) << "the READ completed from a response to a request never sent";
  EXPECT_EQ(counters().qp.bad_responses - before.qp.bad_responses, 1u);
  EXPECT_EQ(target_.data[0], 0xD1);
  EXPECT_TRUE(untouched(mtu, 4096)) << "a response to a request never sent was placed";
  answers_ = Frames{};
  raw_->poll(answers_, 16);
  ASSERT_EQ(answers_.got.size(), 1u);
  EXPECT_EQ(answers_.got[0].h.opcode, static_cast<std::uint8_t>(roce::Opcode::kReadRequest));
  EXPECT_EQ(answers_.got[0].h.psn, roce::psn_add(psn, 1));
  // The real answer to that request completes the READ.
  EXPECT_TRUE(exchange(second, 1).empty());
  EXPECT_EQ(last_wc_.status, WcStatus::kSuccess);
  EXPECT_EQ(last_wc_.wr_id, 8u);
  EXPECT_EQ(target_.data[mtu], 0xD2);
}

// Regression (issue 12, defect 4): the P_Key was never checked. A request
// from another partition is dropped and counted (bad_pkey), as rxe's
// check_keys does; a limited member of our (full) partition still matches.
TEST_F(BadInput, WrongPartitionKeyIsDroppedAndCounted) {
  const std::uint64_t va = target_.addr(0);
  const std::uint32_t rkey = target_.rkey();
  pkey_ = 0x8123;
  EXPECT_TRUE(exchange(write_frame(me_.psn, va, rkey, 64, 0x11)).empty());
  pkey_ = 0x0123;
  EXPECT_TRUE(exchange(write_frame(me_.psn, va, rkey, 64, 0x11)).empty());
  EXPECT_EQ(counters().bad_pkey, 2u);
  EXPECT_TRUE(untouched(0, 4096)) << "a request from another partition wrote memory";
  pkey_ = 0x7FFF;  // limited member of the default partition
  EXPECT_EQ(exchange(write_frame(me_.psn, va, rkey, 64, 0x22)).size(), 1u);
  EXPECT_EQ(target_.data[0], 0x22);
  EXPECT_EQ(counters().bad_pkey, 2u);
}

// Regression (issue 12, defect 10): a RETH DMA length above 2^31 (the
// maximum message size) is an invalid request, whatever the rkey covers.
TEST_F(BadInput, WriteDmaLengthAboveTwoGibIsAnInvalidRequest) {
  const std::uint32_t mtu = me_.mtu;
  auto r = exchange(request_frame(roce::Opcode::kWriteFirst, me_.psn, target_.addr(0), target_.rkey(),
                                  0x80000001u, mtu, 0x11));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].h.aeth_syndrome, roce::make_syndrome(roce::AckType::kNak, roce::kNakInvalidRequest));
  EXPECT_TRUE(untouched(0, 4096));
}

}  // namespace
}  // namespace rma::softroce::testing
