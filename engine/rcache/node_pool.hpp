// A node allocator that recycles freed nodes instead of returning them to
// malloc while the pool lives.
//
// Why: the registration cache mutates its map while holding its lock, and a
// free() there could make glibc trim the heap (munmap/madvise/brk). With
// userfaultfd that unmapping blocks until the monitor thread reads the event,
// and the monitor needs the cache lock: a deadlock. Allocation is harmless
// (malloc may map memory but never unmaps memory we watch).
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <vector>

namespace rma::rcache {

class NodePool {
 public:
  explicit NodePool(std::size_t node_size)
      : node_size_((node_size + alignof(std::max_align_t) - 1) & ~(alignof(std::max_align_t) - 1)) {}
  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;
  ~NodePool() {
    for (void* chunk : chunks_) ::operator delete(chunk);
  }

  void* allocate() {
    if (free_ == nullptr) grow();
    FreeNode* n = free_;
    free_ = n->next;
    return n;
  }
  void deallocate(void* p) noexcept {
    auto* n = static_cast<FreeNode*>(p);
    n->next = free_;
    free_ = n;
  }
  std::size_t node_size() const noexcept { return node_size_; }

 private:
  struct FreeNode {
    FreeNode* next;
  };
  void grow() {
    constexpr std::size_t kNodesPerChunk = 256;
    // Reserve first so that push_back cannot reallocate (and free) later.
    chunks_.reserve(chunks_.size() + 1);
    auto* chunk = static_cast<char*>(::operator new(node_size_ * kNodesPerChunk));
    chunks_.push_back(chunk);
    for (std::size_t i = 0; i < kNodesPerChunk; ++i) {
      deallocate(chunk + i * node_size_);
    }
  }

  std::size_t node_size_;
  FreeNode* free_ = nullptr;
  std::vector<void*> chunks_;
};

// std::allocator-compatible front end. Containers allocate one node at a
// time; anything else (n != 1) goes to operator new, which only std::map's
// implementation could ask for and never does.
template <typename T>
class NodePoolAllocator {
 public:
  using value_type = T;
  explicit NodePoolAllocator(std::shared_ptr<NodePool> pool) noexcept : pool_(std::move(pool)) {}
  template <typename U>
  NodePoolAllocator(const NodePoolAllocator<U>& other) noexcept : pool_(other.pool()) {}  // NOLINT

  T* allocate(std::size_t n) {
    if (n == 1 && sizeof(T) <= pool_->node_size()) return static_cast<T*>(pool_->allocate());
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n == 1 && sizeof(T) <= pool_->node_size()) {
      pool_->deallocate(p);
    } else {
      ::operator delete(p);
    }
  }
  const std::shared_ptr<NodePool>& pool() const noexcept { return pool_; }

  template <typename U>
  bool operator==(const NodePoolAllocator<U>& o) const noexcept { return pool_ == o.pool(); }

 private:
  std::shared_ptr<NodePool> pool_;
};

}  // namespace rma::rcache
