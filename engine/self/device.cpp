#include "self/device.hpp"

#include "self/completion_queue.hpp"
#include "self/memory_region.hpp"
#include "self/queue_pair.hpp"
#include "swkit/caps.hpp"

namespace rma::self {

DeviceInfo self_device_info() {
  DeviceInfo d;
  d.name = kDeviceName;
  d.provider = kProviderName;
  d.transport = "in-process";
  d.link_layer = "none";
  // gid and mac stay zero: nothing here is addressed over a network.
  // In-process: QPs are entries of the fabric's table and queues are
  // plain memory, so the limits are larger than a NIC's.
  swkit::QueueLimits l;
  l.max_qp = 65536;
  l.max_qp_wr = 16384;
  l.max_cqe = 1u << 20;
  l.max_qp_rd_atom = 16;
  l.path_mtu = 4096;
  d.caps = swkit::software_caps(l);
  return d;
}

std::shared_ptr<DeviceImpl> DeviceImpl::open() {
  return std::shared_ptr<DeviceImpl>(new DeviceImpl());
}

Result<std::shared_ptr<ProtectionDomain>> DeviceImpl::alloc_pd() {
  return std::shared_ptr<ProtectionDomain>(std::make_shared<PdImpl>(shared_from_this()));
}

Result<std::shared_ptr<CompletionQueue>> DeviceImpl::create_cq(std::uint32_t depth) {
  RMA_ASSIGN_OR_RETURN(auto cq, CqImpl::create(shared_from_this(), depth));
  return std::shared_ptr<CompletionQueue>(std::move(cq));
}

Result<std::unique_ptr<MemoryRegion>> PdImpl::register_memory(void* addr, std::size_t length,
                                                              Access access) {
  return MrImpl::create(shared_from_this(), addr, length, access);
}

Result<std::unique_ptr<QueuePair>> PdImpl::create_qp(const QpConfig& config) {
  return QpImpl::create(shared_from_this(), config);
}

}  // namespace rma::self
