// RcQp requester: builds and transmits request packets — segmentation by
// path MTU, PSN assignment, the send window and AckReq, rewinding for
// go-back-N retransmission.
#include <algorithm>
#include <cstring>

#include "rc/qp.hpp"
#include "rc/verb_ops.hpp"

namespace rma::roce::rc {

namespace {
using RoceOp = ::rma::roce::Opcode;
}  // namespace

std::uint8_t* RcQp::tx_buffer() noexcept { return engine_.tx_payload(); }

void RcQp::emit(PacketFields& f, std::size_t len, const std::uint8_t* ref) noexcept {
  f.ip_id = engine_.next_ip_id();
  engine_.tx_commit(tmpl_, f, ref, len);
  ++ctr_.tx_frames;
  ctr_.tx_bytes += header_length(f.opcode) + len;
}

void RcQp::arm_timer() noexcept {
  if (timer_armed_ || timeout_code_ == 0) return;
  timer_armed_ = true;
  timer_deadline_ = engine_.deadline_after(ack_timeout(timeout_code_));
}

bool RcQp::transmit() noexcept {
  const QpState s = state();
  if (s == QpState::kError) {
    if (cq_lost_) cq_lost_ = false;
    return transmit_responses();  // a NAK that broke the QP still goes out
  }
  if (s != QpState::kRts) return false;
  if (cq_lost_) {
    enter_error();
    return transmit_responses();
  }
  if (transmit_responses()) return true;
  if (rnr_waiting_) return false;
  const std::uint32_t window = engine_.options().max_unacked_psns;
  while (sq_send_ < sq_.tail() && state() == QpState::kRts) {
    SendWqe& w = sq(sq_send_);
    if (w.vendor_err != kVeNone) break;  // completes with an error when it reaches the head
    if (psn_compare(req_psn_, psn_add(comp_psn_, window)) >= 0) break;
    if (sq_send_ == sq_assigned_) {
      const bool rda = is_rd_atomic(w.opcode);
      if (rda && rd_atomic_outstanding_ >= max_rd_atomic_) break;
      if ((w.flags & kWrFence) != 0 && rd_atomic_outstanding_ > 0) break;
      w.npkts = is_atomic(w.opcode) ? 1 : packets_for(w.length, mtu_);
      w.first_psn = next_psn_;
      w.last_psn = psn_add(next_psn_, w.npkts - 1);
      w.done = false;
      next_psn_ = psn_add(next_psn_, w.npkts);
      if (rda) ++rd_atomic_outstanding_;
      ++sq_assigned_;
      send_pkt_ = 0;
    }
    // The next chunk of a long READ only once every PSN before it is
    // answered: one READ request of a work request at the responder at a
    // time, as max_rd_atomic counts work requests.
    if (w.opcode == VerbOp::kRdmaRead && req_psn_ != w.first_psn && comp_psn_ != req_psn_) break;
    if (!send_request_packet(sq_send_, w)) return true;
  }
  return false;
}

bool RcQp::send_request_packet(std::uint64_t seq, SendWqe& w) noexcept {
  std::uint8_t* buf = tx_buffer();
  if (buf == nullptr) return false;
  PacketFields h;
  const std::uint32_t psn = req_psn_;
  std::size_t len = 0;
  std::uint32_t used = 1;  // PSNs this packet consumes
  bool last = true;
  const std::uint8_t* ref = nullptr;  // payload straight from the registered source
  switch (w.opcode) {
    case VerbOp::kRdmaRead: {
      // One READ request per chunk of max_read_request_packets, with chunk
      // boundaries fixed from first_psn, so a retry from inside a chunk asks
      // for exactly the rest of that chunk (what the responder's resource
      // for it can replay).
      const std::uint32_t idx = psn_diff(psn, w.first_psn);
      const std::uint32_t chunk = engine_.options().max_read_request_packets;
      const std::uint32_t left = psn_diff(w.last_psn, psn) + 1;
      used = std::min(left, chunk - idx % chunk);
      last = used == left;
      const std::uint64_t off = std::uint64_t{idx} * mtu_;
      const std::uint64_t rest = w.length - std::min<std::uint64_t>(off, w.length);
      set_op(h, static_cast<std::uint8_t>(RoceOp::kReadRequest), psn);
      h.va = w.remote_addr + off;
      h.rkey = w.rkey;
      h.length = static_cast<std::uint32_t>(std::min<std::uint64_t>(rest, std::uint64_t{used} * mtu_));
      break;
    }
    case VerbOp::kAtomicFetchAdd:
    case VerbOp::kAtomicCmpSwap:
      set_op(h,
             static_cast<std::uint8_t>(w.opcode == VerbOp::kAtomicFetchAdd ? RoceOp::kFetchAdd : RoceOp::kCompareSwap),
             psn);
      h.va = w.remote_addr;
      h.rkey = w.rkey;
      h.swap_add = w.opcode == VerbOp::kAtomicFetchAdd ? w.compare_add : w.swap;
      h.compare = w.opcode == VerbOp::kAtomicFetchAdd ? 0 : w.compare_add;
      break;
    default: {
      const std::uint32_t i = send_pkt_;
      const bool first = i == 0;
      last = i + 1 >= w.npkts;
      const std::uint64_t off = std::uint64_t{i} * mtu_;
      len = static_cast<std::size_t>(std::min<std::uint64_t>(mtu_, w.length - std::min<std::uint64_t>(off, w.length)));
      const bool write = w.opcode == VerbOp::kRdmaWrite || w.opcode == VerbOp::kRdmaWriteWithImm;
      const bool imm = w.opcode == VerbOp::kRdmaWriteWithImm || w.opcode == VerbOp::kSendWithImm;
      RoceOp op;
      if (write) {
        op = first && last ? (imm ? RoceOp::kWriteOnlyImm : RoceOp::kWriteOnly)
             : first       ? RoceOp::kWriteFirst
             : last        ? (imm ? RoceOp::kWriteLastImm : RoceOp::kWriteLast)
                           : RoceOp::kWriteMiddle;
      } else {
        op = first && last ? (imm ? RoceOp::kSendOnlyImm : RoceOp::kSendOnly)
             : first       ? RoceOp::kSendFirst
             : last        ? (imm ? RoceOp::kSendLastImm : RoceOp::kSendLast)
                           : RoceOp::kSendMiddle;
      }
      set_op(h, static_cast<std::uint8_t>(op), psn);
      if (write && first) {
        h.va = w.remote_addr;
        h.rkey = w.rkey;
        h.length = w.length;
      }
      if (imm && last) h.imm = w.imm_data;
      if (last && (w.flags & kWrSolicited) != 0) h.solicited = true;
      if (len > 0 && w.num_sge != 0 && w.checked_epoch != engine_.check_epoch()) {
        // Checked at post; the region may have been deregistered or its
        // memory unmapped since (unless this is still the post's own hold of
        // the lock: Engine::check_epoch). Stop here: the request completes
        // with a local protection error once what was sent of it is
        // acknowledged.
        const std::uint32_t ve = check_local_sgl(engine_.keys(), pd_, sq_.sgl(seq), off + len, Access::kNone);
        if (ve != kVeNone) {
          w.vendor_err = ve;
          check_head_local_error();
          return true;
        }
      }
      if (len > 0) {
        if (w.num_sge == 0) {
          std::memcpy(buf, sq_.inline_data(seq) + off, len);
        } else if ((ref = sgl_contiguous(sq_.sgl(seq), off, len)) == nullptr) {
          copy_from_sgl(sq_.sgl(seq), off, buf, len);
        }
      }
      break;
    }
  }
  // AckReq on the last packet of a message unless another packet follows it
  // at once (the later one asks for both: ACKs are cumulative), and at least
  // every ack_req_every packets, so a stream of post lists costs the
  // responder one ACK per list, not one per message. Whatever this guesses,
  // the retransmission timer bounds it: a burst that ends without AckReq is
  // resent with one after the timeout.
  const std::uint32_t after = psn_add(psn, used);
  h.ack_req = (last && !packet_follows(w, after)) || ++pkts_since_ackreq_ >= engine_.options().ack_req_every;
  if (h.ack_req) pkts_since_ackreq_ = 0;
  emit(h, len, ref);
  if (psn_compare(psn, sent_psn_) < 0) {
    ++ctr_.retransmitted_packets;
  }
  if (psn_compare(after, sent_psn_) > 0) sent_psn_ = after;
  req_psn_ = after;
  if (last) {
    ++sq_send_;
    send_pkt_ = 0;
  } else {
    ++send_pkt_;
  }
  arm_timer();
  return true;
}

bool RcQp::packet_follows(const SendWqe& w, std::uint32_t after) const noexcept {
  // The conditions under which transmit() goes on to the next work request
  // right away: room in the ring for it, the window open past this packet,
  // and a next request that nothing holds back. READs and atomics are left
  // out (they wait for credits and answers); their requests ask as before.
  if (is_rd_atomic(w.opcode) || engine_.tx_room() < 2) return false;
  if (psn_compare(after, psn_add(comp_psn_, engine_.options().max_unacked_psns)) >= 0) return false;
  const std::uint64_t next = sq_send_ + 1;
  if (next >= sq_.tail()) return false;
  const SendWqe& n = sq(next);
  return n.vendor_err == kVeNone && !is_rd_atomic(n.opcode) && (n.flags & kWrFence) == 0;
}

void RcQp::rewind_to_comp() noexcept {
  sq_send_ = sq_comp_;
  if (sq_comp_ < sq_assigned_) {
    const SendWqe& w = sq(sq_comp_);
    req_psn_ = comp_psn_;
    send_pkt_ = is_rd_atomic(w.opcode) ? 0 : psn_diff(comp_psn_, w.first_psn);
  } else {
    req_psn_ = next_psn_;
    send_pkt_ = 0;
  }
  pkts_since_ackreq_ = 0;
}

void RcQp::catch_up() noexcept {
  if (sq_send_ < sq_comp_ ||
      (sq_send_ == sq_comp_ && sq_comp_ < sq_assigned_ && psn_compare(req_psn_, comp_psn_) < 0)) {
    rewind_to_comp();
  }
}

}  // namespace rma::roce::rc
