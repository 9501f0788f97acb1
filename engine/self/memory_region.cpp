#include "self/memory_region.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include "self/fabric.hpp"
#include "self/text.hpp"

namespace rma::self {

namespace {

// True when some page of [addr, addr+length) is not mapped. msync on the
// page-aligned range fails with ENOMEM exactly then, and with MS_ASYNC it
// does no I/O, so this is a cheap probe that touches nothing.
bool has_unmapped_page(std::uint64_t addr, std::uint64_t length) noexcept {
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t start = addr & ~(page - 1);
  const std::uint64_t end = addr + length;  // caller checked it does not wrap
  const std::uint64_t span = ((end - start) + page - 1) & ~(page - 1);
  return ::msync(reinterpret_cast<void*>(start), span, MS_ASYNC) != 0 && errno == ENOMEM;
}

Status validate(std::uint64_t a, std::uint64_t length, Access access, const DeviceCaps& caps) {
  if (a == 0) return invalid_argument("register_memory: address is null");
  if (length == 0) return invalid_argument("register_memory: length is 0 at address " + hex(a));
  if (a + length < a) {
    return invalid_argument("register_memory: range " + hex(a) + " + " + dec(length) +
                            " wraps around the address space");
  }
  if (length > caps.max_mr_size) {
    return invalid_argument("register_memory: length " + dec(length) + " exceeds max_mr_size " +
                            dec(caps.max_mr_size));
  }
  const auto bits = static_cast<std::uint32_t>(access);
  if ((bits & ~static_cast<std::uint32_t>(kAllAccess)) != 0) {
    return invalid_argument("register_memory: unknown access bits " + hex(bits));
  }
  // Verbs rule (ibv_reg_mr EINVAL): a region peers may write or run atomics
  // on must also be locally writable.
  if ((has_access(access, Access::kRemoteWrite) || has_access(access, Access::kRemoteAtomic)) &&
      !has_access(access, Access::kLocalWrite)) {
    return invalid_argument("register_memory: access " + access_to_string(access) +
                            " needs LOCAL_WRITE too (REMOTE_WRITE and REMOTE_ATOMIC require it)");
  }
  if (has_unmapped_page(a, length)) {
    return invalid_argument("register_memory: range " + hex(a) + " + " + dec(length) +
                            " is not (entirely) mapped memory");
  }
  return {};
}

}  // namespace

Result<std::unique_ptr<MemoryRegion>> MrImpl::create(std::shared_ptr<PdImpl> pd, void* addr,
                                                     std::size_t length, Access access) {
  const auto a = reinterpret_cast<std::uint64_t>(addr);
  RMA_RETURN_IF_ERROR(validate(a, length, access, pd->caps()));
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  auto watch = std::make_unique<OrphanWatch>();
  watch->start = a & ~(page - 1);
  watch->end = (a + length + page - 1) & ~(page - 1);
  OrphanTracker::instance().add(watch.get());
  Fabric& fabric = Fabric::instance();
  Result<KeyTable::Keys> keys = [&] {
    std::lock_guard lock(fabric.mutex());
    return fabric.keys().insert(MrEntry{a, length, access, pd.get(), &watch->orphaned}, pd->caps().max_mr);
  }();
  if (!keys.ok()) {
    OrphanTracker::instance().remove(watch.get());
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
  OrphanTracker::instance().remove(watch_.get());
}

}  // namespace rma::self
