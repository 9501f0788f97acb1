// Queue pair life cycle, posting (synchronous validation) and completion
// bookkeeping. Execution of a work request is in execute.cpp.
#include "self/queue_pair.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>

#include "rma/sdk/provider_checks.hpp"
#include "self/endpoint_address.hpp"
#include "self/fabric.hpp"
#include "rma/sdk/text.hpp"

namespace rma::self {

namespace {

// Completion opcodes on the requester side, as ibv_wc_opcode reports them:
// the *_WITH_IMM variants complete as their plain forms.
Opcode send_completion_opcode(Opcode op) noexcept {
  switch (op) {
    case Opcode::kRdmaWriteWithImm: return Opcode::kRdmaWrite;
    case Opcode::kSendWithImm: return Opcode::kSend;
    default: return op;
  }
}

template <typename T>
std::unique_ptr<T[]> alloc_array(std::size_t n) noexcept {
  return std::unique_ptr<T[]>(new (std::nothrow) T[n]());
}

}  // namespace

// ------------------------------------------------------------------ life cycle

QpImpl::QpImpl(std::shared_ptr<PdImpl> pd, const QpConfig& c, std::shared_ptr<CqImpl> send_cq,
               std::shared_ptr<CqImpl> recv_cq) noexcept
    : pd_(std::move(pd)),
      send_cq_(std::move(send_cq)),
      recv_cq_(std::move(recv_cq)),
      max_send_wr_(c.max_send_wr),
      max_recv_wr_(c.max_recv_wr),
      max_send_sge_(c.max_send_sge),
      max_recv_sge_(c.max_recv_sge),
      max_inline_(c.max_inline_data),
      rnr_retry_(c.rnr_retry),
      min_rnr_timer_(c.min_rnr_timer) {}

Status QpImpl::allocate_queues() {
  // Everything the data path touches is allocated here, once.
  sq_ = alloc_array<SendWqe>(max_send_wr_);
  sq_sge_ = alloc_array<Sge>(std::size_t{max_send_wr_} * max_send_sge_);
  sq_inline_ = alloc_array<std::uint8_t>(std::size_t{max_send_wr_} * max_inline_);
  rq_ = alloc_array<RecvWqe>(max_recv_wr_);
  rq_sge_ = alloc_array<Sge>(std::size_t{max_recv_wr_} * max_recv_sge_);
  if (!sq_ || !sq_sge_ || !sq_inline_ || !rq_ || !rq_sge_) {
    return resource_exhausted("create_qp: cannot allocate the work queues");
  }
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
  RMA_RETURN_IF_ERROR(qp->allocate_queues());

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

std::span<const Sge> QpImpl::send_sgl(std::uint64_t seq) const noexcept {
  const std::size_t slot = seq % max_send_wr_;
  return {sq_sge_.get() + slot * max_send_sge_, sq_[slot].num_sge};
}

std::span<const Sge> QpImpl::recv_sgl(std::uint64_t seq) const noexcept {
  const std::size_t slot = seq % max_recv_wr_;
  return {rq_sge_.get() + slot * max_recv_sge_, rq_[slot].num_sge};
}

std::uint8_t* QpImpl::inline_data(std::uint64_t seq) const noexcept {
  return sq_inline_.get() + (seq % max_send_wr_) * max_inline_;
}

const char* QpImpl::check_send(const WorkRequest& wr, StatusCode& code) const noexcept {
  code = StatusCode::kFailedPrecondition;
  const QpState s = state();
  if (s == QpState::kError) return "QP is in the error state";
  if (s != QpState::kRts) return "QP is not in RTS state";

  std::uint64_t total = 0;
  if (const char* why = check_send_wr(wr, SendLimits{max_send_sge_, max_inline_, pd_->caps().max_msg_size}, &total, code)) {
    return why;
  }
  code = StatusCode::kResourceExhausted;
  if (sq_tail_ - sq_retired_ >= max_send_wr_) return "send queue full";
  code = StatusCode::kOk;
  return nullptr;
}

void QpImpl::enqueue_send(const WorkRequest& wr, std::uint64_t length) noexcept {
  const std::uint64_t seq = sq_tail_;
  SendWqe& w = sq_[seq % max_send_wr_];
  w.wr_id = wr.wr_id;
  w.remote_addr = wr.remote_addr;
  w.compare_add = wr.compare_add;
  w.swap = wr.swap;
  w.length = length;
  w.rkey = wr.rkey;
  w.imm_data = wr.imm_data;
  w.flags = wr.flags;
  w.opcode = wr.opcode;
  if ((wr.flags & kWrInline) != 0) {
    // The payload is copied now, so the caller may reuse its buffers as soon
    // as post() returns; lkeys are not looked at.
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
  }
  ++sq_tail_;
}

PostResult QpImpl::post(std::span<const WorkRequest> wrs) noexcept {
  std::lock_guard lock(Fabric::instance().mutex());
  PostResult result;
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    StatusCode code;
    if (const char* why = check_send(wrs[i], code)) {
      result = PostResult{code, static_cast<std::uint32_t>(i), why};
      break;
    }
    std::uint64_t length = 0;
    for (const Sge& sge : wrs[i].sgl) length += sge.length;
    enqueue_send(wrs[i], length);
  }
  // Everything accepted is queued before anything runs, so a request that
  // fails does not make later requests of the same list look unpostable:
  // they are accepted and then flushed, as on a NIC.
  drive();
  return result;
}

const char* QpImpl::check_recv(const RecvRequest& wr, StatusCode& code) const noexcept {
  code = StatusCode::kFailedPrecondition;
  const QpState s = state();
  if (s == QpState::kReset) return "QP is in RESET state";
  if (s == QpState::kError) return "QP is in the error state";
  code = StatusCode::kInvalidArgument;
  if (wr.sgl.size() > max_recv_sge_) return "too many SGEs";
  code = StatusCode::kResourceExhausted;
  if (rq_tail_ - rq_retired_ >= max_recv_wr_) return "receive queue full";
  code = StatusCode::kOk;
  return nullptr;
}

void QpImpl::enqueue_recv(const RecvRequest& wr) noexcept {
  const std::size_t slot = rq_tail_ % max_recv_wr_;
  rq_[slot].wr_id = wr.wr_id;
  rq_[slot].num_sge = static_cast<std::uint32_t>(wr.sgl.size());
  std::copy(wr.sgl.begin(), wr.sgl.end(), rq_sge_.get() + slot * max_recv_sge_);
  ++rq_tail_;
}

PostResult QpImpl::post_recv(std::span<const RecvRequest> wrs) noexcept {
  std::lock_guard lock(Fabric::instance().mutex());
  PostResult result;
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    StatusCode code;
    if (const char* why = check_recv(wrs[i], code)) {
      result = PostResult{code, static_cast<std::uint32_t>(i), why};
      break;
    }
    enqueue_recv(wrs[i]);
  }
  // Requesters that were waiting for a receive here (RNR) can go on now.
  for (QpImpl* sender : senders_) {
    if (sender->sq_exec_ < sender->sq_tail_) sender->drive();
  }
  return result;
}

