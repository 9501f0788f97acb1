// The requester side: posting, and executing the head send work request.
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
#include <mutex>

#include "rma/sdk/copy_bytes.hpp"
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

// How often a requester asks whether the target's process still exists (a
// system call): while waiting for an answer, and at most this often while
// requests run.
constexpr std::chrono::milliseconds kLivenessInterval{1};
// How many WRITEs/READs/mapped atomics run between two looks at the clock
// for that question.
constexpr std::uint32_t kLivenessOps = 1024;

// What send_completion reads of a request that ran at post().
swkit::SendWqe fill_completion_wqe(const WorkRequest& wr, std::uint32_t len) noexcept {
  swkit::SendWqe w{};
  swkit::fill_send_wqe(w, wr, len);
  return w;
}

}  // namespace

// ------------------------------------------------------------------ posting

PostResult QpImpl::post(std::span<const WorkRequest> wrs) noexcept {
  // A serialized QP's single request, when it runs at once, runs here with
  // no call but its copy's (none up to kInlineCopyMax bytes), and without
  // the lock, the general path's checks a second time or its frame. Each
  // instruction and store counts here: ten more stores per 8 B mapped READ
  // (about 18 ns, a clock read included) made it 4 ns slower; this path
  // made it 1 ns faster, a 512 B READ 1 ns and a 4 KiB READ 2 ns faster
  // than post_general.
  if (wrs.size() == 1 && serialized_ && !waiting_.load(std::memory_order_acquire) && wrs[0].sgl.size() == 1) {
    const std::uint32_t len = wrs[0].sgl[0].length;
    if (len <= kInlineCopyMax                                  ? post_now<PostPath::kSmall>(wrs[0])
        : len <= kMidCopyMax && copy_bytes_mid_inline() ? post_now<PostPath::kMid>(wrs[0])
                                                               : post_now<PostPath::kCopyCall>(wrs[0])) [[likely]] {
      return {};
    }
  }
  return post_general(wrs);
}

PostResult QpImpl::post_general(std::span<const WorkRequest> wrs) noexcept {
  if (wrs.size() == 1) {
    // A serialized QP with nothing waiting is its caller's alone: no lock
    // (queue_pair.hpp).
    if (serialized_) {
      if (!waiting_.load(std::memory_order_acquire) && post_now<PostPath::kGeneral>(wrs[0])) {
        if (!error_pending_) [[likely]] return {};
        std::lock_guard lock(send_lock_);
        enter_error(true);
        return {};
      }
    } else {
      std::lock_guard lock(send_lock_);
      if (!waiting_.load(std::memory_order_relaxed) && post_now<PostPath::kGeneral>(wrs[0])) {
        if (error_pending_) enter_error(true);
        return {};
      }
    }
  }
  return post_list(wrs);
}

