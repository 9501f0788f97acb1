// The memory-key table of a software provider: lkey/rkey -> the region they
// name, after rdma-core rxe's pool of memory regions.
//
// Both keys of a region are drawn at random (getrandom) and looked up
// through a hash index, so a peer cannot guess a key (the odds are live
// regions / 2^32 per try, and a wrong rkey breaks the QP it was sent on).
// A deregistered region's keys leave the index at once, so a stale key
// names nothing, and the lkey and rkey of one region always differ, so one
// cannot stand in for the other. The provider's lock guards the table.
//
// Every erase() moves a generation counter on, so a data path that keeps
// the last region it looked up (lkey_cache.hpp) re-checks one counter
// instead of the index, and never acts on a key that was deregistered
// before it looked.
//
// A provider whose peers look keys up without this process (shm: a peer
// reads the region table in shared memory) asks for `slot_bits`: then the
// low bits of both keys are the region's slot (below 2^slot_bits), so a
// peer finds the entry by arithmetic, and only the high 32 - slot_bits bits
// are random; the peer compares the whole key, so a stale key still names
// nothing unless its random bits come back (odds 2^-(32 - slot_bits)).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/status.hpp"
#include "swkit/id_index.hpp"

namespace rma::swkit {

// What the data path needs to know about a registered region.
struct MrEntry {
  std::uint64_t addr = 0;
  std::uint64_t length = 0;
  Access access = Access::kNone;
  const void* pd = nullptr;  // identity of the owning protection domain: keys are valid within it
  // Set when the region's memory was unmapped or discarded (orphan_tracker.hpp);
  // null when nobody watches (engine-level tests).
  const std::atomic<bool>* orphaned = nullptr;

  // [a, a+len) inside the region; len 0 counts as inside (like
  // MemoryRegion::contains). Written so that no sum can wrap.
  bool contains(std::uint64_t a, std::uint64_t len) const noexcept {
    return a >= addr && len <= length && a - addr <= length - len;
  }
  bool is_orphaned() const noexcept { return orphaned != nullptr && orphaned->load(std::memory_order_acquire); }
};

class KeyTable {
 public:
  struct Keys {
    std::uint32_t lkey = 0, rkey = 0;
  };

  // slot_bits 0: keys wholly random (self, softroce). Else at most 24.
  explicit KeyTable(unsigned slot_bits = 0) noexcept : slot_bits_(slot_bits) {}

  // Control path. kResourceExhausted when `max_entries` regions are live.
  Result<Keys> insert(const MrEntry& e, std::size_t max_entries);
  // Removes the region named by `lkey` (as insert returned it); an rkey or
  // unknown key changes nothing. Never allocates.
  void erase(std::uint32_t lkey) noexcept;

  // Data path: the live region a key names, or nullptr.
  const MrEntry* find_lkey(std::uint32_t key) const noexcept { return find(key, 0); }
  const MrEntry* find_rkey(std::uint32_t key) const noexcept { return find(key, 1); }
  std::size_t live() const noexcept { return live_; }
  // Moves on at every erase(). Lock-free: a reader that saw the same value
  // before and after using a copy of an entry used a live one (erase()
  // moves it before the entry goes).
  std::uint32_t generation() const noexcept { return generation_.load(std::memory_order_acquire); }
  // With slot_bits: the slot a key names (whether or not it is live).
  std::uint32_t slot_of(std::uint32_t key) const noexcept { return key & ((1u << slot_bits_) - 1u); }

 private:
  struct Slot {
    MrEntry e;
    std::uint32_t lkey = 0, rkey = 0;
  };
  const MrEntry* find(std::uint32_t key, unsigned kind) const noexcept {
    std::uint32_t v;
    if (!index_.find(key, v) || (v & 1u) != kind) return nullptr;
    return &slots_[v >> 1].e;
  }
  std::uint32_t fresh_key(std::uint32_t slot) const noexcept;

  unsigned slot_bits_ = 0;

  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_;  // slots of deregistered regions; capacity >= slots_.size()
  IdIndex index_;                    // key -> slot << 1 | kind (0 lkey, 1 rkey)
  std::size_t live_ = 0;
  std::atomic<std::uint32_t> generation_{0};
};

}  // namespace rma::swkit
