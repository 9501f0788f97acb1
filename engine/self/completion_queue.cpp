#include "self/completion_queue.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <mutex>
#include <new>

#include "self/fabric.hpp"
#include "self/queue_pair.hpp"
#include "rma/sdk/text.hpp"

namespace rma::self {

Result<std::shared_ptr<CqImpl>> CqImpl::create(std::shared_ptr<DeviceImpl> device,
                                               std::uint32_t depth) {
  const std::uint32_t max = device->caps().max_cqe;
  if (depth == 0 || depth > max) {
    return invalid_argument("create_cq: depth " + dec(depth) + " is outside 1.." + dec(max));
  }
  std::unique_ptr<CqEntry[]> ring(new (std::nothrow) CqEntry[depth]);
  if (!ring) return resource_exhausted("create_cq: cannot allocate " + dec(depth) + " entries");
  return std::shared_ptr<CqImpl>(new CqImpl(std::move(device), std::move(ring), depth));
}

bool CqImpl::push(const CqEntry& entry) noexcept {
  if (overrun_.load(std::memory_order_relaxed)) return false;
  if (count_ == depth_) {
    std::snprintf(reason_, sizeof reason_,
                  "completion queue overrun (depth %u): a completion of QP %u (wr_id %" PRIu64
                  ") was lost; poll faster or make the CQ deeper",
                  depth_, entry.wc.qp_num, entry.wc.wr_id);
    overrun_.store(true, std::memory_order_release);
    return false;
  }
  ring_[(head_ + count_) % depth_] = entry;
  ++count_;
  return true;
}

int CqImpl::poll(std::span<Completion> out) noexcept {
  Fabric& fabric = Fabric::instance();
  std::lock_guard lock(fabric.mutex());
  if (overrun_.load(std::memory_order_relaxed)) return -1;
  // A requester waiting for a receive fails once its RNR budget is spent or
  // its peer has gone away; polling is when its owner looks, so check here.
  for (QpImpl* qp : senders_) {
    if (qp->waiting()) qp->drive();
  }
  if (overrun_.load(std::memory_order_relaxed)) return -1;
  const auto n = static_cast<std::uint32_t>(std::min<std::size_t>(out.size(), count_));
  for (std::uint32_t i = 0; i < n; ++i) {
    const CqEntry& e = ring_[head_];
    out[i] = e.wc;
    // The QP may be gone; then there is nothing to retire.
    if (QpImpl* qp = fabric.find_qp(e.wc.qp_num)) qp->retire(e.send_queue, e.seq);
    head_ = (head_ + 1) % depth_;
    --count_;
  }
  return static_cast<int>(n);
}

const char* CqImpl::overrun_reason() const noexcept {
  return overrun_.load(std::memory_order_acquire) ? reason_ : "";
}

void CqImpl::attach_sender(QpImpl* qp) { senders_.push_back(qp); }

void CqImpl::detach_sender(QpImpl* qp) noexcept {
  senders_.erase(std::remove(senders_.begin(), senders_.end(), qp), senders_.end());
}

}  // namespace rma::self
