// Issue 12 hardening of the softroce engine, at the provider level over the
// fault-injecting in-memory link:
//   - keys and QPNs are random (getrandom), not slot<<9|0x100|gen and 0x11++
//   - registration refuses memory with fewer rights than asked, and an
//     access through a region whose memory was unmapped is an access error
//   - a READ longer than max_read_request_packets is split into several READ
//     requests and still completes, with loss (issue 12, defect 10)
//   - a WRITE longer than 2^31 is refused at post
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <set>

#include "harness.hpp"

namespace rma::softroce::testing {
namespace {

// Regression (defect 4): the first region's rkey was always 0x301, later
// ones counted up by 0x200, and QPNs counted from 0x11, so a peer could guess
// them. Now both come from the kernel's CSPRNG.
TEST(Hardening, KeysAndQpnsAreUnpredictable) {
  auto pair = Pair::make(default_options());
  ASSERT_TRUE(pair);
  std::vector<Buffer> bufs;
  std::set<std::uint32_t> keys;
  unsigned high_bits_seen = 0;
  for (int i = 0; i < 64; ++i) {
    bufs.push_back(make_buffer(*pair->b.pd, 64));
    ASSERT_TRUE(bufs.back().mr);
    keys.insert(bufs.back().rkey());
    keys.insert(bufs.back().lkey());
    high_bits_seen |= bufs.back().rkey() >> 24;
  }
  EXPECT_EQ(keys.size(), 128u) << "keys repeat";
  // The old scheme kept every key of the first 32768 regions below 2^24.
  EXPECT_NE(high_bits_seen, 0u) << "keys are small counters, not random";
  std::uint32_t guessed_hits = 0;
  for (std::uint32_t g = 0; g < 64; ++g) guessed_hits += keys.count(((g + 1) << 9) | 0x100 | 1);
  EXPECT_LT(guessed_hits, 2u) << "the keys follow the old slot<<9|0x100|gen pattern";

  // QPNs: 24 bits, not consecutive.
  std::vector<std::unique_ptr<QueuePair>> qps;
  std::set<std::uint32_t> qpns;
  std::uint32_t consecutive = 0, prev = 0;
  for (int i = 0; i < 16; ++i) {
    QpConfig c = fast_qp_config();
    c.send_cq = c.recv_cq = pair->b.cq;
    auto qp = pair->b.pd->create_qp(c);
    ASSERT_TRUE(qp.ok()) << qp.status().to_string();
    const std::uint32_t n = (*qp)->qp_num();
    EXPECT_LE(n, 0xFFFFFFu);
    EXPECT_GE(n, 2u);
    if (n == prev + 1) ++consecutive;
    prev = n;
    qpns.insert(n);
    qps.push_back(std::move(qp).value());
  }
  EXPECT_EQ(qpns.size(), 16u);
  EXPECT_LT(consecutive, 3u) << "QPNs are handed out in sequence";
}

// A deregistered region's keys name nothing afterwards, even after many new
// registrations (no slot/generation reuse can bring them back).
TEST(Hardening, StaleKeysStayDead) {
  auto pair = Pair::make(default_options());
  ASSERT_TRUE(pair);
  Buffer dst = make_buffer(*pair->b.pd, 4096);
  Buffer src = make_buffer(*pair->a.pd, 4096);
  std::uint32_t stale;
  {
    Buffer gone = make_buffer(*pair->b.pd, 4096);
    stale = gone.rkey();
  }
  std::vector<Buffer> fresh;
  for (int i = 0; i < 300; ++i) {
    fresh.push_back(make_buffer(*pair->b.pd, 64));
    EXPECT_NE(fresh.back().rkey(), stale);
  }
  Sge s = src.sge(0, 64);
  WorkRequest w = wr(rma::Opcode::kRdmaWrite, &s, 1, dst.addr(0), stale, 1);
  ASSERT_TRUE(pair->a.qp->post({&w, 1}).ok());
  EXPECT_EQ(pair->wait_one(pair->a).status, WcStatus::kRemAccessErr);
}

struct Mapping {
  void* p = MAP_FAILED;
  std::size_t len = 0;
  Mapping(std::size_t n, int prot) : len(n) { p = ::mmap(nullptr, n, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); }
  ~Mapping() {
    if (p != MAP_FAILED) ::munmap(p, len);
  }
  std::uint8_t* bytes() const { return static_cast<std::uint8_t*>(p); }
};

// Regression (defect 5): registration took any range; a remote WRITE into a
// read-only mapping then killed the process.
TEST(Hardening, RegistrationRefusesMemoryWithFewerRightsThanAsked) {
  auto pair = Pair::make(default_options());
  ASSERT_TRUE(pair);
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  Mapping ro(2 * page, PROT_READ);
  ASSERT_NE(ro.p, MAP_FAILED);
  for (Access a : {Access::kRemoteWrite, Access::kLocalWrite, Access::kRemoteAtomic}) {
    auto mr = pair->b.pd->register_memory(ro.p, page, a | Access::kLocalWrite | Access::kRemoteRead);
    ASSERT_FALSE(mr.ok()) << access_to_string(a);
    EXPECT_EQ(mr.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(mr.status().message().find("read-only"), std::string::npos) << mr.status().to_string();
  }
  auto readable = pair->b.pd->register_memory(ro.p, 2 * page, Access::kRemoteRead);
  EXPECT_TRUE(readable.ok()) << readable.status().to_string();

  // A hole: the second page of a mapping, unmapped.
  Mapping rw(2 * page, PROT_READ | PROT_WRITE);
  ASSERT_NE(rw.p, MAP_FAILED);
  ASSERT_EQ(::munmap(rw.bytes() + page, page), 0);
  auto holed = pair->b.pd->register_memory(rw.p, 2 * page, kAllAccess);
  ASSERT_FALSE(holed.ok());
  EXPECT_NE(holed.status().message().find("mapped"), std::string::npos) << holed.status().to_string();
  rw.len = page;
  auto first = pair->b.pd->register_memory(rw.p, page, kAllAccess);
  EXPECT_TRUE(first.ok()) << first.status().to_string();

  // PROT_NONE: not even readable.
  Mapping none(page, PROT_NONE);
  auto no = pair->b.pd->register_memory(none.p, page, Access::kRemoteRead);
  ASSERT_FALSE(no.ok());
  EXPECT_NE(no.status().message().find("not readable"), std::string::npos) << no.status().to_string();
}

// Regression (defect 5): an rkey of a region whose memory was unmapped kept
// working (the responder wrote through it: SIGSEGV, or into whatever was
// mapped there next). Now it is a remote access error, and the READ side too.
TEST(Hardening, AccessToUnmappedRegionIsAnAccessError) {
  auto pair = Pair::make(default_options());
  ASSERT_TRUE(pair);
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  Buffer src = make_buffer(*pair->a.pd, page);
  fill_pattern(src.data, page, 3);
  void* target = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(target, MAP_FAILED);
  auto mr = pair->b.pd->register_memory(target, page, kAllAccess);
  ASSERT_TRUE(mr.ok()) << mr.status().to_string();
  const auto va = reinterpret_cast<std::uint64_t>(target);
  // Works while mapped.
  Sge s = src.sge(0, 256);
  WorkRequest w = wr(rma::Opcode::kRdmaWrite, &s, 1, va, (*mr)->rkey(), 1);
  ASSERT_TRUE(pair->a.qp->post({&w, 1}).ok());
  ASSERT_EQ(pair->wait_one(pair->a).status, WcStatus::kSuccess);
  ASSERT_EQ(std::memcmp(target, src.data, 256), 0);
  ASSERT_EQ(::munmap(target, page), 0);
  // Still registered, memory gone: the WRITE is refused by the responder.
  w.wr_id = 2;
  ASSERT_TRUE(pair->a.qp->post({&w, 1}).ok());
  Completion c = pair->wait_one(pair->a);
  EXPECT_EQ(c.status, WcStatus::kRemAccessErr);
  auto nak = pair->b.sdev->counters().qp.naks_sent[roce::kNakRemoteAccessError];
  EXPECT_EQ(nak, 1u);
  mr->reset();  // deregistering an orphaned region is fine
}

// A READ into a local buffer whose memory was unmapped after the post is a
// local protection error on the requester, not a crash.
TEST(Hardening, ReadIntoUnmappedLocalBufferIsALocalProtectionError) {
  auto pair = Pair::make(default_options());
  ASSERT_TRUE(pair);
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  Buffer remote = make_buffer(*pair->b.pd, page);
  void* local = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(local, MAP_FAILED);
  auto mr = pair->a.pd->register_memory(local, page, kAllAccess);
  ASSERT_TRUE(mr.ok()) << mr.status().to_string();
  Sge s{reinterpret_cast<std::uint64_t>(local), 512, (*mr)->lkey()};
  WorkRequest w = wr(rma::Opcode::kRdmaRead, &s, 1, remote.addr(0), remote.rkey(), 1);
  // Posted (the checks pass), then the memory goes before the response lands:
  // post without progressing the responder, unmap, then let it run.
  ASSERT_TRUE(pair->a.qp->post({&w, 1}).ok());
  ASSERT_EQ(::munmap(local, page), 0);
  Completion c = pair->wait_one(pair->a);
  EXPECT_EQ(c.status, WcStatus::kLocProtErr);
  mr->reset();
}

// A WRITE whose source memory is unmapped while it is being sent (the
// window holds the rest back) stops at the first packet it can no longer
// read: a local protection error, not a crash.
TEST(Hardening, WriteFromSourceUnmappedMidMessageIsALocalProtectionError) {
  PairOptions o = default_options();
  o.dev.max_unacked_psns = 128;
  auto pair = Pair::make(o);
  ASSERT_TRUE(pair);
  constexpr std::size_t kLen = 1u << 20;  // 256 packets at MTU 4096; the window is 128
  Buffer remote = make_buffer(*pair->b.pd, kLen);
  void* local = ::mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(local, MAP_FAILED);
  auto mr = pair->a.pd->register_memory(local, kLen, kAllAccess);
  ASSERT_TRUE(mr.ok()) << mr.status().to_string();
  Sge s{reinterpret_cast<std::uint64_t>(local), static_cast<std::uint32_t>(kLen), (*mr)->lkey()};
  WorkRequest w = wr(rma::Opcode::kRdmaWrite, &s, 1, remote.addr(0), remote.rkey(), 1);
  ASSERT_TRUE(pair->a.qp->post({&w, 1}).ok());  // sends the first window's worth
  ASSERT_EQ(::munmap(local, kLen), 0);
  Completion c = pair->wait_one(pair->a);
  EXPECT_EQ(c.status, WcStatus::kLocProtErr);
  EXPECT_EQ(pair->a.qp->state(), QpState::kError);
  mr->reset();
}

// Regression (defect 10): a READ of 2^23 packets never completed, as its
// PSN range spans half the PSN space. READs longer than
// max_read_request_packets now go out as several READ requests; with the
// limit set to 3 packets, reads of every shape still arrive byte for byte,
// also with loss, duplication and reordering.
TEST(Hardening, LongReadIsSplitIntoRequestsAndCompletes) {
  for (double loss : {0.0, 0.05}) {
    PairOptions o = default_options();
    o.dev.max_read_request_packets = 3;
    o.dev.path_mtu = 1024;
    o.faults.drop = loss;
    o.faults.duplicate = loss / 2;
    o.faults.reorder = loss / 2;
    o.faults.seed = 7;
    auto pair = Pair::make(o);
    ASSERT_TRUE(pair);
    constexpr std::size_t kSize = 64 * 1024;
    Buffer remote = make_buffer(*pair->b.pd, kSize);
    Buffer local = make_buffer(*pair->a.pd, kSize);
    fill_pattern(remote.data, kSize, 11);
    for (std::uint32_t len : {1u, 1024u, 3072u, 3073u, 9u * 1024u + 5u, 40000u, 65536u}) {
      std::memset(local.data, 0, kSize);
      Sge s = local.sge(0, len);
      WorkRequest w = wr(rma::Opcode::kRdmaRead, &s, 1, remote.addr(0), remote.rkey(), len);
      ASSERT_TRUE(pair->a.qp->post({&w, 1}).ok());
      Completion c = pair->wait_one(pair->a);
      ASSERT_EQ(c.status, WcStatus::kSuccess) << "len " << len << " loss " << loss;
      EXPECT_EQ(c.byte_len, len);
      EXPECT_EQ(std::memcmp(local.data, remote.data, len), 0) << "len " << len << " loss " << loss;
      for (std::size_t i = len; i < kSize; ++i) ASSERT_EQ(local.data[i], 0) << "wrote past the READ at " << i;
    }
  }
}

// Defect 10: a WRITE longer than 2^31 is refused at post, naming why.
TEST(Hardening, WriteLongerThanTwoGibIsRefusedAtPost) {
  auto pair = Pair::make(default_options());
  ASSERT_TRUE(pair);
  Buffer b = make_buffer(*pair->a.pd, 64);
  // Two SGEs summing to 2^31 + 1 bytes: refused before any key is looked at.
  Sge s[2] = {Sge{b.addr(0), 1u << 31, b.lkey()}, Sge{b.addr(0), 1, b.lkey()}};
  WorkRequest w = wr(rma::Opcode::kRdmaWrite, s, 2, 0x1000, 1, 1);
  PostResult r = pair->a.qp->post({&w, 1});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code, StatusCode::kInvalidArgument);
  ASSERT_NE(r.reason, nullptr);
  EXPECT_NE(std::string(r.reason).find("max_msg_size"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace rma::softroce::testing
