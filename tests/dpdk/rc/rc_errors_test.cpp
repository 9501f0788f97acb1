// Access violations (nothing written), invalid requests, local protection,
// flush on error, and retry exhaustion when the peer vanishes.
#include <gtest/gtest.h>

#include "harness.hpp"

namespace rma::softroce::testing {
namespace {

using std::chrono::milliseconds;

class RcErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    pair_ = Pair::make(default_options());
    ASSERT_NE(pair_, nullptr);
    src_ = make_buffer(*pair_->a.pd, kSize);
    fill_pattern(src_.data, kSize, 1);
  }
  Buffer target(Access access) {
    Buffer b = make_buffer(*pair_->b.pd, kSize, access);
    std::memset(b.data, 0x5A, kSize);
    return b;
  }
  static bool all(const Buffer& b, std::uint8_t v) {
    for (std::size_t i = 0; i < b.size; ++i) {
      if (b.data[i] != v) return false;
    }
    return true;
  }
  Completion run(const WorkRequest& w) {
    PostResult pr = pair_->a.qp->post({&w, 1});
    EXPECT_TRUE(pr.ok()) << (pr.reason ? pr.reason : "");
    return pair_->wait_one(pair_->a);
  }
  void expect_broken_responder() {
    pair_->run_for(milliseconds(5));
    EXPECT_EQ(pair_->b.qp->state(), QpState::kError);
    EXPECT_EQ(pair_->a.qp->state(), QpState::kError);
  }
  static constexpr std::size_t kSize = 16384;
  std::unique_ptr<Pair> pair_;
  Buffer src_;
};

TEST_F(RcErrors, WriteWithUnknownRkey) {
  Buffer t = target(kAllAccess);
  Sge s = src_.sge(0, 5000);
  Completion c = run(wr(Opcode::kRdmaWrite, &s, 1, t.addr(), t.rkey() ^ 0x100, 1));
  EXPECT_EQ(c.status, WcStatus::kRemAccessErr);
  EXPECT_TRUE(all(t, 0x5A));
  expect_broken_responder();
  auto cb = pair_->b.sdev->qp_counters(pair_->b.qp->qp_num()).value();
  EXPECT_EQ(cb.naks_sent[roce::kNakRemoteAccessError], 1u);
}

TEST_F(RcErrors, WriteWithoutRemoteWriteRight) {
  Buffer t = target(Access::kLocalWrite | Access::kRemoteRead);
  Sge s = src_.sge(0, 100);
  EXPECT_EQ(run(wr(Opcode::kRdmaWrite, &s, 1, t.addr(), t.rkey(), 1)).status, WcStatus::kRemAccessErr);
  EXPECT_TRUE(all(t, 0x5A));
}

TEST_F(RcErrors, WriteOutOfBounds) {
  Buffer t = target(kAllAccess);
  Sge s = src_.sge(0, 9000);
  // Starts inside, ends 1 byte past the region: no byte may be written,
  // not even the packets that would fit.
  EXPECT_EQ(run(wr(Opcode::kRdmaWrite, &s, 1, t.addr(kSize - 8999), t.rkey(), 1)).status,
            WcStatus::kRemAccessErr);
  EXPECT_TRUE(all(t, 0x5A));
}

TEST_F(RcErrors, WriteWithRkeyOfAnotherPd) {
  auto pd2 = pair_->b.dev->alloc_pd().value();
  Buffer t = make_buffer(*pd2, kSize);
  std::memset(t.data, 0x5A, kSize);
  Sge s = src_.sge(0, 64);
  EXPECT_EQ(run(wr(Opcode::kRdmaWrite, &s, 1, t.addr(), t.rkey(), 1)).status, WcStatus::kRemAccessErr);
  EXPECT_TRUE(all(t, 0x5A));
}

