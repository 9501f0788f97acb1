// Self provider: every bad input. Synchronous post() rejections, local and
// remote protection errors, length errors, lost peers — and in every case
// that nothing changed in the target memory.
#include "self_test_util.hpp"
#include "swkit/vendor_err.hpp"

namespace rma::self::testing {
namespace {

class SelfErrors : public SelfFixture {
 protected:
  void SetUp() override {
    SelfFixture::SetUp();
    QpConfig c = config(4);
    c.max_inline_data = 16;
    make_pair(c, c);
    src = buffer(4096, kAllAccess, 0x5A);
    dst = buffer(4096, kAllAccess, 0xEE);
  }

  // Posting `wr` is rejected with (code, reason) at index 0; nothing ran.
  void expect_rejected(const WorkRequest& wr, StatusCode code, const char* reason) {
    WorkRequest list[2] = {wr, wr};
    PostResult pr = a->post(list);
    EXPECT_EQ(pr.code, code) << reason;
    EXPECT_EQ(pr.bad_index, 0u);
    ASSERT_NE(pr.reason, nullptr);
    EXPECT_STREQ(pr.reason, reason);
    EXPECT_NE(pr.to_status().message().find(reason), std::string::npos);
    EXPECT_TRUE(drain().empty());
    EXPECT_TRUE(dst.all(0xEE));
    EXPECT_EQ(a->state(), QpState::kRts);
  }

  // Posting succeeds, the request fails with `status`, the target is intact,
  // and both QPs are left in the given states.
  void expect_failure(const WorkRequest& wr, WcStatus status, std::uint32_t vendor_err,
                      QpState a_after, QpState b_after) {
    ASSERT_TRUE(post1(*a, wr).ok());
    auto wcs = drain();
    ASSERT_GE(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].status, status) << wc_status_name(wcs[0].status);
    EXPECT_EQ(wcs[0].vendor_err, vendor_err);
    EXPECT_EQ(wcs[0].wr_id, wr.wr_id);
    EXPECT_EQ(wcs[0].qp_num, a->qp_num());
    EXPECT_TRUE(dst.all(0xEE));
    EXPECT_EQ(a->state(), a_after);
    EXPECT_EQ(b->state(), b_after);
  }

