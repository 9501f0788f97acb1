// A map from nonzero 32-bit identifiers to 32-bit values with O(1) expected
// lookup, for identifiers that are random rather than dense (memory keys and
// QP numbers drawn from secure_random so that a peer cannot guess them).
//
// Open addressing with linear probing and backward-shift deletion (no
// tombstones, so a long-lived table does not degrade). The load stays at
// most 1/2. find() and erase() never allocate (data path safe); insert()
// may grow the table (control path).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rma::swkit {

class IdIndex {
 public:
  // False when `id` is 0 or already present.
  bool insert(std::uint32_t id, std::uint32_t value) {
    if (id == 0 || contains(id)) return false;
    if ((size_ + 1) * 2 > table_.size()) grow();
    place(id, value);
    ++size_;
    return true;
  }

  bool find(std::uint32_t id, std::uint32_t& value) const noexcept {
    if (id == 0 || table_.empty()) return false;
    for (std::size_t i = home(id);; i = (i + 1) & mask_) {
      const Entry& e = table_[i];
      if (e.id == 0) return false;
      if (e.id == id) {
        value = e.value;
        return true;
      }
    }
  }
  bool contains(std::uint32_t id) const noexcept {
    std::uint32_t v;
    return find(id, v);
  }

  void erase(std::uint32_t id) noexcept {
    if (id == 0 || table_.empty()) return;
    std::size_t hole = home(id);
    for (;; hole = (hole + 1) & mask_) {
      if (table_[hole].id == 0) return;  // not present
      if (table_[hole].id == id) break;
    }
    // Backward shift: move later members of the probe run into the hole
    // unless their home lies cyclically within (hole, j].
    for (std::size_t j = (hole + 1) & mask_;; j = (j + 1) & mask_) {
      const Entry e = table_[j];
      if (e.id == 0) break;
      const std::size_t h = home(e.id);
      const bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
      if (stays) continue;
      table_[hole] = e;
      hole = j;
    }
    table_[hole] = Entry{};
    --size_;
  }

  std::size_t size() const noexcept { return size_; }

 private:
  struct Entry {
    std::uint32_t id = 0;
    std::uint32_t value = 0;
  };
  std::size_t home(std::uint32_t id) const noexcept {
    // Fibonacci hashing: spreads ids that differ only in high bits too.
    return static_cast<std::size_t>((std::uint64_t{id} * 0x9E3779B97F4A7C15ull) >> 32) & mask_;
  }
  void place(std::uint32_t id, std::uint32_t value) noexcept {
    std::size_t i = home(id);
    while (table_[i].id != 0) i = (i + 1) & mask_;
    table_[i] = Entry{id, value};
  }
  void grow() {
    std::vector<Entry> old = std::move(table_);
    const std::size_t n = old.empty() ? 64 : old.size() * 2;
    table_.assign(n, Entry{});
    mask_ = n - 1;
    for (const Entry& e : old) {
      if (e.id != 0) place(e.id, e.value);
    }
  }

  std::vector<Entry> table_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace rma::swkit