TEST_F(RcErrors, ReadWithoutRemoteReadRight) {
  Buffer t = target(Access::kLocalWrite | Access::kRemoteWrite);
  std::memset(src_.data, 0x11, kSize);
  Sge s = src_.sge(0, 4096);
  EXPECT_EQ(run(wr(Opcode::kRdmaRead, &s, 1, t.addr(), t.rkey(), 1)).status, WcStatus::kRemAccessErr);
  EXPECT_TRUE(all(src_, 0x11));
}

TEST_F(RcErrors, ReadOutOfBounds) {
  Buffer t = target(kAllAccess);
  std::memset(src_.data, 0x11, kSize);
  Sge s = src_.sge(0, 4096);
  EXPECT_EQ(run(wr(Opcode::kRdmaRead, &s, 1, t.addr(kSize - 4095), t.rkey(), 1)).status,
            WcStatus::kRemAccessErr);
  EXPECT_TRUE(all(src_, 0x11));
}

TEST_F(RcErrors, AtomicWithoutRemoteAtomicRight) {
  Buffer t = target(Access::kLocalWrite | Access::kRemoteWrite | Access::kRemoteRead);
  Buffer res = make_buffer(*pair_->a.pd, 8);
  res.set_u64(0, 42);
  Sge s = res.sge(0, 8);
  WorkRequest w = wr(Opcode::kAtomicFetchAdd, &s, 1, t.addr(0), t.rkey(), 1);
  w.compare_add = 1;
  EXPECT_EQ(run(w).status, WcStatus::kRemAccessErr);
  EXPECT_TRUE(all(t, 0x5A));
  EXPECT_EQ(res.u64(0), 42u);
}

TEST_F(RcErrors, SendLargerThanReceive) {
  Buffer rbuf = make_buffer(*pair_->b.pd, 4096);
  std::memset(rbuf.data, 0x5A, 4096);
  Sge rs = rbuf.sge(0, 100);
  RecvRequest rr{7, {&rs, 1}};
  ASSERT_TRUE(pair_->b.qp->post_recv({&rr, 1}).ok());
  Sge s = src_.sge(0, 101);
  EXPECT_EQ(run(wr(Opcode::kSend, &s, 1, 0, 0, 1)).status, WcStatus::kRemInvReqErr);
  Completion rc = pair_->wait_one(pair_->b);
  EXPECT_EQ(rc.wr_id, 7u);
  EXPECT_EQ(rc.status, WcStatus::kLocLenErr);
  EXPECT_EQ(rbuf.data[0], 0x5A);
}

TEST_F(RcErrors, LocalProtectionErrorCompletesInOrder) {
  Buffer t = target(kAllAccess);
  Sge good = src_.sge(0, 64);
  Sge bad{src_.addr(0), 64, src_.lkey() ^ 0x200};
  WorkRequest w[3] = {wr(Opcode::kRdmaWrite, &good, 1, t.addr(), t.rkey(), 1),
                      wr(Opcode::kRdmaWrite, &bad, 1, t.addr(64), t.rkey(), 2),
                      wr(Opcode::kRdmaWrite, &good, 1, t.addr(128), t.rkey(), 3, 0)};
  ASSERT_TRUE(pair_->a.qp->post({w, 3}).ok());
  auto got = pair_->wait(pair_->a, 3);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].status, WcStatus::kSuccess);
  EXPECT_EQ(got[1].status, WcStatus::kLocProtErr);
  EXPECT_EQ(got[2].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(got[2].wr_id, 3u);
  EXPECT_EQ(t.data[64], 0x5A);
  EXPECT_EQ(t.data[128], 0x5A);
}

