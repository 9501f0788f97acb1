// Completion queues of the self provider: a swkit completion ring
// (swkit/completion_ring.hpp: fixed depth, a sticky overrun, entries that
// retire work-queue slots when polled), plus the QPs that send into it, so
// that polling can end an RNR wait.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "rma/sdk/provider.hpp"
#include "self/device.hpp"
#include "swkit/completion_ring.hpp"

namespace rma::self {

class QpImpl;

class CqImpl final : public CompletionQueue {
 public:
  static Result<std::shared_ptr<CqImpl>> create(std::shared_ptr<DeviceImpl> device,
                                                std::uint32_t depth);

  int poll(std::span<Completion> out) noexcept override;
  std::uint32_t depth() const noexcept override { return ring_.depth(); }
  const char* overrun_reason() const noexcept override { return ring_.overrun_reason(); }

  // Fabric lock held. False when the entry was lost because the CQ overran.
  bool push(const swkit::CqEntry& entry) noexcept { return ring_.push(entry); }
  // Fabric lock held. QPs using this CQ as their send CQ: poll() re-drives
  // the waiting ones, so an RNR wait can end without another post.
  void attach_sender(QpImpl* qp);
  void detach_sender(QpImpl* qp) noexcept;

 private:
  explicit CqImpl(std::shared_ptr<DeviceImpl> device) noexcept : device_(std::move(device)) {}

  std::shared_ptr<DeviceImpl> device_;  // children keep parents alive
  swkit::CompletionRing ring_;
  std::vector<QpImpl*> senders_;
};

}  // namespace rma::self
