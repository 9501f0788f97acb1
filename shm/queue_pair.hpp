// Reliable-connected queue pairs of the shm provider.
//
// Queues are swkit work queues in this process's memory, indexed by 64-bit
// sequence numbers (swkit/work_queue.hpp):
//
//   send:  retired <= executed <= tail     receive: retired <= consumed <= tail
//
// Execution (requester.cpp), strictly in order:
//   - RDMA WRITE / READ, and atomics on a region in a shared segment we
//     map, run inside post() (or the progress round that reaches them):
//     checks, then a copy or a CPU atomic through the mapping, or
//     process_vm_writev/readv for memory outside a segment. When that
//     returns, the data is at the target, so the completion is written at
//     once.
//   - Other atomics, SEND, SEND_WITH_IMM and WRITE_WITH_IMM go to the
//     target QP's request ring (layout.hpp) and complete when the target's
//     progress (its CQ polls, post_recv, its progress thread) has answered.
//     One such request is in flight per QP; the requests behind it wait, so
//     nothing overtakes (RC order) and completions come out in post order.
// Serving (responder.cpp): the target takes its QP's ring requests in
// order, checks them against its own key table and receive queue, and
// answers through the ring.
//
// Threads and locks. A QP is reached by its callers (post, post_recv,
// set_error, connect, polls of its CQs) and by the device's progress
// rounds (the progress thread's, and those any poll runs, over every QP of
// the device).
//   - send_lock_ guards the requester: the send queue, what waits for the
//     peer, the key and region caches. post() holds it, except on a
//     serialized QP (QpConfig::serialized) while nothing of it waits
//     (`waiting_` false): then post() runs without any lock and nobody else
//     touches the requester, because progress rounds drive a QP only while
//     it waits, and the caller promised that its own calls never overlap.
//     Entering the wait (begin_waiting) takes the lock; leaving it
//     (end_waiting) is the last thing the lock's holder does to the
//     requester, published by `waiting_` (release / acquire).
//   - recv_lock_ guards the target side: the receive queue and the ring it
//     serves.
//   - Order: device lock -> send_lock_ -> recv_lock_ -> the device's key
//     lock, a CQ's shared-ring lock, the peer-mapping lock (leaves).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>

#include "rma/sdk/provider.hpp"
#include "shm/completion_queue.hpp"
#include "shm/device.hpp"
#include "shm/mapped_regions.hpp"
#include "shm/segment.hpp"
#include "swkit/lkey_cache.hpp"
#include "swkit/orphan_tracker.hpp"
#include "swkit/page_placed.hpp"
#include "swkit/vendor_err.hpp"
#include "swkit/work_queue.hpp"

namespace rma::shm {

class QpImpl final : public QueuePair, public swkit::PagePlaced<swkit::kQpPageOffset> {
 public:
  static Result<std::unique_ptr<QueuePair>> create(std::shared_ptr<PdImpl> pd, const QpConfig& config);
  ~QpImpl() override;
  QpImpl(const QpImpl&) = delete;
  QpImpl& operator=(const QpImpl&) = delete;

  std::uint32_t qp_num() const noexcept override { return qpn_; }
  // No packets on any wire: no PSN (the contract's 0).
  std::uint32_t initial_psn() const noexcept override { return 0; }
  QpState state() const noexcept override { return state_.load(std::memory_order_relaxed); }
  Result<EndpointAddress> local_address() const override;
  Status connect(const EndpointAddress& remote) override;
  Status set_error() override;
  PostResult post(std::span<const WorkRequest> wrs) noexcept override;
  PostResult post_recv(std::span<const RecvRequest> wrs) noexcept override;

  // ---- progress rounds (device lock held; none of the QP's)
  // Requester: executes queued work until the queue is empty, the head
  // waits for the target, or the QP leaves RTS; nothing when nothing waits.
  void drive_if_waiting() noexcept;
  // Target: acts on a peer's break request and serves the request ring.
  void serve() noexcept;

 private:
  using Clock = std::chrono::steady_clock;
  using SendWqe = swkit::SendWqe;

