#include "self/self_provider.hpp"

#include <memory>

#include "self/device.hpp"

namespace rma::self {
namespace {

class SelfProvider final : public Provider {
 public:
  std::string_view name() const noexcept override { return kProviderName; }
  std::string_view description() const noexcept override {
    return "in-process loopback: both QPs in this process";
  }
  int priority() const noexcept override { return 10; }
  ProviderReach reach() const noexcept override { return ProviderReach::kProcess; }

  Result<std::vector<DeviceInfo>> query_devices() override {
    return std::vector<DeviceInfo>{self_device_info()};
  }

  Result<std::shared_ptr<Device>> open_device(std::string_view name) override {
    if (!name.empty() && name != kDeviceName) {
      return not_found("self provider has no device \"" + std::string(name) +
                       "\"; available: " + kDeviceName);
    }
    return std::shared_ptr<Device>(DeviceImpl::open());
  }
};

}  // namespace
}  // namespace rma::self

namespace rma::providers {

Status register_self(ProviderRegistry& registry) {
  return registry.add(std::make_unique<self::SelfProvider>());
}

}  // namespace rma::providers
