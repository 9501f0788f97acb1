// What the communication calls share (operations.cpp: put, get and the
// fast paths; accumulate.cpp: the accumulates and compare_and_swap): the
// argument and epoch checks, where a target range lands in the target's
// window, and posting a planned transfer. Private to rmaapi/window.
#pragma once

#include <cstdint>
#include <string>

#include "datatype/errors.hpp"
#include "datatype/transfer_planner.hpp"
#include "window/window.hpp"

namespace rma::api {

// Where displacement 0 of the target buffer is, and its rkey.
struct Target {
  std::uint64_t base = 0;
  std::uint32_t rkey = 0;
};

// A local key lookup (TransferPlanner) over one registration.
struct OneRegistration {
  std::uint64_t begin = 0, end = 0;
  std::uint32_t lkey = 0;
};
bool lookup_one(void* ctx, std::uint64_t addr, std::uint64_t, LocalKey* out) noexcept;

// "MPI_INT64_T", or "derived datatype".
std::string type_name(const rma_datatype_s* t);

// target_rank names a rank of the window with an access epoch open to it.
Status check_rank(rma_win_s* win, int target);
// MPI 4.x 12.3: an operation on RMA_PROC_NULL does nothing, but only
// inside an access epoch, like any other.
Status check_proc_null_epoch(rma_win_s* win, const char* call);
Status check_count(int count, const char* what);

// Committed layout of a handle: predefined and committed types without the
// Result round trip (the data path), everything else through the checks.
inline Status layout_of_committed(rma_Datatype t, const char* what, const TypeLayout*& out) {
  if (t != nullptr && t->magic == rma_datatype_s::kMagic && t->committed) [[likely]] {
    out = &t->layout;
    return {};
  }
  auto r = committed_layout(t, what);
  if (!r.ok()) return r.status();
  out = *r;
  return {};
}

inline Status bytes_of(const TypeLayout& l, int count, const char* what, std::int64_t& out) {
  if (__builtin_mul_overflow(l.size, static_cast<std::int64_t>(count), &out)) [[unlikely]] {
    return count_error(std::string(what) + " " + std::to_string(count) + " x type size overflows");
  }
  return {};
}

// `count` x `type` must span a range whose bounds fit in 64 bits
// ((count - 1) x extent overflows for resized types with huge extents),
// and a local buffer of them must not wrap the address space.
Status check_span(const TypeLayout& type, int count, const char* count_name, const void* local);

// Where a target range lands in a window: the one check of the fast paths
// and the checked path (which adds the messages). The range is
// [disp * disp_unit + lo, disp * disp_unit + hi) for a footprint [lo, hi);
// kInside when it is within [0, size).
enum class Placement { kInside, kDispOverflow, kExtentOverflow, kOutside };
struct PlacedRange {
  std::int64_t off = 0, lo = 0, hi = 0;
};
inline Placement place(PlacedRange& r, std::int64_t disp_unit, std::uint64_t size, rma_Aint disp, std::int64_t lo,
                std::int64_t hi) noexcept {
  if (__builtin_mul_overflow(static_cast<std::int64_t>(disp), disp_unit, &r.off)) return Placement::kDispOverflow;
  if (__builtin_add_overflow(r.off, lo, &r.lo) || __builtin_add_overflow(r.off, hi, &r.hi)) {
    return Placement::kExtentOverflow;
  }
  if (r.lo < 0 || static_cast<std::uint64_t>(r.hi) > size) return Placement::kOutside;
  return Placement::kInside;
}

// Bytes [lo, hi) relative to the window start (or absolute, for dynamic
// windows) that `count` x `type` at `disp` touch must lie inside the target's
// window; the result is where the planner's displacement 0 is.
Status resolve_target(rma_win_s* win, const char* call, int target, rma_Aint disp, int count,
                      const TypeLayout& tl, rma_Datatype ttype, Target& out);

// Posts the transfer described by a planner: RDMA WRITE or READ work
// requests; the last one carries `last` (request, registration).
Status post_planned(rma_win_s* win, const char* call, int target, endpoint::Endpoint& ep,
                    TransferPlanner& planner, Opcode opcode, std::uint32_t rkey,
                    endpoint::OnComplete&& last);

// accumulate_ordering=none: accumulates may be recorded (deferred_accumulate.hpp).
inline bool ordering_none(const rma_win_s* win) noexcept {
  return win->hints.accumulate_ordering == "none";
}

}  // namespace rma::api
