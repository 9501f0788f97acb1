// Communication calls: put, get, accumulate, get_accumulate (and
// fetch_and_op), compare_and_swap.
//
// Every call checks its arguments, its epoch and the whole target range
// against the target's window (known from creation, or from the target's
// attachment table for dynamic windows) before it posts anything.
//
// Accumulate chooses its method per element, by the element type and the
// element's alignment only (never by the op or the rest of the call), so
// every origin treats a location the same way and every pair of ops MPI
// allows concurrently on it (same op, NO_OP, REPLACE, compare_and_swap)
// stays atomic, also where NIC atomics are not atomic against RDMA WRITEs:
//  - NIC atomics: 8-byte elements at 8-byte aligned addresses, whatever the
//    op: FETCH_ADD for integer SUM, FETCH_ADD 0 for NO_OP, CMP_SWAP for
//    compare_and_swap, a CMP_SWAP loop for the rest (accumulate_words);
//  - otherwise a per-target accumulate lock (a CAS on the target's metadata
//    word 1), then READ, compute, WRITE, unlock, all on the one QP to that
//    target, so RC ordering keeps the WRITE before the unlock. This path
//    completes before the call returns.
// Accumulates from one origin to one target run in order on one QP (the
// default accumulate_ordering rar,raw,war,waw).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <cstring>
#include <thread>

#include "datatype/block_cursor.hpp"
#include "datatype/errors.hpp"
#include "datatype/pack.hpp"
#include "datatype/transfer_planner.hpp"
#include "window/reduce.hpp"
#include "window/thread_level.hpp"
#include "window/window.hpp"

