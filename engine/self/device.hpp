// The self device ("self0") and its protection domains.
#pragma once

#include <memory>

#include "rma/sdk/provider.hpp"

namespace rma::self {

inline constexpr const char* kProviderName = "self";
inline constexpr const char* kDeviceName = "self0";

// The one device this provider exposes: name, transport and capabilities.
DeviceInfo self_device_info();

class DeviceImpl final : public Device, public std::enable_shared_from_this<DeviceImpl> {
 public:
  static std::shared_ptr<DeviceImpl> open();

  const DeviceInfo& info() const noexcept override { return info_; }
  Result<std::shared_ptr<ProtectionDomain>> alloc_pd() override;
  Result<std::shared_ptr<CompletionQueue>> create_cq(std::uint32_t depth) override;

 private:
  DeviceImpl() : info_(self_device_info()) {}
  DeviceInfo info_;
};

class PdImpl final : public ProtectionDomain, public std::enable_shared_from_this<PdImpl> {
 public:
  explicit PdImpl(std::shared_ptr<DeviceImpl> device) noexcept : device_(std::move(device)) {}

  Device& device() noexcept override { return *device_; }
  const DeviceCaps& caps() const noexcept { return device_->caps(); }

  Result<std::unique_ptr<MemoryRegion>> register_memory(void* addr, std::size_t length,
                                                        Access access) override;
  Result<std::unique_ptr<QueuePair>> create_qp(const QpConfig& config) override;

 private:
  std::shared_ptr<DeviceImpl> device_;  // children keep parents alive
};

}  // namespace rma::self
