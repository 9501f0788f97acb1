// Self provider: queue occupancy and retirement, CQ overrun, RNR waits, and
// posting/polling from concurrent threads.
#include <atomic>
#include <chrono>
#include <thread>

#include "self_test_util.hpp"
#include "swkit/vendor_err.hpp"

namespace rma::self::testing {
namespace {

using SelfQueue = SelfFixture;

QpConfig small(QpConfig c, std::uint32_t send_wr, std::uint32_t recv_wr) {
  c.max_send_wr = send_wr;
  c.max_recv_wr = recv_wr;
  return c;
}

TEST_F(SelfQueue, UnsignaledRequestsFillTheSendQueue) {
  make_pair(small(config(), 4, 4), config());
  Buffer buf = buffer(64);
  Sge s = buf.sge(0, 8);
  WorkRequest wr = make_wr(Opcode::kRdmaWrite, {&s, 1}, buf.addr(8), buf.rkey(), 1, 0);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(post1(*a, wr).ok()) << i;
  PostResult pr = post1(*a, wr);
  EXPECT_EQ(pr.code, StatusCode::kResourceExhausted);
  EXPECT_STREQ(pr.reason, "send queue full");
  EXPECT_TRUE(drain().empty());  // nothing signaled, nothing retires
  pr = post1(*a, wr);
  EXPECT_EQ(pr.code, StatusCode::kResourceExhausted);
}

TEST_F(SelfQueue, SignaledCompletionRetiresEarlierUnsignaled) {
  make_pair(small(config(), 4, 4), config());
  Buffer buf = buffer(64);
  Sge s = buf.sge(0, 8);
  WorkRequest unsig = make_wr(Opcode::kRdmaWrite, {&s, 1}, buf.addr(8), buf.rkey(), 1, 0);
  WorkRequest sig = make_wr(Opcode::kRdmaWrite, {&s, 1}, buf.addr(8), buf.rkey(), 2, kWrSignaled);
  for (int round = 0; round < 10; ++round) {
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(post1(*a, unsig).ok());
    ASSERT_TRUE(post1(*a, sig).ok());
    // Full until the signaled completion is polled...
    EXPECT_EQ(post1(*a, unsig).code, StatusCode::kResourceExhausted);
    Completion c = one();
    EXPECT_EQ(c.wr_id, 2u);
    // ...then all four slots are free again.
  }
}

TEST_F(SelfQueue, SlotIsBusyUntilCompletionIsPolled) {
  make_pair(small(config(), 2, 2), config());
  Buffer buf = buffer(64);
  Sge s = buf.sge(0, 8);
  WorkRequest sig = make_wr(Opcode::kRdmaWrite, {&s, 1}, buf.addr(8), buf.rkey());
  ASSERT_TRUE(post1(*a, sig).ok());
  ASSERT_TRUE(post1(*a, sig).ok());
  EXPECT_EQ(post1(*a, sig).code, StatusCode::kResourceExhausted);  // executed but not polled
  Completion wc[1];
  ASSERT_EQ(cq->poll(wc), 1);
  ASSERT_TRUE(post1(*a, sig).ok());  // exactly one slot freed
  EXPECT_EQ(post1(*a, sig).code, StatusCode::kResourceExhausted);
  EXPECT_EQ(drain().size(), 2u);
}

TEST_F(SelfQueue, ReceiveQueueFullUntilCompletionPolled) {
  make_pair(config(), small(config(), 4, 2));
  Buffer buf = buffer(64);
  Sge r = buf.sge(0, 8);
  ASSERT_TRUE(recv1(*b, {&r, 1}, 1).ok());
  ASSERT_TRUE(recv1(*b, {&r, 1}, 2).ok());
  PostResult pr = recv1(*b, {&r, 1}, 3);
  EXPECT_EQ(pr.code, StatusCode::kResourceExhausted);
  EXPECT_STREQ(pr.reason, "receive queue full");
  // Consumed by a SEND but not yet polled: still occupied.
  Sge s = buf.sge(8, 8);
  ASSERT_TRUE(post1(*a, make_wr(Opcode::kSend, {&s, 1}, 0, 0, 9, 0)).ok());
  EXPECT_EQ(recv1(*b, {&r, 1}, 3).code, StatusCode::kResourceExhausted);
  auto wcs = drain();
  ASSERT_EQ(wcs.size(), 1u);  // only the receive: the SEND was unsignaled
  EXPECT_EQ(wcs[0].wr_id, 1u);
  EXPECT_TRUE(recv1(*b, {&r, 1}, 3).ok());
}

TEST_F(SelfQueue, FlushCompletionsRetireSlots) {
  make_pair(small(config(), 2, 2), config());
  Buffer buf = buffer(64);
  Sge s = buf.sge(0, 8);
  WorkRequest wr = make_wr(Opcode::kSend, {&s, 1}, 0, 0, 1, 0);
  ASSERT_TRUE(post1(*a, wr).ok());  // waits for a receive (rnr_retry 7)
  ASSERT_TRUE(post1(*a, wr).ok());
  EXPECT_EQ(post1(*a, wr).code, StatusCode::kResourceExhausted);
  ASSERT_TRUE(a->set_error().ok());
  auto wcs = drain();
  ASSERT_EQ(wcs.size(), 2u);  // unsignaled, but flushes always complete
  for (auto& c : wcs) EXPECT_EQ(c.status, WcStatus::kWrFlushErr);
}

TEST_F(SelfQueue, CqOverrun) {
  auto small_cq = *device->create_cq(3);
  QpConfig c = config();
  c.send_cq = small_cq;
  c.recv_cq = small_cq;
  make_pair(c, c);
  Buffer buf = buffer(64);
  Sge s = buf.sge(0, 8);
  WorkRequest wr = make_wr(Opcode::kRdmaWrite, {&s, 1}, buf.addr(8), buf.rkey());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(post1(*a, wr).ok());
  EXPECT_STREQ(small_cq->overrun_reason(), "");
  EXPECT_EQ(a->state(), QpState::kRts);
  ASSERT_TRUE(post1(*a, wr).ok());  // the fourth completion has nowhere to go
  Completion wc[8];
  EXPECT_EQ(small_cq->poll(wc), -1);
  EXPECT_EQ(small_cq->poll(wc), -1);  // for good
  const std::string reason = small_cq->overrun_reason();
  EXPECT_NE(reason.find("overrun"), std::string::npos) << reason;
  EXPECT_NE(reason.find(std::to_string(a->qp_num())), std::string::npos) << reason;
  EXPECT_EQ(a->state(), QpState::kError);  // its completion was lost
  EXPECT_EQ(b->state(), QpState::kRts);
}

TEST_F(SelfQueue, CqOverrunByReceiveBreaksTheReceiver) {
  auto rcq = *device->create_cq(1);
  QpConfig cb = config();
  cb.recv_cq = rcq;
  make_pair(config(), cb);
  Buffer buf = buffer(64);
  Sge r = buf.sge(0, 8);
  ASSERT_TRUE(recv1(*b, {&r, 1}, 1).ok());
  ASSERT_TRUE(recv1(*b, {&r, 1}, 2).ok());
  Sge s = buf.sge(8, 8);
  WorkRequest wr = make_wr(Opcode::kSend, {&s, 1}, 0, 0, 5, 0);
  ASSERT_TRUE(post1(*a, wr).ok());
  ASSERT_TRUE(post1(*a, wr).ok());
  Completion wc[4];
  EXPECT_EQ(rcq->poll(wc), -1);
  EXPECT_EQ(b->state(), QpState::kError);
  EXPECT_NE(std::string(rcq->overrun_reason()).find(std::to_string(b->qp_num())), std::string::npos);
}

TEST_F(SelfQueue, RnrInfiniteWaitsUntilReceiveIsPosted) {
  make_pair();  // rnr_retry 7 by default
  Buffer buf = buffer(64, kAllAccess, 0);
  std::uint64_t v = 0xFEED;
  Sge s{reinterpret_cast<std::uint64_t>(&v), 8, 0};
  ASSERT_TRUE(post1(*a, make_wr(Opcode::kSend, {&s, 1}, 0, 0, 1, kWrSignaled | kWrInline)).ok());
  // Later requests wait behind it (RC ordering), even ones that need no receive.
  Sge w = buf.sge(32, 8);
  ASSERT_TRUE(post1(*a, make_wr(Opcode::kRdmaWrite, {&w, 1}, buf.addr(40), buf.rkey(), 2)).ok());
  buf.set_u64(32, 0xAB);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_TRUE(drain().empty());
  EXPECT_EQ(buf.u64(40), 0u);
  EXPECT_EQ(a->state(), QpState::kRts);
  Sge r = buf.sge(0, 8);
  ASSERT_TRUE(recv1(*b, {&r, 1}, 3).ok());  // drives the waiting requests
  auto wcs = drain();
  ASSERT_EQ(wcs.size(), 3u);
  EXPECT_EQ(wcs[0].wr_id, 3u);
  EXPECT_EQ(wcs[1].wr_id, 1u);
  EXPECT_EQ(wcs[2].wr_id, 2u);
  EXPECT_EQ(buf.u64(0), 0xFEEDu);
  EXPECT_EQ(buf.u64(40), 0xABu);  // the WRITE ran after, with the data current at execution
}

TEST_F(SelfQueue, RnrFiniteRetryExpires) {
  QpConfig ca = config();
  ca.rnr_retry = 1;
  QpConfig cb = config();
  cb.min_rnr_timer = 1;  // 10 us: (1 + 1) * 10 us = 20 us budget
  make_pair(ca, cb);
  Buffer buf = buffer(64);
  Sge s = buf.sge(0, 8);
  ASSERT_TRUE(post1(*a, make_wr(Opcode::kSend, {&s, 1}, 0, 0, 1, 0)).ok());
  ASSERT_TRUE(post1(*a, make_wr(Opcode::kRdmaWrite, {&s, 1}, buf.addr(8), buf.rkey(), 2, 0)).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto wcs = drain();  // polling notices the spent budget
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].wr_id, 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::kRnrRetryExcErr);
  EXPECT_EQ(wcs[0].vendor_err, swkit::kVeRnrExceeded);
  EXPECT_EQ(wcs[1].wr_id, 2u);
  EXPECT_EQ(wcs[1].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(a->state(), QpState::kError);
  EXPECT_EQ(b->state(), QpState::kRts);  // RNR does not break the responder
  EXPECT_EQ(buf.u64(8), 0u);
}

TEST_F(SelfQueue, RnrFiniteRetrySucceedsWhenReceiveArrivesInTime) {
  QpConfig ca = config();
  ca.rnr_retry = 0;
  QpConfig cb = config();
  cb.min_rnr_timer = 0;  // 655.36 ms: plenty
  make_pair(ca, cb);
  Buffer buf = buffer(64);
  Sge s = buf.sge(0, 8);
  ASSERT_TRUE(post1(*a, make_wr(Opcode::kSend, {&s, 1}, 0, 0, 1)).ok());
  EXPECT_TRUE(drain().empty());
  Sge r = buf.sge(8, 8);
  ASSERT_TRUE(recv1(*b, {&r, 1}, 2).ok());
  auto wcs = drain();
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[1].status, WcStatus::kSuccess);
}

TEST_F(SelfQueue, RnrDeadlineCheckedOnPost) {
  // A separate send CQ that is never polled: the next post notices instead.
  auto scq = *device->create_cq(16);
  QpConfig ca = config();
  ca.send_cq = scq;
  ca.rnr_retry = 0;
  QpConfig cb = config();
  cb.min_rnr_timer = 1;
  make_pair(ca, cb);
  Buffer buf = buffer(64);
  Sge s = buf.sge(0, 8);
  ASSERT_TRUE(post1(*a, make_wr(Opcode::kSend, {&s, 1}, 0, 0, 1)).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(a->post({}).ok());
  EXPECT_EQ(a->state(), QpState::kError);
  auto wcs = drain(*scq);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::kRnrRetryExcErr);
}

TEST_F(SelfQueue, RnrWaiterFailsWhenPeerIsDestroyed) {
  make_pair();
  Buffer buf = buffer(64);
  Sge s = buf.sge(0, 8);
  ASSERT_TRUE(post1(*a, make_wr(Opcode::kSend, {&s, 1}, 0, 0, 1)).ok());
  EXPECT_TRUE(drain().empty());
  b.reset();
  Completion c = one();  // noticed by polling alone
  EXPECT_EQ(c.status, WcStatus::kRetryExcErr);
  EXPECT_EQ(c.vendor_err, swkit::kVePeerGone);
}

// A progress thread polls while a user thread posts: nothing lost, nothing
// duplicated, queue credits respected.
TEST_F(SelfQueue, ConcurrentPostAndPoll) {
  make_pair(small(config(), 64, 64), config());
  Buffer buf = buffer(4096);
  constexpr int kTotal = 20000;
  std::atomic<int> completed{0};
  std::atomic<bool> bad{false};
  std::thread progress([&] {
    Completion wc[16];
    std::uint64_t expect = 0;
    while (completed.load() < kTotal && !bad.load()) {
      int n = cq->poll(wc);
      if (n < 0) bad = true;
      for (int i = 0; i < n; ++i) {
        if (wc[i].status != WcStatus::kSuccess || wc[i].wr_id != expect) bad = true;
        expect += 4;  // one signaled in four
      }
      completed.fetch_add(n * 4);
    }
  });
  Sge s = buf.sge(0, 64);
  int posted = 0;
  while (posted < kTotal && !bad.load()) {
    WorkRequest wr = make_wr(Opcode::kRdmaWrite, {&s, 1}, buf.addr(64 * (1 + posted % 60)), buf.rkey(),
                             static_cast<std::uint64_t>(posted), posted % 4 == 3 ? std::uint32_t{kWrSignaled} : 0u);
    wr.wr_id = static_cast<std::uint64_t>(posted - posted % 4);
    PostResult pr = post1(*a, wr);
    if (pr.ok()) {
      ++posted;
    } else if (pr.code == StatusCode::kResourceExhausted) {
      std::this_thread::yield();
    } else {
      bad = true;
    }
  }
  progress.join();
  EXPECT_FALSE(bad.load());
  EXPECT_EQ(completed.load(), kTotal);
}

}  // namespace
}  // namespace rma::self::testing
