// Reliable-connected queue pairs of the shm provider.
//
// Queues are swkit work queues in this process's memory, indexed by 64-bit
// sequence numbers (swkit/work_queue.hpp):
//
//   send:  retired <= executed <= tail     receive: retired <= consumed <= tail
//
// Execution (requester.cpp), strictly in order:
//   - RDMA WRITE / READ run inside post() (or the progress round that
//     reaches them): the requester checks the target's shared region table
//     and copies with process_vm_writev/readv. When that returns, the data is
//     at the target, so the completion is written at once.
//   - Atomics, SEND, SEND_WITH_IMM and WRITE_WITH_IMM go to the target QP's
//     request ring (layout.hpp) and complete when the target's progress
//     (its CQ polls, post_recv, its progress thread) has answered. One such
//     request is in flight per QP; the requests behind it wait, so nothing
//     overtakes (RC order) and completions come out in post order.
// Serving (responder.cpp): the target takes its QP's ring requests in
// order, checks them against its own key table and receive queue, and
// answers through the ring.
//
// Everything here runs under the device lock.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>

#include "rma/sdk/provider.hpp"
#include "shm/completion_queue.hpp"
#include "shm/device.hpp"
#include "shm/mapped_regions.hpp"
#include "shm/segment.hpp"
#include "swkit/vendor_err.hpp"
#include "swkit/work_queue.hpp"

namespace rma::shm {

class QpImpl final : public QueuePair {
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

  // ---- device lock held
  // Requester: executes queued work until the queue is empty, the head
  // waits for the target, or the QP leaves RTS.
  void drive() noexcept;
  bool has_send_work() const noexcept {
    return state() == QpState::kRts && (inflight_ || sq_exec_ < sq_.tail());
  }
  // Target: acts on a peer's break request and serves the request ring.
  void serve() noexcept;
  // A completion covering `seq` of the send or receive queue was polled.
  void retire(bool send_queue, std::uint64_t seq) noexcept;

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

  // requester.cpp
  Step execute(const SendWqe& w, std::uint64_t seq) noexcept;
  // What completes without waiting (WRITE/READ, atomics on mapped memory)
  // runs now; kWaiting, with nothing done, for what must wait for the peer
  // to connect or go to its ring (wait_or_issue).
  Step run_now(const SendWqe& w, std::span<const Sge> local) noexcept;
  Step wait_or_issue(const SendWqe& w, std::span<const Sge> local) noexcept;
  // The completion (signaled or error) of the request just executed.
  void finish(std::uint64_t seq, const SendWqe& w, const Step& step) noexcept;
  Step execute_direct(const SendWqe& w, std::span<const Sge> local) noexcept;
  Step execute_mapped_atomic(const SendWqe& w, std::span<const Sge> local, std::byte* at) noexcept;
  Step issue(const SendWqe& w, std::span<const Sge> local) noexcept;
  Step check_answer() noexcept;
  void cancel_inflight() noexcept;
  std::span<const Sge> local_sgl(const SendWqe& w, std::uint64_t seq, Sge& inline_sge) const noexcept;
  void break_peer() noexcept;
  // responder.cpp
  Answer answer(const RingEntry& e) noexcept;
  Answer answer_send(const RingEntry& e, std::span<const Sge> remote) noexcept;
  Answer answer_write_imm(const RingEntry& e, std::span<const Sge> remote) noexcept;
  Answer answer_atomic(const RingEntry& e) noexcept;

  void complete_send(std::uint64_t seq, const SendWqe& w, WcStatus status, std::uint32_t byte_len,
                     std::uint32_t vendor_err) noexcept;
  void complete_recv(WcStatus status, Opcode opcode, std::uint32_t byte_len, bool has_imm, std::uint32_t imm,
                     std::uint32_t vendor_err) noexcept;
  void enter_error() noexcept;

  std::shared_ptr<PdImpl> pd_;  // children keep parents alive
  DeviceImpl& device_;
  std::shared_ptr<CqImpl> send_cq_;
  std::shared_ptr<CqImpl> recv_cq_;
  const std::uint32_t max_send_sge_, max_recv_sge_, max_inline_;
  const std::uint8_t rnr_retry_, min_rnr_timer_;
  // How long a request waits for a peer QP that is not connected yet (RESET
  // or INIT): what a NIC's retry_cnt retransmissions every 4.096 us * 2^timeout
  // would take; zero (timeout 0) waits forever.
  const std::chrono::nanoseconds not_ready_budget_;
  std::uint32_t qpn_ = 0;
  std::uint32_t slot_ = 0;
  std::atomic<QpState> state_{QpState::kReset};  // written under the lock, read anywhere

  // ---- device lock guards everything below
  // The peer: its segment (mapped once per process), its QP slot there.
  std::shared_ptr<Segment> peer_;
  QpSlot* peer_slot_ = nullptr;
  std::uint32_t peer_qpn_ = 0;
  pid_t peer_pid_ = 0;
  // The peer's regions we used: checks, and where mapped ones lie here.
  MappedRegions mapped_;
  std::uint32_t ops_since_liveness_ = 0;  // requests since we asked whether the peer lives

  swkit::WorkQueue<SendWqe> sq_;
  std::uint64_t sq_exec_ = 0;  // next request to execute (the one in flight, if any)
  swkit::WorkQueue<swkit::RecvWqe> rq_;
  std::uint64_t rq_next_ = 0;  // next receive to consume

  // The head request waiting in the peer's ring.
  bool inflight_ = false;
  RingEntry* inflight_entry_ = nullptr;
  std::uint64_t ring_seq_ = 0;  // requests this QP has put in the peer's ring
  bool rnr_armed_ = false;      // the target found no receive; budget finite
  Clock::time_point rnr_deadline_{};
  Clock::time_point next_liveness_check_{};
  bool not_ready_armed_ = false;  // the head waits for the peer to connect
  Clock::time_point not_ready_deadline_{};

  std::uint64_t served_seq_ = 0;  // target: next ring request to serve

  // Set when a completion was lost to a CQ overrun, or a served request
  // broke this QP: the QP enters ERROR once the current step is complete.
  bool needs_error_ = false;
};

}  // namespace rma::shm
