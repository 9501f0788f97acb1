// Reliable-connected queue pairs of the verbs provider: RESET -> INIT ->
// RTR -> RTS from an exchanged EndpointAddress (or driven by rdma_cm, see
// connection_manager.cpp), and post()/post_recv() converting the contract's
// requests into ibv_send_wr/ibv_recv_wr lists on the stack: one
// ibv_post_send per up to kPostChunk requests, no allocation.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <memory>

#include "rma/sdk/provider.hpp"
#include "verbs/completion_queue.hpp"
#include "verbs/device.hpp"

namespace rma::verbs {

class CmConnection;  // connection_manager.cpp

class QpImpl final : public QueuePair {
 public:
  static constexpr std::size_t kPostChunk = 32;
  static constexpr std::size_t kPostChunkSges = 64;

  static Result<std::unique_ptr<QpImpl>> create(std::shared_ptr<PdImpl> pd, const QpConfig& config);
  ~QpImpl() override;

  std::uint32_t qp_num() const noexcept override { return qp_->qp_num; }
  std::uint32_t initial_psn() const noexcept override { return psn_; }  // the sq_psn given at RTR->RTS
  // Asks the device (ibv_query_qp): a QP that failed a work request is in
  // the error state although nobody called set_error().
  QpState state() const noexcept override;
  Result<EndpointAddress> local_address() const override;
  Status connect(const EndpointAddress& remote) override;
  Status set_error() override;
  PostResult post(std::span<const WorkRequest> wrs) noexcept override;
  PostResult post_recv(std::span<const RecvRequest> wrs) noexcept override;

  // For the connection manager and the async event thread.
  Status modify(ibv_qp_attr& attr, int mask, const char* step);
  void set_state(QpState s) noexcept { state_.store(s, std::memory_order_release); }
  void mark_error() noexcept { set_state(QpState::kError); }
  void adopt_connection(std::unique_ptr<CmConnection> cm) noexcept;
  const QpConfig& config() const noexcept { return config_; }
  PdImpl& pd() noexcept { return *pd_; }
  ibv_qp* qp() const noexcept { return qp_.get(); }

 private:
  QpImpl(std::shared_ptr<PdImpl> pd, const QpConfig& config, std::shared_ptr<CqImpl> scq,
         std::shared_ptr<CqImpl> rcq);
  PostResult flush_chunk(ibv_send_wr* wrs, std::size_t count, std::size_t first_index) noexcept;

  std::shared_ptr<PdImpl> pd_;  // parents first: they outlive qp_
  std::shared_ptr<CqImpl> scq_;
  std::shared_ptr<CqImpl> rcq_;
  QpConfig config_;
  std::uint64_t max_msg_size_ = 0;
  std::uint32_t psn_ = 0;
  std::atomic<QpState> state_{QpState::kReset};
  IbvQpPtr qp_;
  std::unique_ptr<CmConnection> cm_;  // rdma_cm connections only
};

}  // namespace rma::verbs
