#include "shm/completion_queue.hpp"

#include <cinttypes>
#include <cstdio>
#include <new>

#include "rma/sdk/text.hpp"

namespace rma::shm {

static_assert(swkit::kCqPageOffset + sizeof(CqImpl) <= swkit::kPlacementPage,
              "a CQ must fit its page from its offset on (swkit/page_placed.hpp)");

Result<std::shared_ptr<CqImpl>> CqImpl::create(std::shared_ptr<DeviceImpl> device, std::uint32_t depth) {
  const std::uint32_t max_cqe = device->caps().max_cqe;
  if (depth == 0 || depth > max_cqe) {
    return invalid_argument("create_cq: depth " + dec(depth) + " is outside 1.." + dec(max_cqe));
  }
  std::shared_ptr<CqImpl> cq(new (std::nothrow) CqImpl(std::move(device)));
  if (!cq) return resource_exhausted("create_cq: out of memory");
  cq->owner_.slots.reset(new (std::nothrow) Entry[depth]);
  cq->shared_.slots.reset(new (std::nothrow) Entry[depth]);
  if (!cq->owner_.slots || !cq->shared_.slots) {
    return resource_exhausted("create_cq: cannot allocate " + dec(depth) + " entries");
  }
  cq->depth_ = depth;
  return cq;
}

bool CqImpl::push_shared(const swkit::CqEntry& entry, swkit::WorkQueueStorage* queue) noexcept {
  std::lock_guard lock(shared_mutex_);
  if (overrun_.load(std::memory_order_relaxed)) return false;
  const std::uint32_t n = shared_.count.load(std::memory_order_relaxed);
  if (n + owner_.count.load(std::memory_order_acquire) >= depth_) return lose(entry);
  shared_.slots[(shared_.head + n) % depth_] = Entry{entry, queue};
  shared_.count.store(n + 1, std::memory_order_release);
  return true;
}

void CqImpl::spill_owner() noexcept {
  const std::uint32_t n = owner_.count.load(std::memory_order_relaxed);
  if (n == 0) return;
  std::lock_guard lock(shared_mutex_);
  std::uint32_t s = shared_.count.load(std::memory_order_relaxed);
  for (std::uint32_t i = 0; i < n; ++i) {
    const Entry& e = owner_.slots[(owner_.head + i) % depth_];
    // Room unless a race overran the CQ (the next poll reports it).
    if (s == depth_) {
      (void)lose(e.e);
      break;
    }
    shared_.slots[(shared_.head + s) % depth_] = e;
    ++s;
  }
  owner_.head = (owner_.head + n) % depth_;
  owner_.count.store(0, std::memory_order_release);
  shared_.count.store(s, std::memory_order_release);
}

void CqImpl::forget(const swkit::WorkQueueStorage* queue, bool owner_ring) noexcept {
  std::lock_guard lock(shared_mutex_);
  auto scrub = [&](Ring& r) {
    const std::uint32_t n = r.count.load(std::memory_order_relaxed);
    for (std::uint32_t i = 0; i < n; ++i) {
      Entry& e = r.slots[(r.head + i) % depth_];
      if (e.queue == queue) e.queue = nullptr;
    }
  };
  scrub(shared_);
  if (owner_ring) scrub(owner_);
}

inline std::uint32_t CqImpl::take(Ring& r, std::span<Completion> out) noexcept {
  const std::uint32_t have = r.count.load(std::memory_order_acquire);
  const auto n = static_cast<std::uint32_t>(std::min<std::size_t>(out.size(), have));
  for (std::uint32_t i = 0; i < n; ++i) {
    const Entry& e = r.slots[r.head];
    copy_words(out[i], e.e.wc);
    // The slot this completion covers (and every unsignaled one before it)
    // can take a new request.
    if (e.queue != nullptr) e.queue->retire(e.e.seq);
    r.head = r.head + 1 == depth_ ? 0 : r.head + 1;
  }
  r.count.store(have - n, std::memory_order_release);
  return n;
}

int CqImpl::poll(std::span<Completion> out) noexcept {
  // Nothing to do but take the owner's ring: here, without a call (the
  // rest is poll_slow's, a tail call), so this path saves no registers.
  if (!overrun_.load(std::memory_order_acquire) && !device_->progress_due()) [[likely]] {
    const std::uint32_t mine = owner_.count.load(std::memory_order_acquire);
    if (shared_.count.load(std::memory_order_acquire) == 0 && mine <= depth_) [[likely]] {
      return mine == 0 ? 0 : static_cast<int>(take(owner_, out));
    }
  }
  return poll_slow(out);
}

int CqImpl::poll_slow(std::span<Completion> out) noexcept {
  if (overrun_.load(std::memory_order_acquire)) return -1;
  if (device_->progress_due()) {
    device_->progress();
    if (overrun_.load(std::memory_order_acquire)) return -1;
  }
  const std::uint32_t mine = owner_.count.load(std::memory_order_acquire);
  if (shared_.count.load(std::memory_order_acquire) == 0 && mine <= depth_) {
    return mine == 0 ? 0 : static_cast<int>(take(owner_, out));
  }
  return poll_shared(out, mine);
}

int CqImpl::poll_shared(std::span<Completion> out, std::uint32_t mine) noexcept {
  std::uint32_t n;
  {
    std::lock_guard lock(shared_mutex_);
    if (mine + shared_.count.load(std::memory_order_relaxed) > depth_) {
      // Two pushes raced for the last entry (see the header).
      const Ring& newest = mine != 0 ? owner_ : shared_;
      const std::uint32_t count = newest.count.load(std::memory_order_relaxed);
      (void)lose(newest.slots[(newest.head + count - 1) % depth_].e);
      return -1;
    }
    n = take(shared_, out);
    // What is left of the shared ring is older than the owner's entries.
    if (shared_.count.load(std::memory_order_relaxed) != 0) return static_cast<int>(n);
  }
  if (mine != 0 && n < out.size()) n += take(owner_, out.subspan(n));
  return static_cast<int>(n);
}

bool CqImpl::lose(const swkit::CqEntry& lost) noexcept {
  if (!reason_claimed_.exchange(true, std::memory_order_acq_rel)) {
    std::snprintf(reason_, sizeof reason_,
                  "completion queue overrun (depth %u): a completion of QP %u (wr_id %" PRIu64
                  ") was lost; poll faster or make the CQ deeper",
                  depth_, lost.wc.qp_num, lost.wc.wr_id);
    reason_ready_.store(true, std::memory_order_release);
  }
  overrun_.store(true, std::memory_order_release);
  return false;
}

const char* CqImpl::overrun_reason() const noexcept {
  if (!overrun_.load(std::memory_order_acquire)) return "";
  // Another thread may be writing the first reason still.
  return reason_ready_.load(std::memory_order_acquire) ? reason_ : "completion queue overrun";
}

}  // namespace rma::shm
