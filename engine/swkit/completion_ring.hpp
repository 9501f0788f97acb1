// The completion queue of a software provider: a fixed ring preallocated to
// the requested depth, after rdma-core rxe's rxe_queue. Producing into a full
// ring overruns it for good, as a verbs CQ overrun does: the provider's
// poll() returns -1 from then on, and overrun_reason() says which
// completion was lost.
//
// Each entry remembers which send- or receive-queue slot it covers, so that
// polling it can retire that slot (and, on the send side, every unsignaled
// request before it): queue occupancy follows verbs, where a slot is busy
// from post until the completion that covers it is polled (work_queue.hpp).
//
// The provider's lock guards push/poll; overrun_reason() may be read
// without it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/status.hpp"

namespace rma::swkit {

struct CqEntry {
  Completion wc;
  bool send_queue = true;  // retires a send-queue slot (else receive-queue)
  std::uint64_t seq = 0;   // the queue sequence number this entry covers
};

class CompletionRing {
 public:
  // Control path: the only allocation. depth must be 1..max_cqe (the
  // device's limit); the error names both, as create_cq reports it.
  Status init(std::uint32_t depth, std::uint32_t max_cqe);

  // False when the entry was lost because the ring overran (now or before).
  bool push(const CqEntry& e) noexcept {
    if (overrun_.load(std::memory_order_relaxed)) return false;
    if (count_ == depth_) return lose(e);
    ring_[(head_ + count_) & mask_] = e;
    ++count_;
    return true;
  }

  // Moves up to out.size() completions out, oldest first, and hands each
  // entry to `retire` (which frees the queue slot it covers).
  template <typename Retire>
  std::uint32_t poll(std::span<Completion> out, Retire&& retire) noexcept {
    const auto n = static_cast<std::uint32_t>(std::min<std::size_t>(out.size(), count_));
    for (std::uint32_t i = 0; i < n; ++i) {
      const CqEntry& e = ring_[head_];
      out[i] = e.wc;
      retire(e);
      head_ = (head_ + 1) & mask_;
    }
    count_ -= n;
    return n;
  }

  bool overrun() const noexcept { return overrun_.load(std::memory_order_relaxed); }
  // "" until the ring overran. Lock-free: reason_ is written before the flag.
  const char* overrun_reason() const noexcept {
    return overrun_.load(std::memory_order_acquire) ? reason_ : "";
  }
  std::uint32_t depth() const noexcept { return depth_; }
  std::uint32_t size() const noexcept { return count_; }

 private:
  bool lose(const CqEntry& lost) noexcept;  // cold, out of line: records the reason

  std::unique_ptr<CqEntry[]> ring_;
  std::uint32_t depth_ = 0;  // entries it holds before it overruns
  std::uint32_t mask_ = 0;   // slots - 1: the depth rounded up to a power of two, indexed by a mask
  std::uint32_t head_ = 0;   // oldest undelivered entry
  std::uint32_t count_ = 0;  // undelivered entries
  std::atomic<bool> overrun_{false};
  char reason_[160] = {};
};

// The opcode a send-queue completion reports for a posted operation:
// ibv_wc_opcode has no _WITH_IMM forms for the requester.
inline Opcode send_completion_opcode(Opcode op) noexcept {
  switch (op) {
    case Opcode::kRdmaWriteWithImm: return Opcode::kRdmaWrite;
    case Opcode::kSendWithImm: return Opcode::kSend;
    default: return op;
  }
}

}  // namespace rma::swkit
