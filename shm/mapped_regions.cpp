#include "shm/mapped_regions.hpp"

#include "shm/peer_mappings.hpp"
#include "shm/region_table.hpp"
#include "swkit/vendor_err.hpp"

namespace rma::shm {

std::uint32_t MappedRegions::refill(Entry& e, const SegmentLayout& peer, std::uint32_t peer_pid, std::uint32_t pd,
                                    std::uint32_t rkey, std::uint64_t addr, std::uint64_t len,
                                    Access right) noexcept {
  const RegionView v = read_region(peer, rkey);
  if (!v.consistent || v.rkey == 0 || v.rkey != rkey) {
    e = Entry{};
    return check_region(v, pd, rkey, addr, len, right);
  }
  e.rkey = v.rkey;
  e.seq = v.seq;
  e.access = v.access;
  e.pd = v.pd;
  e.addr = v.addr;
  e.length = v.length;
  e.base = nullptr;
  e.mem.reset();
  // The peer wrote all of this: map only a segment of the peer itself, and
  // only when the region lies inside it, so no access through the mapping
  // can leave the mapping.
  const node::SegmentRef& s = v.seg;
  if (s.size != 0 && s.pid == peer_pid && v.seg_offset <= s.size && v.length <= s.size - v.seg_offset) {
    e.mem = map_peer_segment(s);
    if (e.mem) e.base = e.mem->data() + v.seg_offset;
  }
  return swkit::kVeNone;
}

MappedRegions::Target MappedRegions::resolve(const SegmentLayout& peer, std::uint32_t peer_pid, std::uint32_t pd,
                                             std::uint32_t rkey, std::uint64_t addr, std::uint64_t len,
                                             Access right) noexcept {
  Entry& e = entries_[rkey % kEntries];
  const std::uint32_t seq = peer.mr[rkey & (kMaxMr - 1)].seq.load(std::memory_order_acquire);
  if (e.rkey != rkey || e.seq != seq || rkey == 0) {
    if (const std::uint32_t ve = refill(e, peer, peer_pid, pd, rkey, addr, len, right); ve != swkit::kVeNone) {
      return Target{ve, nullptr};
    }
  }
  // check_region's order, on what was cached.
  if (e.pd != pd) return Target{swkit::kVeRkeyOtherPd, nullptr};
  if (!has_access(static_cast<Access>(e.access), right)) return Target{swkit::kVeNoRemoteRight, nullptr};
  if (!(addr >= e.addr && len <= e.length && addr - e.addr <= e.length - len)) {
    return Target{swkit::kVeRemoteOutOfBounds, nullptr};
  }
  if (e.base == nullptr) return Target{swkit::kVeNone, nullptr};
  if (e.mem->freed()) return Target{swkit::kVeRemoteUnmapped, nullptr};
  return Target{swkit::kVeNone, e.base + (addr - e.addr)};
}

}  // namespace rma::shm