template <QpImpl::PostPath kPath>
inline bool QpImpl::post_now(const WorkRequest& wr) noexcept {
  constexpr bool kFast = kPath != PostPath::kGeneral;
  // Every "no" below is a request the general path (post_list) answers,
  // after the same checks in full, with the same outcome.
  if (state() != QpState::kRts || wr.sgl.size() != 1 || sq_.full()) return false;
  const Sge& sge = wr.sgl[0];
  const std::uint32_t len = sge.length;
  if (len == 0 || len > max_msg_size_) return false;
  // The fast paths take only what calls nothing out of line (but the copy)
  // and cannot fail once begun: a completion that the CQ could not take,
  // an unmap being applied (sync() would wait) are the general path's.
  if constexpr (kFast) {
    if ((kPath == PostPath::kSmall && len > kInlineCopyMax) ||
        (kPath == PostPath::kMid && (len <= kInlineCopyMax || len > kMidCopyMax)) ||
        !owns_cq_ring_ || orphans_.applying() ||
        !send_cq_->owner_can_stage()) {
      return false;
    }
  }
  // check_post_send_fast's acceptance; fence and solicited change nothing
  // here (nothing is outstanding).
  const std::uint32_t flags = wr.flags & ~static_cast<std::uint32_t>(kWrSignaled | kWrFence | kWrSolicited);
  Access local_right, remote_right;
  switch (wr.opcode) {
    case Opcode::kRdmaWrite:
      if (flags != 0 && (flags != kWrInline || len > max_inline_)) return false;
      local_right = Access::kNone;
      remote_right = Access::kRemoteWrite;
      break;
    case Opcode::kRdmaRead:
      if (flags != 0) return false;
      local_right = Access::kLocalWrite;
      remote_right = Access::kRemoteRead;
      break;
    case Opcode::kAtomicFetchAdd:
    case Opcode::kAtomicCmpSwap:
      if (flags != 0 || len != 8 || (wr.remote_addr & 7u) != 0) return false;
      local_right = Access::kLocalWrite;
      remote_right = Access::kRemoteAtomic;
      break;
    default:
      return false;
  }
  // run_now's checks, in its order, answered from the caches.
  if constexpr (!kFast) orphans_.sync();
  if (flags != kWrInline && lkeys_.probe(device_.keys(), pd_.get(), sge, local_right) != kVeNone) return false;
  // One load of the slot's address (the acquire loads below would make the
  // compiler load the member again before each).
  const QpSlot* const peer = peer_slot_;
  if (peer->qpn.load(std::memory_order_acquire) != peer_qpn_) return false;
  const auto ps = static_cast<QpState>(peer->state.load(std::memory_order_acquire));
  if (ps != QpState::kRtr && ps != QpState::kRts) return false;
  if (ops_since_liveness_ + 1 >= kLivenessOps) return false;  // the general path asks
  std::byte* const at = mapped_.probe(*peer_layout_, peer->pd.load(std::memory_order_acquire), wr.rkey,
                                      wr.remote_addr, len, remote_right);
  if (at == nullptr) return false;
  ++ops_since_liveness_;

  const std::uint64_t seq = sq_.push();
  ++sq_exec_;
  // The completion is written before the data moves and published after
  // (stage_owner_success says why).
  const bool signaled = (wr.flags & kWrSignaled) != 0;
  bool staged = false;
  if constexpr (kFast) {
    if (signaled) {
      send_cq_->stage_owner(wr.wr_id, wr.opcode, len, qpn_, seq, &sq_);
      staged = true;
    }
  } else if (signaled && owns_cq_ring_) {
    staged = send_cq_->stage_owner_success(wr.wr_id, wr.opcode, len, qpn_, seq, &sq_);
    if (!staged) [[unlikely]] error_pending_ = true;  // a lost completion breaks the QP
  }
  void* const mine = reinterpret_cast<void*>(sge.addr);
  switch (wr.opcode) {
    case Opcode::kRdmaWrite:
      if constexpr (kPath == PostPath::kSmall) {
        copy_small_bytes(at, mine, len);
      } else if constexpr (kPath == PostPath::kMid) {
        copy_mid_bytes(at, mine, len);
      } else {
        copy_bytes(at, mine, len);
      }
      break;
    case Opcode::kRdmaRead:
      if constexpr (kPath == PostPath::kSmall) {
        copy_small_bytes(mine, at, len);
      } else if constexpr (kPath == PostPath::kMid) {
        copy_mid_bytes(mine, at, len);
      } else {
        copy_bytes(mine, at, len);
      }
      break;
    default: {
      // As execute_mapped_atomic.
      auto* word = reinterpret_cast<std::uint64_t*>(at);
      std::uint64_t original;
      if (wr.opcode == Opcode::kAtomicFetchAdd) {
        original = __atomic_fetch_add(word, wr.compare_add, __ATOMIC_SEQ_CST);
      } else {
        original = wr.compare_add;
        __atomic_compare_exchange_n(word, &original, wr.swap, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
      }
      std::memcpy(mine, &original, 8);
      break;
    }
  }
  if (staged) {
    send_cq_->publish_owner();
  } else if (kFast) {
    // Unsignaled: nothing to complete (owns_cq_ring_ was checked).
  } else if (signaled && !owns_cq_ring_) {
    // Its own completion opcode: no _WITH_IMM here.
    const bool pushed = send_cq_->push_shared(
        swkit::send_completion(fill_completion_wqe(wr, len), seq, qpn_, WcStatus::kSuccess, len, kVeNone), &sq_);
    if (!pushed) [[unlikely]] error_pending_ = true;  // a lost completion breaks the QP
  }
  return true;
}

PostResult QpImpl::post_list(std::span<const WorkRequest> wrs) noexcept {
  // A serialized QP with nothing waiting is its caller's alone: no lock
  // (queue_pair.hpp). Taken, it stays taken to the end of the call.
  std::unique_lock lock(send_lock_, std::defer_lock);
  if (!serialized_ || waiting_.load(std::memory_order_acquire)) lock.lock();
  const SendLimits limits{max_send_sge_, max_inline_, max_msg_size_};
  // Requests are checked against the state the QP had when post() was
  // called, so one that fails as it runs does not make later ones of the
  // same list look unpostable: they are accepted and then flushed, as on a
  // NIC.
  const QpState posted_in = state();
  PostResult result;
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    const WorkRequest& wr = wrs[i];
    StatusCode code;
    std::uint64_t length = 0;
    if (const char* why = swkit::check_post_send_fast(posted_in, wr, limits, sq_.full(), &length, code)) {
      result = PostResult{code, static_cast<std::uint32_t>(i), why};
      break;
    }
    SendWqe w;
    swkit::fill_send_wqe(w, wr, length);
    // Nothing waits ahead of it (RC order): run it now, straight from the
    // caller's list, when it completes without waiting. Its queue slot is
    // taken all the same: it is busy until a completion covering it is
    // polled.
    if (!waiting_.load(std::memory_order_relaxed) && state() == QpState::kRts) {
      const Step step = run_now(w, wr.sgl);
      if (step.kind != Step::kWaiting) {
        const std::uint64_t seq = sq_.push();
        ++sq_exec_;
        finish(seq, w, step);
        if (error_pending_) {
          // The rest of the list is accepted and flushed, under the lock.
          if (!lock.owns_lock()) lock.lock();
          enter_error(true);
        }
        continue;
      }
    }
    if (!lock.owns_lock()) lock.lock();
    if (!waiting_.load(std::memory_order_relaxed)) begin_waiting();
    SendWqe& queued = sq_.prepare(wr.sgl, (wr.flags & kWrInline) != 0);
    const std::uint32_t num_sge = queued.num_sge;
    queued = w;
    queued.num_sge = num_sge;
    sq_.push();
  }
  bool serve_here = false;
  if (waiting_.load(std::memory_order_relaxed)) {  // the lock is held
    drive();
    // Accepted behind a request that broke the QP: flushed now.
    if (state() == QpState::kError && sq_exec_ != sq_.tail()) enter_error(true);
    // A request now waits in a ring: when the target is a QP of this
    // device, serving it here saves the caller a poll.
    serve_here = inflight_ && peer_->own();
  }
  if (lock.owns_lock()) lock.unlock();
  if (serve_here) device_.progress();
  return result;
}