  // What executing (or waiting for) the head send WQE came to.
  struct Step {
    enum Kind : std::uint8_t { kDone, kWaiting, kFailed } kind = kDone;
    WcStatus status = WcStatus::kSuccess;
    std::uint32_t byte_len = 0;
    std::uint32_t vendor_err = swkit::kVeNone;
  };
  // The target's answer to one ring request.
  struct Answer {
    WcStatus status = WcStatus::kSuccess;
    std::uint32_t vendor_err = swkit::kVeNone;
    std::uint64_t result = 0;
    bool breaks_target = false;  // the target QP goes to ERROR after answering
  };

  QpImpl(std::shared_ptr<PdImpl> pd, const QpConfig& config, std::shared_ptr<CqImpl> send_cq,
         std::shared_ptr<CqImpl> recv_cq) noexcept;
  QpSlot& slot() const noexcept { return device_.layout().qp[slot_]; }
  void set_state(QpState s) noexcept;

  // ---- requester (requester.cpp); the requester's owner: send_lock_, or
  // a serialized QP's caller while nothing waits
  // The one request of a post(), when nothing waits and it is what a
  // benchmark posts: one SGE (or inline), a WRITE, READ or atomic on a
  // region we map, keys and region in the caches, every check passing. It
  // is run, queued as executed and its completion pushed: true. Anything
  // else: false with nothing done, and post_list() answers (the same
  // checks, in full).
  // The fast paths (post() inlines them; a serialized QP whose completion
  // the send CQ's owner ring, ours, can take now): kSmall, at most
  // kInlineCopyMax bytes, calls nothing; kMid, at most kMidCopyMax bytes
  // where the CPU copies those inline (copy_bytes.hpp), calls nothing
  // either; kCopyCall calls only memcpy.
  // kGeneral: everything else post_now takes (post_general).
  enum class PostPath : std::uint8_t { kGeneral, kSmall, kMid, kCopyCall };
  template <PostPath kPath>
  [[gnu::always_inline]] bool post_now(const WorkRequest& wr) noexcept;
  // post() when its fast paths said no.
  [[gnu::noinline]] PostResult post_general(std::span<const WorkRequest> wrs) noexcept;
  PostResult post_list(std::span<const WorkRequest> wrs) noexcept;
  void drive() noexcept;
  Step execute(const SendWqe& w, std::uint64_t seq) noexcept;
  // What completes without waiting (WRITE/READ, atomics on mapped memory)
  // runs now; kWaiting, with nothing done, for what must wait for the peer
  // to connect or go to its ring (wait_or_issue).
  Step run_now(const SendWqe& w, std::span<const Sge> local) noexcept;
  Step wait_or_issue(const SendWqe& w, std::span<const Sge> local) noexcept;
  // The completion (signaled or error) of the request just executed; an
  // error leaves error_pending_ for the caller (post, drive) to act on.
  void finish(std::uint64_t seq, const SendWqe& w, const Step& step) noexcept;
  Step execute_direct(const SendWqe& w, std::span<const Sge> local) noexcept;
  Step execute_mapped_atomic(const SendWqe& w, std::span<const Sge> local, std::byte* at) noexcept;
  Step issue(const SendWqe& w, std::span<const Sge> local) noexcept;
  Step check_answer() noexcept;
  void cancel_inflight() noexcept;
  std::span<const Sge> local_sgl(const SendWqe& w, std::uint64_t seq, Sge& inline_sge) const noexcept;
  void break_peer() noexcept;
  // A send completion, to the owner's ring of the send CQ while a
  // serialized QP that owns it waits for nothing (its caller's thread),
  // else the shared ring. A lost completion breaks the QP.
  [[gnu::always_inline]] void push_send(const swkit::CqEntry& e) noexcept {
    const bool pushed = owns_cq_ring_ && !waiting_.load(std::memory_order_relaxed) ? send_cq_->push_owner(e, &sq_)
                                                                                  : send_cq_->push_shared(e, &sq_);
    if (!pushed) [[unlikely]] error_pending_ = true;
  }
  // The send queue starts (send_lock_ held, the caller's thread) or stops
  // (send_lock_ held, last) waiting for the peer.
  void begin_waiting() noexcept;
  void end_waiting() noexcept;

