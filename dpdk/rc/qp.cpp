// RcQp: life cycle, posting, the requester (segmentation, PSNs, window,
// AckReq, go-back-N) and the completer (ACK/NAK/RNR, read responses, atomic
// acknowledgements, timers). The responder is in responder.cpp.
#include "rc/qp.hpp"

#include <algorithm>
#include <cstring>
#include <new>

#include "rma/provider_checks.hpp"

namespace rma::roce::rc {

namespace {

bool is_rd_atomic(VerbOp op) noexcept {
  return op == VerbOp::kRdmaRead || op == VerbOp::kAtomicFetchAdd || op == VerbOp::kAtomicCmpSwap;
}
bool is_atomic(VerbOp op) noexcept {
  return op == VerbOp::kAtomicFetchAdd || op == VerbOp::kAtomicCmpSwap;
}
std::uint32_t packets_for(std::uint32_t len, std::uint32_t mtu) noexcept {
  return len == 0 ? 1 : (len + mtu - 1) / mtu;
}
std::uint32_t psn_diff(std::uint32_t a, std::uint32_t b) noexcept { return (a - b) & kPsnMask; }
VerbOp completion_opcode(VerbOp op) noexcept {
  switch (op) {
    case VerbOp::kRdmaWriteWithImm: return VerbOp::kRdmaWrite;
    case VerbOp::kSendWithImm: return VerbOp::kSend;
    default: return op;
  }
}
template <typename T>
std::unique_ptr<T[]> alloc_array(std::size_t n) noexcept {
  return std::unique_ptr<T[]>(new (std::nothrow) T[n == 0 ? 1 : n]());
}
using RoceOp = ::rma::roce::Opcode;

}  // namespace

// ------------------------------------------------------------------ life cycle

RcQp::RcQp(Engine& engine, const QpParams& p) noexcept
    : engine_(engine),
      pd_(p.pd),
      send_cq_(p.send_cq),
      recv_cq_(p.recv_cq),
      max_send_wr_(p.max_send_wr),
      max_recv_wr_(p.max_recv_wr),
      max_send_sge_(p.max_send_sge),
      max_recv_sge_(p.max_recv_sge),
      max_inline_(p.max_inline),
      max_rd_atomic_(std::max<std::uint32_t>(1, p.max_rd_atomic)),
      timeout_code_(p.timeout),
      retry_cnt_(p.retry_cnt),
      rnr_retry_(p.rnr_retry),
      min_rnr_timer_(p.min_rnr_timer),
      max_msg_size_(p.max_msg_size),
      mtu_(p.path_mtu) {}

RcQp::~RcQp() {
  if (qpn_ != 0) {
    engine_.retire_counters(ctr_);
    engine_.remove_qp(qpn_);
  }
}

Status RcQp::init() {
  sq_ = alloc_array<SendWqe>(max_send_wr_);
  sq_sge_ = alloc_array<Sge>(std::size_t{max_send_wr_} * max_send_sge_);
  sq_inline_ = alloc_array<std::uint8_t>(std::size_t{max_send_wr_} * max_inline_);
  rq_ = alloc_array<RecvWqe>(max_recv_wr_);
  rq_sge_ = alloc_array<Sge>(std::size_t{max_recv_wr_} * max_recv_sge_);
  if (!sq_ || !sq_sge_ || !sq_inline_ || !rq_ || !rq_sge_) {
    return resource_exhausted("create_qp: cannot allocate the work queues");
  }
  RMA_ASSIGN_OR_RETURN(qpn_, engine_.add_qp(this));
  local_psn_ = engine_.initial_psn();
  epsn_ = local_psn_;
  return {};
}

Status RcQp::connect(const PeerParams& peer) {
  const QpState s = state();
  if (s != QpState::kReset) {
    return failed_precondition("connect: QP " + std::to_string(qpn_) + " is in state " +
                               std::string(qp_state_name(s)) +
                               "; only a RESET QP can be connected, and only once");
  }
  peer_ = peer;
  mtu_ = std::min(mtu_, peer.mtu);
  const LinkInfo& li = engine_.link_info();
  tmpl_ = Headers{};
  tmpl_.src_mac = li.mac;
  tmpl_.dst_mac = peer.mac;
  tmpl_.src_ip = li.ipv4;
  tmpl_.dst_ip = peer.ipv4;
  tmpl_.src_port = udp_source_port(qpn_, peer.qpn);
  tmpl_.dest_qp = peer.qpn;
  // Each side sends from its own PSN and expects the one the peer announced
  // (as perftest and verbs programs exchange them).
  req_psn_ = comp_psn_ = next_psn_ = sent_psn_ = local_psn_;
  epsn_ = peer.psn & kPsnMask;
  retries_left_ = retry_cnt_;
  rnr_left_ = rnr_retry_;
  // RESET -> INIT -> RTR -> RTS at once: nothing can observe the states in
  // between under the device lock.
  state_.store(QpState::kRts, std::memory_order_relaxed);
  return {};
}

void RcQp::set_error() noexcept {
  if (state() != QpState::kError) enter_error();
}

// ------------------------------------------------------------------ posting

std::span<const Sge> RcQp::send_sgl(std::uint64_t seq) const noexcept {
  const std::size_t slot = seq % max_send_wr_;
  return {sq_sge_.get() + slot * max_send_sge_, sq_[slot].num_sge};
}
std::span<const Sge> RcQp::recv_sgl(std::uint64_t seq) const noexcept {
  const std::size_t slot = seq % max_recv_wr_;
  return {rq_sge_.get() + slot * max_recv_sge_, rq_[slot].num_sge};
}
std::uint8_t* RcQp::inline_data(std::uint64_t seq) const noexcept {
  return sq_inline_.get() + (seq % max_send_wr_) * max_inline_;
}

const char* RcQp::check_send(const WorkRequest& wr, StatusCode& code) const noexcept {
  code = StatusCode::kFailedPrecondition;
  const QpState s = state();
  if (s == QpState::kError) return "QP is in the error state";
  if (s != QpState::kRts) return "QP is not in RTS state";
  std::uint64_t total = 0;
  if (const char* why = check_send_wr(wr, SendLimits{max_send_sge_, max_inline_, max_msg_size_}, &total, code)) {
    return why;
  }
  code = StatusCode::kResourceExhausted;
  if (sq_tail_ - sq_retired_ >= max_send_wr_) return "send queue full";
  code = StatusCode::kOk;
  return nullptr;
}

void RcQp::enqueue_send(const WorkRequest& wr, std::uint32_t length) noexcept {
  const std::uint64_t seq = sq_tail_;
  SendWqe& w = sq(seq);
  w = SendWqe{};
  w.wr_id = wr.wr_id;
  w.remote_addr = wr.remote_addr;
  w.compare_add = wr.compare_add;
  w.swap = wr.swap;
  w.length = length;
  w.rkey = wr.rkey;
  w.imm = wr.imm_data;
  w.flags = wr.flags;
  w.opcode = wr.opcode;
  if ((wr.flags & kWrInline) != 0) {
    std::uint8_t* dst = inline_data(seq);
    for (const Sge& sge : wr.sgl) {
      if (sge.length == 0) continue;
      std::memcpy(dst, reinterpret_cast<const void*>(sge.addr), sge.length);
      dst += sge.length;
    }
    w.num_sge = 0;
  } else {
    std::copy(wr.sgl.begin(), wr.sgl.end(), sq_sge_.get() + (seq % max_send_wr_) * max_send_sge_);
    w.num_sge = static_cast<std::uint32_t>(wr.sgl.size());
    // Local protection is checked now; a failure completes this request
    // with LOC_PROT_ERR once everything before it has completed.
    const bool writes_local = wr.opcode == VerbOp::kRdmaRead || is_atomic(wr.opcode);
    w.vendor_err = check_local_sgl(engine_.keys(), pd_, send_sgl(seq), length,
                                   writes_local ? Access::kLocalWrite : Access::kNone);
  }
  ++sq_tail_;
}

PostResult RcQp::post(std::span<const WorkRequest> wrs) noexcept {
  PostResult result;
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    StatusCode code;
    if (const char* why = check_send(wrs[i], code)) {
      result = PostResult{code, static_cast<std::uint32_t>(i), why};
      break;
    }
    std::uint64_t length = 0;
    for (const Sge& sge : wrs[i].sgl) length += sge.length;
    enqueue_send(wrs[i], static_cast<std::uint32_t>(length));
  }
  check_head_local_error();
  return result;
}

