// Queue pair life cycle, posting (synchronous validation) and completion
// bookkeeping. Execution of a work request is in execute.cpp.
#include "self/queue_pair.hpp"

#include <algorithm>
#include <mutex>
#include <new>

#include "rma/sdk/provider_checks.hpp"
#include "self/endpoint_address.hpp"
#include "self/fabric.hpp"
#include "rma/sdk/text.hpp"
#include "swkit/flush.hpp"

namespace rma::self {

// ------------------------------------------------------------------ life cycle

QpImpl::QpImpl(std::shared_ptr<PdImpl> pd, const QpConfig& c, std::shared_ptr<CqImpl> send_cq,
               std::shared_ptr<CqImpl> recv_cq) noexcept
    : pd_(std::move(pd)),
      send_cq_(std::move(send_cq)),
      recv_cq_(std::move(recv_cq)),
      max_send_sge_(c.max_send_sge),
      max_recv_sge_(c.max_recv_sge),
      max_inline_(c.max_inline_data),
      rnr_retry_(c.rnr_retry),
      min_rnr_timer_(c.min_rnr_timer) {}

Status QpImpl::allocate_queues(const QpConfig& c) {
  RMA_RETURN_IF_ERROR(sq_.init(c.max_send_wr, max_send_sge_, max_inline_));
  RMA_RETURN_IF_ERROR(rq_.init(c.max_recv_wr, max_recv_sge_, 0));
  senders_.reserve(1);
  return {};
}

Result<std::unique_ptr<QueuePair>> QpImpl::create(std::shared_ptr<PdImpl> pd,
                                                  const QpConfig& config) {
  RMA_RETURN_IF_ERROR(check_qp_config(config, pd->caps()));
  auto send_cq = std::dynamic_pointer_cast<CqImpl>(config.send_cq);
  auto recv_cq = std::dynamic_pointer_cast<CqImpl>(config.recv_cq);
  if (!send_cq) return invalid_argument("create_qp: send_cq was not created by the self provider");
  if (!recv_cq) return invalid_argument("create_qp: recv_cq was not created by the self provider");
  const std::uint32_t max_qp = pd->caps().max_qp;
  std::unique_ptr<QpImpl> qp(new (std::nothrow) QpImpl(std::move(pd), config, std::move(send_cq),
                                                       std::move(recv_cq)));
  if (!qp) return resource_exhausted("create_qp: out of memory");
  RMA_RETURN_IF_ERROR(qp->allocate_queues(config));

  Fabric& fabric = Fabric::instance();
  std::lock_guard lock(fabric.mutex());
  RMA_ASSIGN_OR_RETURN(qp->qpn_, fabric.add_qp(qp.get(), max_qp));
  qp->send_cq_->attach_sender(qp.get());
  return std::unique_ptr<QueuePair>(std::move(qp));
}

QpImpl::~QpImpl() {
  if (qpn_ == 0) return;  // never registered (creation failed)
  Fabric& fabric = Fabric::instance();
  std::lock_guard lock(fabric.mutex());
  fabric.remove_qp(qpn_);
  send_cq_->detach_sender(this);
  // QPs connected to us keep our number; their next request finds it gone.
  if (connected_) {
    if (QpImpl* peer = fabric.find_qp(peer_qpn_)) {
      auto& s = peer->senders_;
      s.erase(std::remove(s.begin(), s.end(), this), s.end());
    }
  }
}

Result<EndpointAddress> QpImpl::local_address() const { return encode_endpoint(qpn_); }

Status QpImpl::connect(const EndpointAddress& remote) {
  RMA_ASSIGN_OR_RETURN(const std::uint32_t peer_qpn, decode_endpoint(remote));
  Fabric& fabric = Fabric::instance();
  std::lock_guard lock(fabric.mutex());
  const QpState s = state();
  if (s != QpState::kReset) {
    return failed_precondition("connect: QP " + dec(qpn_) + " is in state " +
                               std::string(qp_state_name(s)) +
                               "; only a RESET QP can be connected, and only once");
  }
  QpImpl* peer = fabric.find_qp(peer_qpn);
  if (peer == nullptr) {
    return not_found("connect: no QP " + dec(peer_qpn) + " exists in this process (destroyed?)");
  }
  if (peer->state() == QpState::kError) {
    return failed_precondition("connect: peer QP " + dec(peer_qpn) + " is in the error state");
  }
  peer->senders_.push_back(this);
  peer_qpn_ = peer_qpn;
  connected_ = true;
  // RESET -> INIT -> RTR -> RTS in one step: there is no path to negotiate
  // in-process, and nobody can observe the states in between under the lock.
  state_.store(QpState::kRts, std::memory_order_relaxed);
  return {};
}

Status QpImpl::set_error() {
  std::lock_guard lock(Fabric::instance().mutex());
  if (state() != QpState::kError) enter_error();
  return {};
}

// ------------------------------------------------------------------ posting

PostResult QpImpl::post(std::span<const WorkRequest> wrs) noexcept {
  std::lock_guard lock(Fabric::instance().mutex());
  const SendLimits limits{max_send_sge_, max_inline_, pd_->caps().max_msg_size};
  // Nothing to keep besides the request: execution checks the keys.
  const PostResult result = swkit::post_sends(sq_, state(), limits, wrs, [](SendWqe&, std::uint64_t) {});
  // Everything accepted is queued before anything runs, so a request that
  // fails does not make later requests of the same list look unpostable:
  // they are accepted and then flushed, as on a NIC.
  drive();
  return result;
}

PostResult QpImpl::post_recv(std::span<const RecvRequest> wrs) noexcept {
  std::lock_guard lock(Fabric::instance().mutex());
  const PostResult result = swkit::post_receives(rq_, state(), max_recv_sge_, wrs);
  // Requesters that were waiting for a receive here (RNR) can go on now.
  for (QpImpl* sender : senders_) {
    if (sender->sq_exec_ < sender->sq_.tail()) sender->drive();
  }
  return result;
}

// ------------------------------------------------------------------ completions

void QpImpl::drive() noexcept {
  while (state() == QpState::kRts && sq_exec_ < sq_.tail()) {
    const std::uint64_t seq = sq_exec_;
    const SendWqe& w = sq_[seq];
    QpImpl* responder = nullptr;
    const Step step = execute(w, seq, responder);
    if (step.kind == Step::kBlocked) return;
    rnr_armed_ = false;
    ++sq_exec_;
    if (step.kind == Step::kDone) {
      if ((w.flags & kWrSignaled) != 0) {
        complete_send(seq, w, WcStatus::kSuccess, step.byte_len, swkit::kVeNone);
      }
    } else {
      complete_send(seq, w, step.status, 0, step.vendor_err);
      needs_error_ = true;  // errors are fatal to the QP
    }
    // Requester first, so its error completion precedes the flushes even
    // when requester and responder are the same QP.
    if (needs_error_) enter_error();
    if (responder != nullptr && responder->needs_error_) responder->enter_error();
  }
}

void QpImpl::retire(bool send_queue, std::uint64_t seq) noexcept {
  // Completions of one queue are produced in order, and each covers every
  // earlier request of its queue (the unsignaled ones too).
  if (send_queue) {
    sq_.retire(seq);
  } else {
    rq_.retire(seq);
  }
}

void QpImpl::complete_send(std::uint64_t seq, const SendWqe& w, WcStatus status,
                           std::uint32_t byte_len, std::uint32_t vendor_err) noexcept {
  // A lost completion breaks the QP.
  if (!send_cq_->push(swkit::send_completion(w, seq, qpn_, status, byte_len, vendor_err))) needs_error_ = true;
}

void QpImpl::complete_recv(WcStatus status, Opcode opcode, std::uint32_t byte_len, bool has_imm,
                           std::uint32_t imm, std::uint32_t vendor_err) noexcept {
  const std::uint64_t seq = rq_next_++;
  const swkit::CqEntry e =
      swkit::recv_completion(rq_[seq], seq, qpn_, status, opcode, byte_len, has_imm, imm, vendor_err);
  if (!recv_cq_->push(e)) needs_error_ = true;
}

void QpImpl::enter_error() noexcept {
  state_.store(QpState::kError, std::memory_order_relaxed);
  rnr_armed_ = false;
  // Every request not yet executed, and every receive not yet consumed,
  // completes with WR_FLUSH_ERR, signaled or not.
  (void)swkit::flush_queues(sq_, sq_exec_, rq_, rq_next_, qpn_, *send_cq_, *recv_cq_);
  needs_error_ = false;  // done; flushes lost to an overrun change nothing more
}

}  // namespace rma::self
