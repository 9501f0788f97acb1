#include "link/lossy_link.hpp"

#include <cmath>

namespace rma::roce {

namespace {
constexpr std::uint16_t kEtherTypeIpv4 = 0x0800;
}

LossyLink::LossyLink(std::unique_ptr<Link> inner, double loss, std::uint64_t seed) noexcept
    : inner_(std::move(inner)),
      // loss in [0, 1): 2^64 * loss fits; ldexp keeps the precision of small losses.
      threshold_(loss <= 0.0 ? 0 : static_cast<std::uint64_t>(std::ldexp(loss, 64))),
      state_(seed == 0 ? 0x9e3779b97f4a7c15ull : seed) {}

bool LossyLink::lose(const TxFrame& frame) noexcept {
  if (threshold_ == 0 || frame.head.size() < 14) return false;
  const std::uint16_t ether_type = static_cast<std::uint16_t>(frame.head[12] << 8 | frame.head[13]);
  if (ether_type != kEtherTypeIpv4) return false;
  state_ ^= state_ >> 12;
  state_ ^= state_ << 25;
  state_ ^= state_ >> 27;
  return state_ * 0x2545f4914f6cdd1dull < threshold_;
}

// Frames before a lost one go out as one burst; the lost one is taken (as
// the wire would take it) and never sent. When the inner link takes fewer
// than offered, the caller offers the rest again, and a frame already judged
// "kept" is judged again then: the loss rate stays the configured one.
std::size_t LossyLink::transmit(std::span<const TxFrame> frames) noexcept {
  std::size_t done = 0;
  while (done < frames.size()) {
    std::size_t run = done;
    while (run < frames.size() && !lose(frames[run])) ++run;
    if (run > done) {
      const std::size_t taken = inner_->transmit(frames.subspan(done, run - done));
      done += taken;
      if (done < run) return done;
    }
    if (run < frames.size()) {
      lost_.store(lost_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      ++done;
    }
  }
  return done;
}

LinkCounters LossyLink::counters() const noexcept {
  LinkCounters c = inner_->counters();
  c.tx_loss_injected += lost_.load(std::memory_order_relaxed);
  return c;
}

}  // namespace rma::roce
