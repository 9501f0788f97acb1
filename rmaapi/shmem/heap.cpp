#include "shmem/heap.hpp"

#include <algorithm>
#include <iterator>

namespace rma::shmem {

void SymmetricAllocator::reset(std::size_t begin, std::size_t end) {
  begin_ = begin;
  end_ = end;
  free_.clear();
  used_.clear();
  if (end > begin) free_[begin] = end - begin;
}

void SymmetricAllocator::insert_free(std::size_t offset, std::size_t bytes) {
  if (bytes == 0) return;
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && offset + bytes == next->first) {
    bytes += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += bytes;
      return;
    }
  }
  free_[offset] = bytes;
}

std::optional<std::size_t> SymmetricAllocator::allocate(std::size_t bytes, std::size_t alignment,
                                                        std::size_t phase) {
  if (bytes == 0 || alignment == 0 || (alignment & (alignment - 1)) != 0 || phase >= alignment) return std::nullopt;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    const std::size_t start = it->first, len = it->second;
    // The first offset >= start that is `phase` past a multiple of `alignment`.
    const std::size_t aligned = start + ((phase - start) & (alignment - 1));
    if (aligned < start || aligned - start > len || len - (aligned - start) < bytes) continue;
    free_.erase(it);
    insert_free(start, aligned - start);
    insert_free(aligned + bytes, start + len - (aligned + bytes));
    used_[aligned] = bytes;
    return aligned;
  }
  return std::nullopt;
}

bool SymmetricAllocator::release(std::size_t offset) {
  auto it = used_.find(offset);
  if (it == used_.end()) return false;
  const std::size_t bytes = it->second;
  used_.erase(it);
  insert_free(offset, bytes);
  return true;
}

bool SymmetricAllocator::resize_in_place(std::size_t offset, std::size_t bytes) {
  auto it = used_.find(offset);
  if (it == used_.end() || bytes == 0) return false;
  const std::size_t old = it->second;
  if (bytes <= old) {
    it->second = bytes;
    insert_free(offset + bytes, old - bytes);
    return true;
  }
  auto next = free_.find(offset + old);
  if (next == free_.end() || next->second < bytes - old) return false;
  const std::size_t rest = next->second - (bytes - old);
  free_.erase(next);
  insert_free(offset + bytes, rest);
  it->second = bytes;
  return true;
}

std::size_t SymmetricAllocator::size_of(std::size_t offset) const {
  auto it = used_.find(offset);
  return it == used_.end() ? 0 : it->second;
}

std::size_t SymmetricAllocator::largest_free() const {
  std::size_t best = 0;
  for (const auto& [off, len] : free_) best = std::max(best, len);
  return best;
}

}  // namespace rma::shmem
