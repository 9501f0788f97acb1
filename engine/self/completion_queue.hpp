// Completion queues of the self provider: a fixed ring preallocated to the
// requested depth. Producing into a full ring overruns it for good, as a
// verbs CQ overrun does: poll() returns -1 from then on.
//
// Each entry remembers which send- or receive-queue slot it covers, so that
// polling it can retire that slot (and, on the send side, every unsignaled
// request before it): queue occupancy follows verbs, where a slot is busy
// from post until the completion that covers it is polled.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "rma/sdk/provider.hpp"
#include "self/device.hpp"

namespace rma::self {

class QpImpl;

struct CqEntry {
  Completion wc;
  bool send_queue = true;  // retires a send-queue slot (else receive-queue)
  std::uint64_t seq = 0;   // the queue sequence number this entry covers
};

class CqImpl final : public CompletionQueue {
 public:
  static Result<std::shared_ptr<CqImpl>> create(std::shared_ptr<DeviceImpl> device,
                                                std::uint32_t depth);

  int poll(std::span<Completion> out) noexcept override;
  std::uint32_t depth() const noexcept override { return depth_; }
  const char* overrun_reason() const noexcept override;

  // Fabric lock held. False when the entry was lost because the CQ overran.
  bool push(const CqEntry& entry) noexcept;
  // Fabric lock held. QPs using this CQ as their send CQ: poll() re-drives
  // the waiting ones, so an RNR wait can end without another post.
  void attach_sender(QpImpl* qp);
  void detach_sender(QpImpl* qp) noexcept;

 private:
  CqImpl(std::shared_ptr<DeviceImpl> device, std::unique_ptr<CqEntry[]> ring,
         std::uint32_t depth) noexcept
      : device_(std::move(device)), ring_(std::move(ring)), depth_(depth) {}

  std::shared_ptr<DeviceImpl> device_;  // children keep parents alive
  std::unique_ptr<CqEntry[]> ring_;
  const std::uint32_t depth_;
  std::uint32_t head_ = 0;   // oldest undelivered entry
  std::uint32_t count_ = 0;  // undelivered entries
  std::vector<QpImpl*> senders_;
  // Set once, after reason_ is written; overrun_reason() reads without the lock.
  std::atomic<bool> overrun_{false};
  char reason_[160] = {};
};

}  // namespace rma::self
