#include "self/memory_region.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include "rma/sdk/provider_checks.hpp"
#include "self/fabric.hpp"
#include "rma/sdk/text.hpp"

namespace rma::self {

Result<std::unique_ptr<MemoryRegion>> MrImpl::create(std::shared_ptr<PdImpl> pd, void* addr,
                                                     std::size_t length, Access access) {
  const auto a = reinterpret_cast<std::uint64_t>(addr);
  RMA_RETURN_IF_ERROR(check_registration(addr, length, access, pd->caps()));
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  auto watch = std::make_unique<swkit::OrphanWatch>();
  watch->start = a & ~(page - 1);
  watch->end = (a + length + page - 1) & ~(page - 1);
  swkit::OrphanTracker::instance().add(watch.get());
  Fabric& fabric = Fabric::instance();
  Result<swkit::KeyTable::Keys> keys = [&] {
    std::lock_guard lock(fabric.mutex());
    return fabric.keys().insert(swkit::MrEntry{a, length, access, pd.get(), &watch->orphaned}, pd->caps().max_mr);
  }();
  if (!keys.ok()) {
    swkit::OrphanTracker::instance().remove(watch.get());
    return keys.status();
  }
  return std::unique_ptr<MemoryRegion>(
      new MrImpl(std::move(pd), std::move(watch), a, length, keys->lkey, keys->rkey, access));
}

MrImpl::~MrImpl() {
  // Under the fabric lock, so no work request is between checking a key and
  // copying through it when the region disappears.
  {
    Fabric& fabric = Fabric::instance();
    std::lock_guard lock(fabric.mutex());
    fabric.keys().erase(lkey());
  }
  // Not under the fabric lock: the memory monitor takes the tracker's lock
  // and must never wait for the fabric's.
  swkit::OrphanTracker::instance().remove(watch_.get());
}

}  // namespace rma::self
