// A requester's view of its peer's regions: what the shared region table
// said about each rkey it used (checked as check_remote_region checks),
// and, for a region inside one of the peer's shared segments, where it
// lies in this process's mapping of that segment.
//
// The cache is small and per QP (device lock held). An entry is used only
// while the region slot's seqlock counter is what it was when the entry was
// filled: one acquire load per use, and a re-registration or
// deregistration at the peer is never acted on through a stale entry. A
// segment its owner freed is seen through the segment's freed mark.
//
// Limit (as with cross-memory attach): a deregistration or free that
// happens between this check and the copy is not seen by that copy; the
// bytes land in the region's old pages, which are still mapped here, so
// nothing outside a segment is ever touched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "rma/sdk/node.hpp"
#include "rma/sdk/provider.hpp"
#include "shm/layout.hpp"

namespace rma::shm {

class MappedRegions {
 public:
  struct Target {
    std::uint32_t vendor_err;  // swkit kVeNone when every check passed
    std::byte* at;             // non-null: [addr, addr+len) in our mapping; null: not mapped here
  };

  // Checks [addr, addr+len) of the peer's region `rkey` for `right`, with
  // the vendor errors and order of check_remote_region, and says where it is
  // mapped. `peer_pid`: only segments of the peer process itself are
  // mapped. A mapped region whose segment was freed is kVeRemoteUnmapped.
  Target resolve(const SegmentLayout& peer, std::uint32_t peer_pid, std::uint32_t pd, std::uint32_t rkey,
                 std::uint64_t addr, std::uint64_t len, Access right) noexcept;

 private:
  struct Entry {
    std::uint32_t rkey = 0;  // 0: empty
    std::uint32_t seq = 0;   // the slot's seqlock counter when filled
    std::uint32_t access = 0;
    std::uint32_t pd = 0;
    std::uint64_t addr = 0;
    std::uint64_t length = 0;
    std::byte* base = nullptr;  // the region's first byte in our mapping
    std::shared_ptr<node::SharedMemory> mem;
  };
  // Fills `e` from the slot; kVeNone or the error check_region gives.
  std::uint32_t refill(Entry& e, const SegmentLayout& peer, std::uint32_t peer_pid, std::uint32_t pd,
                       std::uint32_t rkey, std::uint64_t addr, std::uint64_t len, Access right) noexcept;

  static constexpr std::size_t kEntries = 16;  // by the rkey's low bits (its slot)
  Entry entries_[kEntries];
};

}  // namespace rma::shm
