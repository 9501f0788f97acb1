// Flushing a software QP when it enters the error state (IBA 10.7.3.1,
// rxe's flush): every send request not yet executed and every receive not
// yet consumed completes with WR_FLUSH_ERR, signaled or not, in queue
// order. What "executed" and "consumed" mean is the provider's (self runs
// requests at post time, shm has one in a peer's ring); the positions and
// the completions are the kit's.
#pragma once

#include <cstdint>

#include "swkit/vendor_err.hpp"
#include "swkit/work_queue.hpp"

namespace rma::swkit {

// Advances `exec` to the send queue's tail, handing one WR_FLUSH_ERR
// completion for each request passed to `push` (a callable taking a const
// CqEntry&).
template <typename Wqe, typename Push>
void flush_send_queue(const WorkQueue<Wqe>& sq, std::uint64_t& exec, std::uint32_t qpn, Push&& push) noexcept {
  while (exec < sq.tail()) {
    const std::uint64_t seq = exec++;
    push(send_completion(sq[seq], seq, qpn, WcStatus::kWrFlushErr, 0, kVeFlushed));
  }
}

// The same for the receive queue from `next`.
template <typename Push>
void flush_recv_queue(const WorkQueue<RecvWqe>& rq, std::uint64_t& next, std::uint32_t qpn, Push&& push) noexcept {
  while (next < rq.tail()) {
    const std::uint64_t seq = next++;
    push(recv_completion(rq[seq], seq, qpn, WcStatus::kWrFlushErr, Opcode::kRecv, 0, false, 0, kVeFlushed));
  }
}

// Both queues, into send_cq / recv_cq (anything with bool push(const
// CqEntry&)). False when a completion was lost to a CQ overrun.
template <typename Wqe, typename Cq>
bool flush_queues(const WorkQueue<Wqe>& sq, std::uint64_t& exec, const WorkQueue<RecvWqe>& rq, std::uint64_t& next,
                  std::uint32_t qpn, Cq& send_cq, Cq& recv_cq) noexcept {
  bool all = true;
  flush_send_queue(sq, exec, qpn, [&](const CqEntry& e) { all &= send_cq.push(e); });
  flush_recv_queue(rq, next, qpn, [&](const CqEntry& e) { all &= recv_cq.push(e); });
  return all;
}

}  // namespace rma::swkit