PostResult RcQp::post_recv(std::span<const RecvRequest> wrs) noexcept {
  PostResult result;
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    const RecvRequest& wr = wrs[i];
    const char* why = nullptr;
    StatusCode code = StatusCode::kFailedPrecondition;
    const QpState s = state();
    if (s == QpState::kReset) {
      why = "QP is in RESET state";
    } else if (s == QpState::kError) {
      why = "QP is in the error state";
    } else if (wr.sgl.size() > max_recv_sge_) {
      code = StatusCode::kInvalidArgument;
      why = "too many SGEs";
    } else if (rq_tail_ - rq_retired_ >= max_recv_wr_) {
      code = StatusCode::kResourceExhausted;
      why = "receive queue full";
    }
    if (why != nullptr) {
      result = PostResult{code, static_cast<std::uint32_t>(i), why};
      break;
    }
    const std::size_t slot = rq_tail_ % max_recv_wr_;
    rq_[slot].wr_id = wr.wr_id;
    rq_[slot].num_sge = static_cast<std::uint32_t>(wr.sgl.size());
    std::copy(wr.sgl.begin(), wr.sgl.end(), rq_sge_.get() + slot * max_recv_sge_);
    ++rq_tail_;
  }
  return result;
}

void RcQp::retire(bool send_queue, std::uint64_t seq) noexcept {
  if (send_queue) {
    sq_retired_ = std::max(sq_retired_, seq + 1);
  } else {
    rq_retired_ = std::max(rq_retired_, seq + 1);
  }
}