// ------------------------------------------------------------------ completions

void QpImpl::drive() noexcept {
  while (state() == QpState::kRts && sq_exec_ < sq_tail_) {
    const std::uint64_t seq = sq_exec_;
    const SendWqe& w = sq_[seq % max_send_wr_];
    QpImpl* responder = nullptr;
    const Step step = execute(w, seq, responder);
    if (step.kind == Step::kBlocked) return;
    rnr_armed_ = false;
    ++sq_exec_;
    if (step.kind == Step::kDone) {
      if ((w.flags & kWrSignaled) != 0) {
        complete_send(seq, w, WcStatus::kSuccess, step.byte_len, kVeNone);
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
    sq_retired_ = std::max(sq_retired_, seq + 1);
  } else {
    rq_retired_ = std::max(rq_retired_, seq + 1);
  }
}

void QpImpl::complete_send(std::uint64_t seq, const SendWqe& w, WcStatus status,
                           std::uint32_t byte_len, std::uint32_t vendor_err) noexcept {
  CqEntry e;
  e.wc.wr_id = w.wr_id;
  e.wc.status = status;
  e.wc.opcode = send_completion_opcode(w.opcode);
  e.wc.byte_len = byte_len;
  e.wc.qp_num = qpn_;
  e.wc.vendor_err = vendor_err;
  e.send_queue = true;
  e.seq = seq;
  if (!send_cq_->push(e)) needs_error_ = true;  // a lost completion breaks the QP
}

void QpImpl::complete_recv(WcStatus status, Opcode opcode, std::uint32_t byte_len, bool has_imm,
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
  if (!recv_cq_->push(e)) needs_error_ = true;
}

void QpImpl::enter_error() noexcept {
  state_.store(QpState::kError, std::memory_order_relaxed);
  rnr_armed_ = false;
  // Every request not yet executed, and every receive not yet consumed,
  // completes with WR_FLUSH_ERR, signaled or not.
  while (sq_exec_ < sq_tail_) {
    const std::uint64_t seq = sq_exec_++;
    complete_send(seq, sq_[seq % max_send_wr_], WcStatus::kWrFlushErr, 0, kVeFlushed);
  }
  while (rq_next_ < rq_tail_) {
    complete_recv(WcStatus::kWrFlushErr, Opcode::kRecv, 0, false, 0, kVeFlushed);
  }
  needs_error_ = false;  // done; flushes lost to an overrun change nothing more
}

}  // namespace rma::self
