// The provider registry the engine owns. Providers register themselves; the
// engine never includes a provider. Selection is by name (RMA_PROVIDER) or,
// when none is named, by priority among providers that have a device here.
#pragma once

#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/status.hpp"

// librma is built with hidden visibility: what this header declares is
// part of its exported interface.
#pragma GCC visibility push(default)

namespace rma {

class ProviderRegistry {
 public:
  // The process-wide registry, with every built-in provider registered.
  static ProviderRegistry& global();

  ProviderRegistry() = default;
  ProviderRegistry(const ProviderRegistry&) = delete;
  ProviderRegistry& operator=(const ProviderRegistry&) = delete;

  // Fails with kAlreadyExists when a provider of the same name is registered.
  Status add(std::unique_ptr<Provider> provider);

  // Every registered provider, highest priority first.
  std::vector<Provider*> providers() const;

  Result<Provider*> find(std::string_view name) const;

  // The provider named by `name`, else by RMA_PROVIDER, else the highest
  // priority one that reports at least one device.
  Result<Provider*> select(std::string_view name = {}) const;

  // The highest-priority provider of `reach` that reports at least one
  // device; kNotFound naming every candidate's reason otherwise.
  Result<Provider*> select_by_reach(ProviderReach reach) const;

  // Opens a device: `device` names it ("" = the provider's first).
  Result<std::shared_ptr<Device>> open(std::string_view provider = {},
                                       std::string_view device = {}) const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Provider>> providers_;
};

}  // namespace rma

#pragma GCC visibility pop
