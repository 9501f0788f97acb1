#include "self/completion_queue.hpp"

#include <algorithm>
#include <mutex>

#include "self/fabric.hpp"
#include "self/queue_pair.hpp"
#include "rma/sdk/text.hpp"

namespace rma::self {

Result<std::shared_ptr<CqImpl>> CqImpl::create(std::shared_ptr<DeviceImpl> device,
                                               std::uint32_t depth) {
  std::shared_ptr<CqImpl> cq(new CqImpl(std::move(device)));
  RMA_RETURN_IF_ERROR(cq->ring_.init(depth, cq->device_->caps().max_cqe));
  return cq;
}

int CqImpl::poll(std::span<Completion> out) noexcept {
  Fabric& fabric = Fabric::instance();
  std::lock_guard lock(fabric.mutex());
  if (ring_.overrun()) return -1;
  // A requester waiting for a receive fails once its RNR budget is spent or
  // its peer has gone away; polling is when its owner looks, so check here.
  for (QpImpl* qp : senders_) {
    if (qp->waiting()) qp->drive();
  }
  if (ring_.overrun()) return -1;
  return static_cast<int>(ring_.poll(out, [&](const swkit::CqEntry& e) {
    // The QP may be gone; then there is nothing to retire.
    if (QpImpl* qp = fabric.find_qp(e.wc.qp_num)) qp->retire(e.send_queue, e.seq);
  }));
}

void CqImpl::attach_sender(QpImpl* qp) { senders_.push_back(qp); }

void CqImpl::detach_sender(QpImpl* qp) noexcept {
  senders_.erase(std::remove(senders_.begin(), senders_.end(), qp), senders_.end());
}

}  // namespace rma::self
