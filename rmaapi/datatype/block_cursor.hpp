// BlockCursor: the lazy walker over the contiguous byte blocks of `count`
// elements of a type, in typemap order, adjacent blocks merged.
//
// Nothing is materialised: the cursor keeps one frame per level of the type's
// tree (a handful) and produces the next block in O(1) amortised work. It is
// resumable: stop anywhere, continue later; consume() takes part of a block,
// as the transfer planner does when a work request fills up. Stepping never
// allocates (only the constructor may, for trees deeper than kInlineDepth).
//
// Offsets are relative to the buffer address (they may be negative, as
// displacements and lower bounds may be).
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "datatype/layout.hpp"

namespace rma::api {

struct Block {
  std::int64_t offset = 0;  // bytes from the buffer address
  std::int64_t length = 0;  // > 0
};

class BlockCursor {
 public:
  static constexpr std::uint32_t kInlineDepth = 8;

  BlockCursor() noexcept = default;
  // `type` must outlive the cursor (its tree is walked in place).
  BlockCursor(const TypeLayout& type, std::int64_t count);
  BlockCursor(BlockCursor&&) noexcept = default;
  BlockCursor& operator=(BlockCursor&&) noexcept = default;

  // The current block without taking it; false at the end.
  bool peek(Block& out) noexcept {
    if (!fill()) return false;
    out = cur_;
    return true;
  }
  // Takes `n` bytes (0 < n <= current block's length) of the current block.
  void consume(std::int64_t n) noexcept {
    cur_.offset += n;
    cur_.length -= n;
    consumed_ += n;
    if (cur_.length == 0) have_cur_ = false;
  }
  // Takes the rest of the current block; false at the end.
  bool next(Block& out) noexcept {
    if (!fill()) return false;
    out = cur_;
    consume(cur_.length);
    return true;
  }

  std::int64_t total_bytes() const noexcept { return total_; }
  std::int64_t consumed_bytes() const noexcept { return consumed_; }
  bool done() const noexcept { return consumed_ == total_; }

 private:
  struct Frame {
    const Node* node;  // nullptr: root_
    std::int64_t base;
    std::int64_t i;  // block
    std::int64_t j;  // copy within the block
  };

  Frame* frames() noexcept { return heap_ ? heap_.get() : inline_.data(); }
  bool fill() noexcept {
    if (have_cur_) return true;
    if (!raw_next(cur_)) return false;
    Block b;
    while (raw_next(b)) {
      if (b.offset == cur_.offset + cur_.length) {
        cur_.length += b.length;
      } else {
        pending_ = b;
        have_pending_ = true;
        break;
      }
    }
    have_cur_ = true;
    return true;
  }
  bool raw_next(Block& out) noexcept;

  Node root_;  // count elements of the type, one extent apart
  std::array<Frame, kInlineDepth> inline_{};
  std::unique_ptr<Frame[]> heap_;
  std::uint32_t sp_ = 0;
  Block cur_;
  Block pending_;
  bool have_cur_ = false;
  bool have_pending_ = false;
  std::int64_t total_ = 0;
  std::int64_t consumed_ = 0;
};

inline bool BlockCursor::raw_next(Block& out) noexcept {
  if (have_pending_) {
    have_pending_ = false;
    out = pending_;
    return true;
  }
  Frame* fr = frames();
  while (sp_ > 0) {
    Frame& f = fr[sp_ - 1];
    const Node& n = f.node ? *f.node : root_;  // the root is ours: moves keep working
    if (f.i >= n.count) {
      --sp_;
      continue;
    }
    std::int64_t off, blen, cext = 0;
    const Node* child;
    if (n.kind == Node::Kind::kVector) {
      off = n.offset + f.i * n.stride;
      blen = n.blen;
      child = n.child;
      cext = n.child_extent;
    } else {
      const ListEntry& e = n.entries[static_cast<std::size_t>(f.i)];
      off = e.disp;
      blen = e.blen;
      if (e.child < 0) {
        child = nullptr;
      } else {
        const ChildRef& c = n.children[static_cast<std::size_t>(e.child)];
        child = c.node;
        cext = c.extent;
      }
    }
    if (child == nullptr) {
      out.offset = f.base + off;
      out.length = blen;
      ++f.i;
      return true;
    }
    if (f.j >= blen) {
      f.j = 0;
      ++f.i;
      continue;
    }
    const std::int64_t b = f.base + off + f.j * cext;
    ++f.j;
    fr[sp_++] = Frame{child, b, 0, 0};
  }
  return false;
}

}  // namespace rma::api
