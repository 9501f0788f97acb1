// Page-granular interval map: disjoint half-open ranges [start, end) of
// addresses, each carrying a value, with lookups for "the range covering
// [s, e)" and "every range overlapping or adjacent to [s, e)". Nodes come
// from a NodePool so that erasing never frees memory (see node_pool.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>

#include "rcache/node_pool.hpp"

namespace rma::rcache {

template <typename V>
class IntervalMap {
 public:
  struct Entry {
    std::uintptr_t end;
    V value;
  };
  using Map = std::map<std::uintptr_t, Entry, std::less<>,
                       NodePoolAllocator<std::pair<const std::uintptr_t, Entry>>>;

  IntervalMap()
      : pool_(std::make_shared<NodePool>(kNodeSizeGuess)),
        map_(std::less<>(), NodePoolAllocator<std::pair<const std::uintptr_t, Entry>>(pool_)) {}

  std::size_t size() const noexcept { return map_.size(); }
  bool empty() const noexcept { return map_.empty(); }

  // The value of the range that contains all of [s, e), or nullptr.
  const V* find_covering(std::uintptr_t s, std::uintptr_t e) const noexcept {
    auto it = map_.upper_bound(s);
    if (it == map_.begin()) return nullptr;
    --it;
    return it->second.end >= e ? &it->second.value : nullptr;
  }

  // Calls fn(start, end, value) for every range overlapping or touching
  // [s, e), in address order.
  template <typename Fn>
  void for_each_touching(std::uintptr_t s, std::uintptr_t e, Fn&& fn) const {
    for (auto it = first_touching(s); it != map_.end() && it->first <= e; ++it) {
      fn(it->first, it->second.end, it->second.value);
    }
  }

  // Removes every range overlapping [s, e) (touching is not enough) and
  // calls fn(start, end, value) for each.
  template <typename Fn>
  void erase_overlapping(std::uintptr_t s, std::uintptr_t e, Fn&& fn) {
    auto it = first_touching(s);
    while (it != map_.end() && it->first < e) {
      if (it->second.end > s) {
        fn(it->first, it->second.end, it->second.value);
        it = map_.erase(it);
      } else {
        ++it;
      }
    }
  }

  // Removes every range overlapping or touching [s, e).
  template <typename Fn>
  void erase_touching(std::uintptr_t s, std::uintptr_t e, Fn&& fn) {
    auto it = first_touching(s);
    while (it != map_.end() && it->first <= e) {
      fn(it->first, it->second.end, it->second.value);
      it = map_.erase(it);
    }
  }

  // Removes exactly the range starting at `start`; false if there is none.
  bool erase(std::uintptr_t start) noexcept { return map_.erase(start) == 1; }

  // Inserts [s, e); the caller guarantees it overlaps nothing.
  void insert(std::uintptr_t s, std::uintptr_t e, V value) { map_.emplace(s, Entry{e, value}); }

  template <typename Fn>
  void for_each(Fn&& fn) const {
    for (const auto& [s, entry] : map_) fn(s, entry.end, entry.value);
  }

 private:
  // std::map nodes are four pointers plus the value; the pool rounds up.
  static constexpr std::size_t kNodeSizeGuess = 4 * sizeof(void*) + sizeof(std::uintptr_t) + sizeof(Entry);

  typename Map::const_iterator first_touching(std::uintptr_t s) const {
    auto it = map_.upper_bound(s);
    if (it != map_.begin()) {
      auto prev = std::prev(it);
      if (prev->second.end >= s) return prev;
    }
    return it;
  }
  typename Map::iterator first_touching(std::uintptr_t s) {
    auto it = map_.upper_bound(s);
    if (it != map_.begin()) {
      auto prev = std::prev(it);
      if (prev->second.end >= s) return prev;
    }
    return it;
  }

  std::shared_ptr<NodePool> pool_;
  Map map_;
};

}  // namespace rma::rcache