  Buffer src, dst;
};

// ------------------------------------------------------------ synchronous rejections

TEST_F(SelfErrors, TooManySges) {
  Sge s[5] = {src.sge(0, 1), src.sge(1, 1), src.sge(2, 1), src.sge(3, 1), src.sge(4, 1)};
  expect_rejected(make_wr(Opcode::kRdmaWrite, s, dst.addr(), dst.rkey()), StatusCode::kInvalidArgument,
                  "too many SGEs");
  // Exactly max_send_sge (4) is fine.
  ASSERT_TRUE(post1(*a, make_wr(Opcode::kRdmaWrite, {s, 4}, dst.addr(), dst.rkey())).ok());
  EXPECT_EQ(one().byte_len, 4u);
}

TEST_F(SelfErrors, AtomicShape) {
  Sge four = src.sge(0, 4);
  Sge eight[2] = {src.sge(0, 8), src.sge(8, 8)};
  for (Opcode op : {Opcode::kAtomicFetchAdd, Opcode::kAtomicCmpSwap}) {
    expect_rejected(make_wr(op, {&four, 1}, dst.addr(), dst.rkey()), StatusCode::kInvalidArgument,
                    "atomic needs exactly one 8-byte SGE");
    expect_rejected(make_wr(op, eight, dst.addr(), dst.rkey()), StatusCode::kInvalidArgument,
                    "atomic needs exactly one 8-byte SGE");
    expect_rejected(make_wr(op, {}, dst.addr(), dst.rkey()), StatusCode::kInvalidArgument,
                    "atomic needs exactly one 8-byte SGE");
    for (std::uint64_t off : {1u, 4u, 7u}) {
      expect_rejected(make_wr(op, {eight, 1}, dst.addr(off), dst.rkey()), StatusCode::kInvalidArgument,
                      "atomic remote_addr not 8-byte aligned");
    }
    expect_rejected(make_wr(op, {eight, 1}, dst.addr(), dst.rkey(), 1, kWrSignaled | kWrInline),
                    StatusCode::kInvalidArgument, "inline is only valid for SEND and RDMA WRITE");
  }
}

TEST_F(SelfErrors, InlineLimits) {
  Sge s = src.sge(0, 17);
  expect_rejected(make_wr(Opcode::kRdmaWrite, {&s, 1}, dst.addr(), dst.rkey(), 1, kWrSignaled | kWrInline),
                  StatusCode::kInvalidArgument, "inline data exceeds max_inline_data");
  expect_rejected(make_wr(Opcode::kRdmaRead, {&s, 1}, dst.addr(), dst.rkey(), 1, kWrSignaled | kWrInline),
                  StatusCode::kInvalidArgument, "inline is only valid for SEND and RDMA WRITE");
  s.length = 16;
  ASSERT_TRUE(post1(*a, make_wr(Opcode::kRdmaWrite, {&s, 1}, dst.addr(), dst.rkey(), 1,
                                kWrSignaled | kWrInline)).ok());
  EXPECT_EQ(one().status, WcStatus::kSuccess);
}

TEST_F(SelfErrors, BadOpcodeAndFlags) {
  Sge s = src.sge(0, 8);
  for (Opcode op : {Opcode::kRecv, Opcode::kRecvRdmaWithImm, static_cast<Opcode>(200)}) {
    expect_rejected(make_wr(op, {&s, 1}, dst.addr(), dst.rkey()), StatusCode::kInvalidArgument,
                    "opcode not valid for post");
  }
  expect_rejected(make_wr(Opcode::kRdmaWrite, {&s, 1}, dst.addr(), dst.rkey(), 1, 1u << 9),
                  StatusCode::kInvalidArgument, "unknown work request flag bits");
}

TEST_F(SelfErrors, MessageTooLong) {
  // 4 SGEs of 1 GiB: 4 GiB > max_msg_size (2 GiB). Nothing is dereferenced.
  Sge s[4];
  for (auto& x : s) x = Sge{src.addr(), 1u << 30, src.mr->lkey()};
  expect_rejected(make_wr(Opcode::kRdmaWrite, s, dst.addr(), dst.rkey()), StatusCode::kInvalidArgument,
                  "message exceeds max_msg_size");
}

TEST_F(SelfErrors, StopsAtFirstInvalidRequest) {
  Sge good = src.sge(0, 8);
  Sge bad[5] = {good, good, good, good, good};
  WorkRequest list[3] = {make_wr(Opcode::kRdmaWrite, {&good, 1}, dst.addr(), dst.rkey(), 1),
                         make_wr(Opcode::kRdmaWrite, bad, dst.addr(8), dst.rkey(), 2),
                         make_wr(Opcode::kRdmaWrite, {&good, 1}, dst.addr(16), dst.rkey(), 3)};
  PostResult pr = a->post(list);
  EXPECT_EQ(pr.code, StatusCode::kInvalidArgument);
  EXPECT_EQ(pr.bad_index, 1u);
  auto wcs = drain();
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].wr_id, 1u);
  EXPECT_EQ(dst.data[7], 0x5A);
  EXPECT_EQ(dst.data[8], 0xEE);
  EXPECT_EQ(dst.data[16], 0xEE);
}

TEST_F(SelfErrors, ReceiveRejections) {
  Sge s[5] = {dst.sge(0, 1), dst.sge(1, 1), dst.sge(2, 1), dst.sge(3, 1), dst.sge(4, 1)};
  RecvRequest r[2];
  r[0].sgl = {s, 4};
  r[1].sgl = s;
  PostResult pr = b->post_recv(r);
  EXPECT_EQ(pr.code, StatusCode::kInvalidArgument);
  EXPECT_EQ(pr.bad_index, 1u);
  EXPECT_STREQ(pr.reason, "too many SGEs");
}

// ------------------------------------------------------------ local protection

TEST_F(SelfErrors, BadLkey) {
  Sge s = src.sge(0, 8);
  s.lkey = src.mr->lkey() ^ 0x1;  // names no region
  expect_failure(make_wr(Opcode::kRdmaWrite, {&s, 1}, dst.addr(), dst.rkey()), WcStatus::kLocProtErr,
                 swkit::kVeBadLkey, QpState::kError, QpState::kRts);
}

