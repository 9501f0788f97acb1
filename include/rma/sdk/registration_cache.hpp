// Registration cache: maps address ranges to refcounted memory registrations
// so that repeated transfers from the same buffers do not pay for
// registration each time.
//
// - Page-granular: a lookup registers whole pages, and one registration
//   serves every range inside it. Overlapping and adjacent registrations
//   merge into one.
// - Budget: when the cached registrations exceed max_bytes or max_regions,
//   unused ones are evicted, least recently released first. A region in use
//   (a live Handle) is never evicted, so while handles are held the cache
//   may stay above its budget.
// - Never stale: when memory is unmapped, remapped or discarded (munmap,
//   mremap, madvise DONTNEED/FREE/REMOVE, brk shrink) the overlapping
//   registrations are dropped from the cache before the call returns, via
//   userfaultfd events where the kernel allows, else via interception of
//   those calls; invalidate() does the same on request. Handles already
//   given out stay valid until released, as an ibv_mr stays valid.
// - Exact registrations (acquire_exact) are the exception, for memory that
//   is exposed to peers: exactly the bytes and rights asked for, never
//   page-rounded, merged, shared with other lookups or kept after release,
//   so the rkey published for them reaches nothing else and nothing longer.
// - Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/status.hpp"

// librma is built with hidden visibility: what this header declares is
// part of its exported interface.
#pragma GCC visibility push(default)

namespace rma {

// How the cache learns that memory went away.
enum class MemoryMonitorKind : std::uint8_t {
  kAuto,         // userfaultfd if it works here, else hooks
  kUserfaultfd,  // kernel UNMAP/REMOVE/REMAP events (needs userfaultfd permission)
  kHooks,        // interception of munmap/mremap/madvise/brk/sbrk in this process
  kNone,         // explicit invalidate() only: the caller promises to call it
};
std::string_view memory_monitor_name(MemoryMonitorKind kind) noexcept;

struct RegistrationCacheOptions {
  std::uint64_t max_bytes = 0;    // 0 = RMA_RCACHE_MAX_BYTES
  std::uint64_t max_regions = 0;  // 0 = RMA_RCACHE_MAX_REGIONS
  // kAuto consults RMA_RCACHE_MONITOR.
  MemoryMonitorKind monitor = MemoryMonitorKind::kAuto;
};

struct RegistrationCacheStats {
  std::uint64_t hits = 0;           // lookups served by an existing registration
  std::uint64_t misses = 0;         // lookups that registered memory
  std::uint64_t evictions = 0;      // unused registrations dropped for the budget
  std::uint64_t invalidations = 0;  // registrations dropped because their memory changed
  std::uint64_t merges = 0;         // registrations absorbed into a larger one
  std::uint64_t regions = 0;        // registrations cached now
  std::uint64_t bytes = 0;          // bytes those cover
  std::uint64_t in_use = 0;         // of which held by live handles
  std::uint64_t exact = 0;          // exact registrations held now (acquire_exact)
};

class RegistrationCache {
  struct Region;

 public:
  // A registration covering a looked-up range; releases it on destruction.
  class Handle {
   public:
    Handle() noexcept = default;
    Handle(Handle&& other) noexcept;
    Handle& operator=(Handle&& other) noexcept;
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    ~Handle();

    explicit operator bool() const noexcept { return region_ != nullptr; }
    const MemoryRegion& mr() const noexcept;
    std::uint32_t lkey() const noexcept { return mr().lkey(); }
    std::uint32_t rkey() const noexcept { return mr().rkey(); }
    // Registration sequence number: a region registered later has a larger one.
    std::uint64_t generation() const noexcept;
    void reset() noexcept;

   private:
    friend class RegistrationCache;
    Handle(RegistrationCache* cache, Region* region) noexcept : cache_(cache), region_(region) {}
    RegistrationCache* cache_ = nullptr;
    Region* region_ = nullptr;
  };

  // The cache registers through `pd`, which it keeps alive.
  static Result<std::unique_ptr<RegistrationCache>> create(std::shared_ptr<ProtectionDomain> pd,
                                                           RegistrationCacheOptions options = {});
  ~RegistrationCache();
  RegistrationCache(const RegistrationCache&) = delete;
  RegistrationCache& operator=(const RegistrationCache&) = delete;

  // A registration covering [addr, addr+length) with at least `access`.
  // Errors: null address, zero length, a range that wraps the address space,
  // a range larger than the device can register, and registration failures.
  Result<Handle> acquire(const void* addr, std::size_t length, Access access);

  // A registration of exactly [addr, addr+length) with exactly `access`,
  // for memory whose rkey is given to peers (windows, attachments). It is
  // never cached, merged or returned by acquire(), and it is deregistered
  // when its handle is released, so after that the rkey reaches nothing,
  // whoever else holds cached registrations of the same pages. The memory
  // must be mapped (checked through the cache's memory monitor, which also
  // watches it); when it goes away meanwhile, the handle's holder is
  // responsible, as for an ibv_mr (providers fail accesses to unmapped memory).
  // Errors: as acquire(), and memory that is not mapped.
  Result<Handle> acquire_exact(const void* addr, std::size_t length, Access access);

  // Drops every cached registration overlapping [addr, addr+length) so no
  // later acquire() returns it. Handles in use stay valid until released.
  void invalidate(const void* addr, std::size_t length) noexcept;

  // Drops every unused registration.
  void purge() noexcept;

  RegistrationCacheStats stats() const noexcept;
  MemoryMonitorKind monitor() const noexcept;
  std::uint64_t max_bytes() const noexcept;
  std::uint64_t max_regions() const noexcept;

 private:
  class Impl;
  explicit RegistrationCache(std::unique_ptr<Impl> impl);
  void release(Region* region) noexcept;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rma

#pragma GCC visibility pop
