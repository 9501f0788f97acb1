// RcQp responder: PSN checking (one sequence NAK, then silent drops),
// duplicate handling (re-ACK, READ replay from responder resources, saved
// atomic results), execution of WRITE / SEND / READ / atomics with every
// remote access checked against the rkey, its rights and bounds, RNR NAKs,
// and the coalesced ACK / NAK / response transmission.
#include <algorithm>
#include <cstring>
#include <utility>

#include "rc/qp.hpp"
#include "rc/verb_ops.hpp"

namespace rma::roce::rc {

namespace {
using RoceOp = ::rma::roce::Opcode;
bool psn_in(std::uint32_t psn, std::uint32_t first, std::uint32_t last) noexcept {
  return psn_compare(psn, first) >= 0 && psn_compare(psn, last) <= 0;
}
}  // namespace

void RcQp::on_request(const Packet& pkt) noexcept {
  const QpState s = state();
  if (s != QpState::kRts && s != QpState::kRtr) {
    ++ctr_.dropped_state;
    return;
  }
  const std::uint32_t psn = pkt.h.psn;
  const std::int32_t d = psn_compare(psn, epsn_);
  if (d > 0) {
    // Out of order: one NAK, then silence until ePSN arrives.
    ++ctr_.out_of_sequence;
    if (!nak_sent_) {
      nak_sent_ = true;
      nak_pending_ = true;
      nak_syndrome_ = make_syndrome(AckType::kNak, kNakPsnSequenceError);
      nak_psn_ = epsn_;
    }
    return;
  }
  if (d < 0) {
    on_duplicate(pkt);
    return;
  }
  bool ok = true;
  switch (static_cast<RoceOp>(pkt.h.opcode)) {
    case RoceOp::kWriteFirst: ok = execute_write(pkt, true, false, false); break;
    case RoceOp::kWriteMiddle: ok = execute_write(pkt, false, false, false); break;
    case RoceOp::kWriteLast: ok = execute_write(pkt, false, true, false); break;
    case RoceOp::kWriteLastImm: ok = execute_write(pkt, false, true, true); break;
    case RoceOp::kWriteOnly: ok = execute_write(pkt, true, true, false); break;
    case RoceOp::kWriteOnlyImm: ok = execute_write(pkt, true, true, true); break;
    case RoceOp::kSendFirst: ok = execute_send(pkt, true, false, false); break;
    case RoceOp::kSendMiddle: ok = execute_send(pkt, false, false, false); break;
    case RoceOp::kSendLast: ok = execute_send(pkt, false, true, false); break;
    case RoceOp::kSendLastImm: ok = execute_send(pkt, false, true, true); break;
    case RoceOp::kSendOnly: ok = execute_send(pkt, true, true, false); break;
    case RoceOp::kSendOnlyImm: ok = execute_send(pkt, true, true, true); break;
    case RoceOp::kReadRequest: execute_read(pkt); return;
    case RoceOp::kCompareSwap:
    case RoceOp::kFetchAdd: execute_atomic(pkt); return;
    default:
      responder_error(kNakInvalidRequest, kVeBadOpcodeSequence);
      return;
  }
  if (!ok) return;
  epsn_ = psn_add(psn, 1);
  nak_sent_ = false;
  if (pkt.h.ack_req) {
    ack_pending_ = true;
    ack_asked_epoch_ = engine_.check_epoch();
  }
}

void RcQp::on_duplicate(const Packet& pkt) noexcept {
  ++ctr_.duplicate_requests;
  const std::uint32_t psn = pkt.h.psn;
  const auto op = static_cast<RoceOp>(pkt.h.opcode);
  if (op == RoceOp::kReadRequest) {
    for (std::uint32_t i = 0; i < kResources; ++i) {
      Resource& r = res_[i];
      if (r.kind != Resource::kRead || !psn_in(psn, r.first_psn, r.last_psn)) continue;
      const std::uint64_t off = std::uint64_t{psn_diff(psn, r.first_psn)} * mtu_;
      const std::uint64_t rest = r.len - std::min<std::uint64_t>(off, r.len);
      if (pkt.h.reth_rkey != r.rkey || pkt.h.reth_va != r.va + off || pkt.h.reth_length != rest) {
        continue;  // not a subset of what was executed: ignore
      }
      // Already sending and not yet past the requested PSN: it gets there.
      if (res_pending_.contains(i) && psn_compare(psn, r.cur_psn) >= 0) return;
      r.cur_psn = psn;
      res_pending_.insert(i);
      ++ctr_.read_replays;
      return;
    }
    ++ctr_.stale_duplicates;
    return;  // resource gone: drop, the requester will retry
  }
  if (op == RoceOp::kCompareSwap || op == RoceOp::kFetchAdd) {
    for (std::uint32_t i = 0; i < kResources; ++i) {
      if (res_[i].kind == Resource::kAtomic && res_[i].first_psn == psn) {
        res_pending_.insert(i);  // answer again with the saved value; never re-execute
        ++ctr_.atomic_replays;
        return;
      }
    }
    ++ctr_.stale_duplicates;
    return;
  }
  ack_pending_ = true;  // SEND/WRITE: acknowledge again (ePSN - 1)
  ack_asked_epoch_ = 0;  // now: the requester is retrying
}

void RcQp::responder_error(std::uint8_t nak_code, std::uint32_t vendor_err) noexcept {
  (void)vendor_err;
  nak_pending_ = true;
  nak_syndrome_ = make_syndrome(AckType::kNak, nak_code);
  nak_psn_ = epsn_;
  enter_error();  // class C/D errors break the responder QP (as rdma_rxe)
}

void RcQp::rnr_nak() noexcept {
  nak_pending_ = true;
  nak_syndrome_ = make_syndrome(AckType::kRnrNak, min_rnr_timer_);
  nak_psn_ = epsn_;
  nak_sent_ = true;  // later packets of the burst are dropped silently
}

bool RcQp::execute_write(const Packet& pkt, bool first, bool last, bool imm) noexcept {
  if (first ? in_msg_ != InMsg::kNone : in_msg_ != InMsg::kWrite) {
    ++ctr_.bad_opcode_sequence;
    responder_error(kNakInvalidRequest, kVeBadOpcodeSequence);
    return false;
  }
  if (imm && last && rq_next_ == rq_.tail()) {
    rnr_nak();
    return false;
  }
  const auto p = static_cast<std::uint32_t>(pkt.payload.size());
  if (first) {
    const std::uint32_t len = pkt.h.reth_length;
    if (len > max_msg_size_) {  // the DMA length of one message is at most 2^31
      responder_error(kNakInvalidRequest, kVeBadLength);
      return false;
    }
    if (len > 0) {
      const std::uint32_t ve =
          check_remote(engine_.keys(), pd_, pkt.h.reth_rkey, pkt.h.reth_va, len, Access::kRemoteWrite);
      if (ve != kVeNone) {
        responder_error(kNakRemoteAccessError, ve);
        return false;
      }
    }
    write_va_ = pkt.h.reth_va;
    write_rkey_ = pkt.h.reth_rkey;
    write_resid_ = len;
    write_total_ = len;
  }
  const bool length_ok = last ? (p == write_resid_ && p <= mtu_) : (p == mtu_ && write_resid_ > mtu_);
  if (!length_ok) {
    responder_error(kNakInvalidRequest, kVeBadLength);
    return false;
  }
  if (p > 0) {
    // Every packet, not only FIRST: the requester may pause mid-message
    // while the region is deregistered (and its memory freed or unmapped);
    // the rkey of FIRST must still name a live region covering this part.
    // FIRST's own part was checked above with the whole message.
    if (!first) {
      const std::uint32_t ve = check_remote(engine_.keys(), pd_, write_rkey_, write_va_, p, Access::kRemoteWrite);
      if (ve != kVeNone) {
        responder_error(kNakRemoteAccessError, ve);
        return false;
      }
    }
    std::memcpy(reinterpret_cast<void*>(write_va_), pkt.payload.data(), p);
  }
  write_va_ += p;
  write_resid_ -= p;
  in_msg_ = last ? InMsg::kNone : InMsg::kWrite;
  if (last) {
    msn_ = psn_add(msn_, 1);
    if (imm) complete_recv(WcStatus::kSuccess, VerbOp::kRecvRdmaWithImm, write_total_, true, pkt.h.imm, kVeNone);
  }
  return true;
}

bool RcQp::execute_send(const Packet& pkt, bool first, bool last, bool imm) noexcept {
  if (first ? in_msg_ != InMsg::kNone : in_msg_ != InMsg::kSend) {
    ++ctr_.bad_opcode_sequence;
    responder_error(kNakInvalidRequest, kVeBadOpcodeSequence);
    return false;
  }
  if (first) {
    if (rq_next_ == rq_.tail()) {
      rnr_nak();
      return false;
    }
    const std::span<const Sge> rsgl = rq_.sgl(rq_next_);
    if (check_local_sgl(engine_.keys(), pd_, rsgl, sgl_bytes(rsgl), Access::kLocalWrite) != kVeNone) {
      // The receiver's own buffer is bad: it sees a local protection error,
      // the requester a remote operational error.
      complete_recv(WcStatus::kLocProtErr, VerbOp::kRecv, 0, false, 0, kVeRecvBufferInvalid);
      responder_error(kNakRemoteOperationalError, kVeRecvBufferInvalid);
      return false;
    }
    recv_offset_ = 0;
  }
  const auto p = static_cast<std::uint32_t>(pkt.payload.size());
  if (last ? p > mtu_ : p != mtu_) {
    responder_error(kNakInvalidRequest, kVeBadLength);
    return false;
  }
  const std::span<const Sge> rsgl = rq_.sgl(rq_next_);
  if (std::uint64_t{recv_offset_} + p > sgl_bytes(rsgl)) {
    complete_recv(WcStatus::kLocLenErr, VerbOp::kRecv, 0, false, 0, kVeRecvTooSmall);
    responder_error(kNakInvalidRequest, kVeRecvTooSmall);
    return false;
  }
  // Every packet: the receive buffer's region may have been deregistered
  // (or its memory unmapped) since FIRST.
  if (!first && p > 0 &&
      check_local_sgl(engine_.keys(), pd_, rsgl, recv_offset_ + std::uint64_t{p}, Access::kLocalWrite) != kVeNone) {
    complete_recv(WcStatus::kLocProtErr, VerbOp::kRecv, 0, false, 0, kVeRecvBufferInvalid);
    responder_error(kNakRemoteOperationalError, kVeRecvBufferInvalid);
    return false;
  }
  if (p > 0) copy_to_sgl(rsgl, recv_offset_, pkt.payload.data(), p);
  recv_offset_ += p;
  in_msg_ = last ? InMsg::kNone : InMsg::kSend;
  if (last) {
    msn_ = psn_add(msn_, 1);
    complete_recv(WcStatus::kSuccess, VerbOp::kRecv, recv_offset_, imm, pkt.h.imm, kVeNone);
  }
  return true;
}

void RcQp::execute_read(const Packet& pkt) noexcept {
  if (in_msg_ != InMsg::kNone) {
    ++ctr_.bad_opcode_sequence;
    responder_error(kNakInvalidRequest, kVeBadOpcodeSequence);
    return;
  }
  const std::uint32_t len = pkt.h.reth_length;
  if (len > max_msg_size_) {
    responder_error(kNakInvalidRequest, kVeBadLength);
    return;
  }
  if (len > 0) {
    const std::uint32_t ve =
        check_remote(engine_.keys(), pd_, pkt.h.reth_rkey, pkt.h.reth_va, len, Access::kRemoteRead);
    if (ve != kVeNone) {
      responder_error(kNakRemoteAccessError, ve);
      return;
    }
  }
  const std::uint32_t n = packets_for(len, mtu_);
  // A requester that keeps more than kResources outstanding (against what
  // the connection set) takes the oldest slot's place: its responses stop,
  // and its retry finds no resource (as rdma_rxe's responder does).
  const std::uint32_t slot = res_next_;
  Resource& r = res_[slot];
  res_next_ = (res_next_ + 1) % kResources;
  msn_ = psn_add(msn_, 1);
  r.kind = Resource::kRead;
  r.first_psn = pkt.h.psn;
  r.last_psn = psn_add(pkt.h.psn, n - 1);
  r.cur_psn = pkt.h.psn;
  res_pending_.insert(slot);
  r.va = pkt.h.reth_va;
  r.len = len;
  r.rkey = pkt.h.reth_rkey;
  r.msn = msn_;
  epsn_ = psn_add(pkt.h.psn, n);
  nak_sent_ = false;
}

void RcQp::execute_atomic(const Packet& pkt) noexcept {
  if (in_msg_ != InMsg::kNone) {
    ++ctr_.bad_opcode_sequence;
    responder_error(kNakInvalidRequest, kVeBadOpcodeSequence);
    return;
  }
  const std::uint64_t va = pkt.h.atomic_va;
  const std::uint32_t ve = check_remote(engine_.keys(), pd_, pkt.h.atomic_rkey, va, 8, Access::kRemoteAtomic);
  if (ve != kVeNone) {
    responder_error(kNakRemoteAccessError, ve);
    return;
  }
  if ((va & 7u) != 0) {
    responder_error(kNakInvalidRequest, kVeAtomicUnaligned);
    return;
  }
  // Real CPU atomics: atomic against each other and against threads that
  // touch the word directly.
  auto* target = reinterpret_cast<std::uint64_t*>(va);
  std::uint64_t orig;
  if (static_cast<RoceOp>(pkt.h.opcode) == RoceOp::kFetchAdd) {
    orig = __atomic_fetch_add(target, pkt.h.atomic_swap_add, __ATOMIC_SEQ_CST);
  } else {
    orig = pkt.h.atomic_compare;
    __atomic_compare_exchange_n(target, &orig, pkt.h.atomic_swap_add, false, __ATOMIC_SEQ_CST,
                                __ATOMIC_SEQ_CST);
  }
  const std::uint32_t slot = res_next_;
  Resource& r = res_[slot];
  res_next_ = (res_next_ + 1) % kResources;
  msn_ = psn_add(msn_, 1);
  r.kind = Resource::kAtomic;
  r.first_psn = r.last_psn = r.cur_psn = pkt.h.psn;
  res_pending_.insert(slot);
  r.va = va;
  r.len = 8;
  r.rkey = pkt.h.atomic_rkey;
  r.orig = orig;
  r.msn = msn_;
  epsn_ = psn_add(pkt.h.psn, 1);
  nak_sent_ = false;
}

// ------------------------------------------------------------------ responder transmit

bool RcQp::send_ack(std::uint8_t syndrome, std::uint32_t psn, bool atomic, std::uint64_t orig) noexcept {
  std::uint8_t* buf = tx_buffer();
  if (buf == nullptr) return false;
  PacketFields f = fields(static_cast<std::uint8_t>(atomic ? RoceOp::kAtomicAcknowledge : RoceOp::kAcknowledge), psn);
  f.syndrome = syndrome;
  f.msn = msn_;
  f.orig = orig;
  emit(f, 0);
  return true;
}

bool RcQp::send_read_response(std::uint32_t slot) noexcept {
  Resource& r = res_[slot];
  const std::uint32_t n = psn_diff(r.last_psn, r.first_psn) + 1;
  while (res_pending_.contains(slot)) {
    std::uint8_t* buf = tx_buffer();
    if (buf == nullptr) return false;
    const std::uint32_t idx = psn_diff(r.cur_psn, r.first_psn);
    const std::uint64_t off = std::uint64_t{idx} * mtu_;
    const auto len = static_cast<std::size_t>(std::min<std::uint64_t>(mtu_, r.len - std::min<std::uint64_t>(off, r.len)));
    if (len > 0 &&
        check_remote(engine_.keys(), pd_, r.rkey, r.va + off, len, Access::kRemoteRead) != kVeNone) {
      res_pending_.erase(slot);  // deregistered since: stop; the requester times out
      r.kind = Resource::kFree;
      return true;
    }
    RoceOp op;
    if (n == 1) {
      op = RoceOp::kReadResponseOnly;
    } else if (idx == 0) {
      op = RoceOp::kReadResponseFirst;
    } else if (r.cur_psn == r.last_psn) {
      op = RoceOp::kReadResponseLast;
    } else {
      op = RoceOp::kReadResponseMiddle;
    }
    PacketFields f = fields(static_cast<std::uint8_t>(op), r.cur_psn);
    f.syndrome = make_syndrome(AckType::kAck, kAckUnlimitedCredits);
    f.msn = r.msn;
    // The region was checked just above, under the device lock: the frame
    // references it until progress() ends (Engine::tx_commit).
    emit(f, len, len > 0 ? reinterpret_cast<const std::uint8_t*>(r.va + off) : nullptr);
    if (r.cur_psn == r.last_psn) {
      res_pending_.erase(slot);
    } else {
      r.cur_psn = psn_add(r.cur_psn, 1);
    }
  }
  return true;
}

bool RcQp::transmit_responses() noexcept {
  if (!res_pending_.empty() && (state() == QpState::kRts || state() == QpState::kRtr)) {
    // READ responses and atomic acknowledgements, oldest resource first
    // (the ring from res_next_ to its end, then from its start); ACKs
    // follow them so they never overtake a response on the wire.
    for (const auto& [from, end] : {std::pair{res_next_, kResources}, std::pair{0u, res_next_}}) {
      for (std::uint32_t i = res_pending_.first_from(from); i < end; i = res_pending_.first_from(i + 1)) {
        const Resource& r = res_[i];
        if (r.kind == Resource::kRead) {
          if (!send_read_response(i)) return true;
        } else {
          if (!send_ack(make_syndrome(AckType::kAck, kAckUnlimitedCredits), r.first_psn, true, r.orig)) return true;
          res_pending_.erase(i);
        }
      }
    }
  }
  if (nak_pending_) {
    if (!send_ack(nak_syndrome_, nak_psn_, false, 0)) return true;
    nak_pending_ = false;
    ack_pending_ = false;
    if (syndrome_type(nak_syndrome_) == AckType::kRnrNak) {
      ++ctr_.rnr_naks_sent;
    } else if (syndrome_value(nak_syndrome_) < 5) {
      ++ctr_.naks_sent[syndrome_value(nak_syndrome_)];
    }
  }
  // The coalesced ACK (ePSN - 1) leaves in the call that received what it
  // acknowledges: it covers everything received in that call, and the ACK
  // is on the link before the call returns. Once the call returns, the
  // program may see the data (a WRITE lands in its memory) and exit, and a
  // software NIC dies with its process: an ACK held for a later call would
  // never leave, and the requester would exhaust its retries on a write
  // that landed (RETRY_EXC_ERR for a peer that simply finished).
  //
  // Except in a ping-pong: when the program answered each of the last
  // kAnswersBeforeHold such calls with a post on this QP as the device's
  // very next call, the ACK waits for that call, whatever it is, and leaves
  // in the answer's burst (on a kernel interface: in one system call
  // instead of two, which is most of a hop there). A program that stops
  // answering sends it with its next call (a poll, the progress thread) and
  // ends the hold; one that exits without another call after seeing the
  // data (_Exit, a crash; closing the QP sends it) leaves its peer to
  // retry and fail.
  if (ack_pending_) {
    const std::uint64_t epoch = engine_.check_epoch();
    if (ack_asked_epoch_ == epoch && answers_ >= kAnswersBeforeHold) return false;
    if (!send_ack(make_syndrome(AckType::kAck, kAckUnlimitedCredits), psn_add(epsn_, kPsnMask), false, 0)) return true;
    ack_pending_ = false;
    ++ctr_.acks_sent;
    // Held, and no post came since the call that asked: no longer a ping-pong.
    if (ack_asked_epoch_ != 0 && ack_asked_epoch_ != epoch && post_epoch_ < ack_asked_epoch_) answers_ = 0;
  }
  return false;
}

bool RcQp::release_held_ack() noexcept {
  if (!ack_pending_) return false;
  ack_asked_epoch_ = 0;
  return true;
}

}  // namespace rma::roce::rc
