// Self provider: successful data movement — WRITE, READ, WRITE_WITH_IMM,
// SEND/RECV, inline, atomics — with SGE lists, sizes and completions.
#include <thread>

#include "self_test_util.hpp"

namespace rma::self::testing {
namespace {

using SelfRdma = SelfFixture;

void pattern(Buffer& b, std::uint8_t seed) {
  for (std::size_t i = 0; i < b.size; ++i) b.data[i] = static_cast<std::uint8_t>(seed + i * 7);
}

// n SGEs of varied lengths over `src`, lengths summing to the return value.
std::uint64_t make_sgl(const Buffer& src, std::uint32_t n, std::vector<Sge>& sgl) {
  sgl.clear();
  std::uint64_t off = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t len = 1 + (i * 13) % 29;
    sgl.push_back(src.sge(off + i, len));  // gaps of one byte between SGEs
    off += len;
  }
  return off;
}

TEST_F(SelfRdma, WriteWithOneToThirtyTwoSges) {
  make_pair();
  Buffer src = buffer(4096);
  pattern(src, 3);
  for (std::uint32_t n = 1; n <= 32; ++n) {
    Buffer dst = buffer(2048, kAllAccess, 0xEE);
    std::vector<Sge> sgl;
    const std::uint64_t total = make_sgl(src, n, sgl);
    WorkRequest wr = make_wr(Opcode::kRdmaWrite, sgl, dst.addr(10), dst.rkey(), n);
    ASSERT_TRUE(post1(*a, wr).ok());
    Completion c = one();
    EXPECT_EQ(c.status, WcStatus::kSuccess);
    EXPECT_EQ(c.opcode, Opcode::kRdmaWrite);
    EXPECT_EQ(c.wr_id, n);
    EXPECT_EQ(c.qp_num, a->qp_num());
    EXPECT_EQ(c.byte_len, total);
    std::size_t off = 10;
    for (const Sge& s : sgl) {
      ASSERT_EQ(std::memcmp(dst.data + off, reinterpret_cast<void*>(s.addr), s.length), 0) << n;
      off += s.length;
    }
    for (std::size_t i = 0; i < dst.size; ++i) {
      if (i < 10 || i >= 10 + total) {
        ASSERT_EQ(dst.data[i], 0xEE) << "n=" << n << " i=" << i;
      }
    }
  }
}

TEST_F(SelfRdma, ReadWithOneToThirtyTwoSges) {
  make_pair();
  Buffer remote = buffer(4096);
  pattern(remote, 9);
  for (std::uint32_t n = 1; n <= 32; ++n) {
    Buffer local = buffer(2048, kAllAccess, 0xEE);
    std::vector<Sge> sgl;
    const std::uint64_t total = make_sgl(local, n, sgl);
    WorkRequest wr = make_wr(Opcode::kRdmaRead, sgl, remote.addr(100), remote.rkey(), n);
    ASSERT_TRUE(post1(*a, wr).ok());
    Completion c = one();
    EXPECT_EQ(c.status, WcStatus::kSuccess);
    EXPECT_EQ(c.opcode, Opcode::kRdmaRead);
    EXPECT_EQ(c.byte_len, total);
    std::size_t off = 100;
    for (const Sge& s : sgl) {
      ASSERT_EQ(std::memcmp(reinterpret_cast<void*>(s.addr), remote.data + off, s.length), 0);
      off += s.length;
    }
    // The one-byte gaps between SGEs were not touched.
    for (std::size_t i = 0; i + 1 < sgl.size(); ++i) {
      ASSERT_EQ(*reinterpret_cast<std::uint8_t*>(sgl[i].addr + sgl[i].length), 0xEE);
    }
  }
}

TEST_F(SelfRdma, OneMebibyteWriteAndRead) {
  make_pair();
  constexpr std::size_t kMiB = 1 << 20;
  Buffer src = buffer(kMiB);
  Buffer dst = buffer(kMiB);
  Buffer back = buffer(kMiB);
  pattern(src, 1);
  Sge s = src.sge(0, kMiB);
  ASSERT_TRUE(post1(*a, make_wr(Opcode::kRdmaWrite, {&s, 1}, dst.addr(), dst.rkey())).ok());
  EXPECT_EQ(one().byte_len, kMiB);
  EXPECT_EQ(std::memcmp(src.data, dst.data, kMiB), 0);
  Sge r = back.sge(0, kMiB);
  ASSERT_TRUE(post1(*a, make_wr(Opcode::kRdmaRead, {&r, 1}, dst.addr(), dst.rkey())).ok());
  EXPECT_EQ(one().status, WcStatus::kSuccess);
  EXPECT_EQ(std::memcmp(src.data, back.data, kMiB), 0);
}

TEST_F(SelfRdma, ZeroByteTransfersSucceedAndTouchNothing) {
  make_pair();
  Buffer dst = buffer(64, kAllAccess, 0x11);
  // No SGEs at all, and one zero-length SGE; zero-length requests check no
  // keys (IBA), so even a garbage rkey is accepted.
  Sge zero = dst.sge(0, 0);
  for (Opcode op : {Opcode::kRdmaWrite, Opcode::kRdmaRead}) {
    ASSERT_TRUE(post1(*a, make_wr(op, {}, dst.addr(), 0xDEADBEEF)).ok());
    ASSERT_TRUE(post1(*a, make_wr(op, {&zero, 1}, dst.addr(), dst.rkey())).ok());
    auto wcs = drain();
    ASSERT_EQ(wcs.size(), 2u);
    for (auto& c : wcs) {
      EXPECT_EQ(c.status, WcStatus::kSuccess);
      EXPECT_EQ(c.byte_len, 0u);
    }
  }
  EXPECT_TRUE(dst.all(0x11));
  // A zero-byte SEND consumes a receive and reports 0 bytes.
  ASSERT_TRUE(recv1(*b, {}, 5).ok());
  ASSERT_TRUE(post1(*a, make_wr(Opcode::kSend, {})).ok());
  auto wcs = drain();
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].opcode, Opcode::kRecv);
  EXPECT_EQ(wcs[0].byte_len, 0u);
  EXPECT_EQ(wcs[1].opcode, Opcode::kSend);
}

