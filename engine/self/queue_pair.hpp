// Reliable-connected queue pairs of the self provider.
//
// Queues are rings preallocated at creation (send WQEs, their SGEs and
// inline bytes; receive WQEs and their SGEs), indexed by 64-bit sequence
// numbers that never wrap:
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
#include "self/key_table.hpp"
#include "self/vendor_err.hpp"

namespace rma::self {

class QpImpl final : public QueuePair {
 public:
  static Result<std::unique_ptr<QueuePair>> create(std::shared_ptr<PdImpl> pd,
                                                   const QpConfig& config);
  ~QpImpl() override;
  QpImpl(const QpImpl&) = delete;
  QpImpl& operator=(const QpImpl&) = delete;

  std::uint32_t qp_num() const noexcept override { return qpn_; }
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
  bool waiting() const noexcept { return sq_exec_ < sq_tail_ && state() == QpState::kRts; }
  // A completion covering `seq` of the send or receive queue was polled.
  void retire(bool send_queue, std::uint64_t seq) noexcept;

 private:
  using Clock = std::chrono::steady_clock;

  struct SendWqe {
    std::uint64_t wr_id;
    std::uint64_t remote_addr;
    std::uint64_t compare_add;
    std::uint64_t swap;
    std::uint64_t length;  // message bytes (sum of the SGEs)
    std::uint32_t rkey;
    std::uint32_t imm_data;
    std::uint32_t flags;
    std::uint32_t num_sge;  // 0 for inline: the payload is in the inline ring
    Opcode opcode;
  };
  struct RecvWqe {
    std::uint64_t wr_id;
    std::uint32_t num_sge;
  };
  // What executing the head send WQE came to.
  struct Step {
    enum Kind : std::uint8_t { kDone, kBlocked, kFailed } kind = kDone;
    WcStatus status = WcStatus::kSuccess;
    std::uint32_t byte_len = 0;
    std::uint32_t vendor_err = kVeNone;
  };

  QpImpl(std::shared_ptr<PdImpl> pd, const QpConfig& config, std::shared_ptr<CqImpl> send_cq,
         std::shared_ptr<CqImpl> recv_cq) noexcept;
  Status allocate_queues();

  // queue_pair.cpp: posting
  const char* check_send(const WorkRequest& wr, StatusCode& code) const noexcept;
  void enqueue_send(const WorkRequest& wr, std::uint64_t length) noexcept;
  const char* check_recv(const RecvRequest& wr, StatusCode& code) const noexcept;
  void enqueue_recv(const RecvRequest& wr) noexcept;

  // execute.cpp: the requester and responder sides of one work request
  Step execute(const SendWqe& w, std::uint64_t seq, QpImpl*& responder) noexcept;
  Step wait_for_receive(const QpImpl& responder) noexcept;
  std::uint32_t check_local(std::span<const Sge> sgl, std::uint64_t bytes,
                            Access needed) const noexcept;
  std::uint32_t check_remote(std::uint32_t rkey, std::uint64_t addr, std::uint64_t len,
                             Access right) const noexcept;
  void complete_send(std::uint64_t seq, const SendWqe& w, WcStatus status, std::uint32_t byte_len,
                     std::uint32_t vendor_err) noexcept;
  void complete_recv(WcStatus status, Opcode opcode, std::uint32_t byte_len, bool has_imm,
                     std::uint32_t imm, std::uint32_t vendor_err) noexcept;
  void enter_error() noexcept;

  std::span<const Sge> send_sgl(std::uint64_t seq) const noexcept;
  std::span<const Sge> recv_sgl(std::uint64_t seq) const noexcept;
  std::uint8_t* inline_data(std::uint64_t seq) const noexcept;

  std::shared_ptr<PdImpl> pd_;  // children keep parents alive
  std::shared_ptr<CqImpl> send_cq_;
  std::shared_ptr<CqImpl> recv_cq_;
  const std::uint32_t max_send_wr_, max_recv_wr_, max_send_sge_, max_recv_sge_, max_inline_;
  const std::uint8_t rnr_retry_, min_rnr_timer_;
  std::uint32_t qpn_ = 0;
  std::atomic<QpState> state_{QpState::kReset};  // written under the lock, read anywhere

  // ---- fabric lock guards everything below
  std::uint32_t peer_qpn_ = 0;  // valid once connected; looked up on each use
  bool connected_ = false;
  std::vector<QpImpl*> senders_;  // QPs connected to this one: post_recv wakes them

  std::unique_ptr<SendWqe[]> sq_;
  std::unique_ptr<Sge[]> sq_sge_;          // max_send_wr_ * max_send_sge_
  std::unique_ptr<std::uint8_t[]> sq_inline_;  // max_send_wr_ * max_inline_
  std::uint64_t sq_tail_ = 0, sq_exec_ = 0, sq_retired_ = 0;

  std::unique_ptr<RecvWqe[]> rq_;
  std::unique_ptr<Sge[]> rq_sge_;  // max_recv_wr_ * max_recv_sge_
  std::uint64_t rq_tail_ = 0, rq_next_ = 0, rq_retired_ = 0;

  bool rnr_armed_ = false;  // the head waits for a receive with a finite budget
  Clock::time_point rnr_deadline_{};
  // Set when this QP must enter the error state (a completion was lost to a
  // CQ overrun, or it was the responder of a failed request); acted on by
  // drive() once the requester's own completion is out, so the order of
  // completions stays right even when requester and responder are one QP.
  bool needs_error_ = false;
};

}  // namespace rma::self
