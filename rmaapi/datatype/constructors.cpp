#include "datatype/constructors.hpp"

#include <algorithm>
#include <limits>
#include <atomic>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "datatype/errors.hpp"

namespace rma::api {
namespace {

using i64 = std::int64_t;

bool mul(i64 a, i64 b, i64& r) { return !__builtin_mul_overflow(a, b, &r); }
bool add(i64 a, i64 b, i64& r) { return !__builtin_add_overflow(a, b, &r); }

Status overflow(const char* what) {
  return arg_error(std::string(what) + " overflows a 64-bit byte count or displacement");
}

// Bounds of a piece of a typemap, accumulated over blocks.
struct Bounds {
  bool set = false;
  i64 lb = 0, ub = 0, tlb = 0, tub = 0;
  void merge(const Bounds& b) {
    if (!b.set) return;
    if (!set) { *this = b; return; }
    lb = std::min(lb, b.lb);
    ub = std::max(ub, b.ub);
    tlb = std::min(tlb, b.tlb);
    tub = std::max(tub, b.tub);
  }
};

// Bounds of `blen` copies of `t` starting at displacement d; false on overflow.
bool block_bounds(i64 d, i64 blen, const TypeLayout& t, Bounds& out) {
  out = Bounds{};
  if (blen == 0) return true;
  i64 e = t.extent();
  i64 span = 0;  // (blen-1)*e
  if (!mul(blen - 1, e, span)) return false;
  i64 lo_shift = std::min<i64>(0, span), hi_shift = std::max<i64>(0, span);
  i64 a = 0, b = 0, c = 0, f = 0;
  if (!add(d, t.lb, a) || !add(a, lo_shift, a)) return false;
  if (!add(d, t.ub, b) || !add(b, hi_shift, b)) return false;
  if (!add(d, t.true_lb, c) || !add(c, lo_shift, c)) return false;
  if (!add(d, t.true_ub, f) || !add(f, hi_shift, f)) return false;
  out = Bounds{true, a, b, c, f};
  return true;
}

// Shifts bounds by the span of `count` blocks `stride` apart.
bool replicate_bounds(Bounds& b, i64 count, i64 stride) {
  if (!b.set || count <= 1) return true;
  i64 span = 0;
  if (!mul(count - 1, stride, span)) return false;
  i64 lo = std::min<i64>(0, span), hi = std::max<i64>(0, span);
  return add(b.lb, lo, b.lb) && add(b.ub, hi, b.ub) && add(b.tlb, lo, b.tlb) &&
         add(b.tub, hi, b.tub);
}

// A block of data inside a node under construction: a byte run, or copies of
// a sub-tree.
struct Piece {
  i64 disp = 0;
  i64 blen = 0;                        // bytes (run) or copies
  std::shared_ptr<const Node> child;   // nullptr: run
  i64 cext = 0;                        // child extent
  i64 bytes() const { return child ? blen * child->size : blen; }
};

std::shared_ptr<Node> run_vector(i64 count, i64 offset, i64 stride, i64 run) {
  auto n = std::make_shared<Node>();
  n->kind = Node::Kind::kVector;
  n->count = count;
  n->offset = offset;
  n->stride = stride;
  n->blen = run;
  n->size = count * run;
  n->depth = 1;
  return n;
}

// `blen` copies of `t` at displacement d, as one Piece; nullopt when empty.
// The caller has checked that the bounds (hence the arithmetic) fit.
std::optional<Piece> make_piece(i64 d, i64 blen, const TypeLayout& t) {
  if (blen == 0 || t.size == 0) return std::nullopt;
  if (t.is_run()) {
    if (blen == 1 || t.extent() == t.size) return Piece{d + t.run_offset, blen * t.size, nullptr, 0};
    // Copies of one run that do not touch: a vector of runs.
    i64 span = 0;  // only used to recognise tiling; 0 when it does not fit
    if (!mul(blen, t.extent(), span)) span = 0;
    return Piece{d, 1, run_vector(blen, t.run_offset, t.extent(), t.size), span};
  }
  return Piece{d, blen, t.node, t.extent()};
}

void set_data(TypeLayout& out, std::shared_ptr<const Node> node, i64 run_offset) {
  out.node = std::move(node);
  out.run_offset = out.node ? 0 : run_offset;
}

// Turns a sequence of pieces (typemap order) into the layout's data.
void assemble(std::vector<Piece>& pieces, TypeLayout& out) {
  // Merge runs that continue each other.
  std::vector<Piece> merged;
  merged.reserve(pieces.size());
  for (auto& p : pieces) {
    if (!merged.empty() && !p.child && !merged.back().child &&
        merged.back().disp + merged.back().blen == p.disp) {
      merged.back().blen += p.blen;
      continue;
    }
    merged.push_back(std::move(p));
  }
  if (merged.empty()) { set_data(out, nullptr, 0); return; }
  if (merged.size() == 1) {
    Piece& p = merged[0];
    if (!p.child) { set_data(out, nullptr, p.disp); return; }
    if (p.blen == 1 && p.disp == 0) { set_data(out, p.child, 0); return; }
    auto n = std::make_shared<Node>();
    n->kind = Node::Kind::kVector;
    n->count = 1;
    n->offset = p.disp;
    n->stride = 0;
    n->blen = p.blen;
    n->child = p.child.get();
    n->child_extent = p.cext;
    n->size = p.bytes();
    n->depth = p.child->depth + 1;
    n->owned.push_back(p.child);
    set_data(out, std::move(n), 0);
    return;
  }
  // A regular list is a vector.
  bool regular = true;
  const i64 stride = merged[1].disp - merged[0].disp;
  for (std::size_t k = 1; k < merged.size() && regular; ++k) {
    const Piece& a = merged[k - 1];
    const Piece& b = merged[k];
    regular = b.child == merged[0].child && b.blen == merged[0].blen && b.cext == merged[0].cext &&
              b.disp - a.disp == stride;
  }
  i64 total = 0;
  std::uint32_t depth = 0;
  for (const auto& p : merged) {
    total += p.bytes();
    if (p.child) depth = std::max(depth, p.child->depth);
  }
  auto n = std::make_shared<Node>();
  n->size = total;
  n->depth = depth + 1;
  if (regular) {
    n->kind = Node::Kind::kVector;
    n->count = static_cast<i64>(merged.size());
    n->offset = merged[0].disp;
    n->stride = stride;
    n->blen = merged[0].blen;
    n->child = merged[0].child.get();
    n->child_extent = merged[0].cext;
    if (merged[0].child) n->owned.push_back(merged[0].child);
    set_data(out, std::move(n), 0);
    return;
  }
  n->kind = Node::Kind::kList;
  n->count = static_cast<i64>(merged.size());
  n->entries.reserve(merged.size());
  for (auto& p : merged) {
    ListEntry e{p.disp, p.blen, -1};
    if (p.child) {
      std::int32_t idx = -1;
      for (std::size_t c = 0; c < n->children.size(); ++c) {
        if (n->children[c].node == p.child.get() && n->children[c].extent == p.cext) {
          idx = static_cast<std::int32_t>(c);
          break;
        }
      }
      if (idx < 0) {
        idx = static_cast<std::int32_t>(n->children.size());
        n->children.push_back(ChildRef{p.child.get(), p.cext});
        n->owned.push_back(p.child);
      }
      e.child = idx;
    }
    n->entries.push_back(e);
  }
  n->entries.shrink_to_fit();
  set_data(out, std::move(n), 0);
}

void apply_bounds(TypeLayout& out, const Bounds& b) {
  if (out.size == 0 || !b.set) {  // MPICH: zero-size types have no extent
    out.lb = out.ub = out.true_lb = out.true_ub = 0;
    out.alignment = 1;               // ... and do not pad the structs they are in
    out.identity = kEmptyIdentity;
    return;
  }
  out.lb = b.lb;
  out.ub = b.ub;
  out.true_lb = b.tlb;
  out.true_ub = b.tub;
}

// Extents must be representable too (MPI_Aint is 64-bit here).
Status check_extents(const TypeLayout& t) {
  i64 d = 0;
  if (__builtin_sub_overflow(t.ub, t.lb, &d) || __builtin_sub_overflow(t.true_ub, t.true_lb, &d)) {
    return overflow("extent");
  }
  return Status();
}

// Shared by indexed, hindexed, indexed_block, hindexed_block and struct.
Result<TypeLayout> make_list(std::span<const i64> blens, std::span<const i64> disps,
                             std::span<const TypeLayout* const> types, bool pad) {
  if (blens.size() != disps.size() || blens.size() != types.size()) {
    return arg_error("array lengths differ");
  }
  TypeLayout out;
  out.alignment = 1;
  out.identity = new_identity();
  Bounds bounds;
  i64 size = 0;
  for (std::size_t k = 0; k < blens.size(); ++k) {
    if (blens[k] < 0) {
      return arg_error("blocklength " + std::to_string(blens[k]) + " at index " +
                       std::to_string(k) + " is negative");
    }
    if (blens[k] == 0) continue;
    const TypeLayout& t = *types[k];
    i64 bytes = 0;
    if (!mul(blens[k], t.size, bytes) || !add(size, bytes, size)) return overflow("type size");
    Bounds b;
    if (!block_bounds(disps[k], blens[k], t, b)) return overflow("block bounds");
    bounds.merge(b);
    out.alignment = std::max(out.alignment, t.alignment);
  }
  out.size = size;
  apply_bounds(out, bounds);
  RMA_RETURN_IF_ERROR(check_extents(out));
  bool same = true;
  for (std::size_t k = 1; k < types.size(); ++k) {
    same = same && types[k]->identity == types[0]->identity;
  }
  // One element of the old type at 0: the same type (MPICH: a dup).
  if (same && out.size > 0 && blens.size() == 1 && blens[0] == 1 && disps[0] == 0) {
    out.identity = types[0]->identity;
  }
  if (pad && out.size > 0) {
    i64 ext = out.extent();
    if (!same && ext > 0 && out.alignment > 1 && ext % out.alignment != 0) {
      if (!add(out.ub, out.alignment - ext % out.alignment, out.ub)) return overflow("extent");
    }
  }
  std::vector<Piece> pieces;
  pieces.reserve(blens.size());
  for (std::size_t k = 0; k < blens.size(); ++k) {
    if (auto p = make_piece(disps[k], blens[k], *types[k])) pieces.push_back(std::move(*p));
  }
  assemble(pieces, out);
  return out;
}

}  // namespace

std::uint64_t TypeLayout::description_words() const noexcept {
  // Count nodes and entries once per distinct node.
  std::vector<const Node*> seen;
  std::vector<const Node*> todo;
  if (node) todo.push_back(node.get());
  std::uint64_t words = 0;
  while (!todo.empty()) {
    const Node* n = todo.back();
    todo.pop_back();
    if (std::find(seen.begin(), seen.end(), n) != seen.end()) continue;
    seen.push_back(n);
    words += 8 + 3 * n->entries.size();
    if (n->child) todo.push_back(n->child);
    for (const auto& c : n->children) todo.push_back(c.node);
  }
  return words;
}

bool footprint_fits(const TypeLayout& type, std::int64_t count, Footprint& out) noexcept {
  out = {};
  if (count <= 0 || type.size == 0) return true;
  i64 span = 0, lo = 0, hi = 0, len = 0;
  if (__builtin_mul_overflow(count - 1, type.extent(), &span) ||
      __builtin_add_overflow(type.true_lb, std::min<i64>(0, span), &lo) ||
      __builtin_add_overflow(type.true_ub, std::max<i64>(0, span), &hi) ||
      __builtin_sub_overflow(hi, lo, &len)) {
    return false;
  }
  out = Footprint{lo, hi};
  return true;
}

Footprint footprint(const TypeLayout& type, std::int64_t count) noexcept {
  Footprint f;
  if (!footprint_fits(type, count, f)) {
    // Never fits a window or a registration; callers check first.
    return Footprint{std::numeric_limits<i64>::min() / 2, std::numeric_limits<i64>::max() / 2};
  }
  return f;
}

std::uint64_t new_identity() noexcept {
  static std::atomic<std::uint64_t> next{1u << 20};  // below: predefined classes
  return next.fetch_add(1, std::memory_order_relaxed);
}

TypeLayout make_basic(std::int64_t size, std::int64_t alignment, std::uint64_t identity) {
  TypeLayout t;
  t.identity = identity;
  t.size = size;
  t.lb = 0;
  t.ub = size;
  t.true_lb = 0;
  t.true_ub = size;
  t.alignment = alignment;
  return t;
}

TypeLayout make_pair(std::int64_t size_a, std::int64_t align_a, std::int64_t size_b,
                     std::int64_t align_b, std::uint64_t identity) {
  const i64 off_b = (size_a + align_b - 1) / align_b * align_b;
  const i64 align = std::max(align_a, align_b);
  const i64 end = off_b + size_b;
  TypeLayout t;
  t.identity = identity;
  t.size = size_a + size_b;
  t.lb = 0;
  t.ub = (end + align - 1) / align * align;
  t.true_lb = 0;
  t.true_ub = end;
  t.alignment = align;
  std::vector<Piece> pieces{Piece{0, size_a, nullptr, 0}, Piece{off_b, size_b, nullptr, 0}};
  assemble(pieces, t);
  return t;
}

Result<TypeLayout> make_hvector(std::int64_t count, std::int64_t blocklength,
                                std::int64_t stride_bytes, const TypeLayout& old) {
  if (count < 0) return count_error("count " + std::to_string(count) + " is negative");
  if (blocklength < 0) {
    return arg_error("blocklength " + std::to_string(blocklength) + " is negative");
  }
  TypeLayout out;
  out.alignment = old.alignment;
  out.identity = count == 1 && blocklength == 1 ? old.identity : new_identity();
  i64 per_block = 0;
  if (!mul(blocklength, old.size, per_block) || !mul(per_block, count, out.size)) {
    return overflow("type size");
  }
  Bounds b;
  if (count > 0 && blocklength > 0) {
    if (!block_bounds(0, blocklength, old, b) || !replicate_bounds(b, count, stride_bytes)) {
      return overflow("vector bounds");
    }
  }
  apply_bounds(out, b);
  RMA_RETURN_IF_ERROR(check_extents(out));
  if (out.size == 0) return out;
  Piece p = *make_piece(0, blocklength, old);
  std::vector<Piece> one;
  if (count == 1) {
    one.push_back(std::move(p));
  } else if (!p.child && stride_bytes == p.blen) {
    one.push_back(Piece{p.disp, count * p.blen, nullptr, 0});
  } else if (i64 tile = 0; p.child && mul(p.blen, p.cext, tile) && tile != 0 &&
                           stride_bytes == tile) {
    one.push_back(Piece{p.disp, count * p.blen, p.child, p.cext});
  } else {
    auto n = std::make_shared<Node>();
    n->kind = Node::Kind::kVector;
    n->count = count;
    n->offset = p.disp;
    n->stride = stride_bytes;
    n->blen = p.blen;
    n->child = p.child.get();
    n->child_extent = p.cext;
    n->size = out.size;
    n->depth = p.child ? p.child->depth + 1 : 1;
    if (p.child) n->owned.push_back(p.child);
    set_data(out, std::move(n), 0);
    return out;
  }
  assemble(one, out);
  return out;
}

Result<TypeLayout> make_contiguous(std::int64_t count, const TypeLayout& old) {
  if (count < 0) return count_error("count " + std::to_string(count) + " is negative");
  return make_hvector(count, 1, old.extent(), old);
}

Result<TypeLayout> make_vector(std::int64_t count, std::int64_t blocklength, std::int64_t stride,
                               const TypeLayout& old) {
  i64 bytes = 0;
  if (!mul(stride, old.extent(), bytes)) return overflow("vector stride");
  return make_hvector(count, blocklength, bytes, old);
}

Result<TypeLayout> make_hindexed(std::span<const std::int64_t> blocklengths,
                                 std::span<const std::int64_t> displacements_bytes,
                                 const TypeLayout& old) {
  std::vector<const TypeLayout*> types(blocklengths.size(), &old);
  return make_list(blocklengths, displacements_bytes, types, false);
}

Result<TypeLayout> make_indexed(std::span<const std::int64_t> blocklengths,
                                std::span<const std::int64_t> displacements,
                                const TypeLayout& old) {
  std::vector<i64> bytes(displacements.size());
  for (std::size_t k = 0; k < displacements.size(); ++k) {
    if (!mul(displacements[k], old.extent(), bytes[k])) return overflow("displacement");
  }
  return make_hindexed(blocklengths, bytes, old);
}

Result<TypeLayout> make_struct(std::span<const std::int64_t> blocklengths,
                               std::span<const std::int64_t> displacements_bytes,
                               std::span<const TypeLayout* const> types) {
  for (std::size_t k = 0; k < types.size(); ++k) {
    if (types[k] == nullptr) return type_error("array_of_types[" + std::to_string(k) + "] is null");
  }
  return make_list(blocklengths, displacements_bytes, types, true);
}

Result<TypeLayout> make_resized(const TypeLayout& old, std::int64_t lb, std::int64_t extent) {
  TypeLayout out = old;
  i64 ub = 0;
  if (!add(lb, extent, ub)) return overflow("lb + extent");
  if (lb != old.lb || ub != old.ub) out.identity = new_identity();
  out.lb = lb;
  out.ub = ub;
  RMA_RETURN_IF_ERROR(check_extents(out));
  return out;
}

Result<TypeLayout> make_subarray(std::span<const std::int64_t> sizes,
                                 std::span<const std::int64_t> subsizes,
                                 std::span<const std::int64_t> starts, ArrayOrder order,
                                 const TypeLayout& old) {
  const std::size_t nd = sizes.size();
  if (nd == 0) return arg_error("ndims must be positive");
  if (subsizes.size() != nd || starts.size() != nd) return arg_error("array lengths differ");
  for (std::size_t k = 0; k < nd; ++k) {
    const std::string at = " in dimension " + std::to_string(k);
    if (sizes[k] <= 0) return arg_error("size " + std::to_string(sizes[k]) + at + " is not positive");
    if (subsizes[k] < 0 || subsizes[k] > sizes[k]) {
      return arg_error("subsize " + std::to_string(subsizes[k]) + at + " is outside [0, " +
                       std::to_string(sizes[k]) + "]");
    }
    if (starts[k] < 0 || starts[k] > sizes[k] - subsizes[k]) {
      return arg_error("start " + std::to_string(starts[k]) + at + " is outside [0, " +
                       std::to_string(sizes[k] - subsizes[k]) + "]");
    }
  }
  // Dimension k from fastest- to slowest-varying.
  auto dim = [&](std::size_t k) { return order == ArrayOrder::kC ? nd - 1 - k : k; };
  const i64 ext = old.extent();
  // Innermost: subsizes[fastest] contiguous elements.
  RMA_ASSIGN_OR_RETURN(TypeLayout cur, make_contiguous(subsizes[dim(0)], old));
  i64 stride = ext;   // bytes between consecutive indices of the current dimension
  i64 disp = 0;       // bytes to the start element
  i64 elems = 1;
  for (std::size_t k = 0; k < nd; ++k) {
    const std::size_t d = dim(k);
    i64 off = 0;
    if (!mul(starts[d], stride, off) || !add(disp, off, disp)) return overflow("subarray start");
    if (k > 0) {
      RMA_ASSIGN_OR_RETURN(cur, make_hvector(subsizes[d], 1, stride, cur));
    }
    if (!mul(stride, sizes[d], stride) || !mul(elems, sizes[d], elems)) {
      return overflow("subarray size");
    }
  }
  const i64 one = 1;
  const TypeLayout* t = &cur;
  RMA_ASSIGN_OR_RETURN(TypeLayout shifted,
                       make_list(std::span<const i64>(&one, 1), std::span<const i64>(&disp, 1),
                                 std::span<const TypeLayout* const>(&t, 1), false));
  i64 total = 0;
  if (!mul(elems, ext, total)) return overflow("subarray extent");
  return make_resized(shifted, 0, total);
}

}  // namespace rma::api
