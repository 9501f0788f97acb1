// The "verbs" provider: RDMA devices through libibverbs (RoCE and
// InfiniBand NICs, the kernel's rdma_rxe). Its priority is above softroce's,
// so where a device exists it is chosen; where none exists it lists no
// device and selection falls through.
#include <memory>
#include <string>

#include "rma/sdk/log.hpp"
#include "rma/sdk/registry.hpp"
#include "verbs/device.hpp"
#include "verbs/discovery.hpp"

namespace rma::verbs {
namespace {

constexpr int kPriority = 80;

class VerbsProvider final : public Provider {
 public:
  std::string_view name() const noexcept override { return kProviderName; }
  std::string_view description() const noexcept override {
    return "RDMA devices through libibverbs and librdmacm (RoCE, InfiniBand, rdma_rxe)";
  }
  int priority() const noexcept override { return kPriority; }

  Result<std::vector<DeviceInfo>> query_devices() override {
    int n = 0;
    DeviceList list = list_devices(&n);
    std::vector<DeviceInfo> out;
    if (n == 0) return out;
    RMA_ASSIGN_OR_RETURN(VerbsOptions options, read_options());
    for (int i = 0; i < n; ++i) {
      ibv_device* dev = list.get()[i];
      ContextPtr ctx(::ibv_open_device(dev));
      if (!ctx) continue;  // busy or vanished: not usable here
      auto info = describe_device(ctx.get(), options, nullptr);
      if (info.ok()) {
        out.push_back(std::move(info).value());
      } else {
        RMA_LOG_INFO("verbs: %s is not usable: %s", ::ibv_get_device_name(dev), info.status().message().c_str());
      }
    }
    return out;
  }

  Result<std::shared_ptr<Device>> open_device(std::string_view name) override {
    int n = 0;
    DeviceList list = list_devices(&n);
    if (n == 0) {
      return not_found("no RDMA device: libibverbs lists none" +
                       (name.empty() ? std::string() : " (asked for \"" + std::string(name) + "\")") +
                       "; load a driver (e.g. rdma_rxe: `rdma link add rxe0 type rxe netdev eth0`) "
                       "or use another provider");
    }
    RMA_ASSIGN_OR_RETURN(VerbsOptions options, read_options());
    std::string known;
    for (int i = 0; i < n; ++i) {
      ibv_device* dev = list.get()[i];
      const std::string dev_name = ::ibv_get_device_name(dev);
      if (name.empty() || dev_name == name) {
        RMA_ASSIGN_OR_RETURN(std::shared_ptr<DeviceImpl> d, DeviceImpl::open(dev, options));
        return std::shared_ptr<Device>(std::move(d));
      }
      known += (known.empty() ? "" : ", ") + dev_name;
    }
    return not_found("verbs provider has no device \"" + std::string(name) + "\"; available: " + known);
  }
};

}  // namespace
}  // namespace rma::verbs

namespace rma::providers {

Status register_verbs(ProviderRegistry& registry) {
  RMA_RETURN_IF_ERROR(verbs::declare_variables());
  return registry.add(std::make_unique<verbs::VerbsProvider>());
}

}  // namespace rma::providers
