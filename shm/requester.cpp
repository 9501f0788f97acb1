// The requester side: executing the head send work request.
//
// The checks follow the IB spec and rdma_rxe, in swkit's order: local
// protection first (our own key table), then the target QP (exists, accepts
// requests), then the target's region (its shared region table). Nothing is
// written at the target unless every check passed; a zero-length transfer
// checks no remote key (IBA 9.4.4). A remote access error breaks both QPs:
// ours here, the target's through its slot's break request.
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "shm/cma.hpp"
#include "shm/mapped_regions.hpp"
#include "shm/queue_pair.hpp"
#include "shm/region_table.hpp"
#include "swkit/orphan_tracker.hpp"
#include "swkit/rnr_timer.hpp"
#include "swkit/sgl.hpp"

namespace rma::shm {

using namespace swkit;  // the kit's vendor errors and checks

namespace {

bool is_atomic(Opcode op) noexcept { return op == Opcode::kAtomicFetchAdd || op == Opcode::kAtomicCmpSwap; }
bool goes_to_ring(Opcode op) noexcept { return op != Opcode::kRdmaWrite && op != Opcode::kRdmaRead; }

// How often a requester waiting for an answer asks whether the target's
// process still exists (a system call).
constexpr std::chrono::milliseconds kLivenessInterval{1};
// How many WRITEs/READs/mapped atomics run between two such questions.
constexpr std::uint32_t kLivenessOps = 1024;

}  // namespace

void QpImpl::drive() noexcept {
  while (state() == QpState::kRts) {
    Step step;
    const std::uint64_t seq = sq_exec_;
    if (inflight_) {
      step = check_answer();
    } else {
      if (sq_exec_ == sq_.tail()) return;
      step = execute(sq_[seq], seq);
    }
    if (step.kind == Step::kWaiting) return;
    inflight_ = false;
    rnr_armed_ = false;
    not_ready_armed_ = false;
    ++sq_exec_;
    finish(seq, sq_[seq], step);
  }
}

void QpImpl::finish(std::uint64_t seq, const SendWqe& w, const Step& step) noexcept {
  if (step.kind == Step::kDone) {
    if ((w.flags & kWrSignaled) != 0) complete_send(seq, w, WcStatus::kSuccess, step.byte_len, kVeNone);
  } else {
    complete_send(seq, w, step.status, 0, step.vendor_err);
    needs_error_ = true;  // errors are fatal to the QP
  }
  if (needs_error_) enter_error();
}

std::span<const Sge> QpImpl::local_sgl(const SendWqe& w, std::uint64_t seq, Sge& inline_sge) const noexcept {
  if ((w.flags & kWrInline) == 0) return sq_.sgl(seq);
  inline_sge = Sge{reinterpret_cast<std::uint64_t>(sq_.inline_data(seq)), w.length, 0};
  return {&inline_sge, 1};
}

QpImpl::Step QpImpl::execute(const SendWqe& w, std::uint64_t seq) noexcept {
  // Stays valid while the request is in flight: its address is what the
  // ring carries for an inline SEND, and the row is ours until retired.
  Sge inline_sge;
  const std::span<const Sge> local = local_sgl(w, seq, inline_sge);
  const Step now = run_now(w, local);
  if (now.kind != Step::kWaiting) return now;
  return wait_or_issue(w, local);
}

QpImpl::Step QpImpl::run_now(const SendWqe& w, std::span<const Sge> local) noexcept {
  // See every unmap that finished before this transfer (swkit/orphan_tracker.hpp).
  OrphanTracker::instance().sync();

  // 1. Local protection. READ and atomic results are written locally, so
  //    their buffers need LOCAL_WRITE.
  if ((w.flags & kWrInline) == 0) {
    const bool writes_local = w.opcode == Opcode::kRdmaRead || is_atomic(w.opcode);
    const std::uint32_t ve = check_local_sgl(device_.keys(), pd_.get(), local, w.length,
                                             writes_local ? Access::kLocalWrite : Access::kNone);
    if (ve != kVeNone) return Step{Step::kFailed, WcStatus::kLocProtErr, 0, ve};
  }

  // 2. The target QP must exist and accept requests; otherwise a NIC would
  //    retry until its retry counter ran out. Not connected yet: wait
  //    (wait_or_issue).
  if (peer_slot_->qpn.load(std::memory_order_acquire) != peer_qpn_) {
    return Step{Step::kFailed, WcStatus::kRetryExcErr, 0, kVePeerGone};
  }
  const auto ps = static_cast<QpState>(peer_slot_->state.load(std::memory_order_acquire));
  if (ps == QpState::kReset || ps == QpState::kInit) return Step{Step::kWaiting};
  if (ps != QpState::kRtr && ps != QpState::kRts) {
    return Step{Step::kFailed, WcStatus::kRetryExcErr, 0, kVePeerNotReady};
  }
  if (goes_to_ring(w.opcode) && !is_atomic(w.opcode)) return Step{Step::kWaiting};
  // Whether the peer's process still exists is a system call: asked every
  // kLivenessOps requests here (a dead peer's mapped memory takes writes
  // harmlessly, its pid refuses copies with ESRCH) and before every ring
  // request (wait_or_issue).
  if (++ops_since_liveness_ >= kLivenessOps) {
    ops_since_liveness_ = 0;
    if (!peer_->owner_alive()) return Step{Step::kFailed, WcStatus::kRetryExcErr, 0, kVePeerProcessGone};
  }
  if (is_atomic(w.opcode)) {
    // In a segment we map: the CPU's atomic instruction on the mapped word,
    // here and now. Anything else (memory outside a segment, and every
    // error, which the target reports as it always does) goes to the ring.
    const MappedRegions::Target t = mapped_.resolve(peer_->layout(), static_cast<std::uint32_t>(peer_pid_),
                                                    peer_slot_->pd.load(std::memory_order_acquire), w.rkey,
                                                    w.remote_addr, 8, Access::kRemoteAtomic);
    if (t.at == nullptr) return Step{Step::kWaiting};
    return execute_mapped_atomic(w, local, t.at);
  }
  return execute_direct(w, local);
}

QpImpl::Step QpImpl::wait_or_issue(const SendWqe& w, std::span<const Sge> local) noexcept {
  const auto ps = static_cast<QpState>(peer_slot_->state.load(std::memory_order_acquire));
  if (ps == QpState::kReset || ps == QpState::kInit) {
    // The peer has not connected yet (connect is one call per side, in any
    // order): wait as a NIC's retransmissions would, then give up.
    const Clock::time_point now = Clock::now();
    if (!not_ready_armed_) {
      not_ready_armed_ = true;
      not_ready_deadline_ = now + not_ready_budget_;
    }
    if (not_ready_budget_.count() == 0 || now < not_ready_deadline_) {
      if (now >= next_liveness_check_) {
        next_liveness_check_ = now + kLivenessInterval;
        if (!peer_->owner_alive()) return Step{Step::kFailed, WcStatus::kRetryExcErr, 0, kVePeerProcessGone};
      }
      return Step{Step::kWaiting};
    }
    return Step{Step::kFailed, WcStatus::kRetryExcErr, 0, kVePeerNotReady};
  }
  if (ps != QpState::kRtr && ps != QpState::kRts) {
    return Step{Step::kFailed, WcStatus::kRetryExcErr, 0, kVePeerNotReady};
  }
  // A ring request waits for the target's process: it must be there.
  if (!peer_->owner_alive()) return Step{Step::kFailed, WcStatus::kRetryExcErr, 0, kVePeerProcessGone};
  // An inline payload is read by the target from our inline row.
  return issue(w, local);
}

QpImpl::Step QpImpl::execute_mapped_atomic(const SendWqe& w, std::span<const Sge> local, std::byte* at) noexcept {
  // Coherent with every other atomic on the word: the target's own, the
  // ring-served ones, the software NIC's, other mappings': all are CPU
  // atomics on the same physical memory. post() checked the alignment.
  auto* word = reinterpret_cast<std::uint64_t*>(at);
  std::uint64_t original;
  if (w.opcode == Opcode::kAtomicFetchAdd) {
    original = __atomic_fetch_add(word, w.compare_add, __ATOMIC_SEQ_CST);
  } else {
    original = w.compare_add;
    __atomic_compare_exchange_n(word, &original, w.swap, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  }
  // The local SGE need not be 8-byte aligned; it was checked above.
  std::memcpy(reinterpret_cast<void*>(local[0].addr), &original, 8);
  return Step{Step::kDone, WcStatus::kSuccess, 8, kVeNone};
}

void QpImpl::break_peer() noexcept {
  peer_slot_->break_request.store(1, std::memory_order_release);
  peer_->ring_doorbell();
}

QpImpl::Step QpImpl::execute_direct(const SendWqe& w, std::span<const Sge> local) noexcept {
  const bool write = w.opcode == Opcode::kRdmaWrite;
  if (w.length == 0) return Step{Step::kDone, WcStatus::kSuccess, 0, kVeNone};
  // 3. The target's region, from its shared table (through our cache of it).
  const MappedRegions::Target t =
      mapped_.resolve(peer_->layout(), static_cast<std::uint32_t>(peer_pid_),
                      peer_slot_->pd.load(std::memory_order_acquire), w.rkey, w.remote_addr, w.length,
                      write ? Access::kRemoteWrite : Access::kRemoteRead);
  if (t.vendor_err != kVeNone) {
    break_peer();
    return Step{Step::kFailed, WcStatus::kRemAccessErr, 0, t.vendor_err};
  }
  if (t.at != nullptr) {
    // In a segment we map: a copy into or out of the mapping. When it
    // returns, the bytes are in the target's memory (the same pages).
    if (local.size() == 1) {  // the common case: one copy, no list walk
      void* const mine = reinterpret_cast<void*>(local[0].addr);
      if (write) {
        std::memcpy(t.at, mine, w.length);
      } else {
        std::memcpy(mine, t.at, w.length);
      }
    } else if (write) {
      copy_from_sgl(local, 0, reinterpret_cast<std::uint8_t*>(t.at), w.length);
    } else {
      copy_to_sgl(local, 0, reinterpret_cast<const std::uint8_t*>(t.at), w.length);
    }
    return Step{Step::kDone, WcStatus::kSuccess, w.length, kVeNone};
  }
  const Sge remote{w.remote_addr, w.length, 0};
  const int err = cma_copy(peer_pid_, write, local, {&remote, 1}, w.length);
  switch (err) {
    case 0:
      return Step{Step::kDone, WcStatus::kSuccess, w.length, kVeNone};
    case ESRCH:
      return Step{Step::kFailed, WcStatus::kRetryExcErr, 0, kVePeerProcessGone};
    case EPERM:
      log_cma_denied(peer_pid_, write);
      return Step{Step::kFailed, WcStatus::kRemAccessErr, 0, kVeCmaDenied};
    case EFAULT:
      // Our SGEs were checked (and are not orphaned): the target's memory
      // under a live key was unmapped.
      break_peer();
      return Step{Step::kFailed, WcStatus::kRemAccessErr, 0, kVeRemoteUnmapped};
    default:
      return Step{Step::kFailed, WcStatus::kGeneralErr, 0, kVeNone};
  }
}

QpImpl::Step QpImpl::issue(const SendWqe& w, std::span<const Sge> local) noexcept {
  RingEntry& e = peer_slot_->ring[ring_seq_ % kRingDepth];
  // Free unless the target has not yet cleared an entry we cancelled: wait.
  if (e.state.load(std::memory_order_acquire) != RingEntry::kEmpty) return Step{Step::kWaiting};
  e.seq = ring_seq_;
  e.src_pid = static_cast<std::uint32_t>(device_.segment()->pid());
  e.src_qpn = qpn_;
  e.opcode = static_cast<std::uint32_t>(w.opcode);
  e.length = w.length;
  e.rkey = w.rkey;
  e.imm_data = w.imm_data;
  e.remote_addr = w.remote_addr;
  e.compare_add = w.compare_add;
  e.swap = w.swap;
  e.num_sge = 0;
  if (!is_atomic(w.opcode)) {
    for (const Sge& s : local) {
      e.sge_addr[e.num_sge] = s.addr;
      e.sge_len[e.num_sge] = s.length;
      ++e.num_sge;
    }
  }
  e.rnr.store(0, std::memory_order_relaxed);
  e.state.store(RingEntry::kPosted, std::memory_order_release);
  ++ring_seq_;
  inflight_ = true;
  inflight_entry_ = &e;
  next_liveness_check_ = Clock::now() + kLivenessInterval;
  peer_->ring_doorbell();
  return Step{Step::kWaiting};
}

QpImpl::Step QpImpl::check_answer() noexcept {
  RingEntry& e = *inflight_entry_;
  const std::uint32_t st = e.state.load(std::memory_order_acquire);
  const std::uint64_t seq = sq_exec_;
  const SendWqe& w = sq_[seq];
  if (st == RingEntry::kDone) {
    const auto status = static_cast<WcStatus>(e.status);
    const std::uint32_t ve = e.vendor_err;
    const std::uint64_t result = e.result;
    e.state.store(RingEntry::kEmpty, std::memory_order_release);
    if (status != WcStatus::kSuccess) return Step{Step::kFailed, status, 0, ve};
    if (is_atomic(w.opcode)) {
      // The local SGE need not be 8-byte aligned; it was checked at issue.
      std::memcpy(reinterpret_cast<void*>(sq_.sgl(seq)[0].addr), &result, 8);
      return Step{Step::kDone, WcStatus::kSuccess, 8, kVeNone};
    }
    return Step{Step::kDone, WcStatus::kSuccess, w.length, kVeNone};
  }
  // Still waiting. The target QP may have gone, or its process.
  if (peer_slot_->qpn.load(std::memory_order_acquire) != peer_qpn_) {
    cancel_inflight();
    return Step{Step::kFailed, WcStatus::kRetryExcErr, 0, kVePeerGone};
  }
  const Clock::time_point now = Clock::now();
  if (now >= next_liveness_check_) {
    next_liveness_check_ = now + kLivenessInterval;
    if (!peer_->owner_alive()) {
      cancel_inflight();
      return Step{Step::kFailed, WcStatus::kRetryExcErr, 0, kVePeerProcessGone};
    }
  }
  // Receiver not ready: rnr_retry 7 waits forever; otherwise the request
  // fails once (rnr_retry + 1) RNR timer intervals of the target have
  // passed since the target first found no receive.
  if (st == RingEntry::kPosted && rnr_retry_ != 7 && e.rnr.load(std::memory_order_acquire) != 0) {
    if (!rnr_armed_) {
      rnr_armed_ = true;
      rnr_deadline_ = now + (rnr_retry_ + 1) * rnr_timer_interval(static_cast<std::uint8_t>(
                                                   peer_slot_->min_rnr_timer.load(std::memory_order_relaxed)));
    } else if (now >= rnr_deadline_) {
      std::uint32_t expected = RingEntry::kPosted;
      if (e.state.compare_exchange_strong(expected, RingEntry::kCancelled, std::memory_order_acq_rel)) {
        inflight_entry_ = nullptr;
        return Step{Step::kFailed, WcStatus::kRnrRetryExcErr, 0, kVeRnrExceeded};
      }
      // The target took it meanwhile: its answer decides.
    }
  }
  return Step{Step::kWaiting};
}

void QpImpl::cancel_inflight() noexcept {
  if (!inflight_ || inflight_entry_ == nullptr) {
    inflight_ = false;
    return;
  }
  // If the target has taken it, it answers into an entry nobody reads; it
  // stays kDone, and this QP (in ERROR or gone) never issues again.
  std::uint32_t expected = RingEntry::kPosted;
  inflight_entry_->state.compare_exchange_strong(expected, RingEntry::kCancelled, std::memory_order_acq_rel);
  inflight_ = false;
  inflight_entry_ = nullptr;
}

}  // namespace rma::shm
