// Completion queues of the shm provider: a swkit completion ring in this
// process's memory (completions are never shared: each side produces its
// own, the requester from responses, the target from the requests it
// serves). poll() runs a round of the device's progress first, so a
// process that polls needs no progress thread to be served.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "rma/sdk/provider.hpp"
#include "shm/device.hpp"
#include "swkit/completion_ring.hpp"

namespace rma::shm {

class CqImpl final : public CompletionQueue {
 public:
  static Result<std::shared_ptr<CqImpl>> create(std::shared_ptr<DeviceImpl> device, std::uint32_t depth);

  int poll(std::span<Completion> out) noexcept override;
  std::uint32_t depth() const noexcept override { return ring_.depth(); }
  const char* overrun_reason() const noexcept override { return ring_.overrun_reason(); }

  // Device lock held. False when the entry was lost because the CQ overran.
  bool push(const swkit::CqEntry& entry) noexcept { return ring_.push(entry); }
  const DeviceImpl* device() const noexcept { return device_.get(); }

 private:
  explicit CqImpl(std::shared_ptr<DeviceImpl> device) noexcept : device_(std::move(device)) {}

  std::shared_ptr<DeviceImpl> device_;  // children keep parents alive
  swkit::CompletionRing ring_;
};

}  // namespace rma::shm
