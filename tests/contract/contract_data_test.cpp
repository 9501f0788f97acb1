// Contract suite, data path: RDMA WRITE (with and without immediate), READ,
// SEND/RECV, gather/scatter, inline, atomics, selective signaling and the
// order of completions on one QP.
#include "contract_fixture.hpp"

namespace rma::contract {
namespace {

class DataPath : public Contract {
 protected:
  void SetUp() override {
    Contract::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_NO_FATAL_FAILURE(connect_pair());
    src = buffer(a, kSize, kAllAccess);
    dst = buffer(b, kSize, kAllAccess, 0xEE);
    fill_pattern(src.data, kSize, 1);
  }
  // Sizes around the path MTU (messages of several packets on RoCE).
  std::vector<std::uint32_t> sizes() const {
    const std::uint32_t mtu = std::min(a.dev->caps().path_mtu, b.dev->caps().path_mtu);
    return {1, 7, 64, mtu - 1, mtu, mtu + 1, 3 * mtu + 5, 65536};
  }
  static constexpr std::size_t kSize = 256 * 1024;
  Buffer src, dst;
};

TEST_P(DataPath, RdmaWrite) {
  std::uint64_t off = 0;
  std::uint64_t id = 100;
  for (std::uint32_t len : sizes()) {
    Sge s = src.sge(off, len);
    ASSERT_TRUE(post1(*a.qp, make_wr(Opcode::kRdmaWrite, {&s, 1}, dst.addr(off + 3), dst.rkey(), id)).ok());
    Completion c = wait_one(a);
    EXPECT_EQ(c.wr_id, id);
    EXPECT_EQ(c.status, WcStatus::kSuccess) << wc_status_name(c.status);
    EXPECT_EQ(c.opcode, Opcode::kRdmaWrite);
    EXPECT_EQ(c.qp_num, a.qp->qp_num());
    EXPECT_EQ(std::memcmp(dst.data + off + 3, src.data + off, len), 0) << len;
    EXPECT_EQ(dst.data[off + 2], 0xEE) << len;
    EXPECT_EQ(dst.data[off + 3 + len], 0xEE) << len;
    off += len + 16;
    ++id;
  }
  EXPECT_TRUE(quiet_for(b, milliseconds(5))) << "a WRITE without immediate consumed nothing at the responder";
}

// DeviceCaps::target_needs_polls = false is a promise tools rely on (a
// ping-pong then spins on its buffer without polling): a WRITE and a READ
// complete, and land, while only the initiator polls.
TEST_P(DataPath, OneSidedRequestsNeedNoTargetPollsWhenTheDeviceSaysSo) {
  if (b.dev->caps().target_needs_polls) GTEST_SKIP() << "the device receives in its owner's polls";
  if (a.cq == b.cq) GTEST_SKIP() << "both QPs share one CQ";
  auto poll_initiator_only = [&]() {
    Completion c;
    c.status = WcStatus::kGeneralErr;
    const auto deadline = Clock::now() + kDeadline;
    while (Clock::now() < deadline) {
      const int k = a.cq->poll({&c, 1});
      if (k < 0) ADD_FAILURE() << "CQ overrun: " << a.cq->overrun_reason();
      if (k != 0) return c;
    }
    ADD_FAILURE() << "no completion within " << kDeadline.count() << " ms with the target never polled";
    return c;
  };
  Sge w = src.sge(0, 4096);
  ASSERT_TRUE(post1(*a.qp, make_wr(Opcode::kRdmaWrite, {&w, 1}, dst.addr(8), dst.rkey(), 1)).ok());
  EXPECT_EQ(poll_initiator_only().status, WcStatus::kSuccess);
  EXPECT_EQ(std::memcmp(dst.data + 8, src.data, 4096), 0);
  Sge r = src.sge(8192, 4096);
  ASSERT_TRUE(post1(*a.qp, make_wr(Opcode::kRdmaRead, {&r, 1}, dst.addr(8), dst.rkey(), 2)).ok());
  EXPECT_EQ(poll_initiator_only().status, WcStatus::kSuccess);
  EXPECT_EQ(std::memcmp(src.data + 8192, src.data, 4096), 0);
}

TEST_P(DataPath, RdmaWriteWithImmConsumesAReceive) {
  Sge r = dst.sge(kSize - 64, 64);  // the receive's buffer is not written: WRITE data goes to remote_addr
  ASSERT_TRUE(recv1(*b.qp, {&r, 1}, 500).ok());
  const std::uint32_t len = 3 * a.dev->caps().path_mtu + 1;
  Sge s = src.sge(0, len);
  WorkRequest w = make_wr(Opcode::kRdmaWriteWithImm, {&s, 1}, dst.addr(128), dst.rkey(), 501);
  w.imm_data = 0xA1B2C3D4;
  ASSERT_TRUE(post1(*a.qp, w).ok());
  Completion rc = wait_one(b);
  EXPECT_EQ(rc.wr_id, 500u);
  EXPECT_EQ(rc.status, WcStatus::kSuccess) << wc_status_name(rc.status);
  EXPECT_EQ(rc.opcode, Opcode::kRecvRdmaWithImm);
  EXPECT_TRUE(rc.has_imm);
  EXPECT_EQ(rc.imm_data, 0xA1B2C3D4u);
  EXPECT_EQ(rc.byte_len, len);
  EXPECT_EQ(rc.qp_num, b.qp->qp_num());
  Completion sc = wait_one(a);
  EXPECT_EQ(sc.wr_id, 501u);
  EXPECT_EQ(sc.status, WcStatus::kSuccess);
  // Send-side completions name the base operation, as ibv_wc does
  // (IBV_WC_RDMA_WRITE for a WRITE_WITH_IMM); every provider follows verbs.
  EXPECT_EQ(sc.opcode, Opcode::kRdmaWrite);
  EXPECT_EQ(std::memcmp(dst.data + 128, src.data, len), 0);
  EXPECT_TRUE(dst.all(0xEE, kSize - 64)) << "WRITE_WITH_IMM placed data in the receive buffer";
}

TEST_P(DataPath, RdmaRead) {
  fill_pattern(dst.data, kSize, 2);
  std::memset(src.data, 0x11, kSize);
  std::uint64_t off = 0;
  std::uint64_t id = 200;
  for (std::uint32_t len : sizes()) {
    Sge s = src.sge(off + 5, len);
    ASSERT_TRUE(post1(*a.qp, make_wr(Opcode::kRdmaRead, {&s, 1}, dst.addr(off), dst.rkey(), id)).ok());
    Completion c = wait_one(a);
    EXPECT_EQ(c.wr_id, id);
    EXPECT_EQ(c.status, WcStatus::kSuccess) << wc_status_name(c.status);
    EXPECT_EQ(c.opcode, Opcode::kRdmaRead);
    EXPECT_EQ(c.byte_len, len);
    EXPECT_EQ(std::memcmp(src.data + off + 5, dst.data + off, len), 0) << len;
    EXPECT_EQ(src.data[off + 4], 0x11) << len;
    EXPECT_EQ(src.data[off + 5 + len], 0x11) << len;
    off += len + 16;
    ++id;
  }
}

TEST_P(DataPath, SendAndSendWithImmFillPostedReceivesInOrder) {
  const std::uint32_t len1 = 100, len2 = 2 * a.dev->caps().path_mtu + 3;
  Sge r1 = dst.sge(0, 4096), r2 = dst.sge(8192, 16384);
  ASSERT_TRUE(recv1(*b.qp, {&r1, 1}, 31).ok());
  ASSERT_TRUE(recv1(*b.qp, {&r2, 1}, 32).ok());
  Sge s1 = src.sge(0, len1), s2 = src.sge(1000, len2);
  WorkRequest w2 = make_wr(Opcode::kSendWithImm, {&s2, 1}, 0, 0, 42);
  w2.imm_data = 0x01020304;
  WorkRequest list[2] = {make_wr(Opcode::kSend, {&s1, 1}, 0, 0, 41), w2};
  ASSERT_TRUE(a.qp->post(list).ok());
  auto rcs = wait(b, 2);
  ASSERT_EQ(rcs.size(), 2u);
  EXPECT_EQ(rcs[0].wr_id, 31u);
  EXPECT_EQ(rcs[0].status, WcStatus::kSuccess);
  EXPECT_EQ(rcs[0].opcode, Opcode::kRecv);
  EXPECT_EQ(rcs[0].byte_len, len1);
  EXPECT_FALSE(rcs[0].has_imm);
  EXPECT_EQ(rcs[1].wr_id, 32u);
  EXPECT_EQ(rcs[1].status, WcStatus::kSuccess);
  EXPECT_EQ(rcs[1].opcode, Opcode::kRecv);
  EXPECT_EQ(rcs[1].byte_len, len2);
  EXPECT_TRUE(rcs[1].has_imm);
  EXPECT_EQ(rcs[1].imm_data, 0x01020304u);
  auto scs = wait(a, 2);
  ASSERT_EQ(scs.size(), 2u);
  EXPECT_EQ(scs[0].wr_id, 41u);
  EXPECT_EQ(scs[0].opcode, Opcode::kSend);
  EXPECT_EQ(scs[1].wr_id, 42u);
  EXPECT_EQ(scs[1].opcode, Opcode::kSend);  // IBV_WC_SEND for a SEND_WITH_IMM, as in verbs
  EXPECT_EQ(std::memcmp(dst.data, src.data, len1), 0);
  EXPECT_EQ(dst.data[len1], 0xEE);
  EXPECT_EQ(std::memcmp(dst.data + 8192, src.data + 1000, len2), 0);
  EXPECT_EQ(dst.data[8192 + len2], 0xEE);
}

TEST_P(DataPath, MultiSgeGatherAndScatter) {
  ASSERT_GE(config(a).max_send_sge, 3u);
  ASSERT_GE(config(b).max_recv_sge, 2u);
  // WRITE gathers three local pieces into one remote range.
  Sge g[3] = {src.sge(0, 10), src.sge(5000, 3000), src.sge(100, 1)};
  ASSERT_TRUE(post1(*a.qp, make_wr(Opcode::kRdmaWrite, g, dst.addr(64), dst.rkey(), 1)).ok());
  EXPECT_EQ(wait_one(a).status, WcStatus::kSuccess);
  EXPECT_EQ(std::memcmp(dst.data + 64, src.data, 10), 0);
  EXPECT_EQ(std::memcmp(dst.data + 74, src.data + 5000, 3000), 0);
  EXPECT_EQ(dst.data[3074], src.data[100]);
  EXPECT_EQ(dst.data[3075], 0xEE);
  // READ scatters one remote range into three local pieces.
  Buffer local = buffer(a, 16384, kAllAccess, 0x11);
  Sge sc[3] = {local.sge(0, 7), local.sge(1000, 2000), local.sge(9000, 93)};
  ASSERT_TRUE(post1(*a.qp, make_wr(Opcode::kRdmaRead, sc, dst.addr(64), dst.rkey(), 2)).ok());
  Completion rd = wait_one(a);
  EXPECT_EQ(rd.status, WcStatus::kSuccess);
  EXPECT_EQ(rd.byte_len, 2100u);
  EXPECT_EQ(std::memcmp(local.data, dst.data + 64, 7), 0);
  EXPECT_EQ(std::memcmp(local.data + 1000, dst.data + 71, 2000), 0);
  EXPECT_EQ(std::memcmp(local.data + 9000, dst.data + 2071, 93), 0);
  EXPECT_EQ(local.data[7], 0x11);
  EXPECT_EQ(local.data[3000], 0x11);
  EXPECT_EQ(local.data[9093], 0x11);
  // SEND of three pieces lands in a receive of two pieces, split differently.
  Sge r[2] = {dst.sge(20000, 50), dst.sge(30000, 5000)};
  ASSERT_TRUE(recv1(*b.qp, r, 3).ok());
  ASSERT_TRUE(post1(*a.qp, make_wr(Opcode::kSend, g, 0, 0, 4)).ok());
  Completion rc = wait_one(b);
  EXPECT_EQ(rc.status, WcStatus::kSuccess);
  EXPECT_EQ(rc.byte_len, 3011u);
  std::vector<std::uint8_t> msg(src.data, src.data + 10);
  msg.insert(msg.end(), src.data + 5000, src.data + 8000);
  msg.push_back(src.data[100]);
  EXPECT_EQ(std::memcmp(dst.data + 20000, msg.data(), 50), 0);
  EXPECT_EQ(std::memcmp(dst.data + 30000, msg.data() + 50, 2961), 0);
  EXPECT_EQ(dst.data[20050], 0xEE);
  EXPECT_EQ(dst.data[30000 + 2961], 0xEE);
  EXPECT_EQ(wait_one(a).status, WcStatus::kSuccess);
}

TEST_P(DataPath, InlineIsCopiedAtPostAndIgnoresLkeys) {
  const std::uint32_t max_inline = config(a).max_inline_data;
  ASSERT_GE(max_inline, 16u);
  // Unregistered memory, lkey 0: inline never looks at keys.
  std::vector<std::uint8_t> payload(max_inline);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::uint8_t>(i + 1);
  const std::vector<std::uint8_t> sent = payload;
  Sge s[2] = {Sge{reinterpret_cast<std::uint64_t>(payload.data()), 5, 0},
              Sge{reinterpret_cast<std::uint64_t>(payload.data() + 5), max_inline - 5, 0}};
  ASSERT_TRUE(post1(*a.qp, make_wr(Opcode::kRdmaWrite, s, dst.addr(32), dst.rkey(), 1, kWrSignaled | kWrInline)).ok());
  std::memset(payload.data(), 0, payload.size());  // the caller may reuse the buffer once post() returns
  EXPECT_EQ(wait_one(a).status, WcStatus::kSuccess);
  EXPECT_EQ(std::memcmp(dst.data + 32, sent.data(), max_inline), 0);

  Sge r = dst.sge(4096, 4096);
  ASSERT_TRUE(recv1(*b.qp, {&r, 1}, 2).ok());
  payload = sent;
  ASSERT_TRUE(post1(*a.qp, make_wr(Opcode::kSend, s, 0, 0, 3, kWrSignaled | kWrInline)).ok());
  std::memset(payload.data(), 0, payload.size());
  Completion rc = wait_one(b);
  EXPECT_EQ(rc.status, WcStatus::kSuccess);
  EXPECT_EQ(rc.byte_len, max_inline);
  EXPECT_EQ(std::memcmp(dst.data + 4096, sent.data(), max_inline), 0);
  EXPECT_EQ(wait_one(a).status, WcStatus::kSuccess);
}

TEST_P(DataPath, AtomicFetchAdd) {
  dst.set_u64(0, 1000);
  dst.set_u64(8, 0xFFFFFFFFFFFFFFFFull);
  Sge s = src.sge(0, 8);
  WorkRequest w = make_wr(Opcode::kAtomicFetchAdd, {&s, 1}, dst.addr(0), dst.rkey(), 1);
  w.compare_add = 234;
  ASSERT_TRUE(post1(*a.qp, w).ok());
  Completion c = wait_one(a);
  EXPECT_EQ(c.status, WcStatus::kSuccess) << wc_status_name(c.status);
  EXPECT_EQ(c.opcode, Opcode::kAtomicFetchAdd);
  EXPECT_EQ(c.byte_len, 8u);
  EXPECT_EQ(src.u64(0), 1000u);
  EXPECT_EQ(dst.u64(0), 1234u);
  // Wraps modulo 2^64; the result lands where the SGE says.
  Sge s2 = src.sge(24, 8);
  w = make_wr(Opcode::kAtomicFetchAdd, {&s2, 1}, dst.addr(8), dst.rkey(), 2);
  w.compare_add = 2;
  ASSERT_TRUE(post1(*a.qp, w).ok());
  EXPECT_EQ(wait_one(a).status, WcStatus::kSuccess);
  EXPECT_EQ(src.u64(24), 0xFFFFFFFFFFFFFFFFull);
  EXPECT_EQ(dst.u64(8), 1u);
  EXPECT_TRUE(dst.all(0xEE, 16));
}

TEST_P(DataPath, AtomicCompareSwap) {
  dst.set_u64(64, 77);
  Sge s = src.sge(0, 8);
  WorkRequest w = make_wr(Opcode::kAtomicCmpSwap, {&s, 1}, dst.addr(64), dst.rkey(), 1);
  w.compare_add = 5;  // does not match
  w.swap = 99;
  ASSERT_TRUE(post1(*a.qp, w).ok());
  Completion c = wait_one(a);
  EXPECT_EQ(c.status, WcStatus::kSuccess) << wc_status_name(c.status);
  EXPECT_EQ(c.opcode, Opcode::kAtomicCmpSwap);
  EXPECT_EQ(c.byte_len, 8u);
  EXPECT_EQ(src.u64(0), 77u);
  EXPECT_EQ(dst.u64(64), 77u) << "swapped although the compare did not match";
  w.compare_add = 77;  // matches
  w.wr_id = 2;
  ASSERT_TRUE(post1(*a.qp, w).ok());
  EXPECT_EQ(wait_one(a).status, WcStatus::kSuccess);
  EXPECT_EQ(src.u64(0), 77u);
  EXPECT_EQ(dst.u64(64), 99u);
  EXPECT_TRUE(dst.all(0xEE, 0, 64));
  EXPECT_TRUE(dst.all(0xEE, 72));
}

TEST_P(DataPath, UnsignaledRequestsAreCoveredByALaterSignaledOne) {
  // Queue of 4: three unsignaled + one signaled fill it; polling the one
  // completion frees all four slots, round after round.
  QpConfig ca = config(a);
  ca.max_send_wr = 4;
  ASSERT_NO_FATAL_FAILURE(connect_pair(ca, config(b)));
  for (std::uint64_t round = 0; round < 8; ++round) {
    WorkRequest w[4];
    Sge s[4];
    for (std::uint64_t i = 0; i < 4; ++i) {
      const std::uint64_t n = round * 4 + i;
      s[i] = src.sge(n * 8, 8);
      w[i] = make_wr(Opcode::kRdmaWrite, {&s[i], 1}, dst.addr(n * 8), dst.rkey(), 1000 + n, i == 3 ? kWrSignaled : 0u);
    }
    PostResult pr = a.qp->post(w);
    ASSERT_TRUE(pr.ok()) << "round " << round << ": " << pr.to_status().to_string();
    auto wcs = wait(a, 1);
    ASSERT_EQ(wcs.size(), 1u) << "round " << round;
    EXPECT_EQ(wcs[0].wr_id, 1000 + round * 4 + 3) << "only the signaled request completes";
    EXPECT_EQ(wcs[0].status, WcStatus::kSuccess);
    // Everything before the signaled request has been done when it completes.
    EXPECT_EQ(std::memcmp(dst.data + round * 32, src.data + round * 32, 32), 0) << "round " << round;
  }
  EXPECT_TRUE(quiet_for(a, milliseconds(10)));
  EXPECT_TRUE(dst.all(0xEE, 8 * 32));
}

TEST_P(DataPath, CompletionsOfOneQpArriveInPostOrder) {
  dst.set_u64(0, 0);
  constexpr std::uint64_t kCount = 48;
  Sge r = dst.sge(60000, 64);
  for (std::uint64_t i = 0; i < kCount / 4; ++i) ASSERT_TRUE(recv1(*b.qp, {&r, 1}, 5000 + i).ok());
  std::vector<Sge> sges(kCount);
  std::vector<WorkRequest> list;
  for (std::uint64_t i = 0; i < kCount; ++i) {
    switch (i % 4) {
      case 0:
        sges[i] = src.sge(64 + i * 64, 64);
        list.push_back(make_wr(Opcode::kRdmaWrite, {&sges[i], 1}, dst.addr(64 + i * 64), dst.rkey(), i));
        break;
      case 1:
        sges[i] = src.sge(20000 + i * 64, 64);
        list.push_back(make_wr(Opcode::kRdmaRead, {&sges[i], 1}, dst.addr(40000), dst.rkey(), i));
        break;
      case 2: {
        sges[i] = src.sge(50000 + i * 8, 8);
        WorkRequest w = make_wr(Opcode::kAtomicFetchAdd, {&sges[i], 1}, dst.addr(0), dst.rkey(), i);
        w.compare_add = 1;
        list.push_back(w);
        break;
      }
      default:
        sges[i] = src.sge(i, 16);
        list.push_back(make_wr(Opcode::kSend, {&sges[i], 1}, 0, 0, i));
        break;
    }
  }
  ASSERT_TRUE(a.qp->post(list).ok());
  auto wcs = wait(a, kCount);
  ASSERT_EQ(wcs.size(), kCount);
  for (std::uint64_t i = 0; i < kCount; ++i) {
    EXPECT_EQ(wcs[i].wr_id, i) << "completion " << i;
    EXPECT_EQ(wcs[i].status, WcStatus::kSuccess) << "completion " << i;
    EXPECT_EQ(wcs[i].opcode, list[i].opcode) << "completion " << i;
  }
  auto rcs = wait(b, kCount / 4);
  ASSERT_EQ(rcs.size(), kCount / 4);
  for (std::uint64_t i = 0; i < kCount / 4; ++i) EXPECT_EQ(rcs[i].wr_id, 5000 + i);
  EXPECT_EQ(dst.u64(0), kCount / 4);
  // The fetch-adds saw each other in order: 0, 1, 2, ...
  for (std::uint64_t i = 2, n = 0; i < kCount; i += 4, ++n) EXPECT_EQ(src.u64(50000 + i * 8), n);
}

INSTANTIATE_TEST_SUITE_P(contract, DataPath, ::testing::ValuesIn(kProviders), provider_param_name);

}  // namespace
}  // namespace rma::contract
