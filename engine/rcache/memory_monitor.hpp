// Process-wide source of "this memory went away" events for every
// registration cache in the process. Two mechanisms feed it:
//  - userfaultfd: the kernel reports UNMAP/REMOVE/REMAP for ranges we watch,
//    and the unmapping thread waits until the monitor has read the event;
//  - hooks: our own munmap/mremap/madvise/brk/sbrk/mmap(MAP_FIXED)/shmdt
//    wrappers (memory_hooks.cpp) report after the call succeeds.
// A cache subscribes as an InvalidationSink. Events are applied to every
// sink while holding every sink's lock, before the unmapping call returns,
// so no lookup that starts after munmap() returns can see the old range.
#pragma once

#include <cstdint>
#include <mutex>

#include "rma/sdk/registration_cache.hpp"
#include "rma/sdk/status.hpp"

namespace rma::rcache {

class InvalidationSink {
 public:
  virtual ~InvalidationSink() = default;
  // The sink's lock; held by the caller around invalidate_locked().
  virtual std::mutex& sink_mutex() noexcept = 0;
  // How the monitor takes and releases it (around reading events too): a
  // sink whose readers must know that an invalidation is under way without
  // taking the lock themselves overrides both (swkit's orphan tracker).
  virtual void lock_sink() noexcept { sink_mutex().lock(); }
  virtual void unlock_sink() noexcept { sink_mutex().unlock(); }
  // Drops cached state overlapping [start, end). Must not free memory or
  // block: it runs on the monitor thread or inside an unmapping call.
  virtual void invalidate_locked(std::uintptr_t start, std::uintptr_t end) noexcept = 0;
  // After fork() in the child: everything cached describes the parent.
  virtual void invalidate_all_locked() noexcept = 0;
};

class MemoryMonitor {
 public:
  static MemoryMonitor& instance();

  // Makes `wanted` available (kAuto picks userfaultfd when it works here,
  // else hooks) and returns the kind in effect. kUserfaultfd fails with a
  // message saying why it is unavailable.
  Result<MemoryMonitorKind> activate(MemoryMonitorKind wanted);

  void subscribe(InvalidationSink* sink);
  void unsubscribe(InvalidationSink* sink);

  enum class WatchResult { kWatched, kNotWatchable, kNotMapped };
  // Asks to be told when any part of [start, end) goes away. kNotWatchable:
  // this kind cannot watch that memory (the caller must not cache it);
  // kNotMapped: part of the range is not mapped.
  WatchResult watch(MemoryMonitorKind kind, std::uintptr_t start, std::uintptr_t end) noexcept;

  // Applies an invalidation to every sink (locks them all). Used by the hooks
  // and by the userfaultfd monitor thread.
  void dispatch(std::uintptr_t start, std::uintptr_t end) noexcept;

  // For the userfaultfd monitor thread: take every sink's lock, apply events,
  // release. lock_all() returns with the subscriber list locked too.
  void lock_all() noexcept;
  void dispatch_locked(std::uintptr_t start, std::uintptr_t end) noexcept;
  void unlock_all() noexcept;

  bool hooks_enabled() const noexcept;

 private:
  MemoryMonitor() = default;
  static void atfork_prepare() noexcept;
  static void atfork_parent() noexcept;
  static void atfork_child() noexcept;
};

// Enables the hook wrappers' reporting (memory_hooks.cpp); idempotent.
void enable_memory_hooks() noexcept;
bool memory_hooks_enabled() noexcept;

// Counts of events seen, for tests and rma_info.
struct MonitorCounters {
  std::uint64_t userfaultfd_events = 0;
  std::uint64_t hook_events = 0;
};
MonitorCounters monitor_counters() noexcept;
void count_hook_event() noexcept;
void count_userfaultfd_event() noexcept;

}  // namespace rma::rcache
