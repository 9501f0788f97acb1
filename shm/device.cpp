#include "shm/device.hpp"

#include <algorithm>

#include "rma/sdk/log.hpp"
#include "rma/sdk/text.hpp"
#include "shm/cma.hpp"
#include "shm/completion_queue.hpp"
#include "shm/memory_region.hpp"
#include "shm/queue_pair.hpp"
#include "swkit/caps.hpp"
#include "swkit/secure_random.hpp"

namespace rma::shm {

DeviceInfo shm_device_info() {
  DeviceInfo d;
  d.name = kDeviceName;
  d.provider = kProviderName;
  d.transport = "shared memory";
  d.link_layer = "none";  // no wire, no PSNs, no GID or MAC
  swkit::QueueLimits l;
  l.max_qp = kMaxQp;          // QP slots of the segment
  l.max_qp_wr = 16384;        // private queues: plain memory
  l.max_cqe = 1u << 20;
  l.max_qp_rd_atom = 16;
  l.path_mtu = 4096;
  d.caps = swkit::software_caps(l);
  d.caps.max_mr = kMaxMr;     // slots of the shared region table
  return d;
}

Result<std::shared_ptr<DeviceImpl>> DeviceImpl::open() {
  remember_ptrace_scope();
  SegmentMap::remove_stale();
  std::shared_ptr<DeviceImpl> dev(new DeviceImpl());
  RMA_ASSIGN_OR_RETURN(dev->segment_, SegmentMap::create());
  dev->doorbell_ = &dev->segment_->layout().header.doorbell;
  dev->live_.reserve(kMaxQp);
  // The thread holds a plain pointer: it is joined in the destructor,
  // before the members it uses go.
  DeviceImpl* raw = dev.get();
  RMA_RETURN_IF_ERROR(dev->progress_.start(dev->segment_.get(), [raw] { raw->progress(); }));
  return dev;
}

DeviceImpl::~DeviceImpl() {
  progress_.stop();
  // The name goes now (connect is possible any time, so "when every peer has
  // mapped it" never comes); peers that mapped it keep their mapping.
  if (segment_) segment_->unlink();
}

Result<std::shared_ptr<ProtectionDomain>> DeviceImpl::alloc_pd() {
  std::uint32_t tag;
  {
    std::lock_guard lock(mutex_);
    tag = new_pd_tag();
  }
  return std::shared_ptr<ProtectionDomain>(std::make_shared<PdImpl>(shared_from_this(), tag));
}

Result<std::shared_ptr<CompletionQueue>> DeviceImpl::create_cq(std::uint32_t depth) {
  RMA_ASSIGN_OR_RETURN(auto cq, CqImpl::create(shared_from_this(), depth));
  return std::shared_ptr<CompletionQueue>(std::move(cq));
}

Result<std::uint32_t> DeviceImpl::add_qp(QpImpl* qp, std::uint32_t& slot) {
  if (live_.size() >= kMaxQp) {
    return resource_exhausted("create_qp: too many queue pairs: " + dec(live_.size()) + " exist and max_qp is " +
                              dec(kMaxQp));
  }
  std::uint32_t qpn = 0;
  while (qpn == 0 || qpns_.contains(qpn)) qpn = swkit::secure_random_u32() & 0xFFFFFFu;
  slot = 0;
  while (qps_[slot] != nullptr) ++slot;
  qpns_.insert(qpn, slot);
  qps_[slot] = qp;
  live_.push_back(qp);
  return qpn;
}

void DeviceImpl::remove_qp(std::uint32_t qpn, std::uint32_t slot) noexcept {
  qpns_.erase(qpn);
  live_.erase(std::remove(live_.begin(), live_.end(), qps_[slot]), live_.end());
  qps_[slot] = nullptr;
}

void DeviceImpl::progress() noexcept {
  std::lock_guard lock(mutex_);
  // Read before serving: a request whose doorbell rings after this read
  // makes progress_due() true again, so no request is left unserved.
  doorbell_served_.store(layout().header.doorbell.load(std::memory_order_acquire), std::memory_order_relaxed);
  for (QpImpl* qp : live_) qp->serve();
  for (QpImpl* qp : live_) qp->drive_if_waiting();
  rounds_done_.fetch_add(1, std::memory_order_release);  // for progress_due()'s pollers
}

Result<std::unique_ptr<MemoryRegion>> PdImpl::register_memory(void* addr, std::size_t length, Access access) {
  return MrImpl::create(shared_from_this(), addr, length, access);
}

Result<std::unique_ptr<QueuePair>> PdImpl::create_qp(const QpConfig& config) {
  return QpImpl::create(shared_from_this(), config);
}

}  // namespace rma::shm
