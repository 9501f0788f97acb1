#include "rma/sdk/registration_cache.hpp"

#include <unistd.h>

#include <algorithm>
#include <vector>
#include <array>
#include <atomic>
#include <limits>
#include <mutex>
#include <string>

#include "rcache/interval_map.hpp"
#include "rcache/memory_monitor.hpp"
#include "rma/sdk/config.hpp"
#include "rma/sdk/log.hpp"

namespace rma {

std::string_view memory_monitor_name(MemoryMonitorKind kind) noexcept {
  switch (kind) {
    case MemoryMonitorKind::kAuto: return "auto";
    case MemoryMonitorKind::kUserfaultfd: return "userfaultfd";
    case MemoryMonitorKind::kHooks: return "hooks";
    case MemoryMonitorKind::kNone: return "none";
  }
  return "unknown";
}

namespace {
std::atomic<std::uint64_t> g_generation{0};
}  // namespace

// One registration. The index holds one reference while the region is
// cached and each Handle holds one; whoever drops the last destroys it, so
// release() needs no lock. Destruction happens outside the cache lock.
struct RegistrationCache::Region {
  bool exact = false;  // acquire_exact: never in the index, dies with its one handle
  std::uintptr_t start = 0;
  std::uintptr_t end = 0;
  std::unique_ptr<MemoryRegion> mr;
  Access access = Access::kNone;
  std::uint64_t generation = 0;
  std::atomic<std::uint32_t> refs{0};
  std::atomic<std::uint64_t> last_release{0};  // LRU stamp, written before the reference is dropped
  bool in_index = false;                       // guarded by the cache lock
  bool evict = false;                          // guarded by the cache lock
  Region* next_dead = nullptr;
};

class RegistrationCache::Impl final : public rcache::InvalidationSink {
 public:
  Impl(std::shared_ptr<ProtectionDomain> pd, std::uint64_t max_bytes, std::uint64_t max_regions,
       MemoryMonitorKind monitor)
      : pd_(std::move(pd)),
        max_bytes_(max_bytes),
        max_regions_(max_regions),
        monitor_(monitor),
        page_size_(static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE))),
        max_mr_size_(pd_->device().caps().max_mr_size) {}

  ~Impl() override {
    rcache::MemoryMonitor::instance().unsubscribe(this);
    Region* dead = nullptr;
    {
      std::lock_guard lock(mutex_);
      index_.erase_if([](auto, auto, Region*) { return true; },
                      [&](auto, auto, Region* r) { drop_from_index(r); });
      dead = take_dead();
    }
    destroy(dead);
  }

  // Handles not yet released, cached or detached.
  std::uint64_t outstanding_handles() const noexcept {
    std::lock_guard lock(mutex_);
    std::uint64_t n = 0;
    index_.for_each([&](auto, auto, Region* r) { n += r->refs.load(std::memory_order_relaxed) - 1; });
    return n + static_cast<std::uint64_t>(std::max<std::int64_t>(0, detached_in_use_.load()));
  }

  // ---- InvalidationSink
  std::mutex& sink_mutex() noexcept override { return mutex_; }

  void invalidate_locked(std::uintptr_t start, std::uintptr_t end) noexcept override {
    record_invalidation(start, end);
    index_.erase_overlapping(start, end, [&](std::uintptr_t, std::uintptr_t, Region* r) {
      drop_from_index(r);
      ++stats_.invalidations;
    });
  }

  void invalidate_all_locked() noexcept override {
    invalidate_locked(0, std::numeric_limits<std::uintptr_t>::max());
  }

  // ---- operations
  Result<Handle> acquire(RegistrationCache* owner, const void* addr, std::size_t length, Access access);
  Result<Handle> acquire_exact(RegistrationCache* owner, const void* addr, std::size_t length,
                               Access access);
  void release(Region* r) noexcept;
  void invalidate(const void* addr, std::size_t length) noexcept;
  void purge() noexcept;
  RegistrationCacheStats stats() const noexcept {
    std::lock_guard lock(mutex_);
    RegistrationCacheStats s = stats_;
    s.regions = index_.size();
    s.in_use = 0;
    index_.for_each([&](auto, auto, Region* r) { s.in_use += r->refs.load(std::memory_order_relaxed) > 1; });
    s.exact = exact_in_use_.load(std::memory_order_relaxed);
    return s;
  }

  MemoryMonitorKind monitor() const noexcept { return monitor_; }
  std::uint64_t max_bytes() const noexcept { return max_bytes_; }
  std::uint64_t max_regions() const noexcept { return max_regions_; }

 private:
  // ---- run with mutex_ held

  // The index entry is already gone: drop the index's reference. An unused
  // region dies (later, outside the lock); a used one lives on, detached,
  // until its last handle goes.
  void drop_from_index(Region* r) noexcept {
    r->in_index = false;
    stats_.bytes -= r->end - r->start;
    if (r->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      r->next_dead = dead_;
      dead_ = r;
    } else {
      detached_in_use_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  bool over_budget_locked() const noexcept {
    return index_.size() > max_regions_ || stats_.bytes > max_bytes_;
  }

  // Evicts unused regions, least recently released first, down to 15/16 of
  // the budget so that eviction (a scan of the index) runs once per many
  // misses rather than on each. `scratch` is allocated by the caller
  // outside the lock; its capacity bounds how many candidates are looked at.
  void evict_locked(std::vector<std::pair<std::uint64_t, Region*>>& scratch) noexcept {
    if (!over_budget_locked()) {
      over_budget_.store(false, std::memory_order_relaxed);
      return;
    }
    scratch.clear();
    index_.for_each([&](auto, auto, Region* r) {
      if (scratch.size() < scratch.capacity() && r->refs.load(std::memory_order_acquire) == 1) {
        scratch.emplace_back(r->last_release.load(std::memory_order_relaxed), r);
      }
    });
    std::sort(scratch.begin(), scratch.end());
    const std::uint64_t low_regions = max_regions_ - max_regions_ / 16;
    const std::uint64_t low_bytes = max_bytes_ - max_bytes_ / 16;
    std::uint64_t regions = index_.size(), bytes = stats_.bytes;
    std::size_t victims = 0;
    for (auto& [stamp, r] : scratch) {
      if (regions <= low_regions && bytes <= low_bytes) break;
      r->evict = true;
      --regions;
      bytes -= r->end - r->start;
      ++victims;
    }
    if (victims != 0) {
      // Handles are only created under this lock, so a region seen unused
      // above is still unused: no one can take a reference meanwhile.
      index_.erase_if([](auto, auto, Region* r) { return r->evict; },
                      [&](auto, auto, Region* r) {
                        drop_from_index(r);
                        ++stats_.evictions;
                      });
    }
    over_budget_.store(over_budget_locked(), std::memory_order_relaxed);
  }

  Region* take_dead() noexcept {
    Region* d = dead_;
    dead_ = nullptr;
    return d;
  }

  // ---- run without the lock
  // Deregistration may free memory, and freeing memory may wait on the
  // userfaultfd monitor, which needs the lock.
  static void destroy(Region* list) noexcept {
    while (list != nullptr) {
      Region* next = list->next_dead;
      delete list;
      list = next;
    }
  }

  void evict_if_over_budget() noexcept {
    if (!over_budget_.load(std::memory_order_relaxed)) return;
    std::vector<std::pair<std::uint64_t, Region*>> scratch;
    scratch.reserve(region_count_hint_.load(std::memory_order_relaxed) + 16);
    Region* dead = nullptr;
    {
      std::lock_guard lock(mutex_);
      evict_locked(scratch);
      dead = take_dead();
    }
    destroy(dead);
  }

  // Recent invalidations, so that a registration made without the lock can
  // tell whether its memory went away meanwhile.
  void record_invalidation(std::uintptr_t s, std::uintptr_t e) noexcept {
    auto& slot = recent_[invalidation_seq_ % recent_.size()];
    slot = {s, e};
    ++invalidation_seq_;
  }
  bool invalidated_since(std::uint64_t seq, std::uintptr_t s, std::uintptr_t e) const noexcept {
    if (invalidation_seq_ - seq > recent_.size()) return true;  // lost track: assume the worst
    for (std::uint64_t i = seq; i < invalidation_seq_; ++i) {
      const auto& r = recent_[i % recent_.size()];
      if (r.first < e && s < r.second) return true;
    }
    return false;
  }

  Region* new_region(std::uintptr_t s, std::uintptr_t e, std::unique_ptr<MemoryRegion> mr, std::uint32_t refs) {
    auto* r = new Region;
    r->start = s;
    r->end = e;
    r->access = mr->access();
    r->mr = std::move(mr);
    r->generation = g_generation.fetch_add(1, std::memory_order_relaxed) + 1;
    r->refs.store(refs, std::memory_order_relaxed);
    return r;
  }

  Result<Handle> register_uncached(RegistrationCache* owner, std::uintptr_t s, std::uintptr_t e,
                                   Access access);

  std::shared_ptr<ProtectionDomain> pd_;
  const std::uint64_t max_bytes_;
  const std::uint64_t max_regions_;
  const MemoryMonitorKind monitor_;
  const std::uintptr_t page_size_;
  const std::uint64_t max_mr_size_;

  mutable std::mutex mutex_;
  rcache::IntervalMap<Region*> index_;
  Region* dead_ = nullptr;
  std::uint64_t map_version_ = 0;  // bumped by every insert done by acquire()
  std::uint64_t invalidation_seq_ = 0;
  std::array<std::pair<std::uintptr_t, std::uintptr_t>, 64> recent_{};
  RegistrationCacheStats stats_;
  std::atomic<std::uint64_t> tick_{0};
  std::atomic<bool> over_budget_{false};
  std::atomic<std::size_t> region_count_hint_{0};
  std::atomic<std::int64_t> detached_in_use_{0};
  std::atomic<std::uint64_t> exact_in_use_{0};
};

Result<RegistrationCache::Handle> RegistrationCache::Impl::register_uncached(
    RegistrationCache* owner, std::uintptr_t s, std::uintptr_t e, Access access) {
  RMA_ASSIGN_OR_RETURN(auto mr, pd_->register_memory(reinterpret_cast<void*>(s), e - s, access));
  Region* r = new_region(s, e, std::move(mr), 1);
  detached_in_use_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  ++stats_.misses;
  return Handle(owner, r);
}

Result<RegistrationCache::Handle> RegistrationCache::Impl::acquire(RegistrationCache* owner,
                                                                   const void* addr, std::size_t length,
                                                                   Access access) {
  if (addr == nullptr) return invalid_argument("registration cache: address is null");
  if (length == 0) return invalid_argument("registration cache: length is 0");
  const auto a = reinterpret_cast<std::uintptr_t>(addr);
  if (length > std::numeric_limits<std::uintptr_t>::max() - a ||
      a + length > std::numeric_limits<std::uintptr_t>::max() - page_size_) {
    return invalid_argument("registration cache: range at " + std::to_string(a) + " of " +
                            std::to_string(length) + " bytes wraps around the address space");
  }
  const std::uintptr_t s = a & ~(page_size_ - 1);
  const std::uintptr_t e = (a + length + page_size_ - 1) & ~(page_size_ - 1);
  if (e - s > max_mr_size_) {
    return invalid_argument("registration cache: " + std::to_string(length) +
                            " bytes exceed the device's largest registration (" +
                            std::to_string(max_mr_size_) + " bytes)");
  }

  // Merging makes registrations grow; a few retries settle races with other
  // threads and with invalidations, after which the range is registered on
  // its own and not cached.
  constexpr int kAttempts = 8;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    std::uintptr_t ms = s, me = e;
    Access macc = access;
    std::uint64_t seq0 = 0, version0 = 0;
    Region* dead = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (Region* const* hit = index_.find_covering(s, e);
          hit != nullptr && has_access((*hit)->access, access)) {
        (*hit)->refs.fetch_add(1, std::memory_order_relaxed);
        ++stats_.hits;
        return Handle(owner, *hit);
      }
      index_.for_each_touching(s, e, [&](std::uintptr_t rs, std::uintptr_t re, Region* r) {
        ms = std::min(ms, rs);
        me = std::max(me, re);
        macc |= r->access;
      });
      seq0 = invalidation_seq_;
      version0 = map_version_;
      dead = take_dead();
    }
    destroy(dead);

    if (me - ms > max_mr_size_) {
      // Merging would exceed what the device registers in one piece.
      return register_uncached(owner, s, e, access);
    }
    switch (rcache::MemoryMonitor::instance().watch(monitor_, ms, me)) {
      case rcache::MemoryMonitor::WatchResult::kWatched:
        break;
      case rcache::MemoryMonitor::WatchResult::kNotWatchable:
        return register_uncached(owner, s, e, access);
      case rcache::MemoryMonitor::WatchResult::kNotMapped:
        if (ms != s || me != e) continue;  // a merged neighbour just went away: look again
        return invalid_argument("registration cache: [" + std::to_string(s) + ", " +
                                std::to_string(e) + ") is not entirely mapped memory");
    }
    auto mr = pd_->register_memory(reinterpret_cast<void*>(ms), me - ms, macc);
    if (!mr.ok()) {
      if (ms != s || me != e) continue;
      return mr.status().with_context("registration cache");
    }

    Region* fresh = new_region(ms, me, std::move(*mr), 2);  // the index's reference and the handle's
    bool inserted = false, over = false;
    {
      std::lock_guard lock(mutex_);
      if (!invalidated_since(seq0, ms, me) && map_version_ == version0) {
        index_.erase_touching(ms, me, [&](std::uintptr_t, std::uintptr_t, Region* r) {
          drop_from_index(r);
          ++stats_.merges;
        });
        index_.insert(ms, me, fresh);
        fresh->in_index = true;
        ++map_version_;
        ++stats_.misses;
        stats_.bytes += me - ms;
        region_count_hint_.store(index_.size(), std::memory_order_relaxed);
        over = over_budget_locked();
        if (over) over_budget_.store(true, std::memory_order_relaxed);
        inserted = true;
      }
      dead = take_dead();
    }
    destroy(dead);
    if (inserted) {
      if (over) evict_if_over_budget();
      return Handle(owner, fresh);
    }
    // Someone changed the index or the memory while we registered: our
    // registration may describe pages that are gone. Drop it and look again.
    delete fresh;
  }
  return register_uncached(owner, s, e, access);
}