// ------------------------------------------------------------------ transmit helpers

std::uint8_t* RcQp::tx_buffer() noexcept { return engine_.tx_payload(); }

void RcQp::fill_headers(Headers& h, std::uint8_t opcode, std::uint32_t psn) const noexcept {
  h = tmpl_;
  h.opcode = opcode;
  h.psn = psn & kPsnMask;
}

bool RcQp::emit(Headers& h, const std::uint8_t* /*payload already in the slot*/, std::size_t len,
                const std::uint8_t* ref) noexcept {
  h.ip_id = engine_.next_ip_id();
  engine_.tx_commit_ref(h, ref, len);
  ++ctr_.tx_frames;
  ctr_.tx_bytes += header_length(h.opcode) + len;
  return true;
}

void RcQp::arm_timer() noexcept {
  if (timer_armed_ || timeout_code_ == 0) return;
  timer_armed_ = true;
  timer_deadline_ = engine_.now() + ack_timeout(timeout_code_);
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
  while (sq_send_ < sq_tail_ && state() == QpState::kRts) {
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
  Headers h;
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
      fill_headers(h, static_cast<std::uint8_t>(RoceOp::kReadRequest), psn);
      h.reth_va = w.remote_addr + off;
      h.reth_rkey = w.rkey;
      h.reth_length = static_cast<std::uint32_t>(std::min<std::uint64_t>(rest, std::uint64_t{used} * mtu_));
      break;
    }
    case VerbOp::kAtomicFetchAdd:
    case VerbOp::kAtomicCmpSwap:
      fill_headers(h, static_cast<std::uint8_t>(w.opcode == VerbOp::kAtomicFetchAdd ? RoceOp::kFetchAdd
                                                                                    : RoceOp::kCompareSwap),
                   psn);
      h.atomic_va = w.remote_addr;
      h.atomic_rkey = w.rkey;
      h.atomic_swap_add = w.opcode == VerbOp::kAtomicFetchAdd ? w.compare_add : w.swap;
      h.atomic_compare = w.opcode == VerbOp::kAtomicFetchAdd ? 0 : w.compare_add;
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
      fill_headers(h, static_cast<std::uint8_t>(op), psn);
      if (write && first) {
        h.reth_va = w.remote_addr;
        h.reth_rkey = w.rkey;
        h.reth_length = w.length;
      }
      if (imm && last) h.imm = w.imm;
      if (last && (w.flags & kWrSolicited) != 0) h.solicited = true;
      if (len > 0 && w.num_sge != 0) {
        // Checked at post; the region may have been deregistered or its
        // memory unmapped since. Stop here: the request completes with a
        // local protection error once what was sent of it is acknowledged.
        const std::uint32_t ve = check_local_sgl(engine_.keys(), pd_, send_sgl(seq), off + len, Access::kNone);
        if (ve != kVeNone) {
          w.vendor_err = ve;
          check_head_local_error();
          return true;
        }
      }
      if (len > 0) {
        if (w.num_sge == 0) {
          std::memcpy(buf, inline_data(seq) + off, len);
        } else if ((ref = sgl_contiguous(send_sgl(seq), off, len)) == nullptr) {
          copy_from_sgl(send_sgl(seq), off, buf, len);
        }
      }
      break;
    }
  }
  h.ack_req = last || ++pkts_since_ackreq_ >= engine_.options().ack_req_every;
  if (h.ack_req) pkts_since_ackreq_ = 0;
  emit(h, buf, len, ref);
  if (psn_compare(psn, sent_psn_) < 0) {
    ++ctr_.retransmitted_packets;
  }
  const std::uint32_t after = psn_add(psn, used);
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

