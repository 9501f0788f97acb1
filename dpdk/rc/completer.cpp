// RcQp completer: ACKs, NAKs and RNR NAKs, READ responses and atomic
// acknowledgements; completions of the send and receive queues; the
// retransmission and RNR timers; the error state.
#include <algorithm>
#include <cstring>

#include "rc/qp.hpp"
#include "rc/verb_ops.hpp"

namespace rma::roce::rc {

namespace {
using RoceOp = ::rma::roce::Opcode;
}  // namespace

bool RcQp::outstanding() const noexcept { return sq_comp_ < sq_assigned_; }

void RcQp::complete_send(std::uint64_t seq, WcStatus status, std::uint32_t byte_len,
                         std::uint32_t vendor_err) noexcept {
  const SendWqe& w = sq(seq);
  if (status == WcStatus::kSuccess && (w.flags & kWrSignaled) == 0) return;
  if (!send_cq_->push(swkit::send_completion(w, seq, qpn_, status, byte_len, vendor_err))) cq_lost_ = true;
}

void RcQp::complete_recv(WcStatus status, VerbOp opcode, std::uint32_t byte_len, bool has_imm,
                         std::uint32_t imm, std::uint32_t vendor_err) noexcept {
  const std::uint64_t seq = rq_next_++;
  const CqEntry e = swkit::recv_completion(rq_[seq], seq, qpn_, status, opcode, byte_len, has_imm, imm, vendor_err);
  if (!recv_cq_->push(e)) cq_lost_ = true;
}

void RcQp::fail_head(WcStatus status, std::uint32_t vendor_err) noexcept {
  if (sq_comp_ < sq_.tail()) {
    complete_send(sq_comp_, status, 0, vendor_err);
    ++sq_comp_;
  }
  enter_error();
}

void RcQp::check_head_local_error() noexcept {
  if (state() != QpState::kRts) return;
  // A request that failed its local check, once it is the oldest and
  // nothing sent before it (or of it) is still unacknowledged.
  if (sq_comp_ < sq_.tail() && sq(sq_comp_).vendor_err != kVeNone &&
      (sq_comp_ == sq_assigned_ || (sq_comp_ == sq_send_ && comp_psn_ == req_psn_))) {
    fail_head(WcStatus::kLocProtErr, sq(sq_comp_).vendor_err);
  }
}

void RcQp::enter_error() noexcept {
  state_.store(QpState::kError, std::memory_order_relaxed);
  timer_armed_ = false;
  rnr_waiting_ = false;
  // Every request not completed and every receive not consumed completes
  // with WR_FLUSH_ERR, signaled or not.
  while (sq_comp_ < sq_.tail()) {
    complete_send(sq_comp_, WcStatus::kWrFlushErr, 0, kVeFlushed);
    ++sq_comp_;
  }
  sq_send_ = sq_assigned_ = sq_.tail();
  rd_atomic_outstanding_ = 0;
  while (rq_next_ < rq_.tail()) complete_recv(WcStatus::kWrFlushErr, VerbOp::kRecv, 0, false, 0, kVeFlushed);
  res_pending_.clear();
  ack_pending_ = false;
  in_msg_ = InMsg::kNone;
}

void RcQp::progress_made() noexcept {
  retries_left_ = retry_cnt_;
  rnr_left_ = rnr_retry_;
  fast_retried_ = false;
  timer_armed_ = false;
  if (outstanding()) arm_timer();
  catch_up();
  check_head_local_error();
}

bool RcQp::ack_through(std::uint32_t psn) noexcept {
  bool ok = true;
  bool progressed = false;
  while (sq_comp_ < sq_assigned_) {
    SendWqe& w = sq(sq_comp_);
    if (psn_compare(w.last_psn, psn) <= 0) {
      if (is_rd_atomic(w.opcode)) {  // acknowledged past, but its answer is missing
        ok = false;
        break;
      }
      comp_psn_ = psn_add(w.last_psn, 1);
      complete_send(sq_comp_, WcStatus::kSuccess, w.length, kVeNone);
      ++sq_comp_;
      progressed = true;
    } else {
      if (!is_rd_atomic(w.opcode) && psn_compare(psn, comp_psn_) >= 0) {
        comp_psn_ = psn_add(psn, 1);
        progressed = true;
      }
      break;
    }
  }
  if (progressed) progress_made();
  return ok;
}

void RcQp::fast_retry() noexcept {
  // Once per position (and once more after each timeout): the local ACK
  // timer covers the rest. Only timeouts spend retry_cnt, so a peer that
  // answers, however lossily, is never given up on, one that is silent is
  // after retry_cnt timeouts, and fast retries stay bounded by timeouts.
  if (fast_retried_ || !outstanding()) return;
  fast_retried_ = true;
  ++ctr_.fast_retries;
  rewind_to_comp();
  timer_armed_ = false;
  arm_timer();
}

void RcQp::retry_after_timeout() noexcept {
  ++ctr_.retry_timeouts;
  if (retries_left_ == 0) {
    fail_head(WcStatus::kRetryExcErr, kVeRetryExceeded);
    return;
  }
  --retries_left_;
  fast_retried_ = false;
  rewind_to_comp();
}

void RcQp::run_timers() noexcept {
  if (state() != QpState::kRts) return;
  // The clock is read only here, when a timer runs (Engine::passed()).
  if (rnr_waiting_) {
    if (!engine_.passed(rnr_deadline_)) return;
    rnr_waiting_ = false;
    rewind_to_comp();
    timer_armed_ = false;
    return;
  }
  if (timer_armed_ && engine_.passed(timer_deadline_)) {
    timer_armed_ = false;
    if (outstanding()) retry_after_timeout();
  }
}

void RcQp::receive(const Packet& pkt, std::size_t frame_len) noexcept {
  if (pkt.icrc.pending && !on_unverified_read_response(pkt)) return;
  ++ctr_.rx_frames;
  ctr_.rx_bytes += frame_len;
  if (pkt.icrc.pending) return;  // handled, with its payload placed
  if (opcode_traits(pkt.h.opcode).is_request) {
    on_request(pkt);
  } else {
    on_response(pkt);
  }
}

void RcQp::on_response(const Packet& pkt) noexcept {
  if (state() != QpState::kRts) {
    ++ctr_.dropped_state;
    return;
  }
  const std::uint32_t psn = pkt.h.psn;
  const auto op = static_cast<RoceOp>(pkt.h.opcode);
  // Responses only ever name PSNs we sent: [comp_psn_ - 1, sent_psn_).
  if (psn_compare(psn, sent_psn_) >= 0) {
    ++ctr_.bad_responses;
    return;
  }
  const std::uint32_t before = psn_add(psn, kPsnMask);  // psn - 1

  if (op == RoceOp::kAcknowledge) {
    ++ctr_.acks_received;
    const std::uint8_t syn = pkt.h.aeth_syndrome;
    switch (syndrome_type(syn)) {
      case AckType::kAck:
        if (psn_compare(psn, comp_psn_) < 0) {
          ++ctr_.duplicate_responses;
          return;
        }
        if (!ack_through(psn)) fast_retry();
        return;
      case AckType::kRnrNak: {
        ++ctr_.rnr_naks_received;
        if (psn_compare(psn, comp_psn_) < 0 || rnr_waiting_) {
          ++ctr_.duplicate_responses;
          return;
        }
        if (psn != comp_psn_ && !ack_through(before)) {
          fast_retry();
          return;
        }
        if (psn != comp_psn_ || !outstanding()) return;
        if (rnr_retry_ != 7) {
          if (rnr_left_ == 0) {
            fail_head(WcStatus::kRnrRetryExcErr, kVeRnrExceeded);
            return;
          }
          --rnr_left_;
        }
        rnr_waiting_ = true;
        rnr_deadline_ = engine_.deadline_after(rnr_interval(syndrome_value(syn)));
        timer_armed_ = false;
        return;
      }
      case AckType::kNak: {
        const std::uint8_t code = syndrome_value(syn);
        if (code < 5) ++ctr_.naks_received[code];
        if (psn_compare(psn, comp_psn_) < 0) {
          ++ctr_.duplicate_responses;
          return;
        }
        if (psn != comp_psn_ && !ack_through(before)) {
          fast_retry();
          return;
        }
        if (code == kNakPsnSequenceError) {
          if (!rnr_waiting_) fast_retry();
          return;
        }
        if (psn != comp_psn_ || !outstanding()) return;
        switch (code) {
          case kNakInvalidRequest: fail_head(WcStatus::kRemInvReqErr, kVeNakInvalidRequest); break;
          case kNakRemoteAccessError: fail_head(WcStatus::kRemAccessErr, kVeNakRemoteAccess); break;
          default: fail_head(WcStatus::kRemOpErr, kVeNakRemoteOp); break;
        }
        return;
      }
      default:
        ++ctr_.bad_responses;
        return;
    }
  }

  if (psn_compare(psn, comp_psn_) < 0) {
    ++ctr_.duplicate_responses;
    return;
  }
  if (psn != comp_psn_) {
    ack_through(before);  // a response implicitly acknowledges earlier requests
    if (psn != comp_psn_) {
      fast_retry();  // responses were lost: ask again from comp_psn_
      return;
    }
  }
  if (!outstanding()) {
    ++ctr_.bad_responses;
    return;
  }
  SendWqe& w = sq(sq_comp_);

  if (op == RoceOp::kAtomicAcknowledge) {
    if (!is_atomic(w.opcode) || w.first_psn != psn || syndrome_type(pkt.h.aeth_syndrome) != AckType::kAck) {
      ++ctr_.bad_responses;
      return;
    }
    ++ctr_.acks_received;
    const std::uint32_t ve = check_local_sgl(engine_.keys(), pd_, sq_.sgl(sq_comp_), 8, Access::kLocalWrite);
    if (ve != kVeNone) {  // deregistered or unmapped since the post
      fail_head(WcStatus::kLocProtErr, ve);
      return;
    }
    const std::uint64_t orig = pkt.h.atomic_ack_orig;
    std::uint8_t bytes[8];
    std::memcpy(bytes, &orig, 8);
    copy_to_sgl(sq_.sgl(sq_comp_), 0, bytes, 8);
    w.done = true;
    --rd_atomic_outstanding_;
    comp_psn_ = psn_add(psn, 1);
    complete_send(sq_comp_, WcStatus::kSuccess, 8, kVeNone);
    ++sq_comp_;
    progress_made();
    return;
  }

  // READ response.
  std::uint64_t off = 0, want = 0;
  if (w.opcode != VerbOp::kRdmaRead || !read_response_fits(pkt, w, psn_diff(psn, w.first_psn), off, want)) {
    ++ctr_.bad_responses;
    return;
  }
  if (want > 0) {
    // The local buffer was checked at post; since then its region may have
    // been deregistered or its memory unmapped: check again before writing.
    const std::uint32_t ve = check_local_sgl(engine_.keys(), pd_, sq_.sgl(sq_comp_), off + want, Access::kLocalWrite);
    if (ve != kVeNone) {
      fail_head(WcStatus::kLocProtErr, ve);
      return;
    }
    copy_to_sgl(sq_.sgl(sq_comp_), off, pkt.payload.data(), want);
  }
  read_response_placed(psn);
}

bool RcQp::read_response_fits(const Packet& pkt, const SendWqe& w, std::uint32_t idx, std::uint64_t& off,
                              std::uint64_t& want) const noexcept {
  // Responses are numbered within the READ request they answer: one per
  // chunk of max_read_request_packets (send_request_packet).
  const std::uint32_t chunk = engine_.options().max_read_request_packets;
  const std::uint32_t in_chunk = idx % chunk;
  const std::uint32_t chunk_pkts = std::min(chunk, w.npkts - (idx - in_chunk));
  RoceOp expected;
  if (chunk_pkts == 1) {
    expected = RoceOp::kReadResponseOnly;
  } else if (in_chunk == 0) {
    expected = RoceOp::kReadResponseFirst;
  } else if (in_chunk + 1 == chunk_pkts) {
    expected = RoceOp::kReadResponseLast;
  } else {
    expected = RoceOp::kReadResponseMiddle;
  }
  const auto op = static_cast<RoceOp>(pkt.h.opcode);
  if (op != expected) return false;
  if (op != RoceOp::kReadResponseMiddle && syndrome_type(pkt.h.aeth_syndrome) != AckType::kAck) return false;
  off = std::uint64_t{idx} * mtu_;
  want = std::min<std::uint64_t>(mtu_, w.length - std::min<std::uint64_t>(off, w.length));
  return pkt.payload.size() == want;
}

void RcQp::read_response_placed(std::uint32_t psn) noexcept {
  SendWqe& w = sq(sq_comp_);
  comp_psn_ = psn_add(psn, 1);
  if (psn == w.last_psn) {
    w.done = true;
    --rd_atomic_outstanding_;
    complete_send(sq_comp_, WcStatus::kSuccess, w.length, kVeNone);
    ++sq_comp_;
  }
  progress_made();
}

// The common case, the next response of the head READ into a buffer that
// takes it in one piece, checks the ICRC in the copy that places the
// payload, and believes the packet only after: a corrupt packet has by then
// written only into that READ's own local buffer, at the place the expected
// response will write again (a program reads a READ's buffer only after
// its completion), and is dropped. Anything else
// is checked first and then taken as any response.
bool RcQp::on_unverified_read_response(const Packet& pkt) noexcept {
  std::uint8_t* dst = read_response_target(pkt);
  if (dst == nullptr) {
    if (!engine_.icrc_holds(pkt)) return false;
    on_response(pkt);
    return true;
  }
  if (!place_payload_checking_icrc(pkt, dst)) {
    engine_.count_bad_icrc();
    return false;
  }
  engine_.count_icrc_in_copy();
  read_response_placed(pkt.h.psn);
  return true;
}

std::uint8_t* RcQp::read_response_target(const Packet& pkt) noexcept {
  // What on_response checks first: only PSNs we sent ([comp_psn_, sent_psn_));
  // a READ has its PSNs before its request leaves (a full transmit ring, the
  // next chunk of a long READ), so comp_psn_ alone is not enough.
  if (state() != QpState::kRts || pkt.h.psn != comp_psn_ || psn_compare(pkt.h.psn, sent_psn_) >= 0 ||
      !outstanding()) {
    return nullptr;
  }
  const SendWqe& w = sq(sq_comp_);
  if (w.opcode != VerbOp::kRdmaRead) return nullptr;
  std::uint64_t off = 0, want = 0;
  if (!read_response_fits(pkt, w, psn_diff(pkt.h.psn, w.first_psn), off, want) || want == 0) return nullptr;
  const auto sgl = sq_.sgl(sq_comp_);
  if (check_local_sgl(engine_.keys(), pd_, sgl, off + want, Access::kLocalWrite) != kVeNone) return nullptr;
  return const_cast<std::uint8_t*>(sgl_contiguous(sgl, off, want));
}

}  // namespace rma::roce::rc