TEST_F(SelfErrors, RkeyUsedAsLkey) {
  Sge s = src.sge(0, 8);
  s.lkey = src.rkey();
  expect_failure(make_wr(Opcode::kRdmaWrite, {&s, 1}, dst.addr(), dst.rkey()), WcStatus::kLocProtErr,
                 swkit::kVeBadLkey, QpState::kError, QpState::kRts);
}

TEST_F(SelfErrors, LkeyFromAnotherPd) {
  auto pd2 = *device->alloc_pd();
  Buffer other = buffer(64, kAllAccess, 0, pd2.get());
  Sge s = other.sge(0, 8);
  expect_failure(make_wr(Opcode::kRdmaWrite, {&s, 1}, dst.addr(), dst.rkey()), WcStatus::kLocProtErr,
                 swkit::kVeLkeyOtherPd, QpState::kError, QpState::kRts);
}

TEST_F(SelfErrors, LocalSgeOutOfBoundsByOneByte) {
  Sge s = src.sge(4000, 97);  // ends one byte past the 4096-byte region
  expect_failure(make_wr(Opcode::kRdmaWrite, {&s, 1}, dst.addr(), dst.rkey()), WcStatus::kLocProtErr,
                 swkit::kVeLocalOutOfBounds, QpState::kError, QpState::kRts);
}

TEST_F(SelfErrors, LocalSgeStartsBeforeRegion) {
  Sge s{src.addr() - 1, 8, src.mr->lkey()};
  expect_failure(make_wr(Opcode::kRdmaWrite, {&s, 1}, dst.addr(), dst.rkey()), WcStatus::kLocProtErr,
                 swkit::kVeLocalOutOfBounds, QpState::kError, QpState::kRts);
}

TEST_F(SelfErrors, ReadIntoRegionWithoutLocalWrite) {
  Buffer ro = buffer(64, Access::kRemoteRead, 0x33);
  Sge s = ro.sge(0, 8);
  expect_failure(make_wr(Opcode::kRdmaRead, {&s, 1}, dst.addr(), dst.rkey()), WcStatus::kLocProtErr,
                 swkit::kVeNoLocalWrite, QpState::kError, QpState::kRts);
  EXPECT_TRUE(ro.all(0x33));
}

TEST_F(SelfErrors, AtomicResultWithoutLocalWrite) {
  Buffer ro = buffer(64, Access::kNone, 0x33);
  Sge s = ro.sge(0, 8);
  WorkRequest wr = make_wr(Opcode::kAtomicFetchAdd, {&s, 1}, dst.addr(), dst.rkey());
  wr.compare_add = 1;
  expect_failure(wr, WcStatus::kLocProtErr, swkit::kVeNoLocalWrite, QpState::kError, QpState::kRts);
  EXPECT_TRUE(ro.all(0x33));
}

TEST_F(SelfErrors, DestroyedLocalRegion) {
  Sge s = src.sge(0, 8);
  src.mr.reset();
  expect_failure(make_wr(Opcode::kRdmaWrite, {&s, 1}, dst.addr(), dst.rkey()), WcStatus::kLocProtErr,
                 swkit::kVeBadLkey, QpState::kError, QpState::kRts);
}

// ------------------------------------------------------------ remote protection

TEST_F(SelfErrors, BadRkey) {
  Sge s = src.sge(0, 8);
  expect_failure(make_wr(Opcode::kRdmaWrite, {&s, 1}, dst.addr(), dst.rkey() ^ 0x1),
                 WcStatus::kRemAccessErr, swkit::kVeBadRkey, QpState::kError, QpState::kError);
}

TEST_F(SelfErrors, LkeyUsedAsRkey) {
  Sge s = src.sge(0, 8);
  expect_failure(make_wr(Opcode::kRdmaWrite, {&s, 1}, dst.addr(), dst.mr->lkey()),
                 WcStatus::kRemAccessErr, swkit::kVeBadRkey, QpState::kError, QpState::kError);
}

