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

}  // namespace rma::shm
