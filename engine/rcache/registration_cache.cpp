#include "rma/registration_cache.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <limits>
#include <mutex>
#include <string>

#include "rcache/interval_map.hpp"
#include "rcache/memory_monitor.hpp"
#include "rma/config.hpp"
#include "rma/log.hpp"

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

// One registration. Lives in the interval map while cached; on the LRU list
// while cached and unused; on the dead list once dropped and unused, until a
// user thread destroys it outside the lock.
struct RegistrationCache::Region {
  std::uintptr_t start = 0;
  std::uintptr_t end = 0;
  std::unique_ptr<MemoryRegion> mr;
  std::uint64_t generation = 0;
  std::uint32_t refcount = 0;
  bool in_map = false;
  Region* lru_prev = nullptr;  // toward most recently released
  Region* lru_next = nullptr;
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
      std::uint64_t leaked = 0;
      map_.for_each([&](std::uintptr_t, std::uintptr_t, Region* r) {
        if (r->refcount == 0) {
          r->next_dead = dead;
          dead = r;
        } else {
          ++leaked;
        }
      });
      if (leaked != 0 || detached_in_use_ != 0) {
        RMA_LOG_ERROR("registration cache destroyed with %llu handles still held; "
                      "their registrations are leaked rather than freed under them",
                      static_cast<unsigned long long>(leaked + detached_in_use_));
      }
      dead = append_dead(dead);
    }
    destroy(dead);
  }

  // ---- InvalidationSink
  std::mutex& sink_mutex() noexcept override { return mutex_; }

  void invalidate_locked(std::uintptr_t start, std::uintptr_t end) noexcept override {
    record_invalidation(start, end);
    map_.erase_overlapping(start, end, [&](std::uintptr_t, std::uintptr_t, Region* r) {
      drop_from_map(r);
      ++stats_.invalidations;
    });
  }

  void invalidate_all_locked() noexcept override {
    invalidate_locked(0, std::numeric_limits<std::uintptr_t>::max());
  }

  // ---- operations
  Result<Handle> acquire(RegistrationCache* owner, const void* addr, std::size_t length, Access access);
  void release(Region* r) noexcept;
  void invalidate(const void* addr, std::size_t length) noexcept;
  void purge() noexcept;
  RegistrationCacheStats stats() const noexcept {
    std::lock_guard lock(mutex_);
    RegistrationCacheStats s = stats_;
    s.regions = map_.size();
    return s;
  }

  MemoryMonitorKind monitor() const noexcept { return monitor_; }
  std::uint64_t max_bytes() const noexcept { return max_bytes_; }
  std::uint64_t max_regions() const noexcept { return max_regions_; }

 private:
  // ---- helpers; all *_locked and these run with mutex_ held
  void lru_push_front(Region* r) noexcept {
    r->lru_prev = nullptr;
    r->lru_next = lru_head_;
    if (lru_head_ != nullptr) lru_head_->lru_prev = r;
    lru_head_ = r;
    if (lru_tail_ == nullptr) lru_tail_ = r;
  }
  void lru_unlink(Region* r) noexcept {
    if (r->lru_prev != nullptr) r->lru_prev->lru_next = r->lru_next; else lru_head_ = r->lru_next;
    if (r->lru_next != nullptr) r->lru_next->lru_prev = r->lru_prev; else lru_tail_ = r->lru_prev;
    r->lru_prev = r->lru_next = nullptr;
  }

  // The map entry is already erased. An unused region dies; a used one lives
  // on, detached, until its last handle goes.
  void drop_from_map(Region* r) noexcept {
    r->in_map = false;
    stats_.bytes -= r->end - r->start;
    if (r->refcount == 0) {
      lru_unlink(r);
      r->next_dead = dead_;
      dead_ = r;
    } else {
      stats_.in_use -= 1;
      ++detached_in_use_;
    }
  }

  void evict_locked() noexcept {
    while (lru_tail_ != nullptr && (map_.size() > max_regions_ || stats_.bytes > max_bytes_)) {
      Region* victim = lru_tail_;
      map_.erase(victim->start);
      drop_from_map(victim);
      ++stats_.evictions;
    }
  }

  Region* take_dead() noexcept {
    Region* d = dead_;
    dead_ = nullptr;
    return d;
  }
  Region* append_dead(Region* list) noexcept {
    Region* d = take_dead();
    if (list == nullptr) return d;
    Region* tail = list;
    while (tail->next_dead != nullptr) tail = tail->next_dead;
    tail->next_dead = d;
    return list;
  }

  // Destroys regions outside the lock: deregistration may free memory, and
  // freeing memory may wait on the userfaultfd monitor, which needs the lock.
  static void destroy(Region* list) noexcept {
    while (list != nullptr) {
      Region* next = list->next_dead;
      delete list;
      list = next;
    }
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

  Result<Handle> register_uncached(RegistrationCache* owner, std::uintptr_t s, std::uintptr_t e,
                                   Access access);

  std::shared_ptr<ProtectionDomain> pd_;
  const std::uint64_t max_bytes_;
  const std::uint64_t max_regions_;
  const MemoryMonitorKind monitor_;
  const std::uintptr_t page_size_;
  const std::uint64_t max_mr_size_;

  mutable std::mutex mutex_;
  rcache::IntervalMap<Region*> map_;
  Region* lru_head_ = nullptr;  // most recently released
  Region* lru_tail_ = nullptr;  // next to evict
  Region* dead_ = nullptr;
  std::uint64_t detached_in_use_ = 0;
  std::uint64_t map_version_ = 0;  // bumped by every insert/erase done by acquire()
  std::uint64_t invalidation_seq_ = 0;
  std::array<std::pair<std::uintptr_t, std::uintptr_t>, 64> recent_{};
  RegistrationCacheStats stats_;
};