// ------------------------------------------------------------------ execution

void QpImpl::drive_if_waiting() noexcept {
  if (!waiting_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(send_lock_);
  if (waiting_.load(std::memory_order_relaxed)) drive();
}

void QpImpl::drive() noexcept {
  while (state() == QpState::kRts) {
    Step step;
    const std::uint64_t seq = sq_exec_;
    if (inflight_) {
      step = check_answer();
    } else {
      if (sq_exec_ == sq_.tail()) {
        end_waiting();
        return;
      }
      step = execute(sq_[seq], seq);
    }
    if (step.kind == Step::kWaiting) return;
    inflight_ = false;
    rnr_armed_ = false;
    not_ready_armed_ = false;
    ++sq_exec_;
    finish(seq, sq_[seq], step);
    if (error_pending_) enter_error(false);
  }
}

void QpImpl::finish(std::uint64_t seq, const SendWqe& w, const Step& step) noexcept {
  if (step.kind == Step::kDone) {
    if ((w.flags & kWrSignaled) != 0) {
      push_send(swkit::send_completion(w, seq, qpn_, WcStatus::kSuccess, step.byte_len, kVeNone));
    }
  } else {
    push_send(swkit::send_completion(w, seq, qpn_, step.status, 0, step.vendor_err));
    error_pending_ = true;  // errors are fatal to the QP
  }
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
  orphans_.sync();

  // 1. Local protection. READ and atomic results are written locally, so
  //    their buffers need LOCAL_WRITE.
  if ((w.flags & kWrInline) == 0) {
    const bool writes_local = w.opcode == Opcode::kRdmaRead || is_atomic(w.opcode);
    const std::uint32_t ve = lkeys_.check(device_.keys(), device_.keys_mutex(), pd_.get(), local, w.length,
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
  // Whether the peer's process still exists is a system call: asked here
  // after every kLivenessOps requests, if kLivenessInterval has passed since
  // it was last asked (a dead peer's mapped memory takes writes harmlessly,
  // its pid refuses copies with ESRCH), and before every ring request
  // (wait_or_issue). Asked at every kLivenessOps alone, the system call
  // (about 1 us in a guest) was the slowest of 1024 READs: an 8 B READ
  // loop's 99.9th percentile fell from 0.7 to 0.35 us and its average by
  // 0.6 ns, an 8 B READ stream ran 3-9 % faster (bench/README.md); the
  // clock read is 25 ns per 1024.
  if (++ops_since_liveness_ >= kLivenessOps) {
    ops_since_liveness_ = 0;
    const Clock::time_point now = Clock::now();
    if (now >= next_liveness_check_) {
      next_liveness_check_ = now + kLivenessInterval;
      if (!peer_->owner_alive()) return Step{Step::kFailed, WcStatus::kRetryExcErr, 0, kVePeerProcessGone};
    }
  }
  if (is_atomic(w.opcode)) {
    // In a segment we map: the CPU's atomic instruction on the mapped word,
    // here and now. Anything else (memory outside a segment, and every
    // error, which the target reports as it always does) goes to the ring.
    const MappedRegions::Target t = mapped_.resolve(*peer_layout_, static_cast<std::uint32_t>(peer_pid_),
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
      mapped_.resolve(*peer_layout_, static_cast<std::uint32_t>(peer_pid_),
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
        copy_bytes(t.at, mine, w.length);
      } else {
        copy_bytes(mine, t.at, w.length);
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
  // Free unless the target has not yet cleared an entry we cancelled: wait,
  // and wake its progress to clear it (rounds run only when rung).
  if (e.state.load(std::memory_order_acquire) != RingEntry::kEmpty) {
    peer_->ring_doorbell();
    return Step{Step::kWaiting};
  }
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
