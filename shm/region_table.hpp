// The shared region table: every registered region of a device, by slot,
// in the device's segment, so that a requester in another process checks
// the rkey, rights and bounds of its target itself before it copies (the
// checks a NIC responder makes, in the order swkit::check_remote makes
// them, with the same vendor errors).
//
// The slot of a region is the low kMrSlotBits of its keys (the device's
// swkit::KeyTable draws them so); the whole rkey is compared, so a stale key
// names nothing. Entries are seqlocked (layout.hpp MrSlot). A region inside
// one of the owner's librma shared segments also names the segment and its
// offset there, for requesters that map it (mapped_regions.hpp).
#pragma once

#include <cstdint>
#include <optional>

#include "rma/sdk/node.hpp"
#include "rma/sdk/provider.hpp"
#include "shm/layout.hpp"

namespace rma::shm {

// Owner, under its device's key lock. `in_segment`: where the region lies in a
// shared segment of this process, if it does.
void publish_region(SegmentLayout& seg, std::uint32_t rkey, std::uint64_t addr, std::uint64_t length,
                    Access access, std::uint32_t pd, const std::optional<node::Location>& in_segment) noexcept;
void withdraw_region(SegmentLayout& seg, std::uint32_t rkey) noexcept;

// One consistent reading of a region slot, as a peer wrote it: validate
// before use.
struct RegionView {
  bool consistent = false;  // false: the owner died mid-update; the slot names nothing
  std::uint32_t seq = 0;
  std::uint32_t rkey = 0;
  std::uint32_t access = 0;
  std::uint32_t pd = 0;
  std::uint64_t addr = 0;
  std::uint64_t length = 0;
  std::uint64_t seg_offset = 0;
  node::SegmentRef seg;  // seg.size 0: not in a shared segment
};
RegionView read_region(const SegmentLayout& seg, std::uint32_t rkey) noexcept;

// kVeNone when the region `v` read for `rkey` is live, of PD `pd`, grants
// `right` over [addr, addr+len); else the swkit vendor error, in
// swkit::check_remote's order.
std::uint32_t check_region(const RegionView& v, std::uint32_t pd, std::uint32_t rkey, std::uint64_t addr,
                           std::uint64_t len, Access right) noexcept;

// Any process: read_region + check_region.
std::uint32_t check_remote_region(const SegmentLayout& seg, std::uint32_t pd, std::uint32_t rkey, std::uint64_t addr,
                                  std::uint64_t len, Access right) noexcept;

}  // namespace rma::shm
