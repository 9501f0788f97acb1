// The memory-region key table of the in-process fabric: maps lkeys and rkeys
// to the region they name. Keys encode (slot index, generation) and are
// scrambled with a per-process salt, so a key is hard to guess, the lkey and
// rkey of one region differ, and a slot reused after deregistration hands out
// keys that differ from the ones it had before: a stale key fails instead of
// silently naming a newer region.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/status.hpp"

namespace rma::self {

class PdImpl;

// What the data path needs to know about a registered region.
struct MrEntry {
  std::uint64_t addr = 0;
  std::uint64_t length = 0;
  Access access = Access::kNone;
  const PdImpl* pd = nullptr;  // identity only: keys are valid within their PD
  // Set when the region's memory was unmapped or discarded (swkit/orphan_tracker.hpp).
  const std::atomic<bool>* orphaned = nullptr;

  bool is_orphaned() const noexcept { return orphaned != nullptr && orphaned->load(std::memory_order_acquire); }

  // [a, a+len) inside the region; len 0 counts as inside (like MemoryRegion::contains).
  bool contains(std::uint64_t a, std::uint64_t len) const noexcept {
    return a >= addr && len <= length && a - addr <= length - len;
  }
};

class KeyTable {
 public:
  struct Keys {
    std::uint32_t lkey = 0;
    std::uint32_t rkey = 0;
  };

  explicit KeyTable(std::uint32_t salt) noexcept;

  // Control path. Fails with kResourceExhausted when `max_entries` are live.
  Result<Keys> insert(const MrEntry& entry, std::size_t max_entries);
  // Removes the region named by `lkey` (as returned by insert).
  void erase(std::uint32_t lkey) noexcept;

  // Data path: the live region a key names, or nullptr.
  const MrEntry* find_lkey(std::uint32_t lkey) const noexcept { return find(lkey, 0); }
  const MrEntry* find_rkey(std::uint32_t rkey) const noexcept { return find(rkey, 1); }

  std::size_t live() const noexcept { return live_; }

 private:
  struct Slot {
    MrEntry entry;
    std::uint8_t generation = 0;  // 1..255, bumped on each reuse; 0 never used
    bool live = false;
  };
  // Slot i owns key indices 2i (lkey) and 2i+1 (rkey); 24 bits of index.
  static constexpr std::size_t kMaxSlots = std::size_t{1} << 23;
  // A freed slot is reused only once this many others are free, so a key
  // does not come back right after its region is deregistered.
  static constexpr std::size_t kReuseDelay = 64;

  std::uint32_t encode(std::size_t slot, unsigned kind, std::uint8_t gen) const noexcept;
  const MrEntry* find(std::uint32_t key, unsigned kind) const noexcept;

  std::uint32_t salt_;  // low byte zero: the generation byte stays visible, keys never 0
  std::vector<Slot> slots_;
  std::deque<std::uint32_t> free_;  // FIFO: the slot freed longest ago is reused first
  std::size_t live_ = 0;
};

}  // namespace rma::self