Result<RegistrationCache::Handle> RegistrationCache::Impl::acquire_exact(RegistrationCache* owner,
                                                                         const void* addr,
                                                                         std::size_t length,
                                                                         Access access) {
  if (addr == nullptr) return invalid_argument("registration: address is null");
  if (length == 0) return invalid_argument("registration: length is 0");
  const auto a = reinterpret_cast<std::uintptr_t>(addr);
  if (length > std::numeric_limits<std::uintptr_t>::max() - a ||
      a + length > std::numeric_limits<std::uintptr_t>::max() - page_size_) {
    return invalid_argument("registration: range at " + std::to_string(a) + " of " +
                            std::to_string(length) + " bytes wraps around the address space");
  }
  if (length > max_mr_size_) {
    return invalid_argument("registration: " + std::to_string(length) +
                            " bytes exceed the device's largest registration (" +
                            std::to_string(max_mr_size_) + " bytes)");
  }
  const std::uintptr_t ps = a & ~(page_size_ - 1);
  const std::uintptr_t pe = (a + length + page_size_ - 1) & ~(page_size_ - 1);
  if (rcache::MemoryMonitor::instance().watch(monitor_, ps, pe) ==
      rcache::MemoryMonitor::WatchResult::kNotMapped) {
    return invalid_argument("registration: [" + std::to_string(a) + ", " + std::to_string(a + length) +
                            ") is not entirely mapped memory");
  }
  RMA_ASSIGN_OR_RETURN(auto mr, pd_->register_memory(const_cast<void*>(addr), length, access));
  Region* r = new_region(a, a + length, std::move(mr), 1);
  r->exact = true;
  detached_in_use_.fetch_add(1, std::memory_order_relaxed);
  exact_in_use_.fetch_add(1, std::memory_order_relaxed);
  return Handle(owner, r);
}