namespace rma::api {
namespace {

using endpoint::Endpoint;
using endpoint::OnComplete;

constexpr std::uint32_t kMaxSgeArray = 64;

// Where displacement 0 of the target buffer is, and its rkey.
struct Target {
  std::uint64_t base = 0;
  std::uint32_t rkey = 0;
};

struct OneRegistration {
  std::uint64_t begin = 0, end = 0;
  std::uint32_t lkey = 0;
};
bool lookup_one(void* ctx, std::uint64_t addr, std::uint64_t, LocalKey* out) noexcept {
  const auto* r = static_cast<const OneRegistration*>(ctx);
  if (addr < r->begin || addr >= r->end) return false;
  *out = LocalKey{r->begin, r->end, r->lkey};
  return true;
}

std::string type_name(const rma_datatype_s* t) {
  return (t != nullptr && t->predefined && t->name != nullptr) ? t->name : "derived datatype";
}

Status check_rank(rma_win_s* win, int target) {
  const int n = static_cast<int>(win->peers.size());
  if (target < 0 || target >= n) {
    return class_error(RMA_ERR_RANK, "target_rank " + std::to_string(target) +
                                         " is not a rank of the window's group (size " +
                                         std::to_string(n) + ")");
  }
  if (!win->may_access(target)) {
    return class_error(RMA_ERR_RMA_SYNC,
                       "no access epoch to rank " + std::to_string(target) +
                           " is open: call rma_win_fence, rma_win_lock, rma_win_lock_all or "
                           "rma_win_start first");
  }
  return {};
}

// MPI 4.x 12.3: an operation on RMA_PROC_NULL does nothing, but only
// inside an access epoch, like any other.
Status check_proc_null_epoch(rma_win_s* win, const char* call) {
  const bool open = win->fence_open || win->lock_all || win->start_active ||
                    std::any_of(win->access_count.begin(), win->access_count.end(),
                                [](std::uint32_t c) { return c != 0; });
  if (open) return {};
  return class_error(RMA_ERR_RMA_SYNC, std::string(call) +
                                           " to RMA_PROC_NULL outside an access epoch: call "
                                           "rma_win_fence, rma_win_lock, rma_win_lock_all or "
                                           "rma_win_start first");
}

Status check_count(int count, const char* what) {
  if (count < 0) return count_error(std::string(what) + " " + std::to_string(count) + " is negative");
  return {};
}

// Committed layout of a handle: predefined and committed types without the
// Result round trip (the data path), everything else through the checks.
Status layout_of_committed(rma_Datatype t, const char* what, const TypeLayout*& out) {
  if (t != nullptr && t->magic == rma_datatype_s::kMagic && t->committed) [[likely]] {
    out = &t->layout;
    return {};
  }
  auto r = committed_layout(t, what);
  if (!r.ok()) return r.status();
  out = *r;
  return {};
}

Status bytes_of(const TypeLayout& l, int count, const char* what, std::int64_t& out) {
  if (__builtin_mul_overflow(l.size, static_cast<std::int64_t>(count), &out)) [[unlikely]] {
    return count_error(std::string(what) + " " + std::to_string(count) + " x type size overflows");
  }
  return {};
}

// `count` x `type` must span a range whose bounds fit in 64 bits
// ((count - 1) x extent overflows for resized types with huge extents),
// and a local buffer of them must not wrap the address space.
Status check_span(const TypeLayout& type, int count, const char* count_name, const void* local) {
  Footprint fp;
  if (!footprint_fits(type, count, fp)) [[unlikely]] {
    return count_error(std::string(count_name) + " " + std::to_string(count) + " x the datatype's extent " +
                       std::to_string(type.extent()) + " overflows 64 bits");
  }
  if (local != nullptr && fp.hi > fp.lo) {
    const auto a = reinterpret_cast<std::uintptr_t>(local);
    const bool below = fp.lo < 0 && static_cast<std::uint64_t>(-(fp.lo + 1)) >= a;
    const bool above = fp.hi > 0 && static_cast<std::uint64_t>(fp.hi) > UINTPTR_MAX - a;
    if (below || above) {
      return buffer_error("the buffer at " + std::to_string(a) + " with " + std::string(count_name) + " " +
                          std::to_string(count) + " spans [" + std::to_string(fp.lo) + ", " +
                          std::to_string(fp.hi) + ") around it, which wraps the address space");
    }
  }
  return {};
}

// Bytes [lo, hi) relative to the window start (or absolute, for dynamic
// windows) that `count` x `type` at `disp` touch must lie inside the target's
// window; the result is where the planner's displacement 0 is.
Status resolve_target(rma_win_s* win, const char* call, int target, rma_Aint disp, int count,
                      const TypeLayout& tl, rma_Datatype ttype, Target& out);

// Where a target range lands in a window: the one check of the fast paths
// and the checked path (which adds the messages). The range is
// [disp * disp_unit + lo, disp * disp_unit + hi) for a footprint [lo, hi);
// kInside when it is within [0, size).
enum class Placement { kInside, kDispOverflow, kExtentOverflow, kOutside };
struct PlacedRange {
  std::int64_t off = 0, lo = 0, hi = 0;
};
Placement place(PlacedRange& r, std::int64_t disp_unit, std::uint64_t size, rma_Aint disp, std::int64_t lo,
                std::int64_t hi) noexcept {
  if (__builtin_mul_overflow(static_cast<std::int64_t>(disp), disp_unit, &r.off)) return Placement::kDispOverflow;
  if (__builtin_add_overflow(r.off, lo, &r.lo) || __builtin_add_overflow(r.off, hi, &r.hi)) {
    return Placement::kExtentOverflow;
  }
  if (r.lo < 0 || static_cast<std::uint64_t>(r.hi) > size) return Placement::kOutside;
  return Placement::kInside;
}

Status read_remote_table(rma_win_s* win, int target);

}  // namespace

Status transport_error(rma_win_s* win, const char* call, int target, StatusCode code) {
  Endpoint& ep = win->endpoint(target);
  std::string what;
  if (ep.broken()) {
    what = "the connection to rank " + std::to_string(target) + " failed: " +
           endpoint::describe_error(ep.error(), ep.vendor_err());
  } else if (code == StatusCode::kTimeout) {
    what = "rank " + std::to_string(target) + " did not complete within " +
           std::to_string(win->ctx->eps().options().timeout.count()) +
           " ms (RMA_WAIT_TIMEOUT_MS)";
  } else if (ep.last_reject() != nullptr) {
    what = std::string("the provider rejected a work request to rank ") + std::to_string(target) +
           ": " + ep.last_reject();
  } else {
    what = "posting to rank " + std::to_string(target) + " failed (" +
           std::string(status_code_name(code)) + ")";
  }
  (void)call;
  return class_error(RMA_ERR_OTHER, what);
}

namespace {

Status read_remote_table(rma_win_s* win, int target) {
  Context& ctx = *win->ctx;
  const PeerWindow& p = win->peers[static_cast<std::size_t>(target)];
  const std::size_t words = 2 + 3 * kMaxAttach;
  RMA_ASSIGN_OR_RETURN(Context::Scratch s, ctx.scratch(words * 8));
  Endpoint& ep = win->endpoint(target);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    endpoint::Request r;
    // The table, then its version word again: equal and even = consistent.
    Sge table{reinterpret_cast<std::uint64_t>(s.a), static_cast<std::uint32_t>(words * 8), s.lkey};
    Sge again{reinterpret_cast<std::uint64_t>(s.b), 8, s.lkey};
    WorkRequest wr;
    wr.opcode = Opcode::kRdmaRead;
    wr.sgl = {&table, 1};
    wr.remote_addr = p.meta + win->table_word() * 8;
    wr.rkey = p.meta_rkey;
    StatusCode rc = ep.post(wr, OnComplete{&r, {}, nullptr, 0});
    if (rc == StatusCode::kOk) {
      wr.sgl = {&again, 1};
      rc = ep.post(wr, OnComplete{&r, {}, nullptr, 0});
    }
    if (rc == StatusCode::kOk) rc = ctx.eps().wait(r);
    if (rc != StatusCode::kOk || r.failed()) return transport_error(win, "reading the attachment table", target, rc);
    std::uint64_t t[2 + 3 * kMaxAttach];
    std::memcpy(t, s.a, sizeof(t));
    std::uint64_t v2 = 0;
    std::memcpy(&v2, s.b, 8);
    if ((t[0] & 1) != 0 || t[0] != v2) {
      std::this_thread::yield();
      continue;
    }
    auto& out = win->remote_tables[static_cast<std::size_t>(target)];
    out.clear();
    const std::uint64_t n = std::min<std::uint64_t>(t[1], kMaxAttach);
    for (std::uint64_t i = 0; i < n; ++i) out.push_back({t[2 + 3 * i], t[3 + 3 * i], t[4 + 3 * i]});
    return {};
  }
  return class_error(RMA_ERR_OTHER, "the attachment table of rank " + std::to_string(target) +
                                        " kept changing while being read");
}

Status resolve_target(rma_win_s* win, const char* call, int target, rma_Aint disp, int count,
                      const TypeLayout& tl, rma_Datatype ttype, Target& out) {
  const PeerWindow& p = win->peers[static_cast<std::size_t>(target)];
  const Footprint fp = footprint(tl, count);
  const bool dynamic = win->flavor == RMA_WIN_FLAVOR_DYNAMIC;
  PlacedRange r;
  const Placement where = place(r, dynamic ? 1 : p.disp_unit, dynamic ? ~std::uint64_t{0} : p.size, disp,
                                fp.lo, fp.hi);
  if (where == Placement::kDispOverflow) {
    return class_error(RMA_ERR_RMA_RANGE, "target_disp " + std::to_string(disp) + " x disp_unit " +
                                              std::to_string(p.disp_unit) + " overflows");
  }
  if (where == Placement::kExtentOverflow) {
    return class_error(RMA_ERR_RMA_RANGE, "target_disp " + std::to_string(disp) + " overflows with the datatype's extent");
  }
  const std::int64_t off = r.off, lo = r.lo, hi = r.hi;
  auto describe = [&]() {
    return std::string(call) + " to rank " + std::to_string(target) + ": target range [" +
           std::to_string(lo) + ", " + std::to_string(hi) + ") (target_disp " +
           std::to_string(disp) + (dynamic ? "" : " x disp_unit " + std::to_string(p.disp_unit)) +
           ", " + std::to_string(count) + " x " + type_name(ttype) + ")";
  };
  if (!dynamic) {
    if (where == Placement::kOutside) {
      return class_error(RMA_ERR_RMA_RANGE, describe() + " is outside the window of rank " +
                                                std::to_string(target) + ", which is " +
                                                std::to_string(p.size) + " bytes");
    }
    out.base = p.base + static_cast<std::uint64_t>(off);
    out.rkey = p.rkey;
    return {};
  }
  const auto ulo = static_cast<std::uint64_t>(lo), uhi = static_cast<std::uint64_t>(hi);
  for (int pass = 0; pass < 2; ++pass) {
    for (const Attachment& a : win->remote_tables[static_cast<std::size_t>(target)]) {
      if (lo >= 0 && ulo >= a.addr && uhi <= a.addr + a.len) {
        out.base = static_cast<std::uint64_t>(off);
        out.rkey = static_cast<std::uint32_t>(a.rkey);
        return {};
      }
    }
    if (pass == 0) RMA_RETURN_IF_ERROR(read_remote_table(win, target));
  }
  return class_error(RMA_ERR_RMA_RANGE,
                     describe() + " is not inside memory attached to the dynamic window at rank " +
                         std::to_string(target) + " (" +
                         std::to_string(win->remote_tables[static_cast<std::size_t>(target)].size()) +
                         " attachments)");
}

// Posts the transfer described by a planner: RDMA WRITE or READ work
// requests; the last one carries `last` (request, registration).
Status post_planned(rma_win_s* win, const char* call, int target, Endpoint& ep,
                    TransferPlanner& planner, Opcode opcode, std::uint32_t rkey,
                    OnComplete&& last) {
  Sge sges[kMaxSgeArray];
  const std::span<Sge> span(sges, std::min(ep.max_sge(), kMaxSgeArray));
  TargetRange tr;
  while (planner.next(span, tr)) {
    WorkRequest wr;
    wr.opcode = opcode;
    wr.flags = 0;
    wr.sgl = {sges, tr.num_sge};
    wr.remote_addr = tr.addr;
    wr.rkey = rkey;
    const bool is_last = planner.planned_bytes() == planner.total_bytes();
    // The operation's last request is signaled: flush waits for it.
    const StatusCode rc = ep.post(wr, is_last ? std::move(last) : OnComplete{}, is_last);
    if (rc != StatusCode::kOk) return transport_error(win, call, target, rc);
  }
  if (planner.state() == TransferPlanner::State::kLkeyFailed) {
    return class_error(RMA_ERR_INTERN, std::string(call) + ": no registration covers origin address " +
                                           std::to_string(planner.failed_addr()));
  }
  return {};
}

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

Result<RegistrationCache::Handle> register_buffer(rma_win_s* win, const void* addr,
                                                  const TypeLayout& l, int count, Access access,
                                                  OneRegistration& reg) {
  const Footprint fp = footprint(l, count);
  const std::byte* p = byte_at(addr, fp.lo);  // addr may be RMA_BOTTOM
  auto h = win->ctx->eps().rcache().acquire(p, static_cast<std::size_t>(fp.hi - fp.lo), access);
  if (!h.ok()) return buffer_error("cannot register the origin buffer: " + h.status().message());
  reg.begin = h->mr().addr();
  reg.end = reg.begin + h->mr().length();
  reg.lkey = h->lkey();
  return std::move(h).value();
}

}  // namespace

