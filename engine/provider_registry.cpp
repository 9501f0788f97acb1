#include <algorithm>

#include "rma/sdk/config.hpp"
#include "rma/sdk/log.hpp"
#include "rma/sdk/registry.hpp"
#include "stats/device_tracker.hpp"

namespace rma {
namespace detail {
// Generated from the provider folders at configure time (builtin_providers.cpp).
void register_builtin_providers(ProviderRegistry& registry);
}  // namespace detail

ProviderRegistry& ProviderRegistry::global() {
  static ProviderRegistry* registry = [] {
    auto* r = new ProviderRegistry;  // never destroyed: providers may be used at exit
    detail::register_builtin_providers(*r);
    return r;
  }();
  return *registry;
}

Status ProviderRegistry::add(std::unique_ptr<Provider> provider) {
  if (!provider) return invalid_argument("ProviderRegistry::add: provider is null");
  std::lock_guard lock(mutex_);
  for (const auto& p : providers_) {
    if (p->name() == provider->name()) {
      return already_exists("provider '" + std::string(provider->name()) + "' is already registered");
    }
  }
  RMA_LOG_DEBUG("registered provider %.*s (priority %d)", static_cast<int>(provider->name().size()),
                provider->name().data(), provider->priority());
  providers_.push_back(std::move(provider));
  std::stable_sort(providers_.begin(), providers_.end(),
                   [](const auto& a, const auto& b) { return a->priority() > b->priority(); });
  return {};
}

std::vector<Provider*> ProviderRegistry::providers() const {
  std::lock_guard lock(mutex_);
  std::vector<Provider*> out;
  for (const auto& p : providers_) out.push_back(p.get());
  return out;
}

Result<Provider*> ProviderRegistry::find(std::string_view name) const {
  std::lock_guard lock(mutex_);
  std::string known;
  for (const auto& p : providers_) {
    if (p->name() == name) return p.get();
    known += (known.empty() ? "" : ", ") + std::string(p->name());
  }
  return not_found("no provider named '" + std::string(name) + "'; available: " +
                   (known.empty() ? "none" : known));
}

Result<Provider*> ProviderRegistry::select(std::string_view name) const {
  if (!name.empty()) return find(name);
  RMA_ASSIGN_OR_RETURN(std::string env, config::get_string("RMA_PROVIDER"));
  if (!env.empty()) {
    auto p = find(env);
    if (!p.ok()) return p.status().with_context("RMA_PROVIDER");
    return p;
  }
  std::string why;
  for (Provider* p : providers()) {
    auto devices = p->query_devices();
    if (devices.ok() && !devices->empty()) return p;
    why += "; " + std::string(p->name()) + ": " +
           (devices.ok() ? std::string("no devices") : devices.status().message());
  }
  return not_found("no provider has a usable device" + why);
}

Result<Provider*> ProviderRegistry::select_by_reach(ProviderReach reach) const {
  std::string why;
  for (Provider* p : providers()) {
    if (p->reach() != reach) continue;
    auto devices = p->query_devices();
    if (devices.ok() && !devices->empty()) return p;
    why += "; " + std::string(p->name()) + ": " +
           (devices.ok() ? std::string("no devices") : devices.status().message());
  }
  return not_found("no " + std::string(provider_reach_name(reach)) + " provider has a usable device" +
                   (why.empty() ? std::string(" (none is built in)") : why));
}

Result<std::shared_ptr<Device>> ProviderRegistry::open(std::string_view provider,
                                                       std::string_view device) const {
  RMA_ASSIGN_OR_RETURN(Provider * p, select(provider));
  std::string dev(device);
  if (dev.empty()) {
    RMA_ASSIGN_OR_RETURN(dev, config::get_string("RMA_DEVICE"));
  }
  auto d = p->open_device(dev);
  if (!d.ok()) return d.status().with_context("provider " + std::string(p->name()));
  return stats::track_device(std::move(d).value());
}

}  // namespace rma