void RegistrationCache::Impl::release(Region* r) noexcept {
  // Stamp before dropping the reference: once dropped, the region may be
  // evicted and destroyed by another thread.
  // The stamp is a plain load and store, not an atomic increment: two
  // threads releasing at once may share a stamp, which only blurs the LRU
  // order between them, and it keeps a locked instruction off the hot path.
  const std::uint64_t stamp = tick_.load(std::memory_order_relaxed) + 1;
  tick_.store(stamp, std::memory_order_relaxed);
  r->last_release.store(stamp, std::memory_order_relaxed);
  if (r->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    // The index had already let go (or never held it): we were the last holder.
    detached_in_use_.fetch_sub(1, std::memory_order_relaxed);
    if (r->exact) exact_in_use_.fetch_sub(1, std::memory_order_relaxed);
    delete r;
    return;
  }
  evict_if_over_budget();
}

void RegistrationCache::Impl::invalidate(const void* addr, std::size_t length) noexcept {
  if (length == 0) return;
  const auto a = reinterpret_cast<std::uintptr_t>(addr);
  const std::uintptr_t end =
      length > std::numeric_limits<std::uintptr_t>::max() - a ? std::numeric_limits<std::uintptr_t>::max()
                                                             : a + length;
  Region* dead = nullptr;
  {
    std::lock_guard lock(mutex_);
    invalidate_locked(a & ~(page_size_ - 1), end);
    dead = take_dead();
  }
  destroy(dead);
}

