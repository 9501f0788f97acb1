// RcQp: life cycle and posting (send and receive queues, their checks).
// The requester (segmentation, PSNs, window, AckReq, go-back-N) is in
// requester.cpp, the completer (ACK/NAK/RNR, read responses, atomic
// acknowledgements, timers) in completer.cpp, the responder in
// responder.cpp — as rdma_rxe divides a QP.
#include "rc/qp.hpp"

#include <algorithm>
#include <cstring>
#include <new>

#include "rc/verb_ops.hpp"
#include "rma/sdk/provider_checks.hpp"

namespace rma::roce::rc {

namespace {

template <typename T>
std::unique_ptr<T[]> alloc_array(std::size_t n) noexcept {
  return std::unique_ptr<T[]>(new (std::nothrow) T[n == 0 ? 1 : n]());
}

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

}  // namespace rma::roce::rc