Status put(rma_win_s* win, const char* call, const OpArgs& a, endpoint::Request* req) {
  if (a.target == RMA_PROC_NULL) return check_proc_null_epoch(win, call);
  Transfer x;
  RMA_RETURN_IF_ERROR(check_transfer(win, call, a.origin, a, x));
  if (x.bytes == 0) return {};
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
  OneRegistration reg;
  RMA_ASSIGN_OR_RETURN(RegistrationCache::Handle h,
                       register_buffer(win, a.origin, *x.ol, a.origin_count, Access::kNone, reg));
  RMA_ASSIGN_OR_RETURN(
      TransferPlanner planner,
      TransferPlanner::create(Buffer{reinterpret_cast<std::uint64_t>(a.origin), a.origin_count, x.ol},
                              Buffer{x.t.base, a.target_count, x.tl},
                              PlanLimits::from_caps(win->ctx->eps().caps()),
                              LkeyLookup{lookup_one, &reg}));
  return post_planned(win, call, a.target, ep, planner, Opcode::kRdmaWrite, x.t.rkey,
                      OnComplete{req, std::move(h), nullptr, 0});
}

Status get(rma_win_s* win, const char* call, const OpArgs& a, endpoint::Request* req) {
  if (a.target == RMA_PROC_NULL) return check_proc_null_epoch(win, call);
  Transfer x;
  RMA_RETURN_IF_ERROR(check_transfer(win, call, a.result, a, x));
  if (x.bytes == 0) return {};
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
  OneRegistration reg;
  RMA_ASSIGN_OR_RETURN(RegistrationCache::Handle h,
                       register_buffer(win, a.result, *x.ol, a.origin_count, Access::kLocalWrite, reg));
  RMA_ASSIGN_OR_RETURN(
      TransferPlanner planner,
      TransferPlanner::create(Buffer{reinterpret_cast<std::uint64_t>(a.result), a.origin_count, x.ol},
                              Buffer{x.t.base, a.target_count, x.tl},
                              PlanLimits::from_caps(win->ctx->eps().caps()),
                              LkeyLookup{lookup_one, &reg}));
  return post_planned(win, call, a.target, ep, planner, Opcode::kRdmaRead, x.t.rkey,
                      OnComplete{req, std::move(h), nullptr, 0});
}

