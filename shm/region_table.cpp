#include "shm/region_table.hpp"

#include <atomic>
#include <cstring>

#include "swkit/vendor_err.hpp"

namespace rma::shm {

namespace {
MrSlot& slot_of(SegmentLayout& seg, std::uint32_t rkey) noexcept { return seg.mr[rkey & (kMaxMr - 1)]; }
constexpr std::size_t kNameWords = sizeof(MrSlot::seg_name) / sizeof(std::uint64_t);
static_assert(kNameWords * 8 == node::SegmentRef::kMaxName + 1, "a segment name fills the name words");
}  // namespace

void publish_region(SegmentLayout& seg, std::uint32_t rkey, std::uint64_t addr, std::uint64_t length,
                    Access access, std::uint32_t pd, const std::optional<node::Location>& in_segment) noexcept {
  MrSlot& m = slot_of(seg, rkey);
  const std::uint32_t s = m.seq.load(std::memory_order_relaxed);
  m.seq.store(s + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  m.addr.store(addr, std::memory_order_relaxed);
  m.length.store(length, std::memory_order_relaxed);
  m.access.store(static_cast<std::uint32_t>(access), std::memory_order_relaxed);
  m.pd.store(pd, std::memory_order_relaxed);
  if (in_segment) {
    const node::SegmentRef& r = in_segment->ref;
    m.seg_size.store(r.size, std::memory_order_relaxed);
    m.seg_nonce.store(r.nonce, std::memory_order_relaxed);
    m.seg_offset.store(in_segment->offset, std::memory_order_relaxed);
    m.seg_pid.store(r.pid, std::memory_order_relaxed);
    for (std::size_t i = 0; i < kNameWords; ++i) {
      std::uint64_t w;
      std::memcpy(&w, r.name + i * 8, 8);
      m.seg_name[i].store(w, std::memory_order_relaxed);
    }
  } else {
    m.seg_size.store(0, std::memory_order_relaxed);
  }
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
  m.seg_size.store(0, std::memory_order_relaxed);
  m.seq.store(s + 2, std::memory_order_release);
}

RegionView read_region(const SegmentLayout& seg, std::uint32_t rkey) noexcept {
  const MrSlot& m = seg.mr[rkey & (kMaxMr - 1)];
  RegionView v;
  // Bounded: an owner killed in the middle of an update leaves seq odd for
  // good; its regions then name nothing.
  for (int tries = 0; tries < 10000 && !v.consistent; ++tries) {
    const std::uint32_t s1 = m.seq.load(std::memory_order_acquire);
    if (s1 & 1u) continue;
    v.seq = s1;
    v.rkey = m.rkey.load(std::memory_order_relaxed);
    v.addr = m.addr.load(std::memory_order_relaxed);
    v.length = m.length.load(std::memory_order_relaxed);
    v.access = m.access.load(std::memory_order_relaxed);
    v.pd = m.pd.load(std::memory_order_relaxed);
    v.seg.size = m.seg_size.load(std::memory_order_relaxed);
    if (v.seg.size != 0) {
      v.seg.nonce = m.seg_nonce.load(std::memory_order_relaxed);
      v.seg_offset = m.seg_offset.load(std::memory_order_relaxed);
      v.seg.pid = m.seg_pid.load(std::memory_order_relaxed);
      for (std::size_t i = 0; i < kNameWords; ++i) {
        const std::uint64_t w = m.seg_name[i].load(std::memory_order_relaxed);
        std::memcpy(v.seg.name + i * 8, &w, 8);
      }
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    v.consistent = m.seq.load(std::memory_order_relaxed) == s1;
  }
  return v;
}

std::uint32_t check_region(const RegionView& v, std::uint32_t pd, std::uint32_t rkey, std::uint64_t addr,
                           std::uint64_t len, Access right) noexcept {
  if (!v.consistent || v.rkey == 0 || v.rkey != rkey) return swkit::kVeBadRkey;
  if (v.pd != pd) return swkit::kVeRkeyOtherPd;
  if (!has_access(static_cast<Access>(v.access), right)) return swkit::kVeNoRemoteRight;
  // As MrEntry::contains: no sum that can wrap.
  if (!(addr >= v.addr && len <= v.length && addr - v.addr <= v.length - len)) return swkit::kVeRemoteOutOfBounds;
  return swkit::kVeNone;
}

std::uint32_t check_remote_region(const SegmentLayout& seg, std::uint32_t pd, std::uint32_t rkey, std::uint64_t addr,
                                  std::uint64_t len, Access right) noexcept {
  return check_region(read_region(seg, rkey), pd, rkey, addr, len, right);
}

}  // namespace rma::shm
