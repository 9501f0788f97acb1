// Device, protection domain and memory regions of the verbs provider.
#pragma once

#include <infiniband/verbs.h>

#include <memory>
#include <string>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/status.hpp"
#include "verbs/async_events.hpp"
#include "verbs/discovery.hpp"
#include "verbs/verbs_objects.hpp"

namespace rma::verbs {

class DeviceImpl final : public Device, public std::enable_shared_from_this<DeviceImpl> {
 public:
  static Result<std::shared_ptr<DeviceImpl>> open(ibv_device* device, const VerbsOptions& options);
  ~DeviceImpl() override;

  const DeviceInfo& info() const noexcept override { return info_; }
  Result<std::shared_ptr<ProtectionDomain>> alloc_pd() override;
  Result<std::shared_ptr<CompletionQueue>> create_cq(std::uint32_t depth) override;
  // The port's hw_counters and counters from sysfs (what `rdma statistic` shows).
  Result<std::vector<CounterSample>> read_counters() const override;
  std::optional<AsyncEvent> poll_async_event() override { return events_.pop(); }

  ibv_context* context() const noexcept { return ctx_.get(); }
  const PortSetup& port() const noexcept { return port_; }
  bool odp() const noexcept { return odp_; }
  // CQs and QPs register here so that their async events find them.
  AsyncEventPump& events() noexcept { return events_; }

 private:
  DeviceImpl(ContextPtr ctx, DeviceInfo info, PortSetup port, bool odp)
      : ctx_(std::move(ctx)), info_(std::move(info)), port_(port), odp_(odp) {}

  ContextPtr ctx_;
  DeviceInfo info_;
  PortSetup port_;
  bool odp_;
  AsyncEventPump events_;  // declared after ctx_: stops before the context closes
};

class PdImpl final : public ProtectionDomain, public std::enable_shared_from_this<PdImpl> {
 public:
  PdImpl(std::shared_ptr<DeviceImpl> dev, IbvPdPtr pd) : dev_(std::move(dev)), pd_(std::move(pd)) {}
  Device& device() noexcept override { return *dev_; }
  DeviceImpl& dev() noexcept { return *dev_; }
  const std::shared_ptr<DeviceImpl>& dev_ptr() const noexcept { return dev_; }
  ibv_pd* pd() const noexcept { return pd_.get(); }

  Result<std::unique_ptr<MemoryRegion>> register_memory(void* addr, std::size_t length,
                                                        Access access) override;
  Result<std::unique_ptr<QueuePair>> create_qp(const QpConfig& config) override;

 private:
  std::shared_ptr<DeviceImpl> dev_;  // declared first: outlives pd_
  IbvPdPtr pd_;
};

class MrImpl final : public MemoryRegion {
 public:
  MrImpl(std::shared_ptr<PdImpl> pd, IbvMrPtr mr, Access access) noexcept
      : MemoryRegion(reinterpret_cast<std::uint64_t>(mr->addr), mr->length, mr->lkey, mr->rkey, access),
        pd_(std::move(pd)),
        mr_(std::move(mr)) {}

 private:
  std::shared_ptr<PdImpl> pd_;  // declared first: outlives mr_
  IbvMrPtr mr_;
};

}  // namespace rma::verbs