TEST_F(SelfErrors, RkeyOfAnotherPdIsRejectedByResponder) {
  auto pd2 = *device->alloc_pd();
  Buffer other = buffer(64, kAllAccess, 0xEE, pd2.get());
  Sge s = src.sge(0, 8);
  expect_failure(make_wr(Opcode::kRdmaWrite, {&s, 1}, other.addr(), other.rkey()),
                 WcStatus::kRemAccessErr, swkit::kVeRkeyOtherPd, QpState::kError, QpState::kError);
  EXPECT_TRUE(other.all(0xEE));
}

TEST_F(SelfErrors, WriteWithoutRemoteWrite) {
  Buffer target = buffer(64, Access::kLocalWrite | Access::kRemoteRead | Access::kRemoteAtomic, 0xEE);
  Sge s = src.sge(0, 8);
  expect_failure(make_wr(Opcode::kRdmaWrite, {&s, 1}, target.addr(), target.rkey()),
                 WcStatus::kRemAccessErr, swkit::kVeNoRemoteRight, QpState::kError, QpState::kError);
  EXPECT_TRUE(target.all(0xEE));
}

TEST_F(SelfErrors, ReadWithoutRemoteRead) {
  Buffer target = buffer(64, Access::kLocalWrite | Access::kRemoteWrite, 0x44);
  Buffer local = buffer(64, kAllAccess, 0xEE);
  Sge s = local.sge(0, 8);
  expect_failure(make_wr(Opcode::kRdmaRead, {&s, 1}, target.addr(), target.rkey()),
                 WcStatus::kRemAccessErr, swkit::kVeNoRemoteRight, QpState::kError, QpState::kError);
  EXPECT_TRUE(local.all(0xEE));
}

TEST_F(SelfErrors, AtomicWithoutRemoteAtomic) {
  Buffer target = buffer(64, Access::kLocalWrite | Access::kRemoteWrite | Access::kRemoteRead, 0xEE);
  Buffer local = buffer(64, kAllAccess, 0x11);
  Sge s = local.sge(0, 8);
  WorkRequest wr = make_wr(Opcode::kAtomicCmpSwap, {&s, 1}, target.addr(), target.rkey());
  wr.compare_add = 0xEEEEEEEEEEEEEEEEull;
  wr.swap = 1;
  expect_failure(wr, WcStatus::kRemAccessErr, swkit::kVeNoRemoteRight, QpState::kError, QpState::kError);
  EXPECT_TRUE(target.all(0xEE));
  EXPECT_TRUE(local.all(0x11));
}

TEST_F(SelfErrors, RemoteOutOfBoundsByOneByte) {
  Sge s = src.sge(0, 97);
  expect_failure(make_wr(Opcode::kRdmaWrite, {&s, 1}, dst.addr(4000), dst.rkey()),
                 WcStatus::kRemAccessErr, swkit::kVeRemoteOutOfBounds, QpState::kError, QpState::kError);
}

TEST_F(SelfErrors, RemoteStartsBeforeRegion) {
  Sge s = src.sge(0, 8);
  expect_failure(make_wr(Opcode::kRdmaWrite, {&s, 1}, dst.addr() - 1, dst.rkey()),
                 WcStatus::kRemAccessErr, swkit::kVeRemoteOutOfBounds, QpState::kError, QpState::kError);
}

TEST_F(SelfErrors, RemoteRangeThatWraps) {
  Sge s = src.sge(0, 16);
  expect_failure(make_wr(Opcode::kRdmaWrite, {&s, 1}, ~std::uint64_t{0} - 7, dst.rkey()),
                 WcStatus::kRemAccessErr, swkit::kVeRemoteOutOfBounds, QpState::kError, QpState::kError);
}

TEST_F(SelfErrors, ReadOutOfBoundsByOneByte) {
  Buffer local = buffer(128, kAllAccess, 0x99);
  Sge s = local.sge(0, 65);
  expect_failure(make_wr(Opcode::kRdmaRead, {&s, 1}, dst.addr(4096 - 64), dst.rkey()),
                 WcStatus::kRemAccessErr, swkit::kVeRemoteOutOfBounds, QpState::kError, QpState::kError);
  EXPECT_TRUE(local.all(0x99));
}

