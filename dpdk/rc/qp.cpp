// RcQp: life cycle and posting (send and receive queues, their checks).
// The requester (segmentation, PSNs, window, AckReq, go-back-N) is in
// requester.cpp, the completer (ACK/NAK/RNR, read responses, atomic
// acknowledgements, timers) in completer.cpp, the responder in
// responder.cpp — as rdma_rxe divides a QP.
#include "rc/qp.hpp"

#include <algorithm>

#include "rc/verb_ops.hpp"
#include "rma/sdk/provider_checks.hpp"

namespace rma::roce::rc {

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
  // An ACK held for an answer that will not come now (transmit_responses).
  if (qpn_ != 0 && state() == QpState::kRts && release_held_ack()) engine_.send_now(this);
  if (qpn_ != 0) {
    engine_.retire_counters(ctr_);
    engine_.remove_qp(qpn_);
  }
}

Status RcQp::init() {
  RMA_RETURN_IF_ERROR(sq_.init(max_send_wr_, max_send_sge_, max_inline_));
  RMA_RETURN_IF_ERROR(rq_.init(max_recv_wr_, max_recv_sge_, 0));
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
  Headers fixed;
  fixed.src_mac = li.mac;
  fixed.dst_mac = peer.mac;
  fixed.src_ip = li.ipv4;
  fixed.dst_ip = peer.ipv4;
  fixed.src_port = udp_source_port(qpn_, peer.qpn);
  fixed.dest_qp = peer.qpn;
  tmpl_.init(fixed);
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

PostResult RcQp::post(std::span<const WorkRequest> wrs) noexcept {
  // The ping-pong rule (transmit_responses): is this post the device's next
  // call after one that asked this QP for an ACK (begin_post() started this
  // call's epoch)?
  const std::uint64_t epoch = engine_.check_epoch();
  if (ack_asked_epoch_ != 0 && ack_asked_epoch_ + 1 == epoch) {
    if (answers_ < kAnswersBeforeHold) ++answers_;
  } else {
    answers_ = 0;
  }
  post_epoch_ = epoch;
  const SendLimits limits{max_send_sge_, max_inline_, max_msg_size_};
  const PostResult result = swkit::post_sends(sq_, state(), limits, wrs, [&](SendWqe& w, std::uint64_t seq) {
    w.checked_epoch = 0;
    if ((w.flags & kWrInline) != 0) return;  // copied at post: no keys to check
    // Local protection is checked now; a failure completes this request
    // with LOC_PROT_ERR once everything before it has completed.
    const bool writes_local = w.opcode == VerbOp::kRdmaRead || is_atomic(w.opcode);
    swkit::KeysLockHeld held;  // the caller holds the engine's mutex, which guards its keys
    w.vendor_err = lkeys_.check(engine_.keys(), held, pd_, sq_.sgl(seq), w.length,
                                writes_local ? Access::kLocalWrite : Access::kNone);
    if (w.vendor_err == kVeNone) w.checked_epoch = engine_.check_epoch();
  });
  check_head_local_error();
  return result;
}

PostResult RcQp::post_recv(std::span<const RecvRequest> wrs) noexcept {
  return swkit::post_receives(rq_, state(), max_recv_sge_, wrs);
}

void RcQp::retire(bool send_queue, std::uint64_t seq) noexcept {
  if (send_queue) {
    sq_.retire(seq);
  } else {
    rq_.retire(seq);
  }
}

}  // namespace rma::roce::rc