void RegistrationCache::Impl::purge() noexcept {
  Region* dead = nullptr;
  {
    std::lock_guard lock(mutex_);
    index_.erase_if([](auto, auto, Region* r) { return r->refs.load(std::memory_order_acquire) == 1; },
                    [&](auto, auto, Region* r) {
                      drop_from_index(r);
                      ++stats_.evictions;
                    });
    over_budget_.store(over_budget_locked(), std::memory_order_relaxed);
    dead = take_dead();
  }
  destroy(dead);
}

// ---------------------------------------------------------------- public face

Result<std::unique_ptr<RegistrationCache>> RegistrationCache::create(std::shared_ptr<ProtectionDomain> pd,
                                                                     RegistrationCacheOptions options) {
  if (!pd) return invalid_argument("registration cache: protection domain is null");
  std::uint64_t max_bytes = options.max_bytes, max_regions = options.max_regions;
  if (max_bytes == 0) {
    RMA_ASSIGN_OR_RETURN(max_bytes, config::get_size("RMA_RCACHE_MAX_BYTES"));
    if (max_bytes == 0) return invalid_argument("RMA_RCACHE_MAX_BYTES: must be greater than 0");
  }
  if (max_regions == 0) {
    RMA_ASSIGN_OR_RETURN(max_regions, config::get_size("RMA_RCACHE_MAX_REGIONS"));
    if (max_regions == 0) return invalid_argument("RMA_RCACHE_MAX_REGIONS: must be greater than 0");
  }
  MemoryMonitorKind wanted = options.monitor;
  if (wanted == MemoryMonitorKind::kAuto) {
    RMA_ASSIGN_OR_RETURN(std::string name, config::get_choice("RMA_RCACHE_MONITOR",
                                                             {"auto", "userfaultfd", "hooks", "none"}));
    if (name == "userfaultfd") wanted = MemoryMonitorKind::kUserfaultfd;
    else if (name == "hooks") wanted = MemoryMonitorKind::kHooks;
    else if (name == "none") wanted = MemoryMonitorKind::kNone;
  }
  auto kind = rcache::MemoryMonitor::instance().activate(wanted);
  if (!kind.ok()) return kind.status().with_context("registration cache");
  auto impl = std::make_unique<Impl>(std::move(pd), max_bytes, max_regions, *kind);
  rcache::MemoryMonitor::instance().subscribe(impl.get());
  RMA_LOG_DEBUG("registration cache: monitor %s, budget %llu bytes / %llu regions",
                std::string(memory_monitor_name(*kind)).c_str(), static_cast<unsigned long long>(max_bytes),
                static_cast<unsigned long long>(max_regions));
  return std::unique_ptr<RegistrationCache>(new RegistrationCache(std::move(impl)));
}

