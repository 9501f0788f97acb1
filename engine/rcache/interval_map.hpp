// Page-granular interval map: disjoint half-open ranges [start, end) of
// addresses, each carrying a value, with lookups for "the range covering
// [s, e)" and "every range overlapping or adjacent to [s, e)".
//
// Stored as sorted arrays rather than a tree: the registration
// cache's hit path is one branchless binary search over the start array
// (10,000 ranges are 80 KB, mostly in cache), where a red-black tree costs a
// cache miss per level. Inserting and erasing move the tail of the arrays,
// which the cache's miss path (a memory registration) easily absorbs.
//
// Growing never frees the old arrays while the map lives: the cache mutates
// the map under its lock, and a free() there could make glibc trim the heap
// (munmap/madvise/brk); with userfaultfd that call waits until the monitor
// thread has read the event, and the monitor needs the lock: a deadlock.
// Allocation is harmless (malloc maps memory but never unmaps watched memory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

namespace rma::rcache {

template <typename V>
class IntervalMap {
  static_assert(std::is_trivially_copyable_v<V>, "values are moved with memmove");

 public:
  IntervalMap() {
    retired_.reserve(64);  // one per doubling: never reallocates
    grow(64);
  }
  IntervalMap(const IntervalMap&) = delete;
  IntervalMap& operator=(const IntervalMap&) = delete;

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }

  // The value of the range that contains all of [s, e), or nullptr.
  const V* find_covering(std::uintptr_t s, std::uintptr_t e) const noexcept {
    std::size_t i = upper_bound(s);
    if (i == 0) return nullptr;
    --i;
    return slots_[i].end >= e ? &slots_[i].value : nullptr;
  }

  // Calls fn(start, end, value) for every range overlapping or touching
  // [s, e), in address order.
  template <typename Fn>
  void for_each_touching(std::uintptr_t s, std::uintptr_t e, Fn&& fn) const {
    for (std::size_t i = first_touching(s); i < size_ && starts_[i] <= e; ++i) fn(starts_[i], slots_[i].end, slots_[i].value);
  }

  // Removes every range overlapping [s, e) (touching is not enough) and
  // calls fn(start, end, value) for each.
  template <typename Fn>
  void erase_overlapping(std::uintptr_t s, std::uintptr_t e, Fn&& fn) {
    std::size_t first = first_touching(s);
    if (first < size_ && slots_[first].end <= s) ++first;  // only adjacent on the left
    std::size_t last = first;
    while (last < size_ && starts_[last] < e) ++last;
    erase_span(first, last, fn);
  }

  // Removes every range overlapping or touching [s, e).
  template <typename Fn>
  void erase_touching(std::uintptr_t s, std::uintptr_t e, Fn&& fn) {
    std::size_t first = first_touching(s);
    std::size_t last = first;
    while (last < size_ && starts_[last] <= e) ++last;
    erase_span(first, last, fn);
  }

  // Removes every range for which pred(start, end, value) is true, in one
  // pass, calling fn(start, end, value) on each removed one.
  template <typename Pred, typename Fn>
  void erase_if(Pred&& pred, Fn&& fn) {
    std::size_t out = 0;
    for (std::size_t i = 0; i < size_; ++i) {
      if (pred(starts_[i], slots_[i].end, slots_[i].value)) {
        fn(starts_[i], slots_[i].end, slots_[i].value);
      } else {
        starts_[out] = starts_[i];
        slots_[out] = slots_[i];
        ++out;
      }
    }
    size_ = out;
  }

  // Inserts [s, e); the caller guarantees it overlaps nothing.
  void insert(std::uintptr_t s, std::uintptr_t e, V value) {
    if (size_ == capacity_) grow(capacity_ * 2);
    std::size_t i = upper_bound(s);
    std::size_t tail = size_ - i;
    std::memmove(starts_ + i + 1, starts_ + i, tail * sizeof(std::uintptr_t));
    std::memmove(slots_ + i + 1, slots_ + i, tail * sizeof(Slot));
    starts_[i] = s;
    slots_[i] = Slot{e, value};
    ++size_;
  }

  template <typename Fn>
  void for_each(Fn&& fn) const {
    for (std::size_t i = 0; i < size_; ++i) fn(starts_[i], slots_[i].end, slots_[i].value);
  }

 private:
  // Index of the first start greater than x (branchless binary search).
  std::size_t upper_bound(std::uintptr_t x) const noexcept {
    std::size_t n = size_;
    if (n == 0) return 0;
    const std::uintptr_t* base = starts_;
    while (n > 1) {
      std::size_t half = n / 2;
      base = base[half - 1] <= x ? base + half : base;
      n -= half;
    }
    return static_cast<std::size_t>(base - starts_) + (*base <= x ? 1 : 0);
  }

  std::size_t first_touching(std::uintptr_t s) const noexcept {
    std::size_t i = upper_bound(s);
    return i > 0 && slots_[i - 1].end >= s ? i - 1 : i;
  }

  template <typename Fn>
  void erase_span(std::size_t first, std::size_t last, Fn& fn) {
    if (first >= last) return;
    for (std::size_t i = first; i < last; ++i) fn(starts_[i], slots_[i].end, slots_[i].value);
    std::size_t tail = size_ - last;
    std::memmove(starts_ + first, starts_ + last, tail * sizeof(std::uintptr_t));
    std::memmove(slots_ + first, slots_ + last, tail * sizeof(Slot));
    size_ -= last - first;
  }

  void grow(std::size_t capacity) {
    auto starts = std::make_unique<std::uintptr_t[]>(capacity);
    auto slots = std::make_unique<Slot[]>(capacity);
    if (size_ != 0) {
      std::memcpy(starts.get(), starts_, size_ * sizeof(std::uintptr_t));
      std::memcpy(slots.get(), slots_, size_ * sizeof(Slot));
    }
    starts_ = starts.get();
    slots_ = slots.get();
    capacity_ = capacity;
    retired_.push_back({std::move(starts), std::move(slots)});
  }

  // The search touches only starts_; the covering check then needs end and
  // value together, so they share a slot (one cache line, not two).
  struct Slot {
    std::uintptr_t end;
    V value;
  };
  struct Arrays {
    std::unique_ptr<std::uintptr_t[]> starts;
    std::unique_ptr<Slot[]> slots;
  };
  std::uintptr_t* starts_ = nullptr;
  Slot* slots_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
  std::vector<Arrays> retired_;  // every generation of arrays, the live one last
};

}  // namespace rma::rcache
