#include "shm/memory_region.hpp"

#include <mutex>
#include <optional>

#include "rma/sdk/provider_checks.hpp"
#include "shm/region_table.hpp"

namespace rma::shm {

Result<std::unique_ptr<MemoryRegion>> MrImpl::create(std::shared_ptr<PdImpl> pd, void* addr, std::size_t length,
                                                     Access access) {
  RMA_RETURN_IF_ERROR(check_registration(addr, length, access, pd->caps()));
  const auto a = reinterpret_cast<std::uint64_t>(addr);
  // Memory in one of our shared segments is published with the segment,
  // so peers reach it through a mapping instead of cross-memory attach.
  const std::optional<node::Location> in_segment = node::locate(addr, length);
  auto watch = std::make_unique<swkit::RegionWatch>(a, length);
  DeviceImpl& dev = pd->impl();
  swkit::KeyTable::Keys keys;
  {
    std::lock_guard lock(dev.keys_mutex());
    RMA_ASSIGN_OR_RETURN(keys, dev.keys().insert(swkit::MrEntry{a, length, access, pd.get(), watch->orphaned()},
                                                 pd->caps().max_mr));
    publish_region(dev.layout(), keys.rkey, a, length, access, pd->tag(), in_segment);
  }
  return std::unique_ptr<MemoryRegion>(
      new MrImpl(std::move(pd), std::move(watch), a, length, keys.lkey, keys.rkey, access));
}

MrImpl::~MrImpl() {
  // Under the key lock, so no atomic this process serves is between
  // checking the key and touching the word when the region goes. Our own
  // posts check a copy of the entry (swkit/lkey_cache.hpp) that the erase
  // invalidates: a post that starts after this returns fails the key.
  DeviceImpl& dev = pd_->impl();
  std::lock_guard lock(dev.keys_mutex());
  withdraw_region(dev.layout(), rkey());
  dev.keys().erase(lkey());
}

}  // namespace rma::shm
