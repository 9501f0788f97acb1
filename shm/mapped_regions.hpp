// A requester's view of its peer's regions: what the shared region table
// said about each rkey it used (checked as check_remote_region checks),
// and, for a region inside one of the peer's shared segments, where it
// lies in this process's mapping of that segment.
//
// The cache is small and per QP (the QP's requester owns it). An entry is
// used only while the region slot's seqlock counter is what it was when
// the entry was filled: one acquire load per use, and a re-registration or
// deregistration at the peer is never acted on through a stale entry. A
// segment its owner freed is seen through the segment's freed mark. A hit
// is inline (a probe, the counter, the cached checks); a miss reads the
// slot out of line.
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
#include "swkit/vendor_err.hpp"

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
                 std::uint64_t addr, std::uint64_t len, Access right) noexcept {
    Entry& e = entries_[rkey % kEntries];
    const std::uint32_t seq = peer.mr[rkey & (kMaxMr - 1)].seq.load(std::memory_order_acquire);
    if (e.rkey != rkey || e.seq != seq || rkey == 0) [[unlikely]] {
      if (const std::uint32_t ve = refill(e, peer, peer_pid, pd, rkey, addr, len, right); ve != swkit::kVeNone) {
        return Target{ve, nullptr};
      }
    }
    return check_cached(e, pd, addr, len, right);
  }
  // Where [addr, addr+len) of `rkey` is mapped here, when the cache holds
  // the region, every check passes and it is mapped; nullptr otherwise
  // (then resolve() has the answer). No side effect. `len` is not 0.
  [[gnu::always_inline]] std::byte* probe(const SegmentLayout& peer, std::uint32_t pd, std::uint32_t rkey, std::uint64_t addr,
                   std::uint64_t len, Access right) const noexcept {
    // rkey 0 may match an empty entry: its length 0 fails every bounds
    // check (a probed length is never 0), so the answer is still nullptr.
    const Entry& e = entries_[rkey % kEntries];
    if (e.rkey != rkey) return nullptr;
    if (e.seq != peer.mr[rkey & (kMaxMr - 1)].seq.load(std::memory_order_acquire)) return nullptr;
    const Target t = check_cached(e, pd, addr, len, right);
    return t.vendor_err == swkit::kVeNone ? t.at : nullptr;
  }

 private:
  struct alignas(64) Entry {
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
  // check_region's order, on what was cached.
  [[gnu::always_inline]] static Target check_cached(const Entry& e, std::uint32_t pd, std::uint64_t addr, std::uint64_t len,
                             Access right) noexcept {
    if (e.pd != pd) return Target{swkit::kVeRkeyOtherPd, nullptr};
    if (!has_access(static_cast<Access>(e.access), right)) return Target{swkit::kVeNoRemoteRight, nullptr};
    if (!(addr >= e.addr && len <= e.length && addr - e.addr <= e.length - len)) {
      return Target{swkit::kVeRemoteOutOfBounds, nullptr};
    }
    if (e.base == nullptr) return Target{swkit::kVeNone, nullptr};
    if (e.mem->freed()) return Target{swkit::kVeRemoteUnmapped, nullptr};
    return Target{swkit::kVeNone, e.base + (addr - e.addr)};
  }

  static constexpr std::size_t kEntries = 16;  // by the rkey's low bits (its slot)
  Entry entries_[kEntries];
};

}  // namespace rma::shm