TEST_F(SelfRdma, WriteWithImmConsumesReceive) {
  make_pair();
  Buffer src = buffer(256);
  Buffer dst = buffer(256);
  pattern(src, 5);
  Buffer rbuf = buffer(16, kAllAccess, 0x77);
  Sge rs = rbuf.sge(0, 16);
  ASSERT_TRUE(recv1(*b, {&rs, 1}, 900).ok());
  Sge s = src.sge(0, 200);
  WorkRequest wr = make_wr(Opcode::kRdmaWriteWithImm, {&s, 1}, dst.addr(), dst.rkey(), 7);
  wr.imm_data = 0xCAFEBABE;
  ASSERT_TRUE(post1(*a, wr).ok());
  auto wcs = drain();
  ASSERT_EQ(wcs.size(), 2u);
  const Completion& rc = wcs[0];
  EXPECT_EQ(rc.wr_id, 900u);
  EXPECT_EQ(rc.status, WcStatus::kSuccess);
  EXPECT_EQ(rc.opcode, Opcode::kRecvRdmaWithImm);
  EXPECT_TRUE(rc.has_imm);
  EXPECT_EQ(rc.imm_data, 0xCAFEBABEu);
  EXPECT_EQ(rc.byte_len, 200u);
  EXPECT_EQ(rc.qp_num, b->qp_num());
  const Completion& sc = wcs[1];
  EXPECT_EQ(sc.wr_id, 7u);
  EXPECT_EQ(sc.opcode, Opcode::kRdmaWrite);  // as ibv_wc reports WRITE_WITH_IMM
  EXPECT_FALSE(sc.has_imm);
  EXPECT_EQ(std::memcmp(src.data, dst.data, 200), 0);
  EXPECT_TRUE(rbuf.all(0x77));  // the receive buffer is not used
}

