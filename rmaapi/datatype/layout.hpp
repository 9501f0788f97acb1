// The committed form of a datatype: a compact, normalised description.
//
// A type's data is either one run of bytes ([run_offset, run_offset+size))
// or a tree of Nodes. Each Node is a sequence of `count` blocks in typemap
// order; a block is either a run of bytes or `blen` copies of a child Node
// spaced by the child's extent. Nodes come in two kinds:
//   kVector  block i at offset + i*stride, every block alike: a vector of a
//            million blocks is one Node of a few words;
//   kList    explicit (displacement, blocklength, child) entries: only where
//            the user gave lists (indexed, hindexed, struct) and no regular
//            pattern was found.
// Constructors normalise as they build: blocks of a contiguous element type
// become byte runs, adjacent runs merge, regular lists become vectors and
// one-block wrappers disappear, so the tree is usually one or two levels.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace rma::api {

struct Node;

// A child of a list entry: a sub-tree, or nullptr for a byte run.
struct ChildRef {
  const Node* node = nullptr;
  std::int64_t extent = 0;  // distance between consecutive copies
};

struct ListEntry {
  std::int64_t disp = 0;   // bytes from the node's origin
  std::int64_t blen = 0;   // bytes (run) or copies of the child
  std::int32_t child = -1; // index into Node::children, -1 for a byte run
};

struct Node {
  enum class Kind : std::uint8_t { kVector, kList };
  Kind kind = Kind::kVector;
  std::int64_t count = 0;        // blocks
  // kVector
  std::int64_t offset = 0;       // displacement of block 0
  std::int64_t stride = 0;       // bytes between block starts
  std::int64_t blen = 0;         // bytes (child == nullptr) or copies of child
  const Node* child = nullptr;
  std::int64_t child_extent = 0;
  // kList
  std::vector<ListEntry> entries;
  std::vector<ChildRef> children;
  // Sub-trees this node points into (kept alive with it).
  std::vector<std::shared_ptr<const Node>> owned;

  std::int64_t size = 0;    // data bytes in one instance
  std::uint32_t depth = 1;  // levels including this one
};

// Everything a committed (or not yet committed) type is.
struct TypeLayout {
  std::int64_t size = 0;     // bytes of data (MPI_Type_size)
  std::int64_t lb = 0;       // lower bound (MPI_Type_get_extent)
  std::int64_t ub = 0;       // upper bound; extent = ub - lb
  std::int64_t true_lb = 0;  // first data byte
  std::int64_t true_ub = 0;  // one past the last data byte
  std::int64_t alignment = 1;  // for struct padding (MPI's epsilon, as MPICH does)
  // Which types count as "the same type" for struct padding. MPICH pads a
  // struct unless all its members are the same type, where a duplicate, a
  // contiguous(1), a vector of one block of one element, a resize to the same
  // bounds and a one-entry list at displacement 0 are the same type as their
  // old type, integer types of one size are one type, and all empty types are
  // one type. See new_identity().
  std::uint64_t identity = 0;

  // Data: a single run, or a tree.
  std::int64_t run_offset = 0;         // when node == nullptr
  std::shared_ptr<const Node> node;    // nullptr: the data is one run

  std::int64_t extent() const noexcept { return ub - lb; }
  std::int64_t true_extent() const noexcept { return true_ub - true_lb; }
  bool is_run() const noexcept { return node == nullptr; }
  // One run, at offset 0, with extent == size: `count` elements are one run.
  bool is_dense() const noexcept {
    return node == nullptr && run_offset == 0 && lb == 0 && ub == size;
  }
  std::uint32_t depth() const noexcept { return node ? node->depth : 0; }
  // Entries in explicit lists, summed over the tree (a measure of its size).
  std::uint64_t description_words() const noexcept;
};

// Bytes [lo, hi) relative to the buffer address that `count` elements of
// `type` touch (the true extent of the whole access). Empty when no data.
struct Footprint {
  std::int64_t lo = 0;
  std::int64_t hi = 0;
};
// False (and `out` empty) when the bounds or their distance do not fit in
// 64 bits: (count - 1) x extent can overflow for a resized type.
bool footprint_fits(const TypeLayout& type, std::int64_t count, Footprint& out) noexcept;
// As footprint_fits; when it does not fit, a range no window or
// registration contains (check footprint_fits first to report it).
Footprint footprint(const TypeLayout& type, std::int64_t count) noexcept;

// A fresh identity for a new derived type; kEmptyIdentity for empty types.
std::uint64_t new_identity() noexcept;
constexpr std::uint64_t kEmptyIdentity = 1;

}  // namespace rma::api
