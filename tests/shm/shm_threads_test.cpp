// The shm provider's threads and locks (shm/queue_pair.hpp): a QP without
// the serialized promise takes posts and polls from several threads at
// once; a serialized QP's lock-free data path meets the progress thread
// that serves its target side, pushes into the same CQ, and drives its ring
// requests; registrations come and go meanwhile. Written for the tsan and
// asan presets: every pair of these runs concurrently.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "rma/sdk/node.hpp"
#include "rma/sdk/provider.hpp"
#include "rma/sdk/registry.hpp"

namespace rma {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::seconds kDeadline{60};

struct Region {
  std::unique_ptr<node::SharedMemory> shared;  // set: inside a shared segment (the mapped path)
  std::unique_ptr<std::uint64_t[]> heap;       // else: plain memory (cross-memory attach, ring atomics)
  std::uint8_t* data = nullptr;
  std::size_t size = 0;
  std::unique_ptr<MemoryRegion> mr;

  std::uint64_t addr(std::size_t off = 0) const { return reinterpret_cast<std::uint64_t>(data + off); }
  std::uint64_t word(std::size_t off) const { return __atomic_load_n(reinterpret_cast<std::uint64_t*>(data + off), __ATOMIC_SEQ_CST); }
};

class ShmThreads : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = ProviderRegistry::global().open("shm");
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    dev = *d;
    auto p = dev->alloc_pd();
    ASSERT_TRUE(p.ok());
    pd = *p;
  }

  Region region(std::size_t size, bool shared) {
    Region r;
    r.size = size;
    if (shared) {
      auto m = node::SharedMemory::allocate(size, "test");
      EXPECT_TRUE(m.ok()) << m.status().to_string();
      if (!m.ok()) return r;
      r.shared = std::move(m).value();
      r.data = reinterpret_cast<std::uint8_t*>(r.shared->data());
    } else {
      r.heap.reset(new std::uint64_t[size / 8]());
      r.data = reinterpret_cast<std::uint8_t*>(r.heap.get());
    }
    auto mr = pd->register_memory(r.data, size, kAllAccess);
    EXPECT_TRUE(mr.ok()) << mr.status().to_string();
    if (mr.ok()) r.mr = std::move(mr).value();
    return r;
  }

  std::shared_ptr<CompletionQueue> cq(std::uint32_t depth) {
    auto c = dev->create_cq(depth);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? *c : nullptr;
  }

  // Two QPs of the device connected to each other.
  void connect(QpConfig ca, QpConfig cb) {
    auto qa = pd->create_qp(ca);
    auto qb = pd->create_qp(cb);
    ASSERT_TRUE(qa.ok() && qb.ok());
    a = std::move(qa).value();
    b = std::move(qb).value();
    ASSERT_TRUE(a->connect(*b->local_address()).ok());
    ASSERT_TRUE(b->connect(*a->local_address()).ok());
  }

  static QpConfig config(std::shared_ptr<CompletionQueue> c, bool serialized) {
    QpConfig q;
    q.send_cq = c;
    q.recv_cq = c;
    q.max_send_wr = 256;
    q.max_recv_wr = 256;
    q.serialized = serialized;
    return q;
  }

  static WorkRequest wr(Opcode op, const Sge& sge, std::uint64_t raddr, std::uint32_t rkey, std::uint64_t id,
                        bool signaled, std::uint64_t add = 0) {
    WorkRequest w;
    w.wr_id = id;
    w.opcode = op;
    w.flags = signaled ? kWrSignaled : 0u;
    w.sgl = {&sge, 1};
    w.remote_addr = raddr;
    w.rkey = rkey;
    w.compare_add = add;
    return w;
  }

  // Posts until the queue takes it (another thread frees slots by polling).
  static void post_retrying(QueuePair& q, const WorkRequest& w) {
    for (;;) {
      const PostResult pr = q.post({&w, 1});
      if (pr.ok()) return;
      ASSERT_EQ(pr.code, StatusCode::kResourceExhausted) << pr.to_status().to_string();
      std::this_thread::yield();
    }
  }

  std::shared_ptr<Device> dev;
  std::shared_ptr<ProtectionDomain> pd;
  std::unique_ptr<QueuePair> a, b;
};