TEST_F(SelfErrors, AtomicOnLastWordFitsAndOnePastFails) {
  Sge s = src.sge(0, 8);
  WorkRequest wr = make_wr(Opcode::kAtomicFetchAdd, {&s, 1}, dst.addr(4096), dst.rkey());
  wr.compare_add = 1;
  expect_failure(wr, WcStatus::kRemAccessErr, swkit::kVeRemoteOutOfBounds, QpState::kError, QpState::kError);
}

TEST_F(SelfErrors, DestroyedRemoteRegion) {
  const std::uint64_t addr = dst.addr();
  const std::uint32_t rkey = dst.rkey();
  Buffer keep = std::move(dst);
  keep.mr.reset();
  dst = buffer(8, kAllAccess, 0xEE);  // expect_failure checks this one
  Sge s = src.sge(0, 8);
  expect_failure(make_wr(Opcode::kRdmaWrite, {&s, 1}, addr, rkey), WcStatus::kRemAccessErr,
                 swkit::kVeBadRkey, QpState::kError, QpState::kError);
  EXPECT_TRUE(keep.all(0xEE));
}

TEST_F(SelfErrors, WriteWithImmBadRkeyFlushesTheReceive) {
  Sge r = dst.sge(0, 8);
  ASSERT_TRUE(recv1(*b, {&r, 1}, 77).ok());
  Sge s = src.sge(0, 8);
  WorkRequest wr = make_wr(Opcode::kRdmaWriteWithImm, {&s, 1}, dst.addr(), 0x12345678, 5);
  ASSERT_TRUE(post1(*a, wr).ok());
  auto wcs = drain();
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].wr_id, 5u);
  EXPECT_EQ(wcs[0].status, WcStatus::kRemAccessErr);
  EXPECT_EQ(wcs[1].wr_id, 77u);
  EXPECT_EQ(wcs[1].status, WcStatus::kWrFlushErr);
  EXPECT_TRUE(dst.all(0xEE));
  EXPECT_EQ(b->state(), QpState::kError);
}

// ------------------------------------------------------------ SEND length and receive buffers

TEST_F(SelfErrors, SendLongerThanReceive) {
  Sge r[2] = {dst.sge(0, 10), dst.sge(100, 5)};
  ASSERT_TRUE(recv1(*b, r, 50).ok());
  Sge r2 = dst.sge(200, 100);
  ASSERT_TRUE(recv1(*b, {&r2, 1}, 51).ok());
  Sge s = src.sge(0, 16);
  ASSERT_TRUE(post1(*a, make_wr(Opcode::kSend, {&s, 1}, 0, 0, 9)).ok());
  auto wcs = drain();
  ASSERT_EQ(wcs.size(), 3u);
  EXPECT_EQ(wcs[0].wr_id, 50u);
  EXPECT_EQ(wcs[0].status, WcStatus::kLocLenErr);
  EXPECT_EQ(wcs[0].qp_num, b->qp_num());
  EXPECT_EQ(wcs[1].wr_id, 9u);
  EXPECT_EQ(wcs[1].status, WcStatus::kRemInvReqErr);
  EXPECT_EQ(wcs[2].wr_id, 51u);
  EXPECT_EQ(wcs[2].status, WcStatus::kWrFlushErr);
  EXPECT_TRUE(dst.all(0xEE));
  EXPECT_EQ(a->state(), QpState::kError);
  EXPECT_EQ(b->state(), QpState::kError);
}

TEST_F(SelfErrors, ReceiveBufferWithoutLocalWrite) {
  Buffer ro = buffer(64, Access::kRemoteRead, 0x22);
  Sge r = ro.sge(0, 64);
  ASSERT_TRUE(recv1(*b, {&r, 1}, 60).ok());
  Sge s = src.sge(0, 8);
  ASSERT_TRUE(post1(*a, make_wr(Opcode::kSend, {&s, 1}, 0, 0, 61)).ok());
  auto wcs = drain();
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].wr_id, 60u);
  EXPECT_EQ(wcs[0].status, WcStatus::kLocProtErr);
  EXPECT_EQ(wcs[1].wr_id, 61u);
  EXPECT_EQ(wcs[1].status, WcStatus::kRemOpErr);
  EXPECT_TRUE(ro.all(0x22));
}

