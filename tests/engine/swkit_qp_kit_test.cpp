// swkit's software-QP kit, below any provider: the key table, the
// completion ring, the SGL checks and copies, the work-queue storage and
// post checks, the endpoint-address header check, the shared caps and the
// vendor-error numbers. The providers' own tests (self_*, tests/dpdk/rc)
// cover the same pieces end to end.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "swkit/caps.hpp"
#include "swkit/completion_ring.hpp"
#include "swkit/endpoint_address.hpp"
#include "swkit/flush.hpp"
#include "swkit/key_table.hpp"
#include "swkit/lkey_cache.hpp"
#include "swkit/sgl.hpp"
#include "swkit/vendor_err.hpp"
#include "swkit/work_queue.hpp"

namespace rma::swkit {
namespace {

std::uint64_t addr_of(const void* p) { return reinterpret_cast<std::uint64_t>(p); }

// ------------------------------------------------------------------ vendor errors

// Users see these numbers (logs, README); the table is one for every
// software provider, so a change here is a change of the documented table.
TEST(SwkitVendorErr, NumbersArePinned) {
  EXPECT_EQ(kVeBadLkey, 1u);
  EXPECT_EQ(kVeNoLocalWrite, 4u);
  EXPECT_EQ(kVeRetryExceeded, 5u);
  EXPECT_EQ(kVeRnrExceeded, 6u);
  EXPECT_EQ(kVeBadRkey, 7u);
  EXPECT_EQ(kVeRemoteOutOfBounds, 10u);
  EXPECT_EQ(kVeRecvBufferInvalid, 13u);
  EXPECT_EQ(kVeFlushed, 15u);
  EXPECT_EQ(kVeLocalUnmapped, 16u);  // README.md names 16/17
  EXPECT_EQ(kVeRemoteUnmapped, 17u);
  EXPECT_EQ(kVePeerGone, 18u);
  EXPECT_EQ(kVePeerNotReady, 19u);
  EXPECT_EQ(kVeNakInvalidRequest, 20u);
  EXPECT_EQ(kVeCqOverrun, 25u);
  const std::set<std::uint32_t> all = {
      kVeNone, kVeBadLkey, kVeLkeyOtherPd, kVeLocalOutOfBounds, kVeNoLocalWrite, kVeRetryExceeded,
      kVeRnrExceeded, kVeBadRkey, kVeRkeyOtherPd, kVeNoRemoteRight, kVeRemoteOutOfBounds,
      kVeAtomicUnaligned, kVeRecvTooSmall, kVeRecvBufferInvalid, kVeFlushed, kVeLocalUnmapped,
      kVeRemoteUnmapped, kVePeerGone, kVePeerNotReady, kVeNakInvalidRequest, kVeNakRemoteAccess,
      kVeNakRemoteOp, kVeBadOpcodeSequence, kVeBadLength, kVeCqOverrun};
  EXPECT_EQ(all.size(), 25u) << "two vendor errors share a number";
  EXPECT_EQ(all.count(14), 0u) << "14 is retired (the self provider's old RNR code)";
}

// ------------------------------------------------------------------ key table

MrEntry entry(std::uint64_t addr, std::uint64_t len, Access a, const void* pd) {
  MrEntry e;
  e.addr = addr;
  e.length = len;
  e.access = a;
  e.pd = pd;
  return e;
}

TEST(SwkitKeyTable, KeysAreRandomDistinctAndNameTheirKindOnly) {
  KeyTable t;
  const int pd = 0;
  std::set<std::uint32_t> keys;
  std::uint32_t and_all = ~0u, or_all = 0;
  for (int i = 0; i < 64; ++i) {
    auto k = t.insert(entry(0x1000u * (i + 1), 64, Access::kLocalWrite, &pd), 1000);
    ASSERT_TRUE(k.ok()) << k.status().to_string();
    EXPECT_NE(k->lkey, 0u);
    EXPECT_NE(k->rkey, 0u);
    EXPECT_NE(k->lkey, k->rkey);
    keys.insert(k->lkey);
    keys.insert(k->rkey);
    and_all &= k->lkey & k->rkey;
    or_all |= k->lkey | k->rkey;
    // Each key finds its own region, and only as its own kind.
    ASSERT_NE(t.find_lkey(k->lkey), nullptr);
    EXPECT_EQ(t.find_lkey(k->lkey)->addr, 0x1000u * (i + 1));
    ASSERT_NE(t.find_rkey(k->rkey), nullptr);
    EXPECT_EQ(t.find_rkey(k->rkey)->addr, 0x1000u * (i + 1));
    EXPECT_EQ(t.find_rkey(k->lkey), nullptr) << "an lkey works as an rkey";
    EXPECT_EQ(t.find_lkey(k->rkey), nullptr) << "an rkey works as an lkey";
  }
  EXPECT_EQ(keys.size(), 128u);
  // Random 32-bit keys use every bit and share none (a counter or a salted
  // index would leave high bits constant). Fails by chance with p ~ 2^-90.
  EXPECT_EQ(or_all, ~0u);
  EXPECT_EQ(and_all, 0u);
  // Consecutive registrations do not hand out consecutive keys.
  std::vector<std::uint32_t> v(keys.begin(), keys.end());
  std::size_t adjacent = 0;
  for (std::size_t i = 1; i < v.size(); ++i) adjacent += (v[i] - v[i - 1] <= 2) ? 1 : 0;
  EXPECT_LT(adjacent, 4u);
  EXPECT_EQ(t.live(), 64u);
  EXPECT_EQ(t.find_lkey(0), nullptr);
}

TEST(SwkitKeyTable, StaleKeysFailAfterEraseAndAreNotHandedOutAgain) {
  KeyTable t;
  const int pd = 0;
  auto a = t.insert(entry(0x1000, 64, Access::kLocalWrite, &pd), 10);
  ASSERT_TRUE(a.ok());
  // Erasing by rkey or by an unknown key changes nothing.
  t.erase(a->rkey);
  t.erase(a->lkey ^ 1u);
  ASSERT_NE(t.find_lkey(a->lkey), nullptr);
  t.erase(a->lkey);
  EXPECT_EQ(t.find_lkey(a->lkey), nullptr);
  EXPECT_EQ(t.find_rkey(a->rkey), nullptr);
  EXPECT_EQ(t.live(), 0u);
  t.erase(a->lkey);  // twice: still nothing
  EXPECT_EQ(t.live(), 0u);
  // The slot is reused; its old keys stay dead and the new ones differ.
  auto b = t.insert(entry(0x2000, 64, Access::kLocalWrite, &pd), 10);
  ASSERT_TRUE(b.ok());
  EXPECT_NE(b->lkey, a->lkey);
  EXPECT_NE(b->rkey, a->rkey);
  EXPECT_EQ(t.find_lkey(a->lkey), nullptr);
  EXPECT_EQ(t.find_rkey(a->rkey), nullptr);
  ASSERT_NE(t.find_lkey(b->lkey), nullptr);
  EXPECT_EQ(t.find_lkey(b->lkey)->addr, 0x2000u);
}

TEST(SwkitKeyTable, CapacityLimitIsLiveRegions) {
  KeyTable t;
  const int pd = 0;
  std::vector<KeyTable::Keys> k;
  for (int i = 0; i < 3; ++i) {
    auto r = t.insert(entry(0x1000, 8, Access::kNone, &pd), 3);
    ASSERT_TRUE(r.ok());
    k.push_back(*r);
  }
  auto over = t.insert(entry(0x1000, 8, Access::kNone, &pd), 3);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(over.status().message().find("max_mr is 3"), std::string::npos) << over.status().message();
  t.erase(k[1].lkey);
  EXPECT_TRUE(t.insert(entry(0x1000, 8, Access::kNone, &pd), 3).ok());
  EXPECT_EQ(t.live(), 3u);
}

// shm: peers find a region's shared entry from the key alone.
TEST(SwkitKeyTable, SlotBitsPutTheSlotInTheLowBitsOfBothKeys) {
  KeyTable t(4);
  const int pd = 0;
  std::vector<KeyTable::Keys> k;
  for (int i = 0; i < 16; ++i) {
    auto r = t.insert(entry(0x1000, 8, Access::kNone, &pd), 16);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(t.slot_of(r->lkey), static_cast<std::uint32_t>(i));
    EXPECT_EQ(t.slot_of(r->rkey), static_cast<std::uint32_t>(i));
    EXPECT_NE(r->lkey, r->rkey);
    k.push_back(*r);
  }
  // A reused slot gets new keys: the old ones name nothing.
  t.erase(k[5].lkey);
  auto again = t.insert(entry(0x2000, 8, Access::kNone, &pd), 16);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(t.slot_of(again->rkey), 5u);
  EXPECT_NE(again->rkey, k[5].rkey);
  EXPECT_EQ(t.find_rkey(k[5].rkey), nullptr);
  // More slots than the bits can name are refused, whatever max_entries says.
  auto over = t.insert(entry(0x1000, 8, Access::kNone, &pd), 100);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
}

TEST(SwkitKeyTable, ContainsIsOverflowSafe) {
  constexpr std::uint64_t kTop = std::numeric_limits<std::uint64_t>::max();
  const MrEntry top = entry(kTop - 15, 16, Access::kNone, nullptr);
  EXPECT_TRUE(top.contains(kTop - 15, 16));
  EXPECT_TRUE(top.contains(kTop, 1));
  EXPECT_FALSE(top.contains(kTop, 2));        // would wrap past 2^64
  EXPECT_FALSE(top.contains(kTop - 7, 16));
  const MrEntry low = entry(0x1000, 0x100, Access::kNone, nullptr);
  EXPECT_FALSE(low.contains(0x1008, kTop));   // addr + len wraps to below the region
  EXPECT_FALSE(low.contains(0xFFF, 1));
  EXPECT_TRUE(low.contains(0x1100, 0));       // empty range at the end counts as inside
  EXPECT_FALSE(low.contains(0x1100, 1));
}

// ------------------------------------------------------------------ completion ring

CqEntry cqe(std::uint64_t wr_id, std::uint32_t qpn, bool send, std::uint64_t seq) {
  CqEntry e;
  e.wc.wr_id = wr_id;
  e.wc.qp_num = qpn;
  e.send_queue = send;
  e.seq = seq;
  return e;
}

TEST(SwkitCompletionRing, PollsInOrderAndRetiresEachEntry) {
  CompletionRing r;
  EXPECT_FALSE(r.init(0, 8).ok());
  const Status too_deep = r.init(9, 8);
  EXPECT_FALSE(too_deep.ok());
  EXPECT_NE(too_deep.message().find("depth 9 is outside 1..8"), std::string::npos) << too_deep.message();
  ASSERT_TRUE(r.init(3, 8).ok());
  EXPECT_EQ(r.depth(), 3u);
  std::array<Completion, 4> out{};
  std::vector<std::uint64_t> retired;
  auto retire = [&](const CqEntry& e) { retired.push_back(e.seq * 10 + (e.send_queue ? 1 : 0)); };
  // Wrap the ring a few times.
  std::uint64_t next = 0;
  for (int round = 0; round < 4; ++round) {
    ASSERT_TRUE(r.push(cqe(next, 7, true, next)));
    ASSERT_TRUE(r.push(cqe(next + 1, 7, false, next + 1)));
    EXPECT_EQ(r.size(), 2u);
    retired.clear();
    ASSERT_EQ(r.poll({out.data(), 1}, retire), 1u);
    ASSERT_EQ(r.poll(out, retire), 1u);
    EXPECT_EQ(out[0].wr_id, next + 1);
    EXPECT_EQ(retired, (std::vector<std::uint64_t>{next * 10 + 1, (next + 1) * 10}));
    next += 2;
  }
  EXPECT_EQ(r.poll(out, retire), 0u);
  EXPECT_FALSE(r.overrun());
  EXPECT_STREQ(r.overrun_reason(), "");
}

TEST(SwkitCompletionRing, OverrunIsStickyAndSaysWhatWasLost) {
  CompletionRing r;
  ASSERT_TRUE(r.init(2, 8).ok());
  ASSERT_TRUE(r.push(cqe(1, 5, true, 0)));
  ASSERT_TRUE(r.push(cqe(2, 5, true, 1)));
  EXPECT_FALSE(r.push(cqe(0xBEEF, 4242, true, 2)));
  EXPECT_TRUE(r.overrun());
  const std::string why = r.overrun_reason();
  EXPECT_NE(why.find("overrun (depth 2)"), std::string::npos) << why;
  EXPECT_NE(why.find("QP 4242"), std::string::npos) << why;
  EXPECT_NE(why.find("wr_id 48879"), std::string::npos) << why;
  // Draining does not clear it: every later completion is lost too, and the
  // first reason stays.
  std::array<Completion, 4> out{};
  r.poll(out, [](const CqEntry&) {});
  EXPECT_FALSE(r.push(cqe(3, 9, true, 3)));
  EXPECT_TRUE(r.overrun());
  EXPECT_EQ(std::string(r.overrun_reason()), why);
}

TEST(SwkitCompletionRing, HoldsExactlyItsDepthWhenThatIsNoPowerOfTwo) {
  // The ring's slots are the depth rounded up to a power of two; the depth
  // still decides when it overruns, after any number of wraps.
  CompletionRing r;
  ASSERT_TRUE(r.init(3, 8).ok());
  std::array<Completion, 4> out{};
  for (std::uint64_t round = 0; round < 5; ++round) {
    for (std::uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(r.push(cqe(round * 3 + i, 1, true, i))) << round;
    ASSERT_EQ(r.poll(out, [](const CqEntry&) {}), 3u);
    for (std::uint64_t i = 0; i < 3; ++i) EXPECT_EQ(out[i].wr_id, round * 3 + i);
  }
  for (std::uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(r.push(cqe(i, 1, true, i)));
  EXPECT_FALSE(r.push(cqe(99, 1, true, 3)));
  EXPECT_TRUE(r.overrun());
}

TEST(SwkitCompletionRing, CompletionEntriesFollowVerbs) {
  SendWqe w{};
  w.wr_id = 11;
  w.opcode = Opcode::kRdmaWriteWithImm;
  CqEntry s = send_completion(w, 3, 99, WcStatus::kSuccess, 100, kVeNone);
  EXPECT_EQ(s.wc.opcode, Opcode::kRdmaWrite);  // no _WITH_IMM forms on the requester
  EXPECT_EQ(s.wc.byte_len, 100u);
  EXPECT_TRUE(s.send_queue);
  EXPECT_EQ(s.seq, 3u);
  w.opcode = Opcode::kSendWithImm;
  s = send_completion(w, 4, 99, WcStatus::kRemAccessErr, 100, kVeBadRkey);
  EXPECT_EQ(s.wc.opcode, Opcode::kSend);
  EXPECT_EQ(s.wc.byte_len, 0u) << "byte_len only counts on success";
  EXPECT_EQ(s.wc.vendor_err, kVeBadRkey);
  RecvWqe rw{};
  rw.wr_id = 12;
  CqEntry c = recv_completion(rw, 5, 99, WcStatus::kSuccess, Opcode::kRecv, 8, false, 77, kVeNone);
  EXPECT_FALSE(c.send_queue);
  EXPECT_EQ(c.wc.wr_id, 12u);
  EXPECT_EQ(c.wc.imm_data, 0u) << "no immediate without has_imm";
  c = recv_completion(rw, 5, 99, WcStatus::kSuccess, Opcode::kRecvRdmaWithImm, 8, true, 77, kVeNone);
  EXPECT_EQ(c.wc.imm_data, 77u);
}

// ------------------------------------------------------------------ SGL checks

class SwkitSgl : public ::testing::Test {
 protected:
  void SetUp() override {
    buf_.resize(4096);
    std::iota(buf_.begin(), buf_.end(), std::uint8_t{0});
    base_ = addr_of(buf_.data());
    auto rw = keys_.insert(entry(base_, 4096, kAllAccess, &pd_), 16);
    auto ro = keys_.insert(entry(base_, 4096, Access::kRemoteRead, &pd_), 16);
    auto other = keys_.insert(entry(base_, 4096, kAllAccess, &other_pd_), 16);
    MrEntry gone = entry(base_, 4096, kAllAccess, &pd_);
    gone.orphaned = &orphaned_;
    auto g = keys_.insert(gone, 16);
    ASSERT_TRUE(rw.ok() && ro.ok() && other.ok() && g.ok());
    rw_ = *rw;
    ro_ = *ro;
    other_ = *other;
    gone_ = *g;
  }
  std::uint32_t local(std::vector<Sge> sgl, std::uint64_t bytes, Access needed = Access::kNone) {
    return check_local_sgl(keys_, &pd_, sgl, bytes, needed);
  }
  std::uint32_t remote(std::uint32_t rkey, std::uint64_t addr, std::uint64_t len, Access right) {
    return check_remote(keys_, &pd_, rkey, addr, len, right);
  }

  const int pd_ = 0, other_pd_ = 0;
  std::atomic<bool> orphaned_{true};
  KeyTable keys_;
  std::vector<std::uint8_t> buf_;
  std::uint64_t base_ = 0;
  KeyTable::Keys rw_, ro_, other_, gone_;
};

TEST_F(SwkitSgl, EachFailingLocalCheckReturnsItsVendorError) {
  EXPECT_EQ(local({{base_, 4096, rw_.lkey}}, 4096, Access::kLocalWrite), kVeNone);
  EXPECT_EQ(local({{base_, 16, rw_.lkey ^ 0x5a5a5a5au}}, 16), kVeBadLkey);
  EXPECT_EQ(local({{base_, 16, rw_.rkey}}, 16), kVeBadLkey) << "an rkey is no lkey";
  EXPECT_EQ(local({{base_, 16, other_.lkey}}, 16), kVeLkeyOtherPd);
  EXPECT_EQ(local({{base_ + 1, 4096, rw_.lkey}}, 4096), kVeLocalOutOfBounds);
  EXPECT_EQ(local({{base_ - 1, 16, rw_.lkey}}, 16), kVeLocalOutOfBounds);
  EXPECT_EQ(local({{base_, 16, ro_.lkey}}, 16, Access::kLocalWrite), kVeNoLocalWrite);
  EXPECT_EQ(local({{base_, 16, ro_.lkey}}, 16, Access::kNone), kVeNone);
  EXPECT_EQ(local({{base_, 16, gone_.lkey}}, 16), kVeLocalUnmapped);
  // The first failing SGE decides, in list order.
  EXPECT_EQ(local({{base_, 16, rw_.lkey}, {base_, 16, other_.lkey}, {base_, 16, 0}}, 48), kVeLkeyOtherPd);
}

TEST_F(SwkitSgl, LocalChecksLookOnlyAtTheBytesThatMove) {
  // Zero-length SGEs carry no valid key (IBA 9.4.4); SGEs past `bytes` are not used.
  EXPECT_EQ(local({{base_, 0, 0}, {base_, 16, rw_.lkey}}, 16), kVeNone);
  EXPECT_EQ(local({{base_, 16, rw_.lkey}, {base_, 16, 12345}}, 16), kVeNone);
  EXPECT_EQ(local({{base_, 16, rw_.lkey}, {base_, 16, 12345}}, 17), kVeBadLkey);
  EXPECT_EQ(local({{base_, 16, 12345}}, 0), kVeNone);
  // An SGE whose end would wrap past 2^64 is out of bounds, not inside.
  EXPECT_EQ(local({{std::numeric_limits<std::uint64_t>::max() - 4, 16, rw_.lkey}}, 16), kVeLocalOutOfBounds);
  EXPECT_EQ(local({{base_ + 8, 0xFFFFFFFFu, rw_.lkey}}, 16), kVeLocalOutOfBounds);
}

TEST_F(SwkitSgl, LkeyCacheAnswersAsCheckLocalSglDoes) {
  struct Case {
    std::vector<Sge> sgl;
    std::uint64_t bytes;
    Access needed;
  };
  const std::vector<Case> cases = {
      {{{base_, 4096, rw_.lkey}}, 4096, Access::kLocalWrite},
      {{{base_, 16, rw_.lkey ^ 0x5a5a5a5au}}, 16, Access::kNone},
      {{{base_, 16, rw_.rkey}}, 16, Access::kNone},
      {{{base_, 16, other_.lkey}}, 16, Access::kNone},
      {{{base_ + 1, 4096, rw_.lkey}}, 4096, Access::kNone},
      {{{base_ - 1, 16, rw_.lkey}}, 16, Access::kNone},
      {{{base_, 16, ro_.lkey}}, 16, Access::kLocalWrite},
      {{{base_, 16, ro_.lkey}}, 16, Access::kNone},
      {{{base_, 16, gone_.lkey}}, 16, Access::kNone},
      {{{base_, 16, rw_.lkey}, {base_, 16, other_.lkey}, {base_, 16, 0}}, 48, Access::kNone},
      {{{base_, 16, rw_.lkey}, {base_ + 16, 16, rw_.lkey}}, 32, Access::kLocalWrite},
      {{{base_, 0, 0}, {base_, 16, rw_.lkey}}, 16, Access::kNone},
      {{{base_, 16, rw_.lkey}, {base_, 16, 12345}}, 16, Access::kNone},
      {{{base_, 16, rw_.lkey}, {base_, 16, 12345}}, 17, Access::kNone},
      {{{base_, 16, 12345}}, 0, Access::kNone},
      {{{std::numeric_limits<std::uint64_t>::max() - 4, 16, rw_.lkey}}, 16, Access::kNone},
  };
  std::mutex lock;
  LkeyCache cache;
  // Twice round, so that each case meets a cache filled by the one before
  // (and by itself on the second round).
  for (int round = 0; round < 2; ++round) {
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      const std::uint32_t want = local(c.sgl, c.bytes, c.needed);
      EXPECT_EQ(cache.check(keys_, lock, &pd_, c.sgl, c.bytes, c.needed), want) << "round " << round << " case " << i;
      EXPECT_EQ(cache.check(keys_, lock, &pd_, c.sgl, c.bytes, c.needed), want) << "round " << round << " case " << i;
    }
  }
}

TEST_F(SwkitSgl, LkeyCacheNeverAcceptsADeregisteredKey) {
  std::mutex lock;
  LkeyCache cache;
  const Sge sge{base_, 16, rw_.lkey};
  EXPECT_EQ(cache.probe(keys_, &pd_, sge, Access::kNone), LkeyCache::kMiss) << "nothing cached yet";
  ASSERT_EQ(cache.check(keys_, lock, &pd_, {&sge, 1}, 16, Access::kNone), kVeNone);
  EXPECT_EQ(cache.probe(keys_, &pd_, sge, Access::kLocalWrite), kVeNone) << "cached";
  const Sge beyond{base_ + 4090, 16, rw_.lkey};
  EXPECT_EQ(cache.probe(keys_, &pd_, beyond, Access::kNone), kVeLocalOutOfBounds) << "the checks run on the copy";
  // Another region going moves the generation on too: the copy is not used
  // until it is looked up again.
  keys_.erase(ro_.lkey);
  EXPECT_EQ(cache.probe(keys_, &pd_, sge, Access::kNone), LkeyCache::kMiss);
  ASSERT_EQ(cache.check(keys_, lock, &pd_, {&sge, 1}, 16, Access::kNone), kVeNone);
  // The cached region itself goes.
  keys_.erase(rw_.lkey);
  EXPECT_EQ(cache.probe(keys_, &pd_, sge, Access::kNone), LkeyCache::kMiss);
  EXPECT_EQ(cache.check(keys_, lock, &pd_, {&sge, 1}, 16, Access::kNone), kVeBadLkey);
  EXPECT_EQ(cache.probe(keys_, &pd_, sge, Access::kNone), LkeyCache::kMiss) << "a dead key is never cached";
}

TEST_F(SwkitSgl, EachFailingRemoteCheckReturnsItsVendorError) {
  EXPECT_EQ(remote(rw_.rkey, base_, 4096, Access::kRemoteWrite), kVeNone);
  EXPECT_EQ(remote(rw_.rkey ^ 0xA5A5A5A5u, base_, 8, Access::kRemoteWrite), kVeBadRkey);
  EXPECT_EQ(remote(rw_.lkey, base_, 8, Access::kRemoteWrite), kVeBadRkey) << "an lkey is no rkey";
  EXPECT_EQ(remote(other_.rkey, base_, 8, Access::kRemoteWrite), kVeRkeyOtherPd);
  EXPECT_EQ(remote(ro_.rkey, base_, 8, Access::kRemoteWrite), kVeNoRemoteRight);
  EXPECT_EQ(remote(ro_.rkey, base_, 8, Access::kRemoteAtomic), kVeNoRemoteRight);
  EXPECT_EQ(remote(ro_.rkey, base_, 8, Access::kRemoteRead), kVeNone);
  EXPECT_EQ(remote(rw_.rkey, base_ + 4089, 8, Access::kRemoteWrite), kVeRemoteOutOfBounds);
  EXPECT_EQ(remote(rw_.rkey, base_ - 8, 8, Access::kRemoteWrite), kVeRemoteOutOfBounds);
  EXPECT_EQ(remote(gone_.rkey, base_, 8, Access::kRemoteWrite), kVeRemoteUnmapped);
  // Order: the key's PD before its rights, rights before bounds, bounds
  // before the mapping (rxe's order).
  EXPECT_EQ(remote(other_.rkey, base_ + 8192, 8, Access::kRemoteWrite), kVeRkeyOtherPd);
  EXPECT_EQ(remote(ro_.rkey, base_ + 8192, 8, Access::kRemoteWrite), kVeNoRemoteRight);
  EXPECT_EQ(remote(gone_.rkey, base_ + 8192, 8, Access::kRemoteWrite), kVeRemoteOutOfBounds);
}

TEST_F(SwkitSgl, RemoteBoundsDoNotWrap) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  // base + 8 + len wraps around to inside the region: still out of bounds.
  EXPECT_EQ(remote(rw_.rkey, base_ + 8, kMax - 4, Access::kRemoteRead), kVeRemoteOutOfBounds);
  EXPECT_EQ(remote(rw_.rkey, kMax - 1, 4, Access::kRemoteRead), kVeRemoteOutOfBounds);
  EXPECT_EQ(remote(rw_.rkey, base_ + 4096, 0, Access::kRemoteRead), kVeNone);
}

TEST_F(SwkitSgl, CopiesWalkTheListFromAnOffset) {
  std::array<std::uint8_t, 10> a{}, b{}, c{};
  const std::vector<Sge> sgl = {{addr_of(a.data()), 3, 0}, {addr_of(b.data()), 0, 0},
                                {addr_of(b.data()), 4, 0}, {addr_of(c.data()), 5, 0}};
  EXPECT_EQ(sgl_bytes(sgl), 12u);
  const std::uint8_t src[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  copy_to_sgl(sgl, 2, src, 9);  // a[2], b[0..3], c[0..3]
  EXPECT_EQ(a[1], 0);
  EXPECT_EQ(a[2], 1);
  EXPECT_EQ((std::array<std::uint8_t, 4>{b[0], b[1], b[2], b[3]}), (std::array<std::uint8_t, 4>{2, 3, 4, 5}));
  EXPECT_EQ((std::array<std::uint8_t, 5>{c[0], c[1], c[2], c[3], c[4]}),
            (std::array<std::uint8_t, 5>{6, 7, 8, 9, 0}));
  std::uint8_t back[9] = {};
  copy_from_sgl(sgl, 2, back, 9);
  EXPECT_EQ(std::memcmp(back, src, 9), 0);
  // Contiguous only within one SGE.
  EXPECT_EQ(sgl_contiguous(sgl, 3, 4), b.data());
  EXPECT_EQ(sgl_contiguous(sgl, 8, 4), c.data() + 1);
  EXPECT_EQ(sgl_contiguous(sgl, 2, 2), nullptr);
  EXPECT_EQ(sgl_contiguous(sgl, 12, 1), nullptr);
}

TEST_F(SwkitSgl, ListToListCopyHandlesOverlap) {
  // Loopback: a WRITE from a buffer into the same buffer, shifted (one
  // piece, so memmove must be what copies it).
  std::uint8_t* p = buf_.data();
  const Sge src{addr_of(p), 10, 0};
  const Sge dst{addr_of(p + 2), 10, 0};
  copy_sgl({&dst, 1}, {&src, 1}, 10);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(p[2 + i], i) << i;
  // Pieces of unequal lists: each piece lands where the list says.
  std::array<std::uint8_t, 6> x{}, y{};
  const std::vector<Sge> from = {{addr_of(p + 100), 3, 0}, {addr_of(p + 103), 0, 0}, {addr_of(p + 103), 9, 0}};
  const std::vector<Sge> to = {{addr_of(x.data()), 6, 0}, {addr_of(y.data()), 6, 0}};
  copy_sgl(to, from, 12);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(x[i], std::uint8_t(100 + i));
    EXPECT_EQ(y[i], std::uint8_t(106 + i));
  }
}

// ------------------------------------------------------------------ work queues

// A CQ that takes `room` entries, then loses them (as an overrun does).
struct FakeCq {
  std::vector<CqEntry> got;
  std::size_t room = 100;
  bool push(const CqEntry& e) {
    if (got.size() == room) return false;
    got.push_back(e);
    return true;
  }
};

TEST(SwkitFlush, FlushesWhatIsLeftOfBothQueuesInOrder) {
  WorkQueue<SendWqe> sq;
  WorkQueue<RecvWqe> rq;
  ASSERT_TRUE(sq.init(8, 1, 0).ok());
  ASSERT_TRUE(rq.init(8, 1, 0).ok());
  for (std::uint64_t i = 0; i < 5; ++i) {
    sq.prepare({}, false).wr_id = 10 + i;
    sq[sq.tail()].flags = 0;  // unsignaled: flushed all the same
    sq.push();
  }
  for (std::uint64_t i = 0; i < 3; ++i) {
    rq.prepare({}, false).wr_id = 20 + i;
    rq.push();
  }
  std::uint64_t exec = 2, next = 1;  // two sends ran, one receive was consumed
  FakeCq scq, rcq;
  EXPECT_TRUE(flush_queues(sq, exec, rq, next, 77, scq, rcq));
  EXPECT_EQ(exec, 5u);
  EXPECT_EQ(next, 3u);
  ASSERT_EQ(scq.got.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(scq.got[i].wc.wr_id, 12 + i);
    EXPECT_EQ(scq.got[i].wc.status, WcStatus::kWrFlushErr);
    EXPECT_EQ(scq.got[i].wc.vendor_err, kVeFlushed);
    EXPECT_EQ(scq.got[i].wc.qp_num, 77u);
    EXPECT_EQ(scq.got[i].seq, 2 + i);
    EXPECT_TRUE(scq.got[i].send_queue);
  }
  ASSERT_EQ(rcq.got.size(), 2u);
  EXPECT_EQ(rcq.got[0].wc.wr_id, 21u);
  EXPECT_EQ(rcq.got[1].wc.wr_id, 22u);
  EXPECT_FALSE(rcq.got[0].send_queue);
  EXPECT_EQ(rcq.got[0].wc.opcode, Opcode::kRecv);
  // Nothing left: a second flush adds nothing; a full CQ is reported.
  EXPECT_TRUE(flush_queues(sq, exec, rq, next, 77, scq, rcq));
  EXPECT_EQ(scq.got.size(), 3u);
  sq.prepare({}, false).wr_id = 99;
  sq.push();
  scq.room = 3;
  EXPECT_FALSE(flush_queues(sq, exec, rq, next, 77, scq, rcq));
  EXPECT_EQ(exec, sq.tail()) << "a lost completion still advances the queue";
}

TEST(SwkitWorkQueue, EachSequenceHasItsOwnSgeAndInlineSlot) {
  WorkQueue<SendWqe> q;
  ASSERT_TRUE(q.init(4, 3, 16).ok());
  std::uint8_t payload[12];
  std::iota(std::begin(payload), std::end(payload), std::uint8_t{100});
  for (std::uint64_t seq = 0; seq < 4; ++seq) {
    std::vector<Sge> sgl;
    for (std::uint64_t i = 0; i <= seq % 3; ++i) sgl.push_back(Sge{seq * 100 + i, 8, std::uint32_t(seq)});
    SendWqe& w = q.prepare(sgl, false);
    w.wr_id = seq;
    EXPECT_EQ(q.push(), seq);
  }
  EXPECT_TRUE(q.full());
  for (std::uint64_t seq = 0; seq < 4; ++seq) {
    const auto sgl = q.sgl(seq);
    ASSERT_EQ(sgl.size(), seq % 3 + 1) << seq;
    for (std::size_t i = 0; i < sgl.size(); ++i) {
      EXPECT_EQ(sgl[i].addr, seq * 100 + i);
      EXPECT_EQ(sgl[i].lkey, seq);
    }
    EXPECT_EQ(q[seq].wr_id, seq);
  }
  // Distinct inline rows of max_inline bytes; seq and seq+depth share one.
  EXPECT_EQ(q.inline_data(1), q.inline_data(0) + 16);
  EXPECT_EQ(q.inline_data(4), q.inline_data(0));
  // Retiring frees slots; an older completion never takes them back.
  q.retire(1);
  EXPECT_FALSE(q.full());
  q.retire(0);
  q.push();
  q.push();
  EXPECT_TRUE(q.full());
  // Slot 4 reuses slot 0: a fresh WQE, an inline payload gathered in order.
  q.retire(3);
  const std::vector<Sge> parts = {{addr_of(payload), 5, 0}, {addr_of(payload), 0, 0},
                                  {addr_of(payload + 5), 7, 0}};
  SendWqe& w = q.prepare(parts, true);
  EXPECT_EQ(w.num_sge, 0u);
  EXPECT_EQ(w.wr_id, 0u) << "prepare hands out a cleared WQE";
  EXPECT_EQ(std::memcmp(q.inline_data(q.tail()), payload, 12), 0);
  EXPECT_TRUE(q.sgl(q.tail()).empty());
}

TEST(SwkitWorkQueue, ADepthThatIsNoPowerOfTwoStillLimitsTheQueue) {
  // Rows are the depth rounded up to a power of two (5 -> 8); the depth is
  // what fills the queue, and live requests never share a row.
  WorkQueue<SendWqe> q;
  ASSERT_TRUE(q.init(5, 1, 8).ok());
  EXPECT_EQ(q.depth(), 5u);
  for (std::uint64_t seq = 0; seq < 40; ++seq) {
    const std::vector<Sge> sgl = {Sge{seq, 1, 0}};
    q.prepare(sgl, false).wr_id = seq;
    q.push();
    if (seq >= 4) {
      EXPECT_TRUE(q.full()) << seq;
      for (std::uint64_t live = seq - 4; live <= seq; ++live) {
        EXPECT_EQ(q[live].wr_id, live);
        EXPECT_EQ(q.sgl(live)[0].addr, live);
      }
      q.retire(seq - 4);
    }
    EXPECT_FALSE(q.full()) << seq;
  }
}

TEST(SwkitWorkQueue, PostChecksSayWhyAndWithWhichCode) {
  const std::uint64_t word = 0;
  Sge sge{addr_of(&word), 8, 1};
  WorkRequest wr;
  wr.opcode = Opcode::kRdmaWrite;
  wr.sgl = {&sge, 1};
  const SendLimits limits{2, 64, 1u << 20};
  StatusCode code;
  std::uint64_t total = 0;
  EXPECT_STREQ(check_post_send(QpState::kReset, wr, limits, false, &total, code), "QP is not in RTS state");
  EXPECT_EQ(code, StatusCode::kFailedPrecondition);
  EXPECT_STREQ(check_post_send(QpState::kError, wr, limits, false, &total, code), "QP is in the error state");
  EXPECT_STREQ(check_post_send(QpState::kRts, wr, limits, true, &total, code), "send queue full");
  EXPECT_EQ(code, StatusCode::kResourceExhausted);
  wr.opcode = Opcode::kRecv;
  EXPECT_NE(check_post_send(QpState::kRts, wr, limits, false, &total, code), nullptr);
  EXPECT_EQ(code, StatusCode::kInvalidArgument);
  wr.opcode = Opcode::kRdmaWrite;
  EXPECT_EQ(check_post_send(QpState::kRts, wr, limits, false, &total, code), nullptr);
  EXPECT_EQ(code, StatusCode::kOk);
  EXPECT_EQ(total, 8u);

  RecvRequest rr;
  Sge three[3] = {sge, sge, sge};
  rr.sgl = {three, 2};
  EXPECT_STREQ(check_post_recv(QpState::kReset, rr, 2, false, code), "QP is in RESET state");
  EXPECT_EQ(code, StatusCode::kFailedPrecondition);
  EXPECT_STREQ(check_post_recv(QpState::kError, rr, 2, false, code), "QP is in the error state");
  EXPECT_EQ(check_post_recv(QpState::kInit, rr, 2, false, code), nullptr);
  EXPECT_STREQ(check_post_recv(QpState::kRts, rr, 2, true, code), "receive queue full");
  EXPECT_EQ(code, StatusCode::kResourceExhausted);
  rr.sgl = {three, 3};
  EXPECT_STREQ(check_post_recv(QpState::kRts, rr, 2, false, code), "too many SGEs");
  EXPECT_EQ(code, StatusCode::kInvalidArgument);
}

TEST(SwkitWorkQueue, FastPostCheckAgreesWithTheFullOne) {
  std::uint64_t words[4] = {};
  const SendLimits limits{2, 64, 1u << 20};
  const Opcode ops[] = {Opcode::kRdmaWrite, Opcode::kRdmaWriteWithImm, Opcode::kRdmaRead, Opcode::kAtomicFetchAdd,
                        Opcode::kAtomicCmpSwap, Opcode::kSend, Opcode::kSendWithImm, Opcode::kRecv};
  const std::uint32_t flag_sets[] = {0,
                                     kWrSignaled,
                                     kWrInline,
                                     kWrSignaled | kWrInline,
                                     kWrFence | kWrSolicited,
                                     kWrSignaled | kWrFence | kWrInline,
                                     1u << 7};
  const std::uint32_t lengths[] = {0, 1, 8, 9, 64, 65, (1u << 20), (1u << 20) + 1};
  const std::uint64_t remotes[] = {0x1000, 0x1004};
  const QpState states[] = {QpState::kRts, QpState::kRtr, QpState::kError};
  int accepted = 0;
  for (QpState state : states) {
    for (bool full : {false, true}) {
      for (Opcode op : ops) {
        for (std::uint32_t flags : flag_sets) {
          for (std::size_t n = 0; n <= 3; ++n) {
            for (std::uint32_t len : lengths) {
              for (std::uint64_t remote : remotes) {
                Sge sgl[3];
                for (std::size_t i = 0; i < n; ++i) sgl[i] = Sge{addr_of(&words[i]), len, 1};
                WorkRequest wr;
                wr.opcode = op;
                wr.flags = flags;
                wr.sgl = {sgl, n};
                wr.remote_addr = remote;
                StatusCode code_full, code_fast;
                std::uint64_t total_full = 0, total_fast = 0;
                const char* full_why = check_post_send(state, wr, limits, full, &total_full, code_full);
                const char* fast_why = check_post_send_fast(state, wr, limits, full, &total_fast, code_fast);
                const std::string what = std::string(opcode_name(op)) + " flags " + std::to_string(flags) + " sges " +
                                         std::to_string(n) + " len " + std::to_string(len);
                ASSERT_EQ(fast_why == nullptr, full_why == nullptr) << what;
                EXPECT_EQ(code_fast, code_full) << what;
                if (full_why == nullptr) {
                  EXPECT_EQ(total_fast, total_full) << what;
                  ++accepted;
                } else {
                  EXPECT_STREQ(fast_why, full_why) << what;
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(accepted, 100) << "the sweep accepts enough requests to mean something";
}

// ------------------------------------------------------------------ endpoint addresses, caps

TEST(SwkitEndpointAddress, HeaderChecksNameTheProblem) {
  EndpointAddress a;
  std::memcpy(a.bytes.data(), "kitv\x02zzzz", 9);
  a.size = 9;
  EXPECT_TRUE(check_endpoint_header(a, "kit", "kitv", 9, 2).ok());
  auto msg = [&](std::uint32_t size, std::uint8_t version) {
    return check_endpoint_header(a, "kit", "kitv", size, version).message();
  };
  EXPECT_NE(msg(10, 2).find("kit endpoint address has 9 bytes, expected 10"), std::string::npos);
  EXPECT_NE(msg(9, 3).find("has version 2, expected 3"), std::string::npos);
  a.bytes[0] = '\x01';
  EXPECT_NE(msg(9, 2).find("starting \".itv"), std::string::npos) << msg(9, 2);
  EXPECT_NE(msg(9, 2).find("must start with \"kitv\""), std::string::npos);
  a.size = 2;  // shorter than the tag
  EXPECT_EQ(check_endpoint_header(a, "kit", "kitv", 9, 2).code(), StatusCode::kInvalidArgument);
  a.size = EndpointAddress::kMaxSize + 1;
  EXPECT_NE(msg(9, 2).find("exceeds"), std::string::npos);
}

TEST(SwkitCaps, SharedLimitsAndTheProvidersOwn) {
  QueueLimits l;
  l.max_qp = 7;
  l.max_qp_wr = 8;
  l.max_cqe = 9;
  l.max_qp_rd_atom = 3;
  l.path_mtu = 1024;
  const DeviceCaps c = software_caps(l);
  EXPECT_EQ(c.max_qp, 7u);
  EXPECT_EQ(c.max_qp_wr, 8u);
  EXPECT_EQ(c.max_cqe, 9u);
  EXPECT_EQ(c.max_qp_rd_atom, 3u);
  EXPECT_EQ(c.path_mtu, 1024u);
  EXPECT_EQ(c.max_sge, 32u);
  EXPECT_EQ(c.max_inline_data, 256u);
  EXPECT_EQ(c.max_msg_size, 1u << 31);
  EXPECT_TRUE(c.atomics);
}

}  // namespace
}  // namespace rma::swkit
