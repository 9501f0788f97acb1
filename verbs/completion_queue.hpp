// Completion queues of the verbs provider: an ibv_cq polled in batches into
// the contract's Completion. An overrun (CQ_ERR, seen by the device's async
// event thread) makes every later poll() return -1, as the contract asks.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <memory>

#include "rma/sdk/provider.hpp"
#include "verbs/device.hpp"

namespace rma::verbs {

class CqImpl final : public CompletionQueue {
 public:
  static Result<std::shared_ptr<CqImpl>> create(std::shared_ptr<DeviceImpl> dev, std::uint32_t depth);
  ~CqImpl() override;

  int poll(std::span<Completion> out) noexcept override;
  // What the device granted (ibv_cq.cqe), which may exceed the depth asked for.
  std::uint32_t depth() const noexcept override { return static_cast<std::uint32_t>(cq_->cqe); }
  const char* overrun_reason() const noexcept override;

  // From the async event thread.
  void mark_overrun() noexcept;
  // create_qp: which queues complete here. Error completions carry no
  // reliable opcode in verbs, so a CQ that only receives reports kRecv.
  void note_use(bool send, bool recv) noexcept;

  ibv_cq* cq() const noexcept { return cq_.get(); }
  DeviceImpl* device() const noexcept { return dev_.get(); }

 private:
  explicit CqImpl(std::shared_ptr<DeviceImpl> dev) : dev_(std::move(dev)) {}

  std::shared_ptr<DeviceImpl> dev_;  // declared first: outlives cq_
  IbvCqPtr cq_;
  // The first failure claims reason_, writes it, then publishes overrun_.
  void fail(const char* what, int detail) noexcept;
  std::atomic<bool> claimed_{false};
  std::atomic<bool> overrun_{false};
  std::atomic<bool> sends_{false};
  std::atomic<bool> recvs_{false};
  char reason_[192] = {};  // written once, before overrun_ is set
};

}  // namespace rma::verbs
