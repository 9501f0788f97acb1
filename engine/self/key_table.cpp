#include "self/key_table.hpp"

#include <new>

#include "rma/sdk/text.hpp"

namespace rma::self {

KeyTable::KeyTable(std::uint32_t salt) noexcept : salt_(salt & 0xFFFFFF00u) {}

std::uint32_t KeyTable::encode(std::size_t slot, unsigned kind, std::uint8_t gen) const noexcept {
  const auto index = static_cast<std::uint32_t>(slot * 2 + kind);
  return ((index << 8) | gen) ^ salt_;
}

Result<KeyTable::Keys> KeyTable::insert(const MrEntry& entry, std::size_t max_entries) {
  if (live_ >= max_entries) {
    return resource_exhausted("too many memory regions: " + dec(live_) +
                              " are registered and max_mr is " + dec(max_entries));
  }
  std::size_t slot;
  if (free_.size() > kReuseDelay || (!free_.empty() && slots_.size() >= kMaxSlots)) {
    slot = free_.front();
    free_.pop_front();
  } else {
    if (slots_.size() >= kMaxSlots) return resource_exhausted("memory region key space exhausted");
    slots_.emplace_back();
    slot = slots_.size() - 1;
  }
  Slot& s = slots_[slot];
  s.generation = static_cast<std::uint8_t>(s.generation == 255 ? 1 : s.generation + 1);
  s.entry = entry;
  s.live = true;
  ++live_;
  return Keys{encode(slot, 0, s.generation), encode(slot, 1, s.generation)};
}

void KeyTable::erase(std::uint32_t lkey) noexcept {
  const std::uint32_t raw = lkey ^ salt_;
  const std::size_t slot = (raw >> 8) / 2;
  if (slot >= slots_.size() || !slots_[slot].live) return;
  slots_[slot].live = false;
  slots_[slot].entry = MrEntry{};
  --live_;
  // deque growth may allocate; on failure the slot is simply never reused.
  try {
    free_.push_back(static_cast<std::uint32_t>(slot));
  } catch (...) {
  }
}

const MrEntry* KeyTable::find(std::uint32_t key, unsigned kind) const noexcept {
  const std::uint32_t raw = key ^ salt_;
  const std::uint32_t index = raw >> 8;
  if ((index & 1u) != kind) return nullptr;  // an rkey is not an lkey and vice versa
  const std::size_t slot = index / 2;
  if (slot >= slots_.size()) return nullptr;
  const Slot& s = slots_[slot];
  if (!s.live || s.generation != (raw & 0xFFu)) return nullptr;
  return &s.entry;
}

}  // namespace rma::self
