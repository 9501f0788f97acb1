#include "shm/completion_queue.hpp"

#include <mutex>

#include "rma/sdk/text.hpp"
#include "shm/queue_pair.hpp"

namespace rma::shm {

Result<std::shared_ptr<CqImpl>> CqImpl::create(std::shared_ptr<DeviceImpl> device, std::uint32_t depth) {
  std::shared_ptr<CqImpl> cq(new CqImpl(std::move(device)));
  RMA_RETURN_IF_ERROR(cq->ring_.init(depth, cq->device_->caps().max_cqe));
  return cq;
}

int CqImpl::poll(std::span<Completion> out) noexcept {
  DeviceImpl& dev = *device_;
  std::lock_guard lock(dev.mutex());
  if (ring_.overrun()) return -1;
  dev.progress();
  if (ring_.overrun()) return -1;
  return static_cast<int>(ring_.poll(out, [&](const swkit::CqEntry& e) {
    // The QP may be gone; then there is nothing to retire.
    if (QpImpl* qp = dev.find_qp(e.wc.qp_num)) qp->retire(e.send_queue, e.seq);
  }));
}

}  // namespace rma::shm
