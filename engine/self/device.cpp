#include "self/device.hpp"

#include "self/completion_queue.hpp"
#include "self/memory_region.hpp"
#include "self/queue_pair.hpp"

namespace rma::self {

DeviceInfo self_device_info() {
  DeviceInfo d;
  d.name = kDeviceName;
  d.provider = kProviderName;
  d.transport = "in-process";
  d.link_layer = "none";
  // gid and mac stay zero: nothing here is addressed over a network.
  DeviceCaps& c = d.caps;
  c.max_sge = 32;
  c.max_recv_sge = 32;
  c.max_inline_data = 256;
  c.max_qp_rd_atom = 16;
  c.max_qp_wr = 16384;
  c.max_cqe = 1u << 20;
  c.max_qp = 65536;
  c.max_mr = 1u << 20;
  c.max_mr_size = std::uint64_t{1} << 46;
  c.max_msg_size = 1u << 31;
  c.atomics = true;
  c.path_mtu = 4096;
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
