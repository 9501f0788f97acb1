// Queue pair life cycle, connection, posting and completion bookkeeping.
// Execution is in requester.cpp, serving a peer's requests in responder.cpp.
#include "shm/queue_pair.hpp"

#include <unistd.h>

#include <mutex>
#include <new>

#include "rma/sdk/provider_checks.hpp"
#include "rma/sdk/text.hpp"
#include "shm/endpoint_address.hpp"
#include "swkit/flush.hpp"

namespace rma::shm {

// ------------------------------------------------------------------ life cycle

QpImpl::QpImpl(std::shared_ptr<PdImpl> pd, const QpConfig& c, std::shared_ptr<CqImpl> send_cq,
               std::shared_ptr<CqImpl> recv_cq) noexcept
    : pd_(std::move(pd)),
      device_(pd_->impl()),
      send_cq_(std::move(send_cq)),
      recv_cq_(std::move(recv_cq)),
      max_send_sge_(c.max_send_sge),
      max_recv_sge_(c.max_recv_sge),
      max_inline_(c.max_inline_data),
      rnr_retry_(c.rnr_retry),
      min_rnr_timer_(c.min_rnr_timer),
      not_ready_budget_(c.timeout == 0 ? std::chrono::nanoseconds(0)
                                       : std::chrono::nanoseconds(std::uint64_t{4096} << c.timeout) *
                                             (c.retry_cnt + 1)) {}

Result<std::unique_ptr<QueuePair>> QpImpl::create(std::shared_ptr<PdImpl> pd, const QpConfig& config) {
  RMA_RETURN_IF_ERROR(check_qp_config(config, pd->caps()));
  auto send_cq = std::dynamic_pointer_cast<CqImpl>(config.send_cq);
  auto recv_cq = std::dynamic_pointer_cast<CqImpl>(config.recv_cq);
  if (!send_cq) return invalid_argument("create_qp: send_cq was not created by the shm provider");
  if (!recv_cq) return invalid_argument("create_qp: recv_cq was not created by the shm provider");
  // One device, one lock: a QP's CQs are produced into under its device's.
  if (send_cq->device() != &pd->impl() || recv_cq->device() != &pd->impl()) {
    return invalid_argument("create_qp: the CQs must come from the same shm device as the PD");
  }
  std::unique_ptr<QpImpl> qp(new (std::nothrow) QpImpl(pd, config, std::move(send_cq), std::move(recv_cq)));
  if (!qp) return resource_exhausted("create_qp: out of memory");
  RMA_RETURN_IF_ERROR(qp->sq_.init(config.max_send_wr, qp->max_send_sge_, qp->max_inline_));
  RMA_RETURN_IF_ERROR(qp->rq_.init(config.max_recv_wr, qp->max_recv_sge_, 0));

  DeviceImpl& dev = pd->impl();
  std::lock_guard lock(dev.mutex());
  RMA_ASSIGN_OR_RETURN(qp->qpn_, dev.add_qp(qp.get(), qp->slot_));
  // A fresh slot for peers: empty ring, no break request; the qpn last, as
  // the mark that the rest is valid.
  QpSlot& s = qp->slot();
  s.state.store(static_cast<std::uint32_t>(QpState::kReset), std::memory_order_relaxed);
  s.pd.store(pd->tag(), std::memory_order_relaxed);
  s.min_rnr_timer.store(config.min_rnr_timer, std::memory_order_relaxed);
  s.peer_pid.store(0, std::memory_order_relaxed);
  s.peer_qpn.store(0, std::memory_order_relaxed);
  s.break_request.store(0, std::memory_order_relaxed);
  for (RingEntry& e : s.ring) {
    e.state.store(RingEntry::kEmpty, std::memory_order_relaxed);
    e.rnr.store(0, std::memory_order_relaxed);
  }
  s.qpn.store(qp->qpn_, std::memory_order_release);
  return std::unique_ptr<QueuePair>(std::move(qp));
}

QpImpl::~QpImpl() {
  if (qpn_ == 0) return;  // never registered (creation failed)
  {
    std::lock_guard lock(device_.mutex());
    cancel_inflight();
    // Peers connected to us find the slot free (or another QP's): their
    // next request fails with RETRY_EXC_ERR (kVePeerGone).
    slot().qpn.store(0, std::memory_order_release);
    slot().state.store(static_cast<std::uint32_t>(QpState::kReset), std::memory_order_release);
    device_.remove_qp(qpn_, slot_);
  }
  // The peer's mapping goes with the last QP that uses it, outside the lock.
  peer_.reset();
}

void QpImpl::set_state(QpState s) noexcept {
  state_.store(s, std::memory_order_relaxed);
  slot().state.store(static_cast<std::uint32_t>(s), std::memory_order_release);
}

Result<EndpointAddress> QpImpl::local_address() const {
  Endpoint e;
  e.pid = static_cast<std::uint32_t>(::getpid());
  e.nonce = process_nonce();
  e.qpn = qpn_;
  e.slot = slot_;
  e.segment = device_.segment()->name();
  return encode_endpoint(e);
}

Status QpImpl::connect(const EndpointAddress& remote) {
  RMA_ASSIGN_OR_RETURN(const Endpoint peer, decode_endpoint(remote));
  {
    std::lock_guard lock(device_.mutex());
    const QpState s = state();
    if (s != QpState::kReset) {
      return failed_precondition("connect: QP " + dec(qpn_) + " is in state " + std::string(qp_state_name(s)) +
                                 "; only a RESET QP can be connected, and only once");
    }
  }
  // Mapping may take a while (and the segment lock); not under the device lock.
  RMA_ASSIGN_OR_RETURN(std::shared_ptr<Segment> seg, SegmentMap::attach(peer.segment, peer.pid, peer.nonce));
  QpSlot& ps = seg->layout().qp[peer.slot];
  std::lock_guard lock(device_.mutex());
  if (state() != QpState::kReset) return failed_precondition("connect: QP " + dec(qpn_) + " was connected meanwhile");
  if (ps.qpn.load(std::memory_order_acquire) != peer.qpn) {
    return not_found("connect: no QP " + dec(peer.qpn) + " exists in process " + dec(peer.pid) + " (destroyed?)");
  }
  if (ps.state.load(std::memory_order_acquire) == static_cast<std::uint32_t>(QpState::kError)) {
    return failed_precondition("connect: peer QP " + dec(peer.qpn) + " is in the error state");
  }
  peer_ = std::move(seg);
  peer_slot_ = &ps;
  peer_qpn_ = peer.qpn;
  peer_pid_ = static_cast<pid_t>(peer.pid);
  // Who may post to our ring.
  slot().peer_pid.store(peer.pid, std::memory_order_relaxed);
  slot().peer_qpn.store(peer.qpn, std::memory_order_relaxed);
  // RESET -> INIT -> RTR -> RTS at once: there is no path to negotiate.
  set_state(QpState::kRts);
  return {};
}

Status QpImpl::set_error() {
  std::lock_guard lock(device_.mutex());
  if (state() != QpState::kError) enter_error();
  return {};
}

// ------------------------------------------------------------------ posting

PostResult QpImpl::post(std::span<const WorkRequest> wrs) noexcept {
  std::lock_guard lock(device_.mutex());
  const SendLimits limits{max_send_sge_, max_inline_, pd_->caps().max_msg_size};
  // Requests are checked against the state the QP had when post() was
  // called, so one that fails as it runs does not make later ones of the
  // same list look unpostable: they are accepted and then flushed, as on a
  // NIC.
  const QpState posted_in = state();
  PostResult result;
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    const WorkRequest& wr = wrs[i];
    StatusCode code;
    std::uint64_t length = 0;
    if (const char* why = swkit::check_post_send(posted_in, wr, limits, sq_.full(), &length, code)) {
      result = PostResult{code, static_cast<std::uint32_t>(i), why};
      break;
    }
    SendWqe w{};
    swkit::fill_send_wqe(w, wr, length);
    // Nothing waits ahead of it (RC order): run it now, straight from the
    // caller's list, when it completes without waiting. Its queue slot is
    // taken all the same: it is busy until a completion covering it is
    // polled.
    if (sq_exec_ == sq_.tail() && state() == QpState::kRts) {
      const Step step = run_now(w, wr.sgl);
      if (step.kind != Step::kWaiting) {
        const std::uint64_t seq = sq_.push();
        ++sq_exec_;
        finish(seq, w, step);
        continue;
      }
    }
    SendWqe& queued = sq_.prepare(wr.sgl, (wr.flags & kWrInline) != 0);
    const std::uint32_t num_sge = queued.num_sge;
    queued = w;
    queued.num_sge = num_sge;
    sq_.push();
  }
  if (sq_exec_ != sq_.tail()) {
    drive();
    // Accepted behind a request that broke the QP: flushed now.
    if (state() == QpState::kError && sq_exec_ != sq_.tail()) enter_error();
  }
  // A request now waits in a ring: when the target is a QP of this device,
  // serving it here saves the caller a poll.
  if (inflight_) device_.progress();
  return result;
}

