#include "verbs/device.hpp"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>

#include "rma/sdk/provider_checks.hpp"
#include "rma/sdk/text.hpp"
#include "verbs/completion_queue.hpp"
#include "verbs/queue_pair.hpp"
#include "verbs/translate.hpp"

namespace rma::verbs {
namespace {

// Every readable integer file of a sysfs counter directory.
void append_counter_dir(const std::string& dir, std::vector<CounterSample>& out) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') names.emplace_back(e->d_name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    if (n == "lifespan") continue;  // a setting, not a counter
    std::ifstream f(dir + "/" + n);
    std::uint64_t v = 0;
    if (f >> v) out.push_back({n, v});
  }
}

}  // namespace

Result<std::shared_ptr<DeviceImpl>> DeviceImpl::open(ibv_device* device, const VerbsOptions& options) {
  const std::string name = ::ibv_get_device_name(device);
  ContextPtr ctx(::ibv_open_device(device));
  if (!ctx) return unavailable("ibv_open_device(" + name + ") failed: " + errno_text(errno));
  PortSetup port;
  RMA_ASSIGN_OR_RETURN(DeviceInfo info, describe_device(ctx.get(), options, &port));
  if (options.odp && !port.odp_rc) {
    return failed_precondition(std::string(kOdpVar) + " asks for on-demand paging, but " + name +
                               " does not support it for RC send/receive/write/read/atomic; "
                               "unset " + kOdpVar + " to register (pin) memory instead");
  }
  std::shared_ptr<DeviceImpl> dev(new DeviceImpl(std::move(ctx), std::move(info), port, options.odp));
  RMA_RETURN_IF_ERROR(dev->events_.start(dev->ctx_.get(), dev->info_.name));
  return dev;
}

DeviceImpl::~DeviceImpl() { events_.stop(); }

Result<std::shared_ptr<ProtectionDomain>> DeviceImpl::alloc_pd() {
  IbvPdPtr pd(::ibv_alloc_pd(ctx_.get()));
  if (!pd) return resource_exhausted("ibv_alloc_pd on " + info_.name + " failed: " + errno_text(errno));
  return std::shared_ptr<ProtectionDomain>(std::make_shared<PdImpl>(shared_from_this(), std::move(pd)));
}

Result<std::shared_ptr<CompletionQueue>> DeviceImpl::create_cq(std::uint32_t depth) {
  RMA_ASSIGN_OR_RETURN(std::shared_ptr<CqImpl> cq, CqImpl::create(shared_from_this(), depth));
  return std::shared_ptr<CompletionQueue>(std::move(cq));
}

Result<std::vector<CounterSample>> DeviceImpl::read_counters() const {
  std::vector<CounterSample> out;
  const std::string base =
      "/sys/class/infiniband/" + info_.name + "/ports/" + std::to_string(port_.port);
  append_counter_dir(base + "/hw_counters", out);
  append_counter_dir(base + "/counters", out);
  return out;
}

Result<std::unique_ptr<MemoryRegion>> PdImpl::register_memory(void* addr, std::size_t length,
                                                              Access access) {
  RMA_RETURN_IF_ERROR(check_registration(addr, length, access, dev_->caps()));
  int flags = access_to_ibv(access);
  if (dev_->odp()) flags |= IBV_ACCESS_ON_DEMAND;
  IbvMrPtr mr(::ibv_reg_mr(pd_.get(), addr, length, flags));
  if (!mr) {
    const int e = errno;
    std::string m = "register_memory: ibv_reg_mr(" + hex(reinterpret_cast<std::uint64_t>(addr)) + ", " +
                    std::to_string(length) + ", " + access_to_string(access) + ") on " +
                    dev_->name() + " failed: " + errno_text(e);
    if (e == ENOMEM || e == EPERM) {
      m += "; pinned memory is limited by RLIMIT_MEMLOCK (ulimit -l)";
      return resource_exhausted(m);
    }
    return unavailable(m);
  }
  return std::unique_ptr<MemoryRegion>(new MrImpl(shared_from_this(), std::move(mr), access));
}

Result<std::unique_ptr<QueuePair>> PdImpl::create_qp(const QpConfig& config) {
  RMA_ASSIGN_OR_RETURN(std::unique_ptr<QpImpl> qp, QpImpl::create(shared_from_this(), config));
  return std::unique_ptr<QueuePair>(std::move(qp));
}

}  // namespace rma::verbs
