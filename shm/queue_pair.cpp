// Queue pair life cycle, connection, receives, completions and the error
// state. Posting and execution are in requester.cpp, serving a peer's
// requests in responder.cpp.
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

static_assert(swkit::kQpPageOffset + sizeof(QpImpl) <= swkit::kCqPageOffset,
              "a QP must end before a CQ begins in its page (swkit/page_placed.hpp)");

QpImpl::QpImpl(std::shared_ptr<PdImpl> pd, const QpConfig& c, std::shared_ptr<CqImpl> send_cq,
               std::shared_ptr<CqImpl> recv_cq) noexcept
    : pd_(std::move(pd)),
      device_(pd_->impl()),
      send_cq_(std::move(send_cq)),
      recv_cq_(std::move(recv_cq)),
      max_send_sge_(c.max_send_sge),
      max_recv_sge_(c.max_recv_sge),
      max_inline_(c.max_inline_data),
      max_msg_size_(pd_->caps().max_msg_size),
      orphans_(swkit::OrphanTracker::instance()),
      rnr_retry_(c.rnr_retry),
      min_rnr_timer_(c.min_rnr_timer),
      serialized_(c.serialized),
      owns_cq_ring_(c.serialized && send_cq_->claim_owner_ring(this)),
      not_ready_budget_(c.timeout == 0 ? std::chrono::nanoseconds(0)
                                       : std::chrono::nanoseconds(std::uint64_t{4096} << c.timeout) *
                                             (c.retry_cnt + 1)) {}

Result<std::unique_ptr<QueuePair>> QpImpl::create(std::shared_ptr<PdImpl> pd, const QpConfig& config) {
  RMA_RETURN_IF_ERROR(check_qp_config(config, pd->caps()));
  auto send_cq = std::dynamic_pointer_cast<CqImpl>(config.send_cq);
  auto recv_cq = std::dynamic_pointer_cast<CqImpl>(config.recv_cq);
  if (!send_cq) return invalid_argument("create_qp: send_cq was not created by the shm provider");
  if (!recv_cq) return invalid_argument("create_qp: recv_cq was not created by the shm provider");
  // A CQ's poll runs its device's progress: the QP's must be the same.
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
  if (qpn_ != 0) {  // registered (creation went through)
    // No progress round reaches the QP once the device lock is let go (a
    // round holds it from start to end), and the slot is cleared before
    // another QP can take it.
    std::lock_guard lock(device_.mutex());
    {
      std::lock_guard send(send_lock_);
      cancel_inflight();
      if (waiting_.load(std::memory_order_relaxed)) end_waiting();
    }
    // Peers connected to us find the slot free (or another QP's): their
    // next request fails with RETRY_EXC_ERR (kVePeerGone).
    slot().qpn.store(0, std::memory_order_release);
    slot().state.store(static_cast<std::uint32_t>(QpState::kReset), std::memory_order_release);
    device_.remove_qp(qpn_, slot_);
  }
  // Completions of ours still in the CQs retire nothing once we are gone;
  // only the send CQ's owner ring can hold ours, and only when we own it.
  send_cq_->forget(&sq_, owns_cq_ring_);
  recv_cq_->forget(&rq_, false);
  if (owns_cq_ring_) send_cq_->release_owner_ring(this);
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
    std::lock_guard lock(send_lock_);
    const QpState s = state();
    if (s != QpState::kReset) {
      return failed_precondition("connect: QP " + dec(qpn_) + " is in state " + std::string(qp_state_name(s)) +
                                 "; only a RESET QP can be connected, and only once");
    }
  }
  // Mapping may take a while (and the segment lock); not under the send lock.
  RMA_ASSIGN_OR_RETURN(std::shared_ptr<Segment> seg, SegmentMap::attach(peer.segment, peer.pid, peer.nonce));
  QpSlot& ps = seg->layout().qp[peer.slot];
  std::lock_guard lock(send_lock_);
  if (state() != QpState::kReset) return failed_precondition("connect: QP " + dec(qpn_) + " was connected meanwhile");
  if (ps.qpn.load(std::memory_order_acquire) != peer.qpn) {
    return not_found("connect: no QP " + dec(peer.qpn) + " exists in process " + dec(peer.pid) + " (destroyed?)");
  }
  if (ps.state.load(std::memory_order_acquire) == static_cast<std::uint32_t>(QpState::kError)) {
    return failed_precondition("connect: peer QP " + dec(peer.qpn) + " is in the error state");
  }
  peer_ = std::move(seg);
  peer_layout_ = &peer_->layout();
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
  std::lock_guard lock(send_lock_);
  if (state() != QpState::kError) enter_error(true);
  return {};
}

// ------------------------------------------------------------------ receives

PostResult QpImpl::post_recv(std::span<const RecvRequest> wrs) noexcept {
  PostResult result;
  {
    std::lock_guard lock(recv_lock_);
    result = swkit::post_receives(rq_, state(), max_recv_sge_, wrs);
  }
  // A SEND or WRITE_WITH_IMM that found no receive (RNR) can go on now.
  serve();
  return result;
}

// ------------------------------------------------------------------ completions

void QpImpl::complete_recv(WcStatus status, Opcode opcode, std::uint32_t byte_len, bool has_imm, std::uint32_t imm,
                           std::uint32_t vendor_err) noexcept {
  const std::uint64_t seq = rq_next_++;
  const swkit::CqEntry e =
      swkit::recv_completion(rq_[seq], seq, qpn_, status, opcode, byte_len, has_imm, imm, vendor_err);
  if (!recv_cq_->push_shared(e, &rq_)) recv_lost_ = true;
}

void QpImpl::begin_waiting() noexcept {
  // Completions from now on go to the shared ring, so what the owner's
  // ring holds must come out of the CQ first (completion_queue.hpp).
  if (owns_cq_ring_) send_cq_->spill_owner();
  waiting_.store(true, std::memory_order_relaxed);
  device_.count_waiting(+1);
}

void QpImpl::end_waiting() noexcept {
  device_.count_waiting(-1);
  // Last: a serialized QP's caller that sees it goes on without the lock.
  waiting_.store(false, std::memory_order_release);
}

void QpImpl::enter_error(bool by_caller) noexcept {
  set_state(QpState::kError);
  if (!serialized_ || by_caller || waiting_.load(std::memory_order_relaxed)) {
    rnr_armed_ = false;
    not_ready_armed_ = false;
    // The request in the peer's ring, if the peer has not taken it yet, is
    // withdrawn; it is flushed with the rest either way.
    cancel_inflight();
    // Every request not yet executed completes with WR_FLUSH_ERR, signaled
    // or not.
    swkit::flush_send_queue(sq_, sq_exec_, qpn_, [&](const swkit::CqEntry& e) { push_send(e); });
    if (waiting_.load(std::memory_order_relaxed)) end_waiting();
    error_pending_ = false;  // done; flushes lost to an overrun change nothing more
  }
  // And every receive not yet consumed.
  std::lock_guard lock(recv_lock_);
  swkit::flush_recv_queue(rq_, rq_next_, qpn_, [&](const swkit::CqEntry& e) { (void)recv_cq_->push_shared(e, &rq_); });
  recv_lost_ = false;
}

}  // namespace rma::shm