PostResult QpImpl::post_recv(std::span<const RecvRequest> wrs) noexcept {
  std::lock_guard lock(device_.mutex());
  const PostResult result = swkit::post_receives(rq_, state(), max_recv_sge_, wrs);
  // A SEND or WRITE_WITH_IMM that found no receive (RNR) can go on now.
  serve();
  return result;
}

// ------------------------------------------------------------------ completions

void QpImpl::retire(bool send_queue, std::uint64_t seq) noexcept {
  if (send_queue) {
    sq_.retire(seq);
  } else {
    rq_.retire(seq);
  }
}

void QpImpl::complete_send(std::uint64_t seq, const SendWqe& w, WcStatus status, std::uint32_t byte_len,
                           std::uint32_t vendor_err) noexcept {
  // A lost completion breaks the QP.
  if (!send_cq_->push(swkit::send_completion(w, seq, qpn_, status, byte_len, vendor_err))) needs_error_ = true;
}

void QpImpl::complete_recv(WcStatus status, Opcode opcode, std::uint32_t byte_len, bool has_imm, std::uint32_t imm,
                           std::uint32_t vendor_err) noexcept {
  const std::uint64_t seq = rq_next_++;
  const swkit::CqEntry e =
      swkit::recv_completion(rq_[seq], seq, qpn_, status, opcode, byte_len, has_imm, imm, vendor_err);
  if (!recv_cq_->push(e)) needs_error_ = true;
}

void QpImpl::enter_error() noexcept {
  set_state(QpState::kError);
  rnr_armed_ = false;
  not_ready_armed_ = false;
  // The request in the peer's ring, if the peer has not taken it yet, is
  // withdrawn; it is flushed with the rest either way.
  cancel_inflight();
  // Every request not yet executed, and every receive not yet consumed,
  // completes with WR_FLUSH_ERR, signaled or not.
  (void)swkit::flush_queues(sq_, sq_exec_, rq_, rq_next_, qpn_, *send_cq_, *recv_cq_);
  needs_error_ = false;  // done; flushes lost to an overrun change nothing more
}

}  // namespace rma::shm
