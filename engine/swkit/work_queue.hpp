// The send and receive queues of a software QP, after rdma-core rxe's
// rxe_queue: rings preallocated at QP creation (WQEs, their SGEs and, on the
// send side, inline bytes), indexed by 64-bit sequence numbers that never
// wrap. Row seq % rows holds request seq (rows: the depth rounded up to a
// power of two); its SGEs sit in a fixed max_sge-wide row and its inline
// bytes in a max_inline-wide row, so
// posting copies into memory that is already there (no allocation on the
// data path) and the data path finds a request's SGEs by arithmetic.
//
// Occupancy follows verbs: a slot is busy from post until the completion
// covering it is polled (retire()); [retired, tail) is what "queue full"
// counts. Where execution stands between the two is the provider's (self
// executes in order at post, softroce has send/ack positions and PSNs).
// The poller that retires and the thread that posts may hold different
// locks (shm locks its CQs apart from its QPs), so the retired position is
// an atomic: one writer at a time, read by the poster.
//
// Also here: the post-time checks every software QP makes (state, request
// shape, queue space) and the completion entries a QP produces.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <new>
#include <span>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/provider_checks.hpp"
#include "rma/sdk/status.hpp"
#include "swkit/completion_ring.hpp"

namespace rma::swkit {

// What a send WQE holds of its work request. A provider that keeps more per
// request (PSNs, a deferred error) derives from it.
struct SendWqe {
  std::uint64_t wr_id;
  std::uint64_t remote_addr;
  std::uint64_t compare_add;
  std::uint64_t swap;
  std::uint32_t length;    // message bytes (sum of the SGEs; max_msg_size keeps it in 32 bits)
  std::uint32_t rkey;
  std::uint32_t imm_data;
  std::uint32_t flags;
  std::uint32_t num_sge;   // 0 for inline: the payload is in the inline row
  Opcode opcode;
};

struct RecvWqe {
  std::uint64_t wr_id;
  std::uint32_t num_sge;
};

// SGE and inline rows plus occupancy; the WQE array is WorkQueue's.
class WorkQueueStorage {
 public:
  // Control path: everything the data path touches is allocated here, once.
  Status init(std::uint32_t depth, std::uint32_t max_sge, std::uint32_t max_inline);

  std::uint32_t depth() const noexcept { return depth_; }
  std::size_t rows() const noexcept { return static_cast<std::size_t>(mask_) + 1; }
  std::uint64_t tail() const noexcept { return tail_; }
  bool full() const noexcept { return tail_ - retired_.load(std::memory_order_relaxed) >= depth_; }
  // A completion covering `seq` was polled: it and every earlier request of
  // this queue (the unsignaled ones too, as completions of one queue are
  // produced in order) leave the queue. One retiring thread at a time.
  void retire(std::uint64_t seq) noexcept {
    if (seq + 1 > retired_.load(std::memory_order_relaxed)) retired_.store(seq + 1, std::memory_order_relaxed);
  }

  std::uint8_t* inline_data(std::uint64_t seq) const noexcept {
    return inline_.get() + slot(seq) * max_inline_;
  }
  // The row of request `seq`. Rows are a power of two (depth rounded up),
  // so this is a mask: a modulo by the depth was a 64-bit division on every
  // access of the data path.
  std::size_t slot(std::uint64_t seq) const noexcept { return static_cast<std::size_t>(seq & mask_); }

 protected:
  std::span<const Sge> sgl(std::uint64_t seq, std::uint32_t num_sge) const noexcept {
    return {sge_.get() + slot(seq) * max_sge_, num_sge};
  }
  // Copies the list into seq's row; the caller checked its length.
  std::uint32_t store_sgl(std::uint64_t seq, std::span<const Sge> sgl) noexcept {
    std::copy(sgl.begin(), sgl.end(), sge_.get() + slot(seq) * max_sge_);
    return static_cast<std::uint32_t>(sgl.size());
  }
  // Gathers the list's bytes into seq's inline row now, so the caller may
  // reuse its buffers as soon as post() returns; lkeys are not looked at.
  void store_inline(std::uint64_t seq, std::span<const Sge> sgl) noexcept;

