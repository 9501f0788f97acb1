#include "shm/shm_provider.hpp"

#include <memory>

#include "shm/device.hpp"

namespace rma::shm {
namespace {

// The endpoint manager picks shm by its reach (the processes of this host)
// for the peers that share this rank's host; the priority only orders it
// below every network provider where a caller asks for "the best provider"
// without a reach (ProviderRegistry::select), which must be able to reach
// any host.
constexpr int kPriority = 5;

class ShmProvider final : public Provider {
 public:
  std::string_view name() const noexcept override { return kProviderName; }
  std::string_view description() const noexcept override {
    return "shared memory: processes of one host (shared segment + process_vm_readv/writev)";
  }
  int priority() const noexcept override { return kPriority; }
  ProviderReach reach() const noexcept override { return ProviderReach::kHost; }

  Result<std::vector<DeviceInfo>> query_devices() override { return std::vector<DeviceInfo>{shm_device_info()}; }

  Result<std::shared_ptr<Device>> open_device(std::string_view name) override {
    if (!name.empty() && name != kDeviceName) {
      return not_found("shm provider has no device \"" + std::string(name) + "\"; available: " + kDeviceName);
    }
    RMA_ASSIGN_OR_RETURN(auto dev, DeviceImpl::open());
    return std::shared_ptr<Device>(std::move(dev));
  }
};

}  // namespace
}  // namespace rma::shm

namespace rma::providers {

Status register_shm(ProviderRegistry& registry) { return registry.add(std::make_unique<shm::ShmProvider>()); }

}  // namespace rma::providers
