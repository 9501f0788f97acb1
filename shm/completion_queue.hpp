// Completion queues of the shm provider. Completions are never shared
// between processes: each side produces its own, the requester from what
// it executed or the answers it got, the target from the requests it
// serves.
//
// Two rings of `depth` entries, one depth between them:
//   - the owner's ring: what a serialized QP (QpConfig::serialized)
//     completes on its caller's thread while nothing of it waits for a peer
//     (the mapped WRITEs, READs and atomics post() runs at once). Pushed
//     and polled without a lock: the caller promised that its posts and
//     the polls of its CQs never run at once. One QP owns it at a time
//     (claim_owner_ring: the first serialized QP created on this CQ as its
//     send CQ, until it is destroyed): two serialized QPs of one CQ may be
//     posted to from two threads at once, so the others push to the shared
//     ring.
//   - the shared ring, under a lock: everything else (QPs without that
//     promise, work that waited for a peer, receives, flushes, whatever a
//     progress round on another thread completes).
// poll() empties the shared ring before it takes from the owner's. That
// keeps each queue's completions in order: a serialized QP's completions
// go to the owner's ring only while nothing of it waits, and it moves the
// owner's ring to the end of the shared one (spill_owner) before it starts
// to wait; so an entry in the owner's ring is newer than every entry of its
// queue in the shared ring.
//
// Overrun: a push that finds depth entries waiting loses its completion
// and overruns the CQ for good, as in verbs. A push to one ring and a push
// to the other that race can both find room for the last entry; each ring
// has room for `depth`, so nothing is overwritten, and the next poll finds
// more than depth entries waiting and reports the overrun then.
//
// poll() runs a round of the device's progress first when there is
// anything for one to do (DeviceImpl::progress_due), so a process that
// polls needs no progress thread to be served.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>

#include "rma/sdk/provider.hpp"
#include "shm/device.hpp"
#include "swkit/completion_ring.hpp"
#include "swkit/page_placed.hpp"
#include "swkit/work_queue.hpp"

namespace rma::shm {

class CqImpl final : public CompletionQueue, public swkit::PagePlaced<swkit::kCqPageOffset> {
 public:
  static Result<std::shared_ptr<CqImpl>> create(std::shared_ptr<DeviceImpl> device, std::uint32_t depth);

  int poll(std::span<Completion> out) noexcept override;
  std::uint32_t depth() const noexcept override { return depth_; }
  const char* overrun_reason() const noexcept override;