RegistrationCache::RegistrationCache(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RegistrationCache::~RegistrationCache() {
  if (std::uint64_t held = impl_->outstanding_handles(); held != 0) {
    // Releasing those handles later must stay safe, so the cache's state is
    // leaked rather than freed under them.
    RMA_LOG_ERROR("registration cache destroyed while %llu handles are still held: release handles "
                  "before destroying the cache; its registrations are leaked",
                  static_cast<unsigned long long>(held));
    (void)impl_.release();
  }
}

Result<RegistrationCache::Handle> RegistrationCache::acquire(const void* addr, std::size_t length,
                                                             Access access) {
  return impl_->acquire(this, addr, length, access);
}
Result<RegistrationCache::Handle> RegistrationCache::acquire_exact(const void* addr, std::size_t length,
                                                                   Access access) {
  return impl_->acquire_exact(this, addr, length, access);
}
void RegistrationCache::invalidate(const void* addr, std::size_t length) noexcept {
  impl_->invalidate(addr, length);
}
void RegistrationCache::purge() noexcept { impl_->purge(); }
RegistrationCacheStats RegistrationCache::stats() const noexcept { return impl_->stats(); }
MemoryMonitorKind RegistrationCache::monitor() const noexcept { return impl_->monitor(); }
std::uint64_t RegistrationCache::max_bytes() const noexcept { return impl_->max_bytes(); }
std::uint64_t RegistrationCache::max_regions() const noexcept { return impl_->max_regions(); }
void RegistrationCache::release(Region* region) noexcept { impl_->release(region); }

RegistrationCache::Handle::Handle(Handle&& other) noexcept
    : cache_(other.cache_), region_(other.region_) {
  other.cache_ = nullptr;
  other.region_ = nullptr;
}
RegistrationCache::Handle& RegistrationCache::Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    reset();
    cache_ = other.cache_;
    region_ = other.region_;
    other.cache_ = nullptr;
    other.region_ = nullptr;
  }
  return *this;
}
RegistrationCache::Handle::~Handle() { reset(); }
void RegistrationCache::Handle::reset() noexcept {
  if (region_ != nullptr) cache_->release(region_);
  cache_ = nullptr;
  region_ = nullptr;
}
const MemoryRegion& RegistrationCache::Handle::mr() const noexcept { return *region_->mr; }
std::uint64_t RegistrationCache::Handle::generation() const noexcept { return region_->generation; }

}  // namespace rma