TEST_F(RcErrors, FatalErrorFlushesEverythingOutstanding) {
  Buffer t = target(kAllAccess);
  Buffer rbuf = make_buffer(*pair_->a.pd, 64);
  Sge rs = rbuf.sge(0, 64);
  RecvRequest rr[2] = {{100, {&rs, 1}}, {101, {&rs, 1}}};
  ASSERT_TRUE(pair_->a.qp->post_recv({rr, 2}).ok());
  Sge s = src_.sge(0, 64);
  std::vector<WorkRequest> w;
  w.push_back(wr(Opcode::kRdmaWrite, &s, 1, t.addr(), t.rkey() ^ 0x100, 1));
  for (int i = 2; i <= 6; ++i) w.push_back(wr(Opcode::kRdmaWrite, &s, 1, t.addr(), t.rkey(), i, i % 2 ? std::uint32_t{kWrSignaled} : 0u));
  ASSERT_TRUE(pair_->a.qp->post(w).ok());
  auto got = pair_->wait(pair_->a, 8);
  ASSERT_EQ(got.size(), 8u);
  int flushed = 0, recv_flushed = 0;
  for (const Completion& c : got) {
    if (c.wr_id == 1) {
      EXPECT_EQ(c.status, WcStatus::kRemAccessErr);
    }
    if (c.wr_id >= 2 && c.wr_id <= 6) {
      EXPECT_EQ(c.status, WcStatus::kWrFlushErr);
      ++flushed;
    }
    if (c.wr_id >= 100) {
      EXPECT_EQ(c.status, WcStatus::kWrFlushErr);
      ++recv_flushed;
    }
  }
  EXPECT_EQ(flushed, 5);
  EXPECT_EQ(recv_flushed, 2);
  EXPECT_TRUE(all(t, 0x5A));
  // Posting to a QP in the error state is refused.
  PostResult pr = pair_->a.qp->post({w.data(), 1});
  EXPECT_FALSE(pr.ok());
  EXPECT_STREQ(pr.reason, "QP is in the error state");
  auto more = pair_->wait(pair_->a, 1, milliseconds(50));
  EXPECT_TRUE(more.empty()) << "stray completion";
}

TEST_F(RcErrors, PeerThatDropsEverythingGivesRetryExceeded) {
  Buffer t = target(kAllAccess);
  roce::FaultConfig blackhole;
  blackhole.drop = 1.0;
  pair_->a.link->set_faults(blackhole);
  Sge s = src_.sge(0, 3000);
  WorkRequest w[2] = {wr(Opcode::kRdmaWrite, &s, 1, t.addr(), t.rkey(), 1),
                      wr(Opcode::kRdmaRead, &s, 1, t.addr(), t.rkey(), 2)};
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(pair_->a.qp->post({w, 2}).ok());
  auto got = pair_->wait(pair_->a, 2, milliseconds(5000));
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].status, WcStatus::kRetryExcErr);
  EXPECT_EQ(got[1].status, WcStatus::kWrFlushErr);
  // 8 attempts of a 2.1 ms timer: far below a second.
  EXPECT_LT(took, milliseconds(1000));
  auto ca = pair_->a.sdev->qp_counters(pair_->a.qp->qp_num()).value();
  EXPECT_EQ(ca.retry_timeouts, 8u);
}

TEST_F(RcErrors, DestroyedPeerQpGivesRetryExceeded) {
  Buffer t = target(kAllAccess);
  pair_->b.qp.reset();
  Sge s = src_.sge(0, 10);
  EXPECT_EQ(run(wr(Opcode::kRdmaWrite, &s, 1, t.addr(), t.rkey(), 1)).status, WcStatus::kRetryExcErr);
  auto cb = pair_->b.sdev->counters();
  EXPECT_GE(cb.unknown_qpn, 8u);
}

TEST_F(RcErrors, SetErrorFlushesPostedWork) {
  Buffer rbuf = make_buffer(*pair_->b.pd, 64);
  Sge rs = rbuf.sge(0, 64);
  RecvRequest rr{5, {&rs, 1}};
  ASSERT_TRUE(pair_->b.qp->post_recv({&rr, 1}).ok());
  ASSERT_TRUE(pair_->b.qp->set_error().ok());
  ASSERT_TRUE(pair_->b.qp->set_error().ok());  // idempotent
  Completion c = pair_->wait_one(pair_->b);
  EXPECT_EQ(c.wr_id, 5u);
  EXPECT_EQ(c.status, WcStatus::kWrFlushErr);
}

}  // namespace
}  // namespace rma::softroce::testing