Result<std::uint64_t> meta_atomic(rma_win_s* win, int target, std::uint64_t word, Opcode op,
                                  std::uint64_t compare_add, std::uint64_t swap) {
  endpoint::EndpointManager& eps = win->ctx->eps();
  Endpoint& ep = win->endpoint(target);
  const PeerWindow& p = win->peers[static_cast<std::size_t>(target)];
  endpoint::Request r;
  std::uint64_t value = 0;
  StatusCode rc = ep.post_atomic(op, p.meta + word * 8, p.meta_rkey, compare_add, swap,
                                 OnComplete{&r, {}, &value, 8});
  if (rc == StatusCode::kOk) rc = eps.wait(r);
  if (rc != StatusCode::kOk || r.failed()) {
    return transport_error(win, "a synchronization atomic", target, rc);
  }
  return value;
}

namespace {

// Holds the accumulate lock of one target while alive.
class AccLock {
 public:
  AccLock(rma_win_s* win, int target) : win_(win), target_(target) {}
  AccLock(const AccLock&) = delete;
  AccLock& operator=(const AccLock&) = delete;
  Status acquire(const char* call) {
    const std::uint64_t me = static_cast<std::uint64_t>(win_->rank()) + 1;
    const auto start = std::chrono::steady_clock::now();
    for (std::uint32_t spin = 0;; ++spin) {
      RMA_ASSIGN_OR_RETURN(std::uint64_t old,
                           meta_atomic(win_, target_, 1, Opcode::kAtomicCmpSwap, 0, me));
      if (old == 0) break;
      if (win_->ctx->eps().expired(start)) {
        return class_error(RMA_ERR_OTHER, std::string(call) + ": the accumulate lock of rank " +
                                              std::to_string(target_) + " stayed held by rank " +
                                              std::to_string(old - 1) + " past RMA_WAIT_TIMEOUT_MS");
      }
      if (spin > 4) yield_to_other_threads();
    }
    held_ = true;
    return {};
  }
  Status release() {
    if (!held_) return {};
    held_ = false;
    const std::uint64_t me = static_cast<std::uint64_t>(win_->rank()) + 1;
    // Ordered after this origin's READs and WRITEs on the same QP.
    return meta_atomic(win_, target_, 1, Opcode::kAtomicFetchAdd, ~me + 1, 0).status();
  }
  ~AccLock() { (void)release(); }

 private:
  rma_win_s* win_;
  int target_;
  bool held_ = false;
};

const TypeLayout& byte_layout() { return rma_dt_byte_.layout; }

// READ `bytes` of the target buffer (tcount x tl at t) into scratch `dst`,
// or WRITE them from `dst` back; waits for completion.
Status move_scratch(rma_win_s* win, const char* call, int target, const Context::Scratch& s,
                    std::byte* dst, std::int64_t bytes, const Target& t, int tcount,
                    const TypeLayout& tl, Opcode opcode) {
  Endpoint& ep = win->endpoint(target);
  OneRegistration reg{s.begin, s.end, s.lkey};
  RMA_ASSIGN_OR_RETURN(
      TransferPlanner planner,
      TransferPlanner::create(Buffer{reinterpret_cast<std::uint64_t>(dst), bytes, &byte_layout()},
                              Buffer{t.base, tcount, &tl},
                              PlanLimits::from_caps(win->ctx->eps().caps()),
                              LkeyLookup{lookup_one, &reg}));
  endpoint::Request r;
  RMA_RETURN_IF_ERROR(post_planned(win, call, target, ep, planner, opcode, t.rkey,
                                   OnComplete{&r, {}, nullptr, 0}));
  const StatusCode rc = win->ctx->eps().wait(r);
  if (rc != StatusCode::kOk || r.failed()) return transport_error(win, call, target, rc);
  return {};
}

// Element addresses of `count` x `type` at `base`, one 8-byte element at a
// time (every block of an 8-byte element type is whole elements).
class ElementWalker {
 public:
  ElementWalker(const TypeLayout& type, int count, std::uint64_t base)
      : cursor_(type, count), base_(base) {}
  bool next(std::uint64_t& addr) noexcept {
    if (left_ == 0) {
      Block b;
      if (!cursor_.next(b)) return false;
      at_ = base_ + static_cast<std::uint64_t>(b.offset);
      left_ = static_cast<std::uint64_t>(b.length);
    }
    addr = at_;
    at_ += 8;
    left_ = left_ >= 8 ? left_ - 8 : 0;
    return true;
  }