// Three threads post WRITEs and fetch-adds (mapped, and on plain memory
// through the ring) on one QP while a fourth polls its CQ and a fifth
// registers and deregisters regions of the same device.
TEST_F(ShmThreads, QpWithoutThePromiseTakesPostsAndPollsFromManyThreads) {
  auto cqa = cq(4096), cqb = cq(64);
  ASSERT_NO_FATAL_FAILURE(connect(config(cqa, false), config(cqb, false)));
  Region mapped = region(1 << 16, true);
  Region plain = region(1 << 12, false);
  Region src = region(1 << 16, false);
  ASSERT_TRUE(mapped.mr && plain.mr && src.mr);
  for (std::size_t i = 0; i < src.size; ++i) src.data[i] = static_cast<std::uint8_t>(i * 13 + 1);

  constexpr int kThreads = 3, kIters = 3000;
  std::atomic<std::uint64_t> signaled{0};
  std::atomic<int> posting{kThreads};
  std::atomic<bool> failed{false};
  std::vector<std::thread> posters;
  for (int t = 0; t < kThreads; ++t) {
    posters.emplace_back([&, t] {
      std::uint64_t mine = 0;
      for (int i = 0; i < kIters && !failed.load(); ++i) {
        const std::size_t off = static_cast<std::size_t>(t) * 8192 + static_cast<std::size_t>(i % 512) * 8;
        const Sge data{src.addr(off), 8, src.mr->lkey()};
        const Sge result{src.addr(32768 + static_cast<std::size_t>(t) * 64), 8, src.mr->lkey()};
        if (i % 50 == 49) {
          // Plain memory: the target's ring; the QP waits for the answer.
          post_retrying(*a, wr(Opcode::kAtomicFetchAdd, result, plain.addr(64), plain.mr->rkey(), 2, true, 1));
          ++mine;
        } else if (i % 7 == 6) {
          post_retrying(*a, wr(Opcode::kAtomicFetchAdd, result, mapped.addr(60000), mapped.mr->rkey(), 2, true, 1));
          ++mine;
        } else {
          const bool sig = i % 16 == 0 || i == kIters - 1;
          post_retrying(*a, wr(Opcode::kRdmaWrite, data, mapped.addr(off), mapped.mr->rkey(), 1, sig));
          mine += sig ? 1 : 0;
        }
      }
      signaled.fetch_add(mine);
      posting.fetch_sub(1);
    });
  }
  std::uint64_t got = 0;
  std::thread poller([&] {
    Completion c[16];
    const auto deadline = Clock::now() + kDeadline;
    while ((posting.load() != 0 || got < signaled.load()) && Clock::now() < deadline) {
      const int n = cqa->poll(c);
      if (n < 0) {
        ADD_FAILURE() << cqa->overrun_reason();
        failed = true;
        return;
      }
      for (int k = 0; k < n; ++k) {
        if (c[k].status != WcStatus::kSuccess) {
          ADD_FAILURE() << "completion " << wc_status_name(c[k].status) << " vendor_err " << c[k].vendor_err;
          failed = true;
        }
      }
      got += static_cast<std::uint64_t>(n);
    }
  });
  std::atomic<bool> stop{false};
  std::thread registrar([&] {
    std::vector<std::uint8_t> scratch(4096);
    while (!stop.load()) {
      auto mr = pd->register_memory(scratch.data(), scratch.size(), kAllAccess);
      ASSERT_TRUE(mr.ok()) << mr.status().to_string();
    }
  });
  for (auto& t : posters) t.join();
  poller.join();
  stop = true;
  registrar.join();
  ASSERT_FALSE(failed.load());
  EXPECT_EQ(got, signaled.load());
  const std::uint64_t ring_adds = kThreads * (kIters / 50);
  std::uint64_t mapped_adds = 0;
  for (int i = 0; i < kIters; ++i) mapped_adds += (i % 50 != 49 && i % 7 == 6) ? 1 : 0;
  EXPECT_EQ(plain.word(64), ring_adds);
  EXPECT_EQ(mapped.word(60000), mapped_adds * kThreads);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(std::memcmp(mapped.data + t * 8192, src.data + t * 8192, 512 * 8), 0) << "thread " << t;
  }
}