// ------------------------------------------------------------------ completer

bool RcQp::outstanding() const noexcept { return sq_comp_ < sq_assigned_; }

void RcQp::complete_send(std::uint64_t seq, WcStatus status, std::uint32_t byte_len,
                         std::uint32_t vendor_err) noexcept {
  const SendWqe& w = sq(seq);
  if (status == WcStatus::kSuccess && (w.flags & kWrSignaled) == 0) return;
  CqEntry e;
  e.wc.wr_id = w.wr_id;
  e.wc.status = status;
  e.wc.opcode = completion_opcode(w.opcode);
  e.wc.byte_len = status == WcStatus::kSuccess ? byte_len : 0;
  e.wc.qp_num = qpn_;
  e.wc.vendor_err = vendor_err;
  e.send_queue = true;
  e.seq = seq;
  if (!send_cq_->push(e)) cq_lost_ = true;
}

void RcQp::complete_recv(WcStatus status, VerbOp opcode, std::uint32_t byte_len, bool has_imm,
                         std::uint32_t imm, std::uint32_t vendor_err) noexcept {
  const std::uint64_t seq = rq_next_++;
  CqEntry e;
  e.wc.wr_id = rq_[seq % max_recv_wr_].wr_id;
  e.wc.status = status;
  e.wc.opcode = opcode;
  e.wc.has_imm = has_imm;
  e.wc.imm_data = has_imm ? imm : 0;
  e.wc.byte_len = byte_len;
  e.wc.qp_num = qpn_;
  e.wc.vendor_err = vendor_err;
  e.send_queue = false;
  e.seq = seq;
  if (!recv_cq_->push(e)) cq_lost_ = true;
}

void RcQp::fail_head(WcStatus status, std::uint32_t vendor_err) noexcept {
  if (sq_comp_ < sq_tail_) {
    complete_send(sq_comp_, status, 0, vendor_err);
    ++sq_comp_;
  }
  enter_error();
}