 private:
  BlockCursor cursor_;
  std::uint64_t base_;
  std::uint64_t at_ = 0, left_ = 0;
};

// An element NIC atomics can change as a whole: 8 bytes, no holes.
bool word_element(const rma_datatype_s* elem) noexcept {
  return elem->layout.size == 8 && elem->layout.is_dense();
}

enum class Alignment { kNone, kSome, kAll };

// Whether the 8-byte elements of `count` x `tl` at `base` are 8-byte aligned.
Alignment alignment_of(const TypeLayout& tl, int count, std::uint64_t base) {
  BlockCursor c(tl, count);
  Block b;
  bool some = false, all = true;
  while (c.next(b)) {
    // Blocks hold whole elements: all of a block's elements share its alignment.
    const bool aligned = ((base + static_cast<std::uint64_t>(b.offset)) & 7u) == 0;
    some |= aligned;
    all &= aligned;
  }
  return all ? Alignment::kAll : some ? Alignment::kSome : Alignment::kNone;
}

// One 8-byte atomic on `target` at `addr`, waited for: the old value.
Result<std::uint64_t> word_atomic(rma_win_s* win, const char* call, int target, std::uint64_t addr,
                                  std::uint32_t rkey, Opcode op, std::uint64_t compare_add,
                                  std::uint64_t swap) {
  endpoint::EndpointManager& eps = win->ctx->eps();
  Endpoint& ep = win->endpoint(target);
  endpoint::Request r;
  std::uint64_t value = 0;
  StatusCode rc = ep.post_atomic(op, addr, rkey, compare_add, swap, OnComplete{&r, {}, &value, 8});
  if (rc == StatusCode::kOk) rc = eps.wait(r);
  if (rc != StatusCode::kOk || r.failed()) return transport_error(win, call, target, rc);
  return value;
}

// READ or WRITE 8 bytes between scratch `at` and `addr` on `target`, waited for.
Status move_word(rma_win_s* win, const char* call, int target, const Context::Scratch& s,
                 std::byte* at, std::uint64_t addr, std::uint32_t rkey, Opcode op) {
  endpoint::EndpointManager& eps = win->ctx->eps();
  Endpoint& ep = win->endpoint(target);
  endpoint::Request r;
  Sge sge{reinterpret_cast<std::uint64_t>(at), 8, s.lkey};
  WorkRequest wr;
  wr.opcode = op;
  wr.sgl = {&sge, 1};
  wr.remote_addr = addr;
  wr.rkey = rkey;
  StatusCode rc = ep.post(wr, OnComplete{&r, {}, nullptr, 0}, true);
  if (rc == StatusCode::kOk) rc = eps.wait(r);
  if (rc != StatusCode::kOk || r.failed()) return transport_error(win, call, target, rc);
  return {};
}

bool ordering_none(const rma_win_s* win) noexcept {
  return win->hints.accumulate_ordering == "none";
}

// accumulate_ordering=none: records a non-fetching compare-and-swap-loop
// accumulate on 8-byte aligned elements, to run with the others at the
// next synchronization (see deferred_accumulate.hpp). The operands are
// copied: the origin buffer is free when this returns.
Status defer_words(rma_win_s* win, const char* call, const OpArgs& a, OpKind op,
                   const rma_datatype_s* elem, const Target& t, const TypeLayout& tl,
                   const TypeLayout* ol, std::int64_t bytes) {
  if (!win->deferred) win->deferred = std::make_unique<DeferredAccumulates>();
  DeferredAccumulates& d = *win->deferred;
  const std::int64_t nelem = bytes / 8;
  std::optional<ElementWalker> tw;
  if (!tl.is_dense()) tw.emplace(tl, a.target_count, t.base);
  std::optional<ElementWalker> ow;
  if (!ol->is_dense()) ow.emplace(*ol, a.origin_count, reinterpret_cast<std::uint64_t>(a.origin));
  for (std::int64_t i = 0; i < nelem; ++i) {
    std::uint64_t taddr = t.base + 8 * static_cast<std::uint64_t>(i);
    if (tw && !tw->next(taddr)) break;
    std::uint64_t oaddr = reinterpret_cast<std::uint64_t>(a.origin) + 8 * static_cast<std::uint64_t>(i);
    if (ow) (void)ow->next(oaddr);
    std::uint64_t value = 0;
    std::memcpy(&value, reinterpret_cast<const void*>(oaddr), 8);
    if (d.add(a.target, taddr, t.rkey, op, elem, value)) continue;
    RMA_RETURN_IF_ERROR(d.run(win, call));
    (void)d.add(a.target, taddr, t.rkey, op, elem, value);  // the list is empty now
  }
  return {};
}

// Accumulate on 8-byte elements of which at least one is 8-byte aligned.
// An aligned element is only ever changed with NIC atomics, so that every
// op MPI lets run concurrently on one location (same op, NO_OP, REPLACE,
// compare_and_swap) stays atomic against the others, also on NICs whose
// atomics are not atomic against another QP's RDMA WRITE:
//  - SUM on 8-byte integers: FETCH_ADD (posted, completes with the request);
//  - NO_OP: FETCH_ADD 0 (posted);
//  - anything else (REPLACE, MIN, PROD, double SUM, ...): a CMP_SWAP loop,
//    starting from a guess of 0 and retrying with the value the NIC
//    returned, until the deadline.
// Misaligned elements of the same call (a derived type can mix both) take
// the accumulate lock, one element at a time: READ, compute, WRITE.
Status accumulate_words(rma_win_s* win, const char* call, const OpArgs& a, bool fetch,
                        endpoint::Request* req, OpKind op, const rma_datatype_s* elem,
                        const Target& t, const TypeLayout& tl, const TypeLayout* ol,
                        const TypeLayout* rl, std::int64_t bytes, bool some_misaligned) {
  Context& ctx = *win->ctx;
  const std::int64_t nelem = bytes / 8;
  const bool posted_add = op == OpKind::kNoOp || (op == OpKind::kSum && is_int64_like(elem));
  if (!fetch && req == nullptr && !posted_add && !some_misaligned && ordering_none(win)) {
    return defer_words(win, call, a, op, elem, t, tl, ol, bytes);
  }
  // The lock first: waiting for it lets other threads of this rank run
  // (RMA_THREAD_MULTIPLE), and they may reuse the scratch memory.
  AccLock lock(win, a.target);
  if (some_misaligned) RMA_RETURN_IF_ERROR(lock.acquire(call));
  // s.b: the packed origin values (when not dense); s.a: one element's
  // copy for misaligned elements.
  RMA_ASSIGN_OR_RETURN(Context::Scratch s, ctx.scratch(static_cast<std::size_t>(bytes)));
  const std::byte* values = nullptr;
  if (op != OpKind::kNoOp) {
    if (ol->is_dense()) {
      values = static_cast<const std::byte*>(a.origin);
    } else {
      RMA_RETURN_IF_ERROR(pack(a.origin, a.origin_count, *ol,
                               {s.b, static_cast<std::size_t>(bytes)}).status());
      values = s.b;
    }
  }
  Endpoint& ep = win->endpoint(a.target);
  std::optional<ElementWalker> tw, rw;
  if (!tl.is_dense()) tw.emplace(tl, a.target_count, t.base);
  if (fetch && !rl->is_dense()) rw.emplace(*rl, a.result_count, reinterpret_cast<std::uint64_t>(a.result));
  const auto start = std::chrono::steady_clock::now();
  for (std::int64_t i = 0; i < nelem; ++i) {
    std::uint64_t taddr = t.base + 8 * static_cast<std::uint64_t>(i);
    if (tw && !tw->next(taddr)) break;
    std::uint64_t raddr = reinterpret_cast<std::uint64_t>(a.result) + 8 * static_cast<std::uint64_t>(i);
    if (rw) (void)rw->next(raddr);
    void* const result = fetch ? reinterpret_cast<void*>(raddr) : nullptr;
    std::uint64_t value = 0;
    if (values != nullptr) std::memcpy(&value, values + 8 * i, 8);

    if ((taddr & 7u) != 0) {
      RMA_RETURN_IF_ERROR(move_word(win, call, a.target, s, s.a, taddr, t.rkey, Opcode::kRdmaRead));
      if (result != nullptr) std::memcpy(result, s.a, 8);
      if (op != OpKind::kNoOp) {
        apply_op(op, elem, s.a, &value, 1);
        RMA_RETURN_IF_ERROR(move_word(win, call, a.target, s, s.a, taddr, t.rkey, Opcode::kRdmaWrite));
      }
      continue;
    }
    if (posted_add) {
      // Results land in the bounce slot and are copied out on completion.
      const StatusCode rc = ep.post_atomic(Opcode::kAtomicFetchAdd, taddr, t.rkey,
                                           op == OpKind::kNoOp ? 0 : value, 0,
                                           OnComplete{req, {}, result, result != nullptr ? 8u : 0u});
      if (rc != StatusCode::kOk) return transport_error(win, call, a.target, rc);
      continue;
    }
    std::uint64_t expected = 0;
    for (std::uint32_t spin = 0;; ++spin) {
      std::uint64_t desired = expected;
      apply_op(op, elem, &desired, &value, 1);
      RMA_ASSIGN_OR_RETURN(std::uint64_t seen, word_atomic(win, call, a.target, taddr, t.rkey,
                                                           Opcode::kAtomicCmpSwap, expected, desired));
      if (seen == expected) break;
      expected = seen;
      if (ctx.eps().expired(start)) {
        return class_error(RMA_ERR_OTHER, std::string(call) + ": the compare-and-swap loop on rank " +
                                              std::to_string(a.target) + " at address " +
                                              std::to_string(taddr) +
                                              " kept losing to other origins past RMA_WAIT_TIMEOUT_MS");
      }
      if (spin > 16) std::this_thread::yield();
    }
    if (result != nullptr) std::memcpy(result, &expected, 8);
  }
  return lock.release();
}

// accumulate_ops=same_op (MPI 4.x 12.2.1) promises that concurrent
// accumulates to one location all use the same op and never NO_OP, so
// nothing reads-modifies-writes an element while a REPLACE lands. A REPLACE
// is then an RDMA WRITE, provided every element is at most 8 bytes and
// aligned to its size at the target: NICs (and the software NICs' copies)
// place such words whole, which keeps MPI's element-wise atomicity. Under
// the default (same_op_no_op) REPLACE keeps the lock path.
bool same_op_replace_is_write(rma_win_s* win, const TypeLayout& tl, int count, std::uint64_t base,
                              const rma_datatype_s* elem) {
  if (win->hints.accumulate_ops != "same_op") return false;
  const std::int64_t esize = elem->layout.size;
  if (esize != 1 && esize != 2 && esize != 4 && esize != 8) return false;
  const auto mask = static_cast<std::uint64_t>(esize - 1);
  if (tl.is_dense()) return (base & mask) == 0;
  BlockCursor c(tl, count);
  Block b;
  while (c.next(b)) {
    if (((base + static_cast<std::uint64_t>(b.offset)) & mask) != 0) return false;
  }
  return true;
}

}  // namespace

