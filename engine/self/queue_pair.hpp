// Reliable-connected queue pairs of the self provider.
//
// Queues are swkit work queues (swkit/work_queue.hpp), indexed by 64-bit
// sequence numbers that never wrap:
//
//   send:  retired <= executed <= tail     receive: retired <= consumed <= tail
//
// [retired, tail) is the occupancy that "queue full" counts; a slot retires
// when the completion covering it is polled (see completion_queue.hpp).
//
// Work requests execute in order on the caller's thread inside post(), or
// inside the peer's post_recv() when they were waiting for a receive (RNR),
// or inside poll() of the send CQ when a finite RNR budget runs out. All of
// it under the fabric lock (see fabric.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "rma/sdk/provider.hpp"
#include "self/completion_queue.hpp"
#include "self/device.hpp"
#include "swkit/vendor_err.hpp"
#include "swkit/work_queue.hpp"

namespace rma::self {

class QpImpl final : public QueuePair {
 public:
  static Result<std::unique_ptr<QueuePair>> create(std::shared_ptr<PdImpl> pd,
                                                   const QpConfig& config);
  ~QpImpl() override;
  QpImpl(const QpImpl&) = delete;
  QpImpl& operator=(const QpImpl&) = delete;

  std::uint32_t qp_num() const noexcept override { return qpn_; }
  // In-process: requests are executed, never sent as packets.
  std::uint32_t initial_psn() const noexcept override { return 0; }
  QpState state() const noexcept override { return state_.load(std::memory_order_relaxed); }
  Result<EndpointAddress> local_address() const override;
  Status connect(const EndpointAddress& remote) override;
  Status set_error() override;
  PostResult post(std::span<const WorkRequest> wrs) noexcept override;
  PostResult post_recv(std::span<const RecvRequest> wrs) noexcept override;

  // ---- fabric lock held
  // Executes queued send work requests until the queue is empty, the head
  // waits for a receive, or the QP leaves RTS.
  void drive() noexcept;
  // The head request is waiting (for a receive at the peer): something
  // outside this QP — a receive, an expired RNR budget, a vanished peer —
  // may let it move on.
  bool waiting() const noexcept { return sq_exec_ < sq_.tail() && state() == QpState::kRts; }
  // A completion covering `seq` of the send or receive queue was polled.
  void retire(bool send_queue, std::uint64_t seq) noexcept;

 private:
  using Clock = std::chrono::steady_clock;

  using SendWqe = swkit::SendWqe;
  // What executing the head send WQE came to.
  struct Step {
    enum Kind : std::uint8_t { kDone, kBlocked, kFailed } kind = kDone;
    WcStatus status = WcStatus::kSuccess;
    std::uint32_t byte_len = 0;
    std::uint32_t vendor_err = swkit::kVeNone;
  };

  QpImpl(std::shared_ptr<PdImpl> pd, const QpConfig& config, std::shared_ptr<CqImpl> send_cq,
         std::shared_ptr<CqImpl> recv_cq) noexcept;
  Status allocate_queues(const QpConfig& config);

  // execute.cpp: the requester and responder sides of one work request
  Step execute(const SendWqe& w, std::uint64_t seq, QpImpl*& responder) noexcept;
  Step wait_for_receive(const QpImpl& responder) noexcept;
  std::uint32_t check_local(std::span<const Sge> sgl, std::uint64_t bytes,
                            Access needed) const noexcept;
  void complete_send(std::uint64_t seq, const SendWqe& w, WcStatus status, std::uint32_t byte_len,
                     std::uint32_t vendor_err) noexcept;
  void complete_recv(WcStatus status, Opcode opcode, std::uint32_t byte_len, bool has_imm,
                     std::uint32_t imm, std::uint32_t vendor_err) noexcept;
  void enter_error() noexcept;

  std::shared_ptr<PdImpl> pd_;  // children keep parents alive
  std::shared_ptr<CqImpl> send_cq_;
  std::shared_ptr<CqImpl> recv_cq_;
  const std::uint32_t max_send_sge_, max_recv_sge_, max_inline_;
  const std::uint8_t rnr_retry_, min_rnr_timer_;
  std::uint32_t qpn_ = 0;
  std::atomic<QpState> state_{QpState::kReset};  // written under the lock, read anywhere

  // ---- fabric lock guards everything below
  std::uint32_t peer_qpn_ = 0;  // valid once connected; looked up on each use
  bool connected_ = false;
  std::vector<QpImpl*> senders_;  // QPs connected to this one: post_recv wakes them

  swkit::WorkQueue<SendWqe> sq_;
  std::uint64_t sq_exec_ = 0;  // next request to execute
  swkit::WorkQueue<swkit::RecvWqe> rq_;
  std::uint64_t rq_next_ = 0;  // next receive to consume

  bool rnr_armed_ = false;  // the head waits for a receive with a finite budget
  Clock::time_point rnr_deadline_{};
  // Set when this QP must enter the error state (a completion was lost to a
  // CQ overrun, or it was the responder of a failed request); acted on by
  // drive() once the requester's own completion is out, so the order of
  // completions stays right even when requester and responder are one QP.
  bool needs_error_ = false;
};

}  // namespace rma::self