  // ---- target (responder.cpp); recv_lock_ held
  // Serves the ring until it is empty or a request waits for a receive;
  // true when the QP must enter the error state (the caller does it
  // without recv_lock_).
  bool serve_ring() noexcept;
  Answer answer(const RingEntry& e) noexcept;
  Answer answer_send(const RingEntry& e, std::span<const Sge> remote) noexcept;
  Answer answer_write_imm(const RingEntry& e, std::span<const Sge> remote) noexcept;
  Answer answer_atomic(const RingEntry& e) noexcept;
  void complete_recv(WcStatus status, Opcode opcode, std::uint32_t byte_len, bool has_imm, std::uint32_t imm,
                     std::uint32_t vendor_err) noexcept;

  // send_lock_ held. ERROR, and WR_FLUSH_ERR for every request not yet
  // executed and every receive not yet consumed. `by_caller`: a call of the
  // QP's caller (post, set_error) rather than a progress round; a round
  // leaves a serialized QP's requester alone unless it waits (then its
  // queue is empty anyway).
  void enter_error(bool by_caller) noexcept;

  std::shared_ptr<PdImpl> pd_;  // children keep parents alive
  DeviceImpl& device_;
  std::shared_ptr<CqImpl> send_cq_;
  std::shared_ptr<CqImpl> recv_cq_;
  const std::uint32_t max_send_sge_, max_recv_sge_, max_inline_;
  const std::uint64_t max_msg_size_;
  swkit::OrphanTracker& orphans_;
  const std::uint8_t rnr_retry_, min_rnr_timer_;
  const bool serialized_;
  // Serialized, and the send CQ's owner ring is ours (the first serialized
  // QP of the CQ that is still there; the others of that CQ complete into
  // its shared ring: completion_queue.hpp).
  const bool owns_cq_ring_;
  // How long a request waits for a peer QP that is not connected yet (RESET
  // or INIT): what a NIC's retry_cnt retransmissions every 4.096 us * 2^timeout
  // would take; zero (timeout 0) waits forever.
  const std::chrono::nanoseconds not_ready_budget_;
  std::uint32_t qpn_ = 0;
  std::uint32_t slot_ = 0;
  std::atomic<QpState> state_{QpState::kReset};  // written under send_lock_, read anywhere

  std::mutex send_lock_;
  std::mutex recv_lock_;
  // The send queue holds work that waits for the peer (sq_exec_ != tail, or
  // a ring request in flight). Changed under send_lock_.
  std::atomic<bool> waiting_{false};

  // ---- the requester's (see above)
  // The peer: its segment (mapped once per process), its layout and QP
  // slot there.
  std::shared_ptr<Segment> peer_;
  const SegmentLayout* peer_layout_ = nullptr;
  QpSlot* peer_slot_ = nullptr;
  std::uint32_t peer_qpn_ = 0;
  pid_t peer_pid_ = 0;
  // The last local key used, and the peer's regions used: the checks, and
  // where mapped ones lie here.
  swkit::LkeyCache lkeys_;
  MappedRegions mapped_;
  std::uint32_t ops_since_liveness_ = 0;  // requests since we asked whether the peer lives

  swkit::WorkQueue<SendWqe> sq_;
  std::uint64_t sq_exec_ = 0;  // next request to execute (the one in flight, if any)

  // The head request waiting in the peer's ring.
  bool inflight_ = false;
  RingEntry* inflight_entry_ = nullptr;
  std::uint64_t ring_seq_ = 0;  // requests this QP has put in the peer's ring
  bool rnr_armed_ = false;      // the target found no receive; budget finite
  Clock::time_point rnr_deadline_{};
  Clock::time_point next_liveness_check_{};
  bool not_ready_armed_ = false;  // the head waits for the peer to connect
  Clock::time_point not_ready_deadline_{};
  // A request failed, or a send completion was lost to a CQ overrun: the
  // QP enters ERROR once the current step is complete.
  bool error_pending_ = false;

  // ---- the target's (recv_lock_)
  swkit::WorkQueue<swkit::RecvWqe> rq_;
  std::uint64_t rq_next_ = 0;     // next receive to consume
  std::uint64_t served_seq_ = 0;  // next ring request to serve
  bool recv_lost_ = false;        // a receive completion was lost to a CQ overrun: ERROR after this request
};

}  // namespace rma::shm