TEST_F(SelfRdma, SendScattersIntoReceiveSges) {
  make_pair();
  Buffer src = buffer(512);
  pattern(src, 42);
  Buffer rbuf = buffer(1024, kAllAccess, 0xEE);
  // Receive: 4 SGEs of 10, 0, 100 and 400 bytes.
  Sge rs[4] = {rbuf.sge(0, 10), rbuf.sge(20, 0), rbuf.sge(40, 100), rbuf.sge(200, 400)};
  ASSERT_TRUE(recv1(*b, rs, 31).ok());
  // Send: 3 SGEs totalling 300 bytes.
  Sge ss[3] = {src.sge(0, 50), src.sge(100, 150), src.sge(300, 100)};
  WorkRequest wr = make_wr(Opcode::kSendWithImm, ss, 0, 0, 32);
  wr.imm_data = 1234;
  ASSERT_TRUE(post1(*a, wr).ok());
  auto wcs = drain();
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].opcode, Opcode::kRecv);
  EXPECT_EQ(wcs[0].wr_id, 31u);
  EXPECT_EQ(wcs[0].byte_len, 300u);
  EXPECT_TRUE(wcs[0].has_imm);
  EXPECT_EQ(wcs[0].imm_data, 1234u);
  EXPECT_EQ(wcs[1].opcode, Opcode::kSend);
  EXPECT_EQ(wcs[1].wr_id, 32u);
  std::vector<std::uint8_t> sent, got;
  for (const Sge& s : ss) sent.insert(sent.end(), reinterpret_cast<std::uint8_t*>(s.addr), reinterpret_cast<std::uint8_t*>(s.addr) + s.length);
  for (const Sge& s : rs) got.insert(got.end(), reinterpret_cast<std::uint8_t*>(s.addr), reinterpret_cast<std::uint8_t*>(s.addr) + s.length);
  got.resize(300);
  EXPECT_EQ(sent, got);
  EXPECT_EQ(rbuf.data[10], 0xEE);   // between SGEs
  EXPECT_EQ(rbuf.data[200 + 190], 0xEE);  // past the message
  // Plain SEND: no immediate.
  ASSERT_TRUE(recv1(*b, rs, 33).ok());
  ASSERT_TRUE(post1(*a, make_wr(Opcode::kSend, ss, 0, 0, 34)).ok());
  wcs = drain();
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_FALSE(wcs[0].has_imm);
}

TEST_F(SelfRdma, ReceivesAreConsumedInOrder) {
  make_pair();
  Buffer rbuf = buffer(64);
  Sge r0 = rbuf.sge(0, 8), r1 = rbuf.sge(8, 8);
  ASSERT_TRUE(recv1(*b, {&r0, 1}, 1).ok());
  ASSERT_TRUE(recv1(*b, {&r1, 1}, 2).ok());
  std::uint64_t v1 = 0x1111, v2 = 0x2222;
  Sge s1{reinterpret_cast<std::uint64_t>(&v1), 8, 0}, s2{reinterpret_cast<std::uint64_t>(&v2), 8, 0};
  WorkRequest w[2] = {make_wr(Opcode::kSend, {&s1, 1}, 0, 0, 10, kWrSignaled | kWrInline),
                      make_wr(Opcode::kSend, {&s2, 1}, 0, 0, 11, kWrSignaled | kWrInline)};
  ASSERT_TRUE(a->post(w).ok());
  EXPECT_EQ(rbuf.u64(0), 0x1111u);
  EXPECT_EQ(rbuf.u64(8), 0x2222u);
  auto wcs = drain();
  ASSERT_EQ(wcs.size(), 4u);
  EXPECT_EQ(wcs[0].wr_id, 1u);
  EXPECT_EQ(wcs[2].wr_id, 2u);
}

