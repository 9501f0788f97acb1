#include "swkit/key_table.hpp"

#include <string>

#include "swkit/secure_random.hpp"

namespace rma::swkit {

std::uint32_t KeyTable::fresh_key(std::uint32_t slot) const noexcept {
  // Not 0 (IdIndex's empty mark) and not live, so the region's lkey, drawn
  // first, can never come back as its rkey.
  for (;;) {
    std::uint32_t k = secure_random_u32();
    if (slot_bits_ != 0) k = (k << slot_bits_) | slot;
    if (k != 0 && !index_.contains(k)) return k;
  }
}

Result<KeyTable::Keys> KeyTable::insert(const MrEntry& e, std::size_t max_entries) {
  if (live_ >= max_entries) {
    return resource_exhausted("register_memory: too many memory regions: " + std::to_string(live_) +
                              " are registered and max_mr is " + std::to_string(max_entries));
  }
  std::uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(slots_.size());
    if (slot_bits_ != 0 && slot >= (1u << slot_bits_)) {
      return resource_exhausted("register_memory: too many memory regions: the key table has " +
                                std::to_string(slot) + " slots");
    }
    slots_.emplace_back();
    // erase() pushes onto free_ without allocating: keep room for every slot.
    free_.reserve(slots_.capacity());
  }
  Slot& s = slots_[slot];
  s.e = e;
  s.lkey = fresh_key(slot);
  index_.insert(s.lkey, slot << 1);
  s.rkey = fresh_key(slot);
  index_.insert(s.rkey, slot << 1 | 1u);
  ++live_;
  return Keys{s.lkey, s.rkey};
}

void KeyTable::erase(std::uint32_t lkey) noexcept {
  std::uint32_t v;
  if (!index_.find(lkey, v) || (v & 1u) != 0) return;
  Slot& s = slots_[v >> 1];
  // First: a cached copy of this entry stops being used before it goes.
  generation_.fetch_add(1, std::memory_order_acq_rel);
  index_.erase(s.lkey);
  index_.erase(s.rkey);
  s = Slot{};
  --live_;
  free_.push_back(v >> 1);
}

}  // namespace rma::swkit
