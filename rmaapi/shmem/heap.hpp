// The symmetric heap's allocator: offsets into one reserved range, first fit
// with coalescing. Every PE runs the same sequence of collective calls
// (shmem_malloc, shmem_free, ...) through its own allocator, so identical
// inputs give identical offsets: the heap is laid out the same on every PE
// without any communication. Control path only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>

namespace rma::shmem {

class SymmetricAllocator {
 public:
  // Manages [begin, end) (offsets from the heap base).
  void reset(std::size_t begin, std::size_t end);

  // The lowest offset that is `phase` past a multiple of `alignment` (a power
  // of two; phase < alignment) with `bytes` free after it, or nullopt when no
  // free range is large enough.
  std::optional<std::size_t> allocate(std::size_t bytes, std::size_t alignment, std::size_t phase = 0);
  // Frees what allocate() returned; false when `offset` is not allocated.
  bool release(std::size_t offset);
  // Grows or shrinks the block at `offset` in place when the free range after
  // it allows; false otherwise (nothing changed).
  bool resize_in_place(std::size_t offset, std::size_t bytes);
  // Bytes of the block at `offset`, 0 when not allocated.
  std::size_t size_of(std::size_t offset) const;
  // The largest free range, for error messages.
  std::size_t largest_free() const;
  std::size_t capacity() const { return end_ - begin_; }

 private:
  void insert_free(std::size_t offset, std::size_t bytes);
  std::size_t begin_ = 0, end_ = 0;
  std::map<std::size_t, std::size_t> free_;  // offset -> bytes
  std::map<std::size_t, std::size_t> used_;  // offset -> bytes
};

}  // namespace rma::shmem