Result<RegistrationCache::Handle> RegistrationCache::Impl::register_uncached(
    RegistrationCache* owner, std::uintptr_t s, std::uintptr_t e, Access access) {
  RMA_ASSIGN_OR_RETURN(auto mr, pd_->register_memory(reinterpret_cast<void*>(s), e - s, access));
  auto* r = new Region;
  r->start = s;
  r->end = e;
  r->mr = std::move(mr);
  r->generation = g_generation.fetch_add(1, std::memory_order_relaxed) + 1;
  r->refcount = 1;
  r->in_map = false;
  std::lock_guard lock(mutex_);
  ++stats_.misses;
  ++detached_in_use_;
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
      if (Region* const* hit = map_.find_covering(s, e);
          hit != nullptr && has_access((*hit)->mr->access(), access)) {
        Region* r = *hit;
        if (r->refcount++ == 0) {
          lru_unlink(r);
          ++stats_.in_use;
        }
        ++stats_.hits;
        return Handle(owner, r);
      }
      map_.for_each_touching(s, e, [&](std::uintptr_t rs, std::uintptr_t re, Region* r) {
        ms = std::min(ms, rs);
        me = std::max(me, re);
        macc |= r->mr->access();
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

    auto* fresh = new Region;
    fresh->start = ms;
    fresh->end = me;
    fresh->mr = std::move(*mr);
    fresh->generation = g_generation.fetch_add(1, std::memory_order_relaxed) + 1;
    fresh->refcount = 1;
    bool inserted = false;
    {
      std::lock_guard lock(mutex_);
      if (!invalidated_since(seq0, ms, me) && map_version_ == version0) {
        map_.erase_touching(ms, me, [&](std::uintptr_t, std::uintptr_t, Region* r) {
          drop_from_map(r);
          ++stats_.merges;
        });
        map_.insert(ms, me, fresh);
        fresh->in_map = true;
        ++map_version_;
        ++stats_.misses;
        ++stats_.in_use;
        stats_.bytes += me - ms;
        evict_locked();
        inserted = true;
      }
      dead = take_dead();
    }
    destroy(dead);
    if (inserted) return Handle(owner, fresh);
    // Someone changed the map or the memory while we registered: our
    // registration may describe pages that are gone. Drop it and look again.
    delete fresh;
  }
  return register_uncached(owner, s, e, access);
}

void RegistrationCache::Impl::release(Region* r) noexcept {
  Region* dead = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (--r->refcount != 0) return;
    if (r->in_map) {
      --stats_.in_use;
      lru_push_front(r);
      evict_locked();
    } else {
      --detached_in_use_;
      r->next_dead = dead_;
      dead_ = r;
    }
    dead = take_dead();
  }
  destroy(dead);
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
    while (lru_tail_ != nullptr) {
      Region* victim = lru_tail_;
      map_.erase(victim->start);
      drop_from_map(victim);
      ++stats_.evictions;
    }
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
RegistrationCache::~RegistrationCache() = default;

Result<RegistrationCache::Handle> RegistrationCache::acquire(const void* addr, std::size_t length,
                                                             Access access) {
  return impl_->acquire(this, addr, length, access);
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