Status accumulate(rma_win_s* win, const char* call, const OpArgs& a, bool fetch,
                  endpoint::Request* req) {
  if (a.target == RMA_PROC_NULL) return check_proc_null_epoch(win, call);
  RMA_RETURN_IF_ERROR(check_rank(win, a.target));
  const auto opv = reinterpret_cast<std::intptr_t>(a.op);
  if (opv < 1 || opv > kOpCount) {
    return class_error(RMA_ERR_OP, a.op == RMA_OP_NULL ? std::string("op is RMA_OP_NULL")
                                                       : "op is not a predefined operation");
  }
  const auto op = static_cast<OpKind>(opv);
  // Accumulates recorded under accumulate_ordering=none run before any
  // made after the hint changed.
  if (!ordering_none(win)) RMA_RETURN_IF_ERROR(run_deferred_accumulates(win, call));
  if (op == OpKind::kNoOp && !fetch) {
    return class_error(RMA_ERR_OP, "RMA_NO_OP is only for rma_get_accumulate, rma_rget_accumulate "
                                   "and rma_fetch_and_op");
  }
  RMA_RETURN_IF_ERROR(check_count(a.target_count, "target_count"));
  const TypeLayout* tl = nullptr;
  RMA_RETURN_IF_ERROR(layout_of_committed(a.target_type, "target_datatype", tl));
  const rma_datatype_s* elem = element_of(a.target_type);
  if (elem == nullptr) {
    return type_error("target_datatype mixes predefined types; accumulate needs one built from a "
                      "single predefined type");
  }
  std::int64_t bytes = 0;
  RMA_RETURN_IF_ERROR(bytes_of(*tl, a.target_count, "target_count", bytes));
  const TypeLayout* ol = nullptr;
  if (op != OpKind::kNoOp) {
    RMA_RETURN_IF_ERROR(check_count(a.origin_count, "origin_count"));
    RMA_RETURN_IF_ERROR(layout_of_committed(a.origin_type, "origin_datatype", ol));
    if (element_of(a.origin_type) != elem) {
      return type_error("origin_datatype is made of " + type_name(element_of(a.origin_type)) +
                        " but target_datatype of " + type_name(elem));
    }
    std::int64_t ob = 0;
    RMA_RETURN_IF_ERROR(bytes_of(*ol, a.origin_count, "origin_count", ob));
    if (ob != bytes) {
      return type_error("origin gives " + std::to_string(ob) + " bytes but the target range holds " +
                        std::to_string(bytes));
    }
    if (bytes > 0) RMA_RETURN_IF_ERROR(check_buffer(a.origin, *ol, a.origin_count, "origin_addr"));
  }
  const TypeLayout* rl = nullptr;
  if (fetch) {
    RMA_RETURN_IF_ERROR(check_count(a.result_count, "result_count"));
    RMA_RETURN_IF_ERROR(layout_of_committed(a.result_type, "result_datatype", rl));
    if (element_of(a.result_type) != elem) {
      return type_error("result_datatype is made of " + type_name(element_of(a.result_type)) +
                        " but target_datatype of " + type_name(elem));
    }
    std::int64_t rb = 0;
    RMA_RETURN_IF_ERROR(bytes_of(*rl, a.result_count, "result_count", rb));
    if (rb != bytes) {
      return type_error("result holds " + std::to_string(rb) + " bytes but the target range " +
                        std::to_string(bytes));
    }
    if (bytes > 0) RMA_RETURN_IF_ERROR(check_buffer(a.result, *rl, a.result_count, "result_addr"));
  }
  if (!op_defined(op, elem)) {
    return class_error(RMA_ERR_OP, std::string(op_name(op)) + " is not defined for " +
                                       type_name(elem) + " (" +
                                       type_class_name(type_class(elem)) + ")");
  }
  Target t;
  if (bytes == 0) return {};
  RMA_RETURN_IF_ERROR(check_span(*tl, a.target_count, "target_count", nullptr));
  if (ol != nullptr) RMA_RETURN_IF_ERROR(check_span(*ol, a.origin_count, "origin_count", a.origin));
  if (rl != nullptr) RMA_RETURN_IF_ERROR(check_span(*rl, a.result_count, "result_count", a.result));
  RMA_RETURN_IF_ERROR(resolve_target(win, call, a.target, a.target_disp, a.target_count, *tl,
                                     a.target_type, t));
  Context& ctx = *win->ctx;
  const std::int64_t nelem = bytes / elem->layout.size;

  if (!fetch && op == OpKind::kReplace && same_op_replace_is_write(win, *tl, a.target_count, t.base, elem)) {
    // accumulate_ops=same_op: a plain RDMA WRITE (see same_op_replace_is_write).
    return put(win, call, a, req);
  }

  // 8-byte elements at 8-byte aligned addresses are only ever changed by
  // NIC atomics, whatever the op (see accumulate_words); everything else
  // under the accumulate lock. The choice is per element, so every origin
  // treats a given location the same way.
  if (word_element(elem)) {
    const Alignment al = tl->is_dense() ? ((t.base & 7u) == 0 ? Alignment::kAll : Alignment::kNone)
                                        : alignment_of(*tl, a.target_count, t.base);
    if (al != Alignment::kNone) {
      return accumulate_words(win, call, a, fetch, req, op, elem, t, *tl, ol, rl, bytes,
                              al == Alignment::kSome);
    }
  }

  // get -> compute -> put under the target's accumulate lock.
  AccLock lock(win, a.target);
  RMA_RETURN_IF_ERROR(lock.acquire(call));
  RMA_ASSIGN_OR_RETURN(Context::Scratch s, ctx.scratch(static_cast<std::size_t>(bytes)));
  RMA_RETURN_IF_ERROR(move_scratch(win, call, a.target, s, s.a, bytes, t, a.target_count, *tl,
                                   Opcode::kRdmaRead));
  if (fetch) {
    RMA_RETURN_IF_ERROR(unpack({s.a, static_cast<std::size_t>(bytes)}, a.result, a.result_count, *rl).status());
  }
  if (op != OpKind::kNoOp) {
    RMA_RETURN_IF_ERROR(pack(a.origin, a.origin_count, *ol, {s.b, static_cast<std::size_t>(bytes)}).status());
    apply_op(op, elem, s.a, s.b, static_cast<std::size_t>(nelem));
    RMA_RETURN_IF_ERROR(move_scratch(win, call, a.target, s, s.a, bytes, t, a.target_count, *tl,
                                     Opcode::kRdmaWrite));
  }
  return lock.release();
}