  std::uint64_t tail_ = 0;
  std::atomic<std::uint64_t> retired_{0};

 private:
  std::unique_ptr<Sge[]> sge_;              // rows() * max_sge
  std::unique_ptr<std::uint8_t[]> inline_;  // rows() * max_inline
  std::uint32_t depth_ = 0, max_sge_ = 0, max_inline_ = 0;
  std::uint64_t mask_ = 0;                  // rows - 1
};

// Wqe is SendWqe, RecvWqe or a type derived from one of them.
template <typename Wqe>
class WorkQueue : public WorkQueueStorage {
 public:
  Status init(std::uint32_t depth, std::uint32_t max_sge, std::uint32_t max_inline) {
    RMA_RETURN_IF_ERROR(WorkQueueStorage::init(depth, max_sge, max_inline));
    wqe_.reset(new (std::nothrow) Wqe[rows()]());
    if (!wqe_) return resource_exhausted("create_qp: cannot allocate the work queues");
    return {};
  }

  Wqe& operator[](std::uint64_t seq) const noexcept { return wqe_[slot(seq)]; }
  std::span<const Sge> sgl(std::uint64_t seq) const noexcept {
    return WorkQueueStorage::sgl(seq, (*this)[seq].num_sge);
  }

  // Posting: a fresh WQE at the tail whose SGEs (or, inline, bytes) are
  // stored; the caller fills in the rest, then calls push().
  Wqe& prepare(std::span<const Sge> list, bool inline_payload) noexcept {
    Wqe& w = (*this)[tail_];
    // Copied from an empty WQE, not assigned Wqe{}: GCC clears an object of
    // this size with `rep stosq`, whose start-up cost was a third of
    // softroce's post() for an 8-byte WRITE (perf annotate); a copy is a
    // handful of vector moves.
    static constexpr Wqe kEmpty{};
    w = kEmpty;
    if (inline_payload) {
      store_inline(tail_, list);
      w.num_sge = 0;
    } else {
      w.num_sge = store_sgl(tail_, list);
    }
    return w;
  }
  std::uint64_t push() noexcept { return tail_++; }

