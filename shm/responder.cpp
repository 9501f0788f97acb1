// The target side: serving the requests a peer left in this QP's ring.
//
// A request is taken (kPosted -> kTaken) only when it can run now: a SEND
// or WRITE_WITH_IMM with no receive posted is left in place with its rnr
// flag set, so the requester can keep waiting or give up (cancel) by its
// own RNR budget. Everything is checked against this process's own key
// table and receive queue; the payload of a SEND or WRITE_WITH_IMM is
// pulled from the requester with process_vm_readv, and atomics run as CPU
// atomic instructions on our memory, coherent with any other atomic on the
// word. Ring contents come from another process: they are copied once and
// validated before use.
#include <cerrno>
#include <mutex>

#include "shm/cma.hpp"
#include "shm/queue_pair.hpp"
#include "swkit/orphan_tracker.hpp"
#include "swkit/sgl.hpp"

namespace rma::shm {

using namespace swkit;

namespace {

bool needs_receive(Opcode op) noexcept {
  return op == Opcode::kSend || op == Opcode::kSendWithImm || op == Opcode::kRdmaWriteWithImm;
}

}  // namespace

void QpImpl::serve() noexcept {
  QpSlot& s = slot();
  // A requester found a remote access error on us: ERROR, as after a NAK.
  if (s.break_request.load(std::memory_order_acquire) != 0) {
    s.break_request.store(0, std::memory_order_relaxed);
    std::lock_guard lock(send_lock_);
    if (state() != QpState::kError) enter_error(false);
  }
  if (state() == QpState::kReset) return;  // not connected: nobody may post yet
  for (;;) {
    bool breaks;
    {
      std::lock_guard lock(recv_lock_);
      breaks = serve_ring();
    }
    if (!breaks) return;
    {
      std::lock_guard lock(send_lock_);
      if (state() != QpState::kError) enter_error(false);
    }
    // What is left in the ring is answered as a QP in ERROR answers.
  }
}

bool QpImpl::serve_ring() noexcept {
  QpSlot& s = slot();
  for (;;) {
    RingEntry& e = s.ring[served_seq_ % kRingDepth];
    std::uint32_t st = e.state.load(std::memory_order_acquire);
    if (st == RingEntry::kCancelled) {
      e.state.store(RingEntry::kEmpty, std::memory_order_release);
      ++served_seq_;
      continue;
    }
    if (st != RingEntry::kPosted) return false;
    const auto op = static_cast<Opcode>(e.opcode);
    // RNR: leave it; a receive posted later (post_recv serves) lets it run.
    if (state() == QpState::kRts && needs_receive(op) && rq_next_ == rq_.tail()) {
      e.rnr.store(1, std::memory_order_release);
      return false;
    }
    if (!e.state.compare_exchange_strong(st, RingEntry::kTaken, std::memory_order_acq_rel)) continue;  // cancelled
    const Answer a = answer(e);
    e.result = a.result;
    e.status = static_cast<std::uint32_t>(a.status);
    e.vendor_err = a.vendor_err;
    e.state.store(RingEntry::kDone, std::memory_order_release);
    ++served_seq_;
    if ((a.breaks_target || recv_lost_) && state() != QpState::kError) {
      recv_lost_ = false;
      return true;
    }
  }
}

QpImpl::Answer QpImpl::answer(const RingEntry& e) noexcept {
  // Only the connected requester, only in order, only in RTS/RTR: anything
  // else is what a NIC would drop, and the requester's retries would run out.
  if (state() != QpState::kRts && state() != QpState::kRtr) {
    return Answer{WcStatus::kRetryExcErr, kVePeerNotReady, 0, false};
  }
  if (e.src_pid != slot().peer_pid.load(std::memory_order_relaxed) ||
      e.src_qpn != slot().peer_qpn.load(std::memory_order_relaxed) || e.seq != served_seq_) {
    return Answer{WcStatus::kRemInvReqErr, kVeBadOpcodeSequence, 0, false};
  }
  // See every unmap that finished before this request (swkit/orphan_tracker.hpp).
  OrphanTracker::instance().sync();
  // The payload's place in the requester, copied out of shared memory once.
  Sge remote[kMaxRingSge];
  const std::uint32_t n = e.num_sge;
  if (n > kMaxRingSge) return Answer{WcStatus::kRemInvReqErr, kVeBadLength, 0, true};
  std::uint64_t total = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    remote[i] = Sge{e.sge_addr[i], e.sge_len[i], 0};
    total += e.sge_len[i];
  }
  const auto op = static_cast<Opcode>(e.opcode);
  switch (op) {
    case Opcode::kSend:
    case Opcode::kSendWithImm:
    case Opcode::kRdmaWriteWithImm:
      if (total < e.length) return Answer{WcStatus::kRemInvReqErr, kVeBadLength, 0, true};
      return op == Opcode::kRdmaWriteWithImm ? answer_write_imm(e, {remote, n}) : answer_send(e, {remote, n});
    case Opcode::kAtomicFetchAdd:
    case Opcode::kAtomicCmpSwap:
      return answer_atomic(e);
    default:
      return Answer{WcStatus::kRemInvReqErr, kVeBadOpcodeSequence, 0, true};
  }
}