// A serialized QP whose caller posts mapped WRITEs (lock-free, the owner's
// ring) and now and then a fetch-add on plain memory (it waits: the
// progress thread may drive it), while another thread sends to it and runs
// ring atomics on its memory, served by the progress thread and by the
// caller's polls, whose receive completions land in the same CQ.
TEST_F(ShmThreads, SerializedQpMeetsTheProgressThreadInItsCq) {
  auto cqa = cq(4096), cqb = cq(4096);
  ASSERT_NO_FATAL_FAILURE(connect(config(cqa, true), config(cqb, false)));
  Region at_b = region(1 << 16, true);    // WRITEs from a land here (mapped)
  Region plain_b = region(1 << 12, false);  // a's ring fetch-adds
  Region at_a = region(1 << 12, false);     // b's ring fetch-adds and a's receive buffers
  Region src = region(1 << 16, false);
  ASSERT_TRUE(at_b.mr && plain_b.mr && at_a.mr && src.mr);

  constexpr int kWrites = 20000, kSends = 2000, kPeerAdds = 2000;
  std::atomic<bool> failed{false};
  std::thread peer([&] {
    Completion c[16];
    std::uint64_t done = 0, posted = 0;
    const auto deadline = Clock::now() + kDeadline;
    const Sge payload{src.addr(40000), 8, src.mr->lkey()};
    const Sge result{src.addr(40064), 8, src.mr->lkey()};
    while (done < kSends + kPeerAdds && Clock::now() < deadline && !failed.load()) {
      if (posted < kSends + kPeerAdds && posted - done < 64) {
        const WorkRequest w = posted % 2 == 0
                                  ? wr(Opcode::kSend, payload, 0, 0, 100 + posted, true)
                                  : wr(Opcode::kAtomicFetchAdd, result, at_a.addr(2048), at_a.mr->rkey(), 100 + posted,
                                       true, 1);
        const PostResult pr = b->post({&w, 1});
        if (pr.ok()) ++posted;
      }
      const int n = cqb->poll(c);
      ASSERT_GE(n, 0) << cqb->overrun_reason();
      for (int k = 0; k < n; ++k) {
        if (c[k].status != WcStatus::kSuccess) {
          ADD_FAILURE() << "peer completion " << wc_status_name(c[k].status) << " vendor_err " << c[k].vendor_err;
          failed = true;
        }
      }
      done += static_cast<std::uint64_t>(n);
    }
    EXPECT_EQ(done, static_cast<std::uint64_t>(kSends + kPeerAdds));
  });

  // The owner: a's posts, receives and polls, all on this thread.
  std::uint64_t next_send_id = 0, sends_seen = 0, recvs_seen = 0, recvs_posted = 0;
  std::uint64_t expect_send = 0, expect_recv = 0, signaled = 0;
  Completion c[16];
  const auto deadline = Clock::now() + kDeadline;
  auto poll_once = [&] {
    const int n = cqa->poll(c);
    ASSERT_GE(n, 0) << cqa->overrun_reason();
    for (int k = 0; k < n; ++k) {
      ASSERT_EQ(c[k].status, WcStatus::kSuccess) << opcode_name(c[k].opcode) << " vendor_err " << c[k].vendor_err;
      if (c[k].opcode == Opcode::kRecv) {
        EXPECT_EQ(c[k].wr_id, expect_recv++) << "receives complete in order";
        ++recvs_seen;
      } else {
        EXPECT_GE(c[k].wr_id, expect_send) << "sends complete in post order";
        expect_send = c[k].wr_id + 1;
        ++sends_seen;
      }
    }
  };
  for (int i = 0; i < kWrites && !failed.load(); ++i) {
    // Keep receives posted for the peer's SENDs.
    while (recvs_posted < kSends && recvs_posted - recvs_seen < 32) {
      RecvRequest r;
      r.wr_id = recvs_posted++;
      const Sge rs{at_a.addr(64), 64, at_a.mr->lkey()};
      r.sgl = {&rs, 1};
      ASSERT_TRUE(a->post_recv({&r, 1}).ok());
    }
    const std::size_t off = static_cast<std::size_t>(i % 4096) * 8;
    const Sge data{src.addr(off), 8, src.mr->lkey()};
    const Sge result{src.addr(50000), 8, src.mr->lkey()};
    const bool ring = i % 97 == 96;
    const bool sig = ring || i % 8 == 0;
    const WorkRequest w = ring ? wr(Opcode::kAtomicFetchAdd, result, plain_b.addr(8), plain_b.mr->rkey(),
                                    next_send_id, true, 1)
                               : wr(Opcode::kRdmaWrite, data, at_b.addr(off), at_b.mr->rkey(), next_send_id, sig);
    for (;;) {
      const PostResult pr = a->post({&w, 1});
      if (pr.ok()) break;
      ASSERT_EQ(pr.code, StatusCode::kResourceExhausted) << pr.to_status().to_string();
      ASSERT_NO_FATAL_FAILURE(poll_once());
      ASSERT_LT(Clock::now(), deadline);
    }
    ++next_send_id;
    signaled += sig ? 1 : 0;
    if (i % 4 == 0) {
      ASSERT_NO_FATAL_FAILURE(poll_once());
    }
  }
  while ((sends_seen < signaled || recvs_seen < kSends) && Clock::now() < deadline && !failed.load()) {
    while (recvs_posted < kSends && recvs_posted - recvs_seen < 32) {
      RecvRequest r;
      r.wr_id = recvs_posted++;
      const Sge rs{at_a.addr(64), 64, at_a.mr->lkey()};
      r.sgl = {&rs, 1};
      ASSERT_TRUE(a->post_recv({&r, 1}).ok());
    }
    ASSERT_NO_FATAL_FAILURE(poll_once());
  }
  peer.join();
  ASSERT_FALSE(failed.load());
  EXPECT_EQ(sends_seen, signaled);
  EXPECT_EQ(recvs_seen, static_cast<std::uint64_t>(kSends));
  EXPECT_EQ(at_a.word(2048), static_cast<std::uint64_t>(kPeerAdds));
  EXPECT_EQ(plain_b.word(8), static_cast<std::uint64_t>(kWrites / 97));
  EXPECT_EQ(std::memcmp(at_b.data, src.data, 4096 * 8), 0);
}

