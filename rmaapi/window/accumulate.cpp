// The accumulates (accumulate, get_accumulate, fetch_and_op) and
// compare_and_swap.
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
// default accumulate_ordering rar,raw,war,waw). To a peer whose window is
// mapped here (PeerWindow::direct) the same methods run as CPU atomics on
// the mapped word and copies under the same accumulate lock (direct.hpp):
// a location is changed the same way whichever path an origin takes.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>

#include "datatype/block_cursor.hpp"
#include "datatype/errors.hpp"
#include "datatype/pack.hpp"
#include "datatype/transfer_planner.hpp"
#include "window/direct.hpp"
#include "window/operation_checks.hpp"
#include "window/reduce.hpp"
#include "window/thread_level.hpp"
#include "window/window.hpp"

namespace rma::api {

using endpoint::Endpoint;
using endpoint::OnComplete;

Result<std::uint64_t> meta_atomic(rma_win_s* win, int target, std::uint64_t word, Opcode op,
                                  std::uint64_t compare_add, std::uint64_t swap) {
  const PeerWindow& p = win->peers[static_cast<std::size_t>(target)];
  if (p.direct_meta != nullptr) return direct::atomic(p.direct_meta + word, op, compare_add, swap);
  endpoint::EndpointManager& eps = win->ctx->eps();
  Endpoint& ep = win->endpoint(target);
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
    // The clock is read once the lock turns out to be held, not before the
    // first try (a clock read was a fifth of an uncontended accumulate).
    std::optional<std::chrono::steady_clock::time_point> start;
    WaitBackoff backoff;
    for (std::uint32_t spin = 0;; ++spin) {
      RMA_ASSIGN_OR_RETURN(std::uint64_t old,
                           meta_atomic(win_, target_, 1, Opcode::kAtomicCmpSwap, 0, me));
      if (old == 0) break;
      if (!start) start = std::chrono::steady_clock::now();
      if (win_->ctx->eps().expired(*start)) {
        return class_error(RMA_ERR_OTHER, std::string(call) + ": the accumulate lock of rank " +
                                              std::to_string(target_) + " stayed held by rank " +
                                              std::to_string(old - 1) + " past RMA_WAIT_TIMEOUT_MS");
      }
      if (spin > 4) yield_to_other_threads(backoff);
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
  const PeerWindow& p = win->peers[static_cast<std::size_t>(target)];
  if (p.direct) return direct::copy(p, dst, bytes, byte_layout(), t.base, tcount, tl, opcode == Opcode::kRdmaWrite);
  Endpoint& ep = win->endpoint(target);
  OneRegistration reg{s.begin, s.end, s.lkey[ep.rail()]};
  RMA_ASSIGN_OR_RETURN(
      TransferPlanner planner,
      TransferPlanner::create(Buffer{reinterpret_cast<std::uint64_t>(dst), bytes, &byte_layout()},
                              Buffer{t.base, tcount, &tl},
                              PlanLimits::from_caps(ep.caps()),
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
  const PeerWindow& p = win->peers[static_cast<std::size_t>(target)];
  if (p.direct) return direct::atomic(reinterpret_cast<std::uint64_t*>(p.local(addr)), op, compare_add, swap);
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
  const PeerWindow& p = win->peers[static_cast<std::size_t>(target)];
  if (p.direct) {
    // Under the accumulate lock: plain copies, as the NIC's READ and WRITE.
    if (op == Opcode::kRdmaWrite) {
      std::memcpy(p.local(addr), at, 8);
    } else {
      std::memcpy(at, p.local(addr), 8);
    }
    return {};
  }
  endpoint::EndpointManager& eps = win->ctx->eps();
  Endpoint& ep = win->endpoint(target);
  endpoint::Request r;
  Sge sge{reinterpret_cast<std::uint64_t>(at), 8, s.lkey[ep.rail()]};
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
  const PeerWindow& peer = win->peers[static_cast<std::size_t>(a.target)];
  // A mapped target's loops cost no round trips: nothing to gain by deferring.
  if (!fetch && req == nullptr && !posted_add && !some_misaligned && ordering_none(win) && !peer.direct) {
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
    if (posted_add && peer.direct) {
      const std::uint64_t old = direct::atomic(reinterpret_cast<std::uint64_t*>(peer.local(taddr)),
                                               Opcode::kAtomicFetchAdd, op == OpKind::kNoOp ? 0 : value, 0);
      if (result != nullptr) std::memcpy(result, &old, 8);
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
    WaitBackoff backoff;
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
      if (spin > 16) backoff.pause();
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
  const PeerWindow& p = win->peers[static_cast<std::size_t>(a.target)];
  if (p.direct && tl->is_dense() && (!fetch || rl->is_dense()) && (op == OpKind::kNoOp || ol->is_dense())) {
    // A mapped target, every side one run: the op runs on the target's
    // bytes in place (apply_op needs its operands aligned for the element).
    std::byte* there = p.local(t.base);
    const auto align = static_cast<std::uintptr_t>(std::max<std::int64_t>(elem->layout.alignment, 1)) - 1;
    if ((reinterpret_cast<std::uintptr_t>(there) & align) == 0 &&
        (op == OpKind::kNoOp || (reinterpret_cast<std::uintptr_t>(a.origin) & align) == 0)) {
      if (fetch) std::memcpy(a.result, there, static_cast<std::size_t>(bytes));
      apply_op(op, elem, there, a.origin, static_cast<std::size_t>(nelem));
      return lock.release();
    }
  }
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

bool accumulate_fast(rma_win_s* win, const FastArgs& a, rma_Op op) noexcept {
  // Recorded accumulates run first under any ordering but none (accumulate()).
  if (win->deferred && !win->deferred->empty() && !ordering_none(win)) return false;
  const auto opv = reinterpret_cast<std::intptr_t>(op);
  if (opv < 1 || opv > kOpCount || a.origin == nullptr || a.origin_count <= 0 ||
      a.origin_count != a.target_count || a.origin_type != a.target_type) {
    return false;
  }
  const rma_datatype_s* elem = a.target_type;
  const auto kind = static_cast<OpKind>(opv);
  // One predefined type; 8-byte elements go to accumulate_words, whatever
  // their alignment, as in accumulate().
  if (elem == nullptr || elem->magic != rma_datatype_s::kMagic || !elem->predefined || word_element(elem) ||
      kind == OpKind::kNoOp || !op_defined(kind, elem)) {
    return false;
  }
  std::uint64_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<std::uint64_t>(a.target_count), static_cast<std::uint64_t>(elem->layout.size),
                             &bytes)) {
    return false;
  }
  if (static_cast<unsigned>(a.target) >= static_cast<unsigned>(win->npeers)) return false;
  const PeerWindow& p = win->peers[static_cast<std::size_t>(a.target)];
  if (!p.direct || p.direct_meta == nullptr || !win->may_access(a.target) ||
      bytes > static_cast<std::uint64_t>(INT64_MAX)) {
    return false;
  }
  PlacedRange r;
  if (place(r, p.disp_unit, p.size, a.target_disp, 0, static_cast<std::int64_t>(bytes)) != Placement::kInside) {
    return false;
  }
  std::byte* there = p.mapped + r.off;
  const auto align = static_cast<std::uintptr_t>(std::max<std::int64_t>(elem->layout.alignment, 1)) - 1;
  if ((reinterpret_cast<std::uintptr_t>(there) & align) != 0 ||
      (reinterpret_cast<std::uintptr_t>(a.origin) & align) != 0) {
    return false;
  }
  // The target's accumulate lock, as AccLock takes it; a lock another rank
  // holds for longer than a few tries is the checked path's to wait for.
  std::uint64_t* lock = p.direct_meta + 1;
  const std::uint64_t me = static_cast<std::uint64_t>(win->rank()) + 1;
  for (int attempt = 0;; ++attempt) {
    if (direct::atomic(lock, Opcode::kAtomicCmpSwap, 0, me) == 0) break;
    if (attempt == 16) return false;
  }
  apply_op(kind, elem, there, a.origin, static_cast<std::size_t>(bytes / static_cast<std::uint64_t>(elem->layout.size)));
  (void)direct::atomic(lock, Opcode::kAtomicFetchAdd, ~me + 1, 0);
  return true;
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
    const PeerWindow& p = win->peers[static_cast<std::size_t>(a.target)];
    if (p.direct) {
      const std::uint64_t old = direct::atomic(reinterpret_cast<std::uint64_t*>(p.local(t.base)),
                                               Opcode::kAtomicCmpSwap, compare, swap);
      std::memcpy(a.result, &old, 8);
      return {};
    }
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

}  // namespace rma::api