 private:
  std::unique_ptr<Wqe[]> wqe_;
};

// Fills the fields every send WQE holds; `length` is check_post_send's total.
inline void fill_send_wqe(SendWqe& w, const WorkRequest& wr, std::uint64_t length) noexcept {
  w.wr_id = wr.wr_id;
  w.remote_addr = wr.remote_addr;
  w.compare_add = wr.compare_add;
  w.swap = wr.swap;
  w.length = static_cast<std::uint32_t>(length);
  w.rkey = wr.rkey;
  w.imm_data = wr.imm_data;
  w.flags = wr.flags;
  w.opcode = wr.opcode;
}

// post(): a send request is accepted when the QP is in RTS, the request
// passes check_send_wr under `limits`, and the queue has room. nullptr when
// accepted (with *total the message length), else a static reason and
// `code`.
const char* check_post_send(QpState state, const WorkRequest& wr, const SendLimits& limits, bool queue_full,
                            std::uint64_t* total, StatusCode& code) noexcept;
// check_post_send with the requests a benchmark posts answered inline (one
// SGE; RDMA WRITE, inline or not, RDMA READ, 8-byte atomics): the same
// acceptance, without the call and the general walk; anything else, and
// every rejection, goes to check_post_send for its reason.
inline const char* check_post_send_fast(QpState state, const WorkRequest& wr, const SendLimits& limits,
                                        bool queue_full, std::uint64_t* total, StatusCode& code) noexcept {
  if (state == QpState::kRts && !queue_full && wr.sgl.size() == 1 && limits.max_send_sge >= 1) {
    const std::uint32_t len = wr.sgl[0].length;
    // Signaled, fence and solicited change nothing that is checked here.
    const std::uint32_t flags = wr.flags & ~static_cast<std::uint32_t>(kWrSignaled | kWrFence | kWrSolicited);
    bool ok = false;
    switch (wr.opcode) {
      case Opcode::kRdmaWrite:
        ok = flags == 0 || (flags == kWrInline && len <= limits.max_inline_data);
        break;
      case Opcode::kRdmaRead:
        ok = flags == 0;
        break;
      case Opcode::kAtomicFetchAdd:
      case Opcode::kAtomicCmpSwap:
        ok = flags == 0 && len == 8 && (wr.remote_addr & 7u) == 0;
        break;
      default:
        break;
    }
    if (ok && len <= limits.max_msg_size) {
      *total = len;
      code = StatusCode::kOk;
      return nullptr;
    }
  }
  return check_post_send(state, wr, limits, queue_full, total, code);
}

// post_recv(): any state but RESET and ERROR, at most `max_sge` SGEs, room.
const char* check_post_recv(QpState state, const RecvRequest& wr, std::uint32_t max_sge, bool queue_full,
                            StatusCode& code) noexcept;

// post() of a software QP: checks each request (check_post_send) and queues
// it: SGEs or inline bytes stored, the common WQE fields filled, then
// `queued(wqe, seq)` for what the provider keeps besides. The first request
// that fails stops the list and is reported (verbs' bad_wr); those before
// it stay queued.
template <typename Wqe, typename Queued>
PostResult post_sends(WorkQueue<Wqe>& sq, QpState state, const SendLimits& limits,
                      std::span<const WorkRequest> wrs, Queued&& queued) noexcept {
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    const WorkRequest& wr = wrs[i];
    StatusCode code;
    std::uint64_t length = 0;
    if (const char* why = check_post_send(state, wr, limits, sq.full(), &length, code)) {
      return PostResult{code, static_cast<std::uint32_t>(i), why};
    }
    Wqe& w = sq.prepare(wr.sgl, (wr.flags & kWrInline) != 0);
    fill_send_wqe(w, wr, length);
    queued(w, sq.tail());
    sq.push();
  }
  return {};
}

// post_recv() of a software QP, the same way.
PostResult post_receives(WorkQueue<RecvWqe>& rq, QpState state, std::uint32_t max_sge,
                         std::span<const RecvRequest> wrs) noexcept;

// The completion of send request `seq` (byte_len only counts on success).
inline CqEntry send_completion(const SendWqe& w, std::uint64_t seq, std::uint32_t qpn, WcStatus status,
                               std::uint32_t byte_len, std::uint32_t vendor_err) noexcept {
  CqEntry e;
  e.wc.wr_id = w.wr_id;
  e.wc.status = status;
  e.wc.opcode = send_completion_opcode(w.opcode);
  e.wc.byte_len = status == WcStatus::kSuccess ? byte_len : 0;
  e.wc.qp_num = qpn;
  e.wc.vendor_err = vendor_err;
  e.send_queue = true;
  e.seq = seq;
  return e;
}

// The completion of receive `seq`.
inline CqEntry recv_completion(const RecvWqe& w, std::uint64_t seq, std::uint32_t qpn, WcStatus status,
                               Opcode opcode, std::uint32_t byte_len, bool has_imm, std::uint32_t imm,
                               std::uint32_t vendor_err) noexcept {
  CqEntry e;
  e.wc.wr_id = w.wr_id;
  e.wc.status = status;
  e.wc.opcode = opcode;
  e.wc.has_imm = has_imm;
  e.wc.imm_data = has_imm ? imm : 0;
  e.wc.byte_len = byte_len;
  e.wc.qp_num = qpn;
  e.wc.vendor_err = vendor_err;
  e.send_queue = false;
  e.seq = seq;
  return e;
}

}  // namespace rma::swkit
