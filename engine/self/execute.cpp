// Executing one send work request: the requester's local checks, the
// responder's checks against its own PD and regions, the data movement and
// the receive-side completion. Everything here runs under the fabric lock,
// so it is atomic with respect to every other post, poll and deregistration.
//
// The checks follow the IB spec and rdma_rxe: nothing is written unless
// every check of the request has passed; a zero-length transfer checks no
// keys at all (IBA 9.4.4: a zero-length RDMA request carries no valid R_Key,
// and rxe's copy_data returns before looking at any SGE).
#include <algorithm>
#include <cstring>

#include "self/fabric.hpp"
#include "swkit/orphan_tracker.hpp"
#include "swkit/rnr_timer.hpp"
#include "swkit/sgl.hpp"
#include "self/queue_pair.hpp"

namespace rma::self {

using namespace swkit;  // the kit's vendor errors and copies

namespace {

void* to_ptr(std::uint64_t addr) noexcept { return reinterpret_cast<void*>(addr); }

bool is_atomic(Opcode op) noexcept {
  return op == Opcode::kAtomicFetchAdd || op == Opcode::kAtomicCmpSwap;
}

}  // namespace

// Local protection: the SGEs that carry the first `bytes` bytes must each
// lie inside a live region of this QP's PD with the `needed` rights.
std::uint32_t QpImpl::check_local(std::span<const Sge> sgl, std::uint64_t bytes,
                                  Access needed) const noexcept {
  return swkit::check_local_sgl(Fabric::instance().keys(), pd_.get(), sgl, bytes, needed);
}

// The head needs a receive at `responder` and none is posted: receiver not
// ready. rnr_retry 7 waits forever; otherwise the request fails once
// (rnr_retry + 1) RNR timer intervals of the responder have passed.
QpImpl::Step QpImpl::wait_for_receive(const QpImpl& responder) noexcept {
  if (rnr_retry_ == 7) return Step{Step::kBlocked};
  const Clock::time_point now = Clock::now();
  if (!rnr_armed_) {
    rnr_armed_ = true;
    rnr_deadline_ = now + (rnr_retry_ + 1) * rnr_timer_interval(responder.min_rnr_timer_);
    return Step{Step::kBlocked};
  }
  if (now < rnr_deadline_) return Step{Step::kBlocked};
  return Step{Step::kFailed, WcStatus::kRnrRetryExcErr, 0, kVeRnrExceeded};
}

QpImpl::Step QpImpl::execute(const SendWqe& w, std::uint64_t seq, QpImpl*& responder) noexcept {
  auto fail = [](WcStatus s, std::uint32_t ve) { return Step{Step::kFailed, s, 0, ve}; };
  auto done = [](std::uint64_t n) { return Step{Step::kDone, WcStatus::kSuccess, static_cast<std::uint32_t>(n), kVeNone}; };

  // See every unmap that finished before this transfer (swkit/orphan_tracker.hpp).
  swkit::OrphanTracker::instance().sync();

  // The local gather/scatter list: the posted SGEs, or the inline copy.
  Sge inline_sge{reinterpret_cast<std::uint64_t>(sq_.inline_data(seq)),
                 static_cast<std::uint32_t>(w.length), 0};
  const bool inl = (w.flags & kWrInline) != 0;
  const std::span<const Sge> local = inl ? std::span<const Sge>(&inline_sge, 1) : sq_.sgl(seq);

  // 1. Requester: local protection. READ and atomic results are written
  //    locally, so their buffers need LOCAL_WRITE.
  if (!inl) {
    const bool writes_local = w.opcode == Opcode::kRdmaRead || is_atomic(w.opcode);
    const std::uint32_t ve =
        check_local(local, w.length, writes_local ? Access::kLocalWrite : Access::kNone);
    if (ve != kVeNone) return fail(WcStatus::kLocProtErr, ve);
  }

  // 2. The responder must exist and accept requests (RTR or RTS); otherwise
  //    a real requester would retry until its retry counter ran out.
  QpImpl* peer = Fabric::instance().find_qp(peer_qpn_);
  if (peer == nullptr) return fail(WcStatus::kRetryExcErr, kVePeerGone);
  const QpState ps = peer->state();
  if (ps != QpState::kRtr && ps != QpState::kRts) return fail(WcStatus::kRetryExcErr, kVePeerNotReady);
  responder = peer;

  // A responder-side violation breaks the responder QP too (rxe moves it to
  // the error state); drive() acts on needs_error_ after our completion.
  auto remote_fail = [&](WcStatus s, std::uint32_t ve) {
    peer->needs_error_ = true;
    return fail(s, ve);
  };
  const Sge remote{w.remote_addr, static_cast<std::uint32_t>(w.length), 0};
  // Responder side: `rkey` must name a live region of the target QP's PD
  // that grants `right` over [addr, addr+len).
  auto check_remote = [&](std::uint64_t len, Access right) {
    return swkit::check_remote(Fabric::instance().keys(), peer->pd_.get(), w.rkey, w.remote_addr, len, right);
  };

  switch (w.opcode) {
    case Opcode::kRdmaWrite: {
      if (w.length > 0) {
        const std::uint32_t ve = check_remote(w.length, Access::kRemoteWrite);
        if (ve != kVeNone) return remote_fail(WcStatus::kRemAccessErr, ve);
        copy_sgl({&remote, 1}, local, w.length);
      }
      return done(w.length);
    }
    case Opcode::kRdmaWriteWithImm: {
      // Consumes a receive (for the immediate); its SGEs are not used.
      if (peer->rq_next_ == peer->rq_.tail()) return wait_for_receive(*peer);
      if (w.length > 0) {
        const std::uint32_t ve = check_remote(w.length, Access::kRemoteWrite);
        if (ve != kVeNone) return remote_fail(WcStatus::kRemAccessErr, ve);
        copy_sgl({&remote, 1}, local, w.length);
      }
      peer->complete_recv(WcStatus::kSuccess, Opcode::kRecvRdmaWithImm,
                          static_cast<std::uint32_t>(w.length), true, w.imm_data, kVeNone);
      return done(w.length);
    }
    case Opcode::kSend:
    case Opcode::kSendWithImm: {
      if (peer->rq_next_ == peer->rq_.tail()) return wait_for_receive(*peer);
      const std::span<const Sge> rsgl = peer->rq_.sgl(peer->rq_next_);
      if (w.length > sgl_bytes(rsgl)) {
        peer->complete_recv(WcStatus::kLocLenErr, Opcode::kRecv, 0, false, 0, kVeRecvTooSmall);
        return remote_fail(WcStatus::kRemInvReqErr, kVeRecvTooSmall);
      }
      if (peer->check_local(rsgl, w.length, Access::kLocalWrite) != kVeNone) {
        // The receiver's own buffer is bad: its completion says local
        // protection error; the requester learns only that the remote side
        // failed (REM_OP_ERR).
        peer->complete_recv(WcStatus::kLocProtErr, Opcode::kRecv, 0, false, 0, kVeRecvBufferInvalid);
        return remote_fail(WcStatus::kRemOpErr, kVeRecvBufferInvalid);
      }
      copy_sgl(rsgl, local, w.length);
      const bool imm = w.opcode == Opcode::kSendWithImm;
      peer->complete_recv(WcStatus::kSuccess, Opcode::kRecv, static_cast<std::uint32_t>(w.length),
                          imm, w.imm_data, kVeNone);
      return done(w.length);
    }
    case Opcode::kRdmaRead: {
      if (w.length > 0) {
        const std::uint32_t ve = check_remote(w.length, Access::kRemoteRead);
        if (ve != kVeNone) return remote_fail(WcStatus::kRemAccessErr, ve);
        copy_sgl(local, {&remote, 1}, w.length);
      }
      return done(w.length);
    }
    case Opcode::kAtomicFetchAdd:
    case Opcode::kAtomicCmpSwap: {
      const std::uint32_t ve = check_remote(8, Access::kRemoteAtomic);
      if (ve != kVeNone) return remote_fail(WcStatus::kRemAccessErr, ve);
      // post() rejects this already; the responder checks anyway, as a
      // responder cannot trust its requester.
      if ((w.remote_addr & 7u) != 0) return remote_fail(WcStatus::kRemInvReqErr, kVeAtomicUnaligned);
      // Real CPU atomics: atomic against each other and against any thread
      // touching the word directly, not only against this provider's lock.
      auto* target = static_cast<std::uint64_t*>(to_ptr(w.remote_addr));
      std::uint64_t original;
      if (w.opcode == Opcode::kAtomicFetchAdd) {
        original = __atomic_fetch_add(target, w.compare_add, __ATOMIC_SEQ_CST);
      } else {
        original = w.compare_add;
        __atomic_compare_exchange_n(target, &original, w.swap, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
      }
      std::memcpy(to_ptr(local[0].addr), &original, 8);  // the local SGE need not be aligned
      return done(8);
    }
    default:
      return fail(WcStatus::kLocQpOpErr, kVeNone);  // unreachable: post() validated the opcode
  }
}

}  // namespace rma::self