TEST_F(SelfRdma, InlineCopiesAtPostTimeAndIgnoresLkeys) {
  // A send waiting for a receive (RNR, infinite) proves the copy happened at
  // post time: the source changes before the data moves.
  make_pair();
  Buffer dst = buffer(300, kAllAccess, 0);
  std::vector<std::uint8_t> src(256, 0xAB);
  Sge s[2] = {{reinterpret_cast<std::uint64_t>(src.data()), 56, 0xBAD},
              {reinterpret_cast<std::uint64_t>(src.data() + 56), 200, 0}};
  ASSERT_TRUE(post1(*a, make_wr(Opcode::kSend, s, 0, 0, 1, kWrSignaled | kWrInline)).ok());
  std::fill(src.begin(), src.end(), 0xCD);
  EXPECT_TRUE(drain().empty());
  Sge r = dst.sge(0, 300);
  ASSERT_TRUE(recv1(*b, {&r, 1}).ok());
  auto wcs = drain();
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].byte_len, 256u);
  for (int i = 0; i < 256; ++i) ASSERT_EQ(dst.data[i], 0xAB);
  EXPECT_EQ(dst.data[256], 0);
  // Inline RDMA WRITE of the full 256 bytes with unregistered source memory.
  ASSERT_TRUE(post1(*a, make_wr(Opcode::kRdmaWrite, s, dst.addr(1), dst.rkey(), 2,
                                kWrSignaled | kWrInline)).ok());
  EXPECT_EQ(one().status, WcStatus::kSuccess);
  EXPECT_EQ(dst.data[1], 0xCD);
  EXPECT_EQ(dst.data[256], 0xCD);
}

TEST_F(SelfRdma, FetchAddReturnsOriginal) {
  make_pair();
  Buffer target = buffer(64);
  Buffer result = buffer(64, kAllAccess, 0xEE);
  target.set_u64(8, 40);
  Sge s = result.sge(3, 8);  // the local result need not be aligned
  WorkRequest wr = make_wr(Opcode::kAtomicFetchAdd, {&s, 1}, target.addr(8), target.rkey(), 5);
  wr.compare_add = 2;
  ASSERT_TRUE(post1(*a, wr).ok());
  Completion c = one();
  EXPECT_EQ(c.status, WcStatus::kSuccess);
  EXPECT_EQ(c.opcode, Opcode::kAtomicFetchAdd);
  EXPECT_EQ(c.byte_len, 8u);
  EXPECT_EQ(target.u64(8), 42u);
  EXPECT_EQ(result.u64(3), 40u);
  EXPECT_EQ(result.data[2], 0xEE);
  EXPECT_EQ(result.data[11], 0xEE);
  // Wraps modulo 2^64.
  wr.compare_add = ~std::uint64_t{0} - 41;  // -42
  ASSERT_TRUE(post1(*a, wr).ok());
  EXPECT_EQ(one().status, WcStatus::kSuccess);
  EXPECT_EQ(target.u64(8), 0u);
}

TEST_F(SelfRdma, CompareSwapMatchAndMismatch) {
  make_pair();
  Buffer target = buffer(64);
  Buffer result = buffer(64);
  target.set_u64(16, 7);
  Sge s = result.sge(0, 8);
  WorkRequest wr = make_wr(Opcode::kAtomicCmpSwap, {&s, 1}, target.addr(16), target.rkey());
  wr.compare_add = 7;
  wr.swap = 99;
  ASSERT_TRUE(post1(*a, wr).ok());
  Completion c = one();
  EXPECT_EQ(c.status, WcStatus::kSuccess);
  EXPECT_EQ(c.opcode, Opcode::kAtomicCmpSwap);
  EXPECT_EQ(c.byte_len, 8u);
  EXPECT_EQ(target.u64(16), 99u);
  EXPECT_EQ(result.u64(0), 7u);
  // Mismatch: target unchanged, original returned.
  wr.compare_add = 7;
  wr.swap = 1234;
  ASSERT_TRUE(post1(*a, wr).ok());
  EXPECT_EQ(one().status, WcStatus::kSuccess);
  EXPECT_EQ(target.u64(16), 99u);
  EXPECT_EQ(result.u64(0), 99u);
}