TEST_F(SelfErrors, ReceiveBufferWithBadLkey) {
  Sge r = dst.sge(0, 64);
  r.lkey ^= 0x1;
  ASSERT_TRUE(recv1(*b, {&r, 1}, 60).ok());
  Sge s = src.sge(0, 8);
  ASSERT_TRUE(post1(*a, make_wr(Opcode::kSend, {&s, 1}, 0, 0, 61)).ok());
  auto wcs = drain();
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].status, WcStatus::kLocProtErr);
  EXPECT_EQ(wcs[0].vendor_err, swkit::kVeRecvBufferInvalid);
  EXPECT_EQ(wcs[1].status, WcStatus::kRemOpErr);
  EXPECT_TRUE(dst.all(0xEE));
}

// ------------------------------------------------------------ unreachable peer

TEST_F(SelfErrors, DestroyedPeer) {
  b.reset();
  Sge s = src.sge(0, 8);
  ASSERT_TRUE(post1(*a, make_wr(Opcode::kRdmaWrite, {&s, 1}, dst.addr(), dst.rkey(), 3)).ok());
  Completion c = one();
  EXPECT_EQ(c.status, WcStatus::kRetryExcErr);
  EXPECT_EQ(c.vendor_err, swkit::kVePeerGone);
  EXPECT_TRUE(dst.all(0xEE));
  EXPECT_EQ(a->state(), QpState::kError);
}

TEST_F(SelfErrors, PeerNotConnectedYet) {
  auto lonely = make_qp(config());
  auto waiting = make_qp(config());
  ASSERT_TRUE(lonely->connect(*waiting->local_address()).ok());  // waiting stays in RESET
  Sge s = src.sge(0, 8);
  ASSERT_TRUE(post1(*lonely, make_wr(Opcode::kRdmaWrite, {&s, 1}, dst.addr(), dst.rkey())).ok());
  Completion c = one();
  EXPECT_EQ(c.status, WcStatus::kRetryExcErr);
  EXPECT_EQ(c.vendor_err, swkit::kVePeerNotReady);
  EXPECT_TRUE(dst.all(0xEE));
}

TEST_F(SelfErrors, PeerInErrorState) {
  ASSERT_TRUE(b->set_error().ok());
  Sge s = src.sge(0, 8);
  expect_failure(make_wr(Opcode::kRdmaWrite, {&s, 1}, dst.addr(), dst.rkey()), WcStatus::kRetryExcErr,
                 swkit::kVePeerNotReady, QpState::kError, QpState::kError);
}

// ------------------------------------------------------------ errors are fatal

TEST_F(SelfErrors, ErrorFlushesLaterRequestsEvenUnsignaled) {
  Sge good = src.sge(0, 8);
  Sge bad = src.sge(0, 8);
  bad.lkey = 0;
  WorkRequest list[4] = {
      make_wr(Opcode::kRdmaWrite, {&good, 1}, dst.addr(), dst.rkey(), 1, 0),  // unsignaled, ok
      make_wr(Opcode::kRdmaWrite, {&bad, 1}, dst.addr(8), dst.rkey(), 2, 0),  // unsignaled, fails
      make_wr(Opcode::kRdmaWrite, {&good, 1}, dst.addr(16), dst.rkey(), 3, 0),
      make_wr(Opcode::kRdmaRead, {&good, 1}, dst.addr(24), dst.rkey(), 4, kWrSignaled)};
  ASSERT_TRUE(a->post(list).ok());
  auto wcs = drain();
  ASSERT_EQ(wcs.size(), 3u);
  EXPECT_EQ(wcs[0].wr_id, 2u);
  EXPECT_EQ(wcs[0].status, WcStatus::kLocProtErr);
  EXPECT_EQ(wcs[1].wr_id, 3u);
  EXPECT_EQ(wcs[1].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(wcs[1].opcode, Opcode::kRdmaWrite);
  EXPECT_EQ(wcs[2].wr_id, 4u);
  EXPECT_EQ(wcs[2].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(wcs[2].opcode, Opcode::kRdmaRead);
  EXPECT_EQ(dst.data[0], 0x5A);   // the first one did run
  EXPECT_EQ(dst.data[8], 0xEE);
  EXPECT_EQ(dst.data[16], 0xEE);
}

}  // namespace
}  // namespace rma::self::testing