QpImpl::Answer QpImpl::answer_send(const RingEntry& e, std::span<const Sge> remote) noexcept {
  const std::uint32_t len = e.length;
  const std::span<const Sge> rsgl = rq_.sgl(rq_next_);
  if (len > sgl_bytes(rsgl)) {
    complete_recv(WcStatus::kLocLenErr, Opcode::kRecv, 0, false, 0, kVeRecvTooSmall);
    return Answer{WcStatus::kRemInvReqErr, kVeRecvTooSmall, 0, true};
  }
  std::uint32_t local_ve;
  {
    std::lock_guard lock(device_.keys_mutex());
    local_ve = check_local_sgl(device_.keys(), pd_.get(), rsgl, len, Access::kLocalWrite);
  }
  if (local_ve != kVeNone) {
    // The receiver's own buffer is bad: its completion says local
    // protection error; the requester learns only that the remote side
    // failed (REM_OP_ERR).
    complete_recv(WcStatus::kLocProtErr, Opcode::kRecv, 0, false, 0, kVeRecvBufferInvalid);
    return Answer{WcStatus::kRemOpErr, kVeRecvBufferInvalid, 0, true};
  }
  const int err = cma_copy(static_cast<pid_t>(e.src_pid), false, rsgl, remote, len);
  if (err == ESRCH) return Answer{WcStatus::kRetryExcErr, kVePeerProcessGone, 0, false};  // nobody to answer
  if (err == EPERM) {
    log_cma_denied(static_cast<pid_t>(e.src_pid), false);
    complete_recv(WcStatus::kLocAccessErr, Opcode::kRecv, 0, false, 0, kVeCmaDenied);
    return Answer{WcStatus::kRemOpErr, kVeCmaDenied, 0, true};
  }
  if (err != 0) {
    // The requester's payload is not readable (unmapped after its check).
    complete_recv(WcStatus::kLocProtErr, Opcode::kRecv, 0, false, 0, kVeRemoteUnmapped);
    return Answer{WcStatus::kRemOpErr, kVeLocalUnmapped, 0, true};
  }
  const bool imm = static_cast<Opcode>(e.opcode) == Opcode::kSendWithImm;
  complete_recv(WcStatus::kSuccess, Opcode::kRecv, len, imm, e.imm_data, kVeNone);
  return Answer{};
}

QpImpl::Answer QpImpl::answer_write_imm(const RingEntry& e, std::span<const Sge> remote) noexcept {
  // Consumes a receive (for the immediate); its SGEs are not used.
  const std::uint32_t len = e.length;
  const std::uint64_t addr = e.remote_addr;
  if (len > 0) {
    std::uint32_t ve;
    {
      std::lock_guard lock(device_.keys_mutex());
      ve = check_remote(device_.keys(), pd_.get(), e.rkey, addr, len, Access::kRemoteWrite);
    }
    if (ve != kVeNone) return Answer{WcStatus::kRemAccessErr, ve, 0, true};
    const Sge target{addr, len, 0};
    const int err = cma_copy(static_cast<pid_t>(e.src_pid), false, {&target, 1}, remote, len);
    if (err == ESRCH) return Answer{WcStatus::kRetryExcErr, kVePeerProcessGone, 0, false};
    if (err == EPERM) {
      log_cma_denied(static_cast<pid_t>(e.src_pid), false);
      return Answer{WcStatus::kRemOpErr, kVeCmaDenied, 0, true};
    }
    if (err != 0) return Answer{WcStatus::kRemOpErr, kVeLocalUnmapped, 0, true};
  }
  complete_recv(WcStatus::kSuccess, Opcode::kRecvRdmaWithImm, len, true, e.imm_data, kVeNone);
  return Answer{};
}

QpImpl::Answer QpImpl::answer_atomic(const RingEntry& e) noexcept {
  const std::uint64_t addr = e.remote_addr;
  // The key lock from the check to the atomic: a deregistration (and the
  // unmap that may follow it) waits, so the word is never touched after.
  std::lock_guard lock(device_.keys_mutex());
  const std::uint32_t ve = check_remote(device_.keys(), pd_.get(), e.rkey, addr, 8, Access::kRemoteAtomic);
  if (ve != kVeNone) return Answer{WcStatus::kRemAccessErr, ve, 0, true};
  // The requester's post() rejects this already; a responder cannot trust
  // its requester.
  if ((addr & 7u) != 0) return Answer{WcStatus::kRemInvReqErr, kVeAtomicUnaligned, 0, true};
  // The CPU's atomic instruction on our own memory: atomic against every
  // other atomic on the word, from this process or any other mapping it.
  auto* target = reinterpret_cast<std::uint64_t*>(addr);
  std::uint64_t original;
  if (static_cast<Opcode>(e.opcode) == Opcode::kAtomicFetchAdd) {
    original = __atomic_fetch_add(target, e.compare_add, __ATOMIC_SEQ_CST);
  } else {
    original = e.compare_add;
    __atomic_compare_exchange_n(target, &original, e.swap, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  }
  return Answer{WcStatus::kSuccess, kVeNone, original, false};
}

}  // namespace rma::shm