TEST_F(SelfRdma, ConcurrentFetchAddsAreAtomic) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 2000;
  Buffer counter = buffer(8);
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::uint64_t> sum_of_originals(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Each thread has its own CQ and QP pair, all targeting one counter.
      auto tcq = *device->create_cq(64);
      QpConfig c = config();
      c.send_cq = tcq;
      c.recv_cq = tcq;
      auto qa = std::move(*pd->create_qp(c));
      auto qb = std::move(*pd->create_qp(c));
      if (!qa->connect(*qb->local_address()).ok() || !qb->connect(*qa->local_address()).ok()) {
        ++failures[t];
        return;
      }
      std::uint64_t result = 0;
      auto mr = std::move(*pd->register_memory(&result, 8, kAllAccess));
      Sge s{reinterpret_cast<std::uint64_t>(&result), 8, mr->lkey()};
      WorkRequest wr = make_wr(Opcode::kAtomicFetchAdd, {&s, 1}, counter.addr(), counter.rkey());
      wr.compare_add = 1;
      Completion wc[4];
      for (int i = 0; i < kPerThread; ++i) {
        if (!qa->post({&wr, 1}).ok()) ++failures[t];
        int n = tcq->poll(wc);
        if (n != 1 || wc[0].status != WcStatus::kSuccess) ++failures[t];
        sum_of_originals[t] += result;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << t;
  const std::uint64_t n = std::uint64_t{kThreads} * kPerThread;
  EXPECT_EQ(counter.u64(), n);
  // Every original value 0..n-1 was handed out exactly once.
  std::uint64_t total = 0;
  for (auto v : sum_of_originals) total += v;
  EXPECT_EQ(total, n * (n - 1) / 2);
}

TEST_F(SelfRdma, LoopbackQpWritesToItsOwnRegions) {
  auto qp = make_qp(config());
  connect(*qp, *qp);
  Buffer buf = buffer(128);
  pattern(buf, 0);
  Sge s = buf.sge(0, 64);
  ASSERT_TRUE(post1(*qp, make_wr(Opcode::kRdmaWrite, {&s, 1}, buf.addr(64), buf.rkey())).ok());
  EXPECT_EQ(one().status, WcStatus::kSuccess);
  EXPECT_EQ(std::memcmp(buf.data, buf.data + 64, 64), 0);
  // Loopback SEND into its own receive.
  Sge r = buf.sge(0, 32);
  ASSERT_TRUE(recv1(*qp, {&r, 1}, 3).ok());
  Sge s2 = buf.sge(96, 16);
  ASSERT_TRUE(post1(*qp, make_wr(Opcode::kSend, {&s2, 1}, 0, 0, 4)).ok());
  auto wcs = drain();
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].opcode, Opcode::kRecv);
  EXPECT_EQ(std::memcmp(buf.data, buf.data + 96, 16), 0);
}

TEST_F(SelfRdma, SeparateSendAndRecvCqs) {
  auto scq = *device->create_cq(16);
  auto rcq = *device->create_cq(16);
  QpConfig c = config();
  c.send_cq = scq;
  c.recv_cq = rcq;
  auto qa = make_qp(c);
  auto qb = make_qp(c);
  connect(*qa, *qb);
  Buffer buf = buffer(64);
  Sge r = buf.sge(0, 8);
  ASSERT_TRUE(recv1(*qb, {&r, 1}, 1).ok());
  Sge s = buf.sge(8, 8);
  ASSERT_TRUE(post1(*qa, make_wr(Opcode::kSend, {&s, 1}, 0, 0, 2)).ok());
  auto sw = drain(*scq);
  auto rw = drain(*rcq);
  ASSERT_EQ(sw.size(), 1u);
  ASSERT_EQ(rw.size(), 1u);
  EXPECT_EQ(sw[0].wr_id, 2u);
  EXPECT_EQ(rw[0].wr_id, 1u);
  EXPECT_EQ(rw[0].qp_num, qb->qp_num());
}

TEST_F(SelfRdma, RegionsOfTheSameDeviceButOtherPdAreNotUsable) {
  // Sanity: QPs on two PDs of the same device can talk when each uses its
  // own PD's keys.
  auto pd2 = *device->alloc_pd();
  auto q1 = make_qp(config());
  auto q2 = make_qp(config(), pd2.get());
  connect(*q1, *q2);
  Buffer local = buffer(64);
  Buffer remote = buffer(64, kAllAccess, 0, pd2.get());
  pattern(local, 1);
  Sge s = local.sge(0, 64);
  ASSERT_TRUE(post1(*q1, make_wr(Opcode::kRdmaWrite, {&s, 1}, remote.addr(), remote.rkey())).ok());
  EXPECT_EQ(one().status, WcStatus::kSuccess);
  EXPECT_EQ(std::memcmp(local.data, remote.data, 64), 0);
}

}  // namespace
}  // namespace rma::self::testing
