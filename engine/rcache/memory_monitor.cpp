#include "rcache/memory_monitor.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "rcache/userfaultfd_monitor.hpp"
#include "rma/sdk/log.hpp"

namespace rma::rcache {
namespace {

// Subscribers, kept sorted so that lock_all() always locks in one order.
std::mutex g_subscribers_mutex;
std::vector<InvalidationSink*>* g_subscribers = new std::vector<InvalidationSink*>;  // never freed
std::atomic<std::size_t> g_subscriber_count{0};

std::atomic<std::uint64_t> g_uffd_events{0};
std::atomic<std::uint64_t> g_hook_events{0};

void lock_sinks() noexcept {
  for (InvalidationSink* s : *g_subscribers) s->lock_sink();
}
void unlock_sinks() noexcept {
  for (auto it = g_subscribers->rbegin(); it != g_subscribers->rend(); ++it) {
    (*it)->unlock_sink();
  }
}

}  // namespace

MemoryMonitor& MemoryMonitor::instance() {
  static MemoryMonitor* m = [] {
    auto* mon = new MemoryMonitor;  // never destroyed: hooks may fire during exit
    pthread_atfork(&MemoryMonitor::atfork_prepare, &MemoryMonitor::atfork_parent,
                   &MemoryMonitor::atfork_child);
    return mon;
  }();
  return *m;
}

Result<MemoryMonitorKind> MemoryMonitor::activate(MemoryMonitorKind wanted) {
  switch (wanted) {
    case MemoryMonitorKind::kNone:
      return MemoryMonitorKind::kNone;
    case MemoryMonitorKind::kHooks:
      enable_memory_hooks();
      return MemoryMonitorKind::kHooks;
    case MemoryMonitorKind::kUserfaultfd: {
      Status s = UserfaultfdMonitor::start();
      if (!s.ok()) return s;
      return MemoryMonitorKind::kUserfaultfd;
    }
    case MemoryMonitorKind::kAuto: {
      Status s = UserfaultfdMonitor::start();
      if (s.ok()) return MemoryMonitorKind::kUserfaultfd;
      RMA_LOG_INFO("registration cache: %s; intercepting munmap/mremap/madvise/brk instead",
                   s.message().c_str());
      enable_memory_hooks();
      return MemoryMonitorKind::kHooks;
    }
  }
  return internal_error("unknown memory monitor kind");
}

void MemoryMonitor::subscribe(InvalidationSink* sink) {
  std::lock_guard lock(g_subscribers_mutex);
  auto& v = *g_subscribers;
  v.insert(std::upper_bound(v.begin(), v.end(), sink), sink);
  g_subscriber_count.store(v.size(), std::memory_order_release);
}

void MemoryMonitor::unsubscribe(InvalidationSink* sink) {
  std::lock_guard lock(g_subscribers_mutex);
  auto& v = *g_subscribers;
  v.erase(std::remove(v.begin(), v.end(), sink), v.end());
  g_subscriber_count.store(v.size(), std::memory_order_release);
}

MemoryMonitor::WatchResult MemoryMonitor::watch(MemoryMonitorKind kind, std::uintptr_t start,
                                                std::uintptr_t end) noexcept {
  switch (kind) {
    case MemoryMonitorKind::kUserfaultfd:
      switch (UserfaultfdMonitor::watch(start, end)) {
        case UserfaultfdMonitor::Watch::kOk: return WatchResult::kWatched;
        case UserfaultfdMonitor::Watch::kNotMapped: return WatchResult::kNotMapped;
        case UserfaultfdMonitor::Watch::kNotWatchable: return WatchResult::kNotWatchable;
      }
      return WatchResult::kNotWatchable;
    case MemoryMonitorKind::kHooks:
    case MemoryMonitorKind::kNone:
    case MemoryMonitorKind::kAuto:
      return WatchResult::kWatched;
  }
  return WatchResult::kNotWatchable;
}

void MemoryMonitor::dispatch(std::uintptr_t start, std::uintptr_t end) noexcept {
  if (g_subscriber_count.load(std::memory_order_acquire) == 0) return;
  lock_all();
  dispatch_locked(start, end);
  unlock_all();
}

void MemoryMonitor::lock_all() noexcept {
  g_subscribers_mutex.lock();
  lock_sinks();
}

void MemoryMonitor::dispatch_locked(std::uintptr_t start, std::uintptr_t end) noexcept {
  if (end <= start) return;
  for (InvalidationSink* s : *g_subscribers) s->invalidate_locked(start, end);
}

void MemoryMonitor::unlock_all() noexcept {
  unlock_sinks();
  g_subscribers_mutex.unlock();
}

bool MemoryMonitor::hooks_enabled() const noexcept { return memory_hooks_enabled(); }

// fork(): no other thread may hold a cache lock across it, and in the child
// every cached registration describes the parent's pages.
void MemoryMonitor::atfork_prepare() noexcept { instance().lock_all(); }
void MemoryMonitor::atfork_parent() noexcept { instance().unlock_all(); }
void MemoryMonitor::atfork_child() noexcept {
  for (InvalidationSink* s : *g_subscribers) s->invalidate_all_locked();
  UserfaultfdMonitor::forget_after_fork();
  instance().unlock_all();
}

MonitorCounters monitor_counters() noexcept {
  return {g_uffd_events.load(std::memory_order_relaxed), g_hook_events.load(std::memory_order_relaxed)};
}
void count_hook_event() noexcept { g_hook_events.fetch_add(1, std::memory_order_relaxed); }
void count_userfaultfd_event() noexcept { g_uffd_events.fetch_add(1, std::memory_order_relaxed); }

}  // namespace rma::rcache
