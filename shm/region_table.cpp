#include "shm/region_table.hpp"

#include <atomic>

#include "swkit/vendor_err.hpp"

namespace rma::shm {

namespace {
MrSlot& slot_of(SegmentLayout& seg, std::uint32_t rkey) noexcept { return seg.mr[rkey & (kMaxMr - 1)]; }
}  // namespace

void publish_region(SegmentLayout& seg, std::uint32_t rkey, std::uint64_t addr, std::uint64_t length,
                    Access access, std::uint32_t pd) noexcept {
  MrSlot& m = slot_of(seg, rkey);
  const std::uint32_t s = m.seq.load(std::memory_order_relaxed);
  m.seq.store(s + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  m.addr.store(addr, std::memory_order_relaxed);
  m.length.store(length, std::memory_order_relaxed);
  m.access.store(static_cast<std::uint32_t>(access), std::memory_order_relaxed);
  m.pd.store(pd, std::memory_order_relaxed);
  m.rkey.store(rkey, std::memory_order_relaxed);
  m.seq.store(s + 2, std::memory_order_release);
}

void withdraw_region(SegmentLayout& seg, std::uint32_t rkey) noexcept {
  MrSlot& m = slot_of(seg, rkey);
  if (m.rkey.load(std::memory_order_relaxed) != rkey) return;
  const std::uint32_t s = m.seq.load(std::memory_order_relaxed);
  m.seq.store(s + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  m.rkey.store(0, std::memory_order_relaxed);
  m.seq.store(s + 2, std::memory_order_release);
}

std::uint32_t check_remote_region(const SegmentLayout& seg, std::uint32_t pd, std::uint32_t rkey, std::uint64_t addr,
                                  std::uint64_t len, Access right) noexcept {
  const MrSlot& m = seg.mr[rkey & (kMaxMr - 1)];
  std::uint32_t key = 0, acc = 0, mpd = 0;
  std::uint64_t a = 0, l = 0;
  // Bounded: an owner killed in the middle of an update leaves seq odd for
  // good; its regions then name nothing.
  bool consistent = false;
  for (int tries = 0; tries < 10000 && !consistent; ++tries) {
    const std::uint32_t s1 = m.seq.load(std::memory_order_acquire);
    if (s1 & 1u) continue;
    key = m.rkey.load(std::memory_order_relaxed);
    a = m.addr.load(std::memory_order_relaxed);
    l = m.length.load(std::memory_order_relaxed);
    acc = m.access.load(std::memory_order_relaxed);
    mpd = m.pd.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    consistent = m.seq.load(std::memory_order_relaxed) == s1;
  }
  if (!consistent || key == 0 || key != rkey) return swkit::kVeBadRkey;
  if (mpd != pd) return swkit::kVeRkeyOtherPd;
  if (!has_access(static_cast<Access>(acc), right)) return swkit::kVeNoRemoteRight;
  // As MrEntry::contains: no sum that can wrap.
  if (!(addr >= a && len <= l && addr - a <= l - len)) return swkit::kVeRemoteOutOfBounds;
  return swkit::kVeNone;
}

}  // namespace rma::shm