Status compare_and_swap(rma_win_s* win, const char* call, const OpArgs& a,
                        endpoint::Request* req) {
  if (a.target == RMA_PROC_NULL) return check_proc_null_epoch(win, call);
  RMA_RETURN_IF_ERROR(check_rank(win, a.target));
  if (!ordering_none(win)) RMA_RETURN_IF_ERROR(run_deferred_accumulates(win, call));
  RMA_ASSIGN_OR_RETURN(const TypeLayout* tl, committed_layout(a.target_type, "datatype"));
  if (!a.target_type->predefined) {
    return type_error("compare_and_swap needs a predefined datatype, not a derived one");
  }
  const TypeClass cls = type_class(a.target_type);
  if (cls != TypeClass::kCInteger && cls != TypeClass::kLogical && cls != TypeClass::kByte) {
    return type_error(type_name(a.target_type) + " (" + type_class_name(cls) +
                      ") is not an integer, logical or byte type, as compare_and_swap requires");
  }
  if (a.origin == nullptr) return buffer_error("origin_addr is null");
  if (a.compare == nullptr) return buffer_error("compare_addr is null");
  if (a.result == nullptr) return buffer_error("result_addr is null");
  Target t;
  RMA_RETURN_IF_ERROR(resolve_target(win, call, a.target, a.target_disp, 1, *tl, a.target_type, t));
  const auto size = static_cast<std::size_t>(tl->size);
  Context& ctx = *win->ctx;
  if (size == 8 && (t.base & 7u) == 0) {
    std::uint64_t compare = 0, swap = 0;
    std::memcpy(&compare, a.compare, 8);
    std::memcpy(&swap, a.origin, 8);
    const StatusCode rc = win->endpoint(a.target).post_atomic(Opcode::kAtomicCmpSwap, t.base, t.rkey, compare,
                                                              swap, OnComplete{req, {}, a.result, 8});
    if (rc != StatusCode::kOk) return transport_error(win, call, a.target, rc);
    return {};
  }
  AccLock lock(win, a.target);
  RMA_RETURN_IF_ERROR(lock.acquire(call));
  RMA_ASSIGN_OR_RETURN(Context::Scratch s, ctx.scratch(size));
  const auto bytes = static_cast<std::int64_t>(size);
  RMA_RETURN_IF_ERROR(move_scratch(win, call, a.target, s, s.a, bytes, t, 1, *tl, Opcode::kRdmaRead));
  std::memcpy(a.result, s.a, size);
  if (std::memcmp(s.a, a.compare, size) == 0) {
    std::memcpy(s.a, a.origin, size);
    RMA_RETURN_IF_ERROR(move_scratch(win, call, a.target, s, s.a, bytes, t, 1, *tl, Opcode::kRdmaWrite));
  }
  return lock.release();
}

