// A Link that loses a fraction of the RoCE frames it is given to send, in
// front of any other Link: the loss of a real, congested Ethernet, injected
// where the software NIC runs between processes or hosts (RMA_SOFTROCE_LOSS),
// for soak runs and for watching recovery by hand. Only IPv4 frames are
// dropped; a port's own control frames (the memif FIN) always pass, so an
// orderly close stays orderly. Each dropped frame counts in
// LinkCounters::tx_loss_injected. No DPDK.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "link/link.hpp"

namespace rma::roce {

class LossyLink final : public Link {
 public:
  // `loss` is the probability that a frame is dropped, in [0, 1); `seed`
  // picks the sequence of drops (a run is repeatable for a given seed).
  LossyLink(std::unique_ptr<Link> inner, double loss, std::uint64_t seed) noexcept;

  std::size_t transmit(std::span<const TxFrame> frames) noexcept override;
  std::size_t poll(FrameSink& sink, std::size_t max) noexcept override { return inner_->poll(sink, max); }
  const LinkInfo& info() const noexcept override { return inner_->info(); }
  LinkCounters counters() const noexcept override;
  void shutdown() noexcept override { inner_->shutdown(); }

 private:
  bool lose(const TxFrame& frame) noexcept;

  std::unique_ptr<Link> inner_;
  std::uint64_t threshold_;  // a frame is lost when the next 64-bit draw is below this
  std::uint64_t state_;      // xorshift64* state: drops need to be cheap, not secret
  // Written by the sending thread only; read by counters() from any thread.
  std::atomic<std::uint64_t> lost_{0};
};

}  // namespace rma::roce