void RcQp::check_head_local_error() noexcept {
  if (state() != QpState::kRts) return;
  // A request that failed its local check, once it is the oldest and
  // nothing sent before it (or of it) is still unacknowledged.
  if (sq_comp_ < sq_tail_ && sq(sq_comp_).vendor_err != kVeNone &&
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
  while (sq_comp_ < sq_tail_) {
    complete_send(sq_comp_, WcStatus::kWrFlushErr, 0, kVeFlushed);
    ++sq_comp_;
  }
  sq_send_ = sq_assigned_ = sq_tail_;
  rd_atomic_outstanding_ = 0;
  while (rq_next_ < rq_tail_) complete_recv(WcStatus::kWrFlushErr, VerbOp::kRecv, 0, false, 0, kVeFlushed);
  for (Resource& r : res_) r.pending = false;
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

void RcQp::run_timers(Clock::time_point now) noexcept {
  if (state() != QpState::kRts) return;
  if (rnr_waiting_) {
    if (now < rnr_deadline_) return;
    rnr_waiting_ = false;
    rewind_to_comp();
    timer_armed_ = false;
    return;
  }
  if (timer_armed_ && now >= timer_deadline_) {
    timer_armed_ = false;
    if (outstanding()) retry_after_timeout();
  }
}

void RcQp::receive(const Packet& pkt, std::size_t frame_len) noexcept {
  ++ctr_.rx_frames;
  ctr_.rx_bytes += frame_len;
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
        rnr_deadline_ = engine_.now() + rnr_interval(syndrome_value(syn));
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
    const std::uint32_t ve = check_local_sgl(engine_.keys(), pd_, send_sgl(sq_comp_), 8, Access::kLocalWrite);
    if (ve != kVeNone) {  // deregistered or unmapped since the post
      fail_head(WcStatus::kLocProtErr, ve);
      return;
    }
    const std::uint64_t orig = pkt.h.atomic_ack_orig;
    std::uint8_t bytes[8];
    std::memcpy(bytes, &orig, 8);
    copy_to_sgl(send_sgl(sq_comp_), 0, bytes, 8);
    w.done = true;
    --rd_atomic_outstanding_;
    comp_psn_ = psn_add(psn, 1);
    complete_send(sq_comp_, WcStatus::kSuccess, 8, kVeNone);
    ++sq_comp_;
    progress_made();
    return;
  }

  // READ response.
  if (w.opcode != VerbOp::kRdmaRead) {
    ++ctr_.bad_responses;
    return;
  }
  const std::uint32_t idx = psn_diff(psn, w.first_psn);
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
  if (op != expected) {
    ++ctr_.bad_responses;
    return;
  }
  if (op != RoceOp::kReadResponseMiddle && syndrome_type(pkt.h.aeth_syndrome) != AckType::kAck) {
    ++ctr_.bad_responses;
    return;
  }
  const std::uint64_t off = std::uint64_t{idx} * mtu_;
  const std::uint64_t want = std::min<std::uint64_t>(mtu_, w.length - std::min<std::uint64_t>(off, w.length));
  if (pkt.payload.size() != want) {
    ++ctr_.bad_responses;
    return;
  }
  if (want > 0) {
    // The local buffer was checked at post; since then its region may have
    // been deregistered or its memory unmapped: check again before writing.
    const std::uint32_t ve = check_local_sgl(engine_.keys(), pd_, send_sgl(sq_comp_), off + want, Access::kLocalWrite);
    if (ve != kVeNone) {
      fail_head(WcStatus::kLocProtErr, ve);
      return;
    }
    copy_to_sgl(send_sgl(sq_comp_), off, pkt.payload.data(), want);
  }
  comp_psn_ = psn_add(psn, 1);
  if (psn == w.last_psn) {
    w.done = true;
    --rd_atomic_outstanding_;
    complete_send(sq_comp_, WcStatus::kSuccess, w.length, kVeNone);
    ++sq_comp_;
  }
  progress_made();
}

}  // namespace rma::roce::rc