// ---------------------------------------------------------------- fast paths
//
// The common small operations on predefined (or dense) types, checked with
// plain comparisons and posted directly. Anything unusual — an error, a
// derived type, a dynamic window, a size past the inline/bounce limit —
// returns false without posting and the caller takes the checked path, which
// handles it (and reports errors with messages).
namespace {

bool fast_type(rma_Datatype t) noexcept {
  return t != nullptr && t->magic == rma_datatype_s::kMagic && t->committed && t->layout.is_dense();
}

bool fast_target(rma_win_s* win, int target, rma_Aint disp, std::uint64_t bytes, Target& t) noexcept {
  if (static_cast<std::size_t>(target) >= win->peers.size() || win->flavor == RMA_WIN_FLAVOR_DYNAMIC ||
      !win->may_access(target)) {
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

bool fast_bytes(const FastArgs& a, std::uint64_t& bytes) noexcept {
  if (a.origin_count <= 0 || a.target_count <= 0 || !fast_type(a.origin_type) || !fast_type(a.target_type)) {
    return false;
  }
  std::uint64_t tb = 0;
  if (__builtin_mul_overflow(static_cast<std::uint64_t>(a.origin_count),
                             static_cast<std::uint64_t>(a.origin_type->layout.size), &bytes) ||
      __builtin_mul_overflow(static_cast<std::uint64_t>(a.target_count),
                             static_cast<std::uint64_t>(a.target_type->layout.size), &tb)) {
    return false;
  }
  return bytes == tb && bytes > 0;
}

}  // namespace

bool put_fast(rma_win_s* win, const FastArgs& a) noexcept {
  std::uint64_t bytes = 0;
  Target t;
  if (a.origin == nullptr || !fast_bytes(a, bytes)) return false;
  if (static_cast<std::size_t>(a.target) >= win->peers.size()) return false;  // before indexing
  Endpoint& ep = win->endpoint(a.target);
  if (bytes > ep.max_inline() || !fast_target(win, a.target, a.target_disp, bytes, t)) return false;
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
  Target t;
  if (a.origin == nullptr || !fast_bytes(a, bytes)) return false;
  if (static_cast<std::size_t>(a.target) >= win->peers.size()) return false;  // before indexing
  Endpoint& ep = win->endpoint(a.target);
  if (bytes > ep.bounce_bytes() || !fast_target(win, a.target, a.target_disp, bytes, t)) return false;
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
  Target t;
  if ((!sum && !noop) || result == nullptr || (sum && a.origin == nullptr) ||
      a.target_type == nullptr || a.target_type->magic != rma_datatype_s::kMagic ||
      !a.target_type->predefined || !is_int64_like(a.target_type) ||
      !fast_target(win, a.target, a.target_disp, 8, t) || (t.base & 7u) != 0) {
    return false;
  }
  std::uint64_t add = 0;
  if (sum) std::memcpy(&add, a.origin, 8);
  return win->endpoint(a.target).post_atomic(Opcode::kAtomicFetchAdd, t.base, t.rkey, add, 0,
                                             OnComplete{nullptr, {}, result, 8}) == StatusCode::kOk;
}

}  // namespace rma::api