// Two serialized QPs that share one send CQ, posted to from two threads at
// once (each QP's promise covers its own calls and the polls of its CQs,
// not the other QP's posts): only one of them may complete into the CQ's
// owner ring without a lock. The polls run between the rounds of posts.
TEST_F(ShmThreads, TwoSerializedQpsOfOneCqPostFromTwoThreads) {
  constexpr std::uint32_t kDepth = 64;
  constexpr int kRounds = 200;
  auto shared_cq = cq(2 * kDepth), cqb = cq(64);
  QpConfig ca = config(shared_cq, true), cb = config(cqb, false);
  ca.max_send_wr = kDepth;
  auto q1 = pd->create_qp(ca), q2 = pd->create_qp(ca);
  auto p1 = pd->create_qp(cb), p2 = pd->create_qp(cb);
  ASSERT_TRUE(q1.ok() && q2.ok() && p1.ok() && p2.ok());
  std::unique_ptr<QueuePair> qs[2] = {std::move(q1).value(), std::move(q2).value()};
  std::unique_ptr<QueuePair> ps[2] = {std::move(p1).value(), std::move(p2).value()};
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(qs[i]->connect(*ps[i]->local_address()).ok());
    ASSERT_TRUE(ps[i]->connect(*qs[i]->local_address()).ok());
  }
  Region target = region(1 << 16, true);
  Region src = region(1 << 12, false);
  ASSERT_TRUE(target.mr && src.mr);

  std::barrier sync(3);
  std::atomic<bool> failed{false};
  std::vector<std::thread> posters;
  for (int t = 0; t < 2; ++t) {
    posters.emplace_back([&, t] {
      const Sge data{src.addr(static_cast<std::size_t>(t) * 8), 8, src.mr->lkey()};
      std::uint64_t id = 0;
      for (int r = 0; r < kRounds; ++r) {
        for (std::uint32_t i = 0; i < kDepth; ++i) {
          const WorkRequest w = wr(Opcode::kRdmaWrite, data, target.addr(static_cast<std::size_t>(t) * 4096 + i * 8),
                                   target.mr->rkey(), (static_cast<std::uint64_t>(t) << 32) | id++, true);
          if (!qs[t]->post({&w, 1}).ok()) failed = true;
        }
        sync.arrive_and_wait();  // posts done
        sync.arrive_and_wait();  // polls done
      }
    });
  }
  std::uint64_t next[2] = {0, 0};
  Completion c[32];
  for (int r = 0; r < kRounds; ++r) {
    sync.arrive_and_wait();
    std::uint32_t got = 0;
    while (got < 2 * kDepth) {
      const int n = shared_cq->poll(c);
      ASSERT_GE(n, 0) << shared_cq->overrun_reason();
      if (n == 0) break;
      for (int k = 0; k < n; ++k) {
        EXPECT_EQ(c[k].status, WcStatus::kSuccess) << wc_status_name(c[k].status);
        const std::uint64_t t = c[k].wr_id >> 32;
        ASSERT_LT(t, 2u);
        EXPECT_EQ(c[k].wr_id & 0xFFFFFFFFu, next[t]++) << "QP " << t << ": each completion once, in order";
      }
      got += static_cast<std::uint32_t>(n);
    }
    EXPECT_EQ(got, 2 * kDepth) << "round " << r;
    sync.arrive_and_wait();
  }
  for (auto& t : posters) t.join();
  ASSERT_FALSE(failed.load()) << "a post was refused";
  EXPECT_EQ(next[0], static_cast<std::uint64_t>(kRounds) * kDepth);
  EXPECT_EQ(next[1], static_cast<std::uint64_t>(kRounds) * kDepth);
}

}  // namespace
}  // namespace rma