  // `queue` is the work queue whose slot `entry` retires when it is polled
  // (null: none). False when the entry was lost because the CQ overran.
  //
  // The owner's ring: the caller thread of the serialized QP that owns it,
  // nothing of that QP waiting (see above). No lock.
  [[gnu::always_inline]] bool push_owner(const swkit::CqEntry& entry, swkit::WorkQueueStorage* queue) noexcept {
    if (overrun_.load(std::memory_order_relaxed)) return false;
    const std::uint32_t n = owner_.count.load(std::memory_order_relaxed);
    if (n + shared_.count.load(std::memory_order_acquire) >= depth_) return lose(entry);
    owner_.slots[(owner_.head + n) % depth_] = Entry{entry, queue};
    owner_.count.store(n + 1, std::memory_order_release);
    return true;
  }
  // push_owner() of a send request's success in two steps (the post of a
  // mapped WRITE, READ or atomic): stage_owner_success() writes the entry
  // into the next slot before the request's data moves, publish_owner()
  // makes it visible after. Written after a WRITE's copy, the entry's stores
  // queued behind the store into the peer's line (which waits for that
  // line to leave the peer's core), and the next poll's load of the entry,
  // which no single store can forward, waited with them: a fifth of an 8 B
  // ping-pong's time. False (nothing staged) when the CQ overran or the
  // ring is full, which lose() records.
  [[gnu::always_inline]] bool stage_owner_success(std::uint64_t wr_id, Opcode opcode, std::uint32_t byte_len,
                                                  std::uint32_t qpn, std::uint64_t seq,
                                                  swkit::WorkQueueStorage* queue) noexcept {
    if (overrun_.load(std::memory_order_relaxed)) return false;
    if (!owner_has_room()) [[unlikely]] {
      swkit::CqEntry lost;
      lost.wc.wr_id = wr_id;
      lost.wc.qp_num = qpn;
      return lose(lost);
    }
    stage_owner(wr_id, opcode, byte_len, qpn, seq, queue);
    return true;
  }
  // Whether stage_owner_success() would stage (not overrun, room for one).
  [[gnu::always_inline]] bool owner_can_stage() const noexcept {
    return !overrun_.load(std::memory_order_relaxed) && owner_has_room();
  }
  // stage_owner_success() after owner_can_stage() said yes (the owner's
  // thread, nothing pushed to the owner's ring in between).
  [[gnu::always_inline]] void stage_owner(std::uint64_t wr_id, Opcode opcode, std::uint32_t byte_len,
                                          std::uint32_t qpn, std::uint64_t seq,
                                          swkit::WorkQueueStorage* queue) noexcept {
    const std::uint32_t n = owner_.count.load(std::memory_order_relaxed);
    std::uint32_t at = owner_.head + n;
    if (at >= depth_) at -= depth_;
    Entry& e = owner_.slots[at];
    // As four words (store_words says why): wr_id; status, opcode, has_imm
    // and byte_len; qp_num and imm_data; vendor_err.
    store_words(e.e.wc, wr_id,
                static_cast<std::uint64_t>(WcStatus::kSuccess) | static_cast<std::uint64_t>(opcode) << 8 |
                    static_cast<std::uint64_t>(byte_len) << 32,
                qpn, 0);
    // e.e.send_queue is not written: this CQ never reads it (`queue` names
    // the queue a completion retires from), and at 8 B each store counts.
    e.e.seq = seq;
    e.queue = queue;
  }
  // Publishes the entry stage_owner_success() wrote.
  [[gnu::always_inline]] void publish_owner() noexcept {
    owner_.count.store(owner_.count.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }
  // The shared ring: any thread.
  bool push_shared(const swkit::CqEntry& entry, swkit::WorkQueueStorage* queue) noexcept;
  // A serialized QP is about to wait for a peer (its caller's thread): what
  // the owner's ring holds goes to the end of the shared ring, ahead of
  // anything completed from now on.
  void spill_owner() noexcept;
  // The owner's ring for serialized QP `qp` (its creation), when no other
  // QP has it; release_owner_ring() at its destruction.
  bool claim_owner_ring(const void* qp) noexcept {
    const void* none = nullptr;
    return owner_qp_.compare_exchange_strong(none, qp, std::memory_order_acq_rel);
  }
  void release_owner_ring(const void* qp) noexcept {
    const void* mine = qp;
    owner_qp_.compare_exchange_strong(mine, nullptr, std::memory_order_acq_rel);
  }
  // `queue` is going (its QP is destroyed): entries for it retire nothing.
  // `owner_ring`: the queue's QP owns the owner's ring (this is its
  // caller's thread), so its entries may be in that ring too.
  void forget(const swkit::WorkQueueStorage* queue, bool owner_ring) noexcept;

  const DeviceImpl* device() const noexcept { return device_.get(); }

 private:
  struct Entry {
    swkit::CqEntry e;
    swkit::WorkQueueStorage* queue;
  };
  // A completion written and read as four 8-byte words, in general-purpose
  // registers. The poll right after a post reads the entry the post just
  // wrote, whose stores may still wait in the store buffer: a load can take
  // its bytes from there only when one store holds all of them. Written
  // field by field and read with two 16-byte vector loads (what a copy of
  // the struct compiles to), every poll waited for the stores to reach the
  // cache: 40 % of CqImpl::poll's samples in an 8 B READ loop, and poll 19 %
  // of the loop's (10 % with words). The empty asm keeps each word in a
  // register, so the compiler does not merge the loads or stores into
  // vector ones again.
  static_assert(sizeof(Completion) == 32 && offsetof(Completion, status) == 8 && offsetof(Completion, opcode) == 9 &&
                    offsetof(Completion, has_imm) == 10 && offsetof(Completion, byte_len) == 12 &&
                    offsetof(Completion, qp_num) == 16 && offsetof(Completion, imm_data) == 20 &&
                    offsetof(Completion, vendor_err) == 24,
                "the word layout of store_words");
  static_assert(std::endian::native == std::endian::little, "the word layout of store_words");
  [[gnu::always_inline]] static void store_word(void* at, std::uint64_t w) noexcept {
    asm("" : "+r"(w));
    std::memcpy(at, &w, 8);
  }
  [[gnu::always_inline]] static std::uint64_t load_word(const void* at) noexcept {
    std::uint64_t w;
    std::memcpy(&w, at, 8);
    asm("" : "+r"(w));
    return w;
  }
  [[gnu::always_inline]] static void store_words(Completion& to, std::uint64_t w0, std::uint64_t w1,
                                                 std::uint64_t w2, std::uint64_t w3) noexcept {
    auto* b = reinterpret_cast<std::byte*>(&to);
    store_word(b, w0);
    store_word(b + 8, w1);
    store_word(b + 16, w2);
    store_word(b + 24, w3);
  }
  [[gnu::always_inline]] static void copy_words(Completion& to, const Completion& from) noexcept {
    const auto* f = reinterpret_cast<const std::byte*>(&from);
    store_words(to, load_word(f), load_word(f + 8), load_word(f + 16), load_word(f + 24));
  }
  struct Ring {
    std::unique_ptr<Entry[]> slots;
    std::uint32_t head = 0;              // oldest entry
    std::atomic<std::uint32_t> count{0}; // written by the ring's one writer at a time
  };

  explicit CqImpl(std::shared_ptr<DeviceImpl> device) noexcept : device_(std::move(device)) {}
  // Moves up to out.size() entries of `r` (oldest first) into `out`,
  // retiring their queue slots; returns how many.
  [[gnu::always_inline]] std::uint32_t take(Ring& r, std::span<Completion> out) noexcept;
  // Room for one more completion in the two rings together.
  [[gnu::always_inline]] bool owner_has_room() const noexcept {
    return owner_.count.load(std::memory_order_relaxed) + shared_.count.load(std::memory_order_acquire) < depth_;
  }
  // poll() when the CQ overran, a progress round is due or the shared
  // ring holds entries.
  [[gnu::noinline]] int poll_slow(std::span<Completion> out) noexcept;
  // poll() when the shared ring holds entries (or a race overran the CQ).
  int poll_shared(std::span<Completion> out, std::uint32_t mine) noexcept;
  // Records the overrun (the first one's reason) and returns false.
  bool lose(const swkit::CqEntry& lost) noexcept;

  std::shared_ptr<DeviceImpl> device_;  // children keep parents alive
  std::uint32_t depth_ = 0;
  Ring owner_;
  std::atomic<const void*> owner_qp_{nullptr};  // the QP whose ring owner_ is
  std::mutex shared_mutex_;
  Ring shared_;
  std::atomic<bool> overrun_{false};
  std::atomic<bool> reason_claimed_{false};  // one thread writes reason_
  std::atomic<bool> reason_ready_{false};
  char reason_[160] = {};
};

}  // namespace rma::shm
