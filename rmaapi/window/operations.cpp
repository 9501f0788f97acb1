// Communication calls: put and get (checked paths and the fast paths for
// small dense transfers). The accumulates and compare_and_swap are in
// accumulate.cpp, the checks they all share in operation_checks.cpp. To a
// peer whose window is mapped here (PeerWindow::direct) both paths end in a
// copy instead of a work request (direct.hpp).
//
// Every call checks its arguments, its epoch and the whole target range
// against the target's window (known from creation, or from the target's
// attachment table for dynamic windows) before it posts anything.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "datatype/pack.hpp"
#include "datatype/transfer_planner.hpp"
#include "window/direct.hpp"
#include "window/operation_checks.hpp"
#include "window/thread_level.hpp"
#include "window/window.hpp"

namespace rma::api {
namespace {

using endpoint::Endpoint;
using endpoint::OnComplete;

struct Transfer {
  const TypeLayout* ol = nullptr;
  const TypeLayout* tl = nullptr;
  std::int64_t bytes = 0;
  Target t;
};

Status check_transfer(rma_win_s* win, const char* call, const void* origin, const OpArgs& a,
                      Transfer& x) {
  RMA_RETURN_IF_ERROR(check_rank(win, a.target));
  RMA_RETURN_IF_ERROR(check_count(a.origin_count, "origin_count"));
  RMA_RETURN_IF_ERROR(check_count(a.target_count, "target_count"));
  RMA_RETURN_IF_ERROR(layout_of_committed(a.origin_type, "origin_datatype", x.ol));
  RMA_RETURN_IF_ERROR(layout_of_committed(a.target_type, "target_datatype", x.tl));
  RMA_RETURN_IF_ERROR(bytes_of(*x.ol, a.origin_count, "origin_count", x.bytes));
  std::int64_t tb = 0;
  RMA_RETURN_IF_ERROR(bytes_of(*x.tl, a.target_count, "target_count", tb));
  if (x.bytes != tb) {
    return type_error("origin and target type signatures differ: the origin gives " +
                      std::to_string(x.bytes) + " bytes (" + std::to_string(a.origin_count) +
                      " x " + type_name(a.origin_type) + "), the target takes " +
                      std::to_string(tb) + " (" + std::to_string(a.target_count) + " x " +
                      type_name(a.target_type) + ")");
  }
  if (x.bytes == 0) return {};
  RMA_RETURN_IF_ERROR(check_span(*x.ol, a.origin_count, "origin_count", origin));
  RMA_RETURN_IF_ERROR(check_span(*x.tl, a.target_count, "target_count", nullptr));
  RMA_RETURN_IF_ERROR(check_buffer(origin, *x.ol, a.origin_count, "origin_addr"));
  return resolve_target(win, call, a.target, a.target_disp, a.target_count, *x.tl, a.target_type, x.t);
}

Result<RegistrationCache::Handle> register_buffer(Endpoint& ep, const void* addr,
                                                  const TypeLayout& l, int count, Access access,
                                                  OneRegistration& reg) {
  const Footprint fp = footprint(l, count);
  const std::byte* p = byte_at(addr, fp.lo);  // addr may be RMA_BOTTOM
  auto h = ep.rcache().acquire(p, static_cast<std::size_t>(fp.hi - fp.lo), access);
  if (!h.ok()) return buffer_error("cannot register the origin buffer: " + h.status().message());
  reg.begin = h->mr().addr();
  reg.end = reg.begin + h->mr().length();
  reg.lkey = h->lkey();
  return std::move(h).value();
}

// The general path of put (origin read, kRdmaWrite) and get (origin
// written, kRdmaRead): register the origin buffer through the cache, plan
// the SGE lists against the target's layout and post them; the handle keeps
// the registration until the last work request completes.
Status post_registered(rma_win_s* win, const char* call, const OpArgs& a, const Transfer& x, Endpoint& ep,
                       const void* origin, Access access, Opcode opcode, endpoint::Request* req) {
  OneRegistration reg;
  RMA_ASSIGN_OR_RETURN(RegistrationCache::Handle h,
                       register_buffer(ep, origin, *x.ol, a.origin_count, access, reg));
  RMA_ASSIGN_OR_RETURN(
      TransferPlanner planner,
      TransferPlanner::create(Buffer{reinterpret_cast<std::uint64_t>(origin), a.origin_count, x.ol},
                              Buffer{x.t.base, a.target_count, x.tl},
                              PlanLimits::from_caps(ep.caps()),
                              LkeyLookup{lookup_one, &reg}));
  return post_planned(win, call, a.target, ep, planner, opcode, x.t.rkey,
                      OnComplete{req, std::move(h), nullptr, 0});
}

}  // namespace

Status put(rma_win_s* win, const char* call, const OpArgs& a, endpoint::Request* req) {
  if (a.target == RMA_PROC_NULL) return check_proc_null_epoch(win, call);
  Transfer x;
  RMA_RETURN_IF_ERROR(check_transfer(win, call, a.origin, a, x));
  if (x.bytes == 0) return {};
  const PeerWindow& p = win->peers[static_cast<std::size_t>(a.target)];
  if (p.direct) return direct::copy(p, a.origin, a.origin_count, *x.ol, x.t.base, a.target_count, *x.tl, true);
  Endpoint& ep = win->endpoint(a.target);
  if (static_cast<std::uint64_t>(x.bytes) <= ep.max_inline() && x.ol->is_dense() && x.tl->is_dense()) {
    // Small and contiguous: the payload travels in the work request, so the
    // origin buffer is free again on return and needs no registration.
    Sge s{reinterpret_cast<std::uint64_t>(a.origin), static_cast<std::uint32_t>(x.bytes), 0};
    WorkRequest wr;
    wr.opcode = Opcode::kRdmaWrite;
    wr.flags = kWrInline;
    wr.sgl = {&s, 1};
    wr.remote_addr = x.t.base;
    wr.rkey = x.t.rkey;
    const StatusCode rc = ep.post(wr, OnComplete{req, {}, nullptr, 0}, true);
    if (rc != StatusCode::kOk) return transport_error(win, call, a.target, rc);
    return {};
  }
  return post_registered(win, call, a, x, ep, a.origin, Access::kNone, Opcode::kRdmaWrite, req);
}

Status get(rma_win_s* win, const char* call, const OpArgs& a, endpoint::Request* req) {
  if (a.target == RMA_PROC_NULL) return check_proc_null_epoch(win, call);
  Transfer x;
  RMA_RETURN_IF_ERROR(check_transfer(win, call, a.result, a, x));
  if (x.bytes == 0) return {};
  const PeerWindow& p = win->peers[static_cast<std::size_t>(a.target)];
  if (p.direct) return direct::copy(p, a.result, a.origin_count, *x.ol, x.t.base, a.target_count, *x.tl, false);
  Endpoint& ep = win->endpoint(a.target);
  if (static_cast<std::uint64_t>(x.bytes) <= ep.bounce_bytes() && x.ol->is_dense() && x.tl->is_dense()) {
    // Small and contiguous: read into the slot's registered bounce area and
    // copy out when the completion is polled (no registration lookup).
    const StatusCode r0 = ep.reserve(true);
    if (r0 != StatusCode::kOk) return transport_error(win, call, a.target, r0);
    const Sge s = ep.bounce(static_cast<std::uint32_t>(x.bytes));
    WorkRequest wr;
    wr.opcode = Opcode::kRdmaRead;
    wr.sgl = {&s, 1};
    wr.remote_addr = x.t.base;
    wr.rkey = x.t.rkey;
    const StatusCode rc =
        ep.post(wr, OnComplete{req, {}, a.result, static_cast<std::uint32_t>(x.bytes)});
    if (rc != StatusCode::kOk) return transport_error(win, call, a.target, rc);
    return {};
  }
  return post_registered(win, call, a, x, ep, a.result, Access::kLocalWrite, Opcode::kRdmaRead, req);
}

// ---------------------------------------------------------------- fast paths
//
// The common small operations on predefined (or dense) types, checked with
// plain comparisons and posted directly, or, to a mapped peer, copied or
// done with a CPU atomic at once. Anything unusual — an error, a derived
// type, a dynamic window, a size past the inline/bounce limit — returns
// false without doing anything and the caller takes the checked path, which
// handles it (and reports errors with messages).
namespace {

bool fast_type(rma_Datatype t) noexcept {
  return t != nullptr && t->magic == rma_datatype_s::kMagic && t->committed && t->layout.is_dense();
}

bool fast_target(rma_win_s* win, int target, rma_Aint disp, std::uint64_t bytes, Target& t) noexcept {
  if (static_cast<unsigned>(target) >= static_cast<unsigned>(win->npeers) ||
      win->flavor == RMA_WIN_FLAVOR_DYNAMIC || !win->may_access(target)) {
    return false;
  }
  const PeerWindow& p = win->peers[static_cast<std::size_t>(target)];
  PlacedRange r;
  if (bytes > static_cast<std::uint64_t>(INT64_MAX) ||
      place(r, p.disp_unit, p.size, disp, 0, static_cast<std::int64_t>(bytes)) != Placement::kInside) {
    return false;
  }
  t.base = p.base + static_cast<std::uint64_t>(r.off);
  t.rkey = p.rkey;
  return true;
}

// Where `bytes` at `disp` of a mapped peer's window are here, when the
// target is such a peer, an epoch allows the access and the range is inside
// its window; else nullptr. (Direct peers are never of dynamic windows.)
std::byte* fast_direct(rma_win_s* win, int target, rma_Aint disp, std::uint64_t bytes) noexcept {
  if (static_cast<unsigned>(target) >= static_cast<unsigned>(win->npeers)) return nullptr;
  const PeerWindow& p = win->peers[static_cast<std::size_t>(target)];
  PlacedRange r;
  if (!p.direct || !win->may_access(target) || bytes > static_cast<std::uint64_t>(INT64_MAX) ||
      place(r, p.disp_unit, p.size, disp, 0, static_cast<std::int64_t>(bytes)) != Placement::kInside) {
    return nullptr;
  }
  return p.mapped + r.off;
}

bool fast_bytes(const FastArgs& a, std::uint64_t& bytes) noexcept {
  if (a.origin_count <= 0 || !fast_type(a.origin_type) ||
      __builtin_mul_overflow(static_cast<std::uint64_t>(a.origin_count),
                             static_cast<std::uint64_t>(a.origin_type->layout.size), &bytes)) {
    return false;
  }
  if (a.target_type == a.origin_type && a.target_count == a.origin_count) return bytes > 0;  // the usual call
  std::uint64_t tb = 0;
  if (a.target_count <= 0 || !fast_type(a.target_type) ||
      __builtin_mul_overflow(static_cast<std::uint64_t>(a.target_count),
                             static_cast<std::uint64_t>(a.target_type->layout.size), &tb)) {
    return false;
  }
  return bytes == tb && bytes > 0;
}

// The sizes of one element inline (no library call), else the direct
// path's copy (window/direct_copy.hpp).
inline void copy_bytes(void* to, const void* from, std::uint64_t bytes) noexcept {
  switch (bytes) {
    case 1: std::memcpy(to, from, 1); return;
    case 2: std::memcpy(to, from, 2); return;
    case 4: std::memcpy(to, from, 4); return;
    case 8: std::memcpy(to, from, 8); return;
    case 16: std::memcpy(to, from, 16); return;
    default: direct::copy_mapped(to, from, bytes);
  }
}

}  // namespace

bool put_fast(rma_win_s* win, const FastArgs& a) noexcept {
  std::uint64_t bytes = 0;
  if (a.origin == nullptr || !fast_bytes(a, bytes)) return false;
  if (std::byte* there = fast_direct(win, a.target, a.target_disp, bytes)) [[likely]] {
    // Any size: a store into the peer's mapped window, complete on return.
    copy_bytes(there, a.origin, bytes);
    return true;
  }
  Target t;
  if (!fast_target(win, a.target, a.target_disp, bytes, t)) return false;
  Endpoint& ep = win->endpoint(a.target);
  if (bytes > ep.max_inline()) return false;
  Sge s{reinterpret_cast<std::uint64_t>(a.origin), static_cast<std::uint32_t>(bytes), 0};
  WorkRequest wr;
  wr.opcode = Opcode::kRdmaWrite;
  wr.flags = kWrInline;
  wr.sgl = {&s, 1};
  wr.remote_addr = t.base;
  wr.rkey = t.rkey;
  return ep.post(wr, OnComplete{}, true) == StatusCode::kOk;
}

bool get_fast(rma_win_s* win, const FastArgs& a) noexcept {
  std::uint64_t bytes = 0;
  if (a.origin == nullptr || !fast_bytes(a, bytes)) return false;
  if (const std::byte* there = fast_direct(win, a.target, a.target_disp, bytes)) [[likely]] {
    copy_bytes(const_cast<void*>(a.origin), there, bytes);
    return true;
  }
  Target t;
  if (!fast_target(win, a.target, a.target_disp, bytes, t)) return false;
  Endpoint& ep = win->endpoint(a.target);
  if (bytes > ep.bounce_bytes()) return false;
  if (ep.reserve(true) != StatusCode::kOk) return false;
  const Sge s = ep.bounce(static_cast<std::uint32_t>(bytes));
  WorkRequest wr;
  wr.opcode = Opcode::kRdmaRead;
  wr.sgl = {&s, 1};
  wr.remote_addr = t.base;
  wr.rkey = t.rkey;
  return ep.post(wr, OnComplete{nullptr, {}, const_cast<void*>(a.origin), static_cast<std::uint32_t>(bytes)}) == StatusCode::kOk;
}

bool fetch_and_op_fast(rma_win_s* win, const FastArgs& a, const void* result_v, rma_Op op) noexcept {
  void* result = const_cast<void*>(result_v);
  const auto opv = reinterpret_cast<std::intptr_t>(op);
  const bool sum = opv == static_cast<std::intptr_t>(OpKind::kSum);
  const bool noop = opv == static_cast<std::intptr_t>(OpKind::kNoOp);
  // Recorded accumulates run first under any ordering but none (accumulate()).
  if (win->deferred && !win->deferred->empty() && !ordering_none(win)) return false;
  if ((!sum && !noop) || result == nullptr || (sum && a.origin == nullptr) ||
      a.target_type == nullptr || a.target_type->magic != rma_datatype_s::kMagic ||
      !a.target_type->predefined || !is_int64_like(a.target_type)) {
    return false;
  }
  std::uint64_t add = 0;
  if (sum) std::memcpy(&add, a.origin, 8);
  if (std::byte* there = fast_direct(win, a.target, a.target_disp, 8)) [[likely]] {
    if ((reinterpret_cast<std::uintptr_t>(there) & 7u) != 0) return false;  // the accumulate lock's
    const std::uint64_t old = direct::atomic(reinterpret_cast<std::uint64_t*>(there), Opcode::kAtomicFetchAdd, add, 0);
    std::memcpy(result, &old, 8);
    return true;
  }
  Target t;
  if (!fast_target(win, a.target, a.target_disp, 8, t) || (t.base & 7u) != 0) return false;
  return win->endpoint(a.target).post_atomic(Opcode::kAtomicFetchAdd, t.base, t.rkey, add, 0,
                                             OnComplete{nullptr, {}, result, 8}) == StatusCode::kOk;
}

bool compare_and_swap_fast(rma_win_s* win, const FastArgs& a, const void* compare, void* result) noexcept {
  // Recorded accumulates run first under any ordering but none (compare_and_swap()).
  if (win->deferred && !win->deferred->empty() && !ordering_none(win)) return false;
  if (a.origin == nullptr || compare == nullptr || result == nullptr || a.target_type == nullptr ||
      a.target_type->magic != rma_datatype_s::kMagic || !a.target_type->predefined ||
      !is_int64_like(a.target_type)) {
    return false;
  }
  std::uint64_t expected = 0, desired = 0;
  std::memcpy(&expected, compare, 8);
  std::memcpy(&desired, a.origin, 8);
  if (std::byte* there = fast_direct(win, a.target, a.target_disp, 8)) [[likely]] {
    if ((reinterpret_cast<std::uintptr_t>(there) & 7u) != 0) return false;  // the accumulate lock's
    const std::uint64_t old =
        direct::atomic(reinterpret_cast<std::uint64_t*>(there), Opcode::kAtomicCmpSwap, expected, desired);
    std::memcpy(result, &old, 8);
    return true;
  }
  Target t;
  if (!fast_target(win, a.target, a.target_disp, 8, t) || (t.base & 7u) != 0) return false;
  return win->endpoint(a.target).post_atomic(Opcode::kAtomicCmpSwap, t.base, t.rkey, expected, desired,
                                             OnComplete{nullptr, {}, result, 8}) == StatusCode::kOk;
}

bool flush_fast(rma_win_s* win, int target) noexcept {
  return win->flavor != RMA_WIN_FLAVOR_DYNAMIC && (!win->deferred || win->deferred->empty()) &&
         static_cast<unsigned>(target) < static_cast<unsigned>(win->npeers) &&
         (win->lock_all || win->locks[static_cast<std::size_t>(target)] != 0) &&
         flush_target(win, target, FlushScope::kRemote) == StatusCode::kOk;
}

}  // namespace rma::api
