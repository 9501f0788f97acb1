// Registered memory that was unmapped, for the software providers (self,
// softroce): part of swkit, the kit they share.
//
// A real NIC pins registered pages: after munmap() the region still names
// the old pages and the NIC writes there harmlessly (and invisibly). A
// software provider copies through virtual addresses and pins nothing, so it
// must know when a region's memory went away, or an access through a stale
// region would fault, or land in whatever is mapped there now. It watches
// every region through the engine's memory monitor (userfaultfd or hooks,
// as the registration cache does) and marks regions whose memory went away
// as orphaned; an access through an orphaned region fails with a protection
// (or remote access) error whose vendor_err says so, instead of touching any
// memory.
//
// Limit: an unmap that races with a transfer already copying can still
// fault; freeing memory while an operation on it is in flight is a bug in
// the caller on any transport.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "rcache/memory_monitor.hpp"

namespace rma::swkit {

// One watched region; owned by the memory region, linked into the tracker.
struct OrphanWatch {
  std::uintptr_t start = 0;  // page-aligned
  std::uintptr_t end = 0;
  std::atomic<bool> orphaned{false};
  OrphanWatch* prev = nullptr;
  OrphanWatch* next = nullptr;
};

// Starts watching the pages of [addr, addr+length) (page-rounded); the
// watch stops when the returned object is destroyed. Control path. Not under
// a provider lock that the memory monitor could wait for (see remove()).
class RegionWatch {
 public:
  RegionWatch(std::uint64_t addr, std::uint64_t length);
  ~RegionWatch();
  RegionWatch(const RegionWatch&) = delete;
  RegionWatch& operator=(const RegionWatch&) = delete;
  const std::atomic<bool>* orphaned() const noexcept { return &watch_.orphaned; }

 private:
  OrphanWatch watch_;
};

class OrphanTracker final : public rcache::InvalidationSink {
 public:
  static OrphanTracker& instance();

  // Starts watching [w->start, w->end). Never allocates under its lock, so the
  // memory monitor can call in at any time.
  void add(OrphanWatch* w) noexcept;
  void remove(OrphanWatch* w) noexcept;

  // Waits until no invalidation is being applied. With userfaultfd the
  // unmapping thread resumes as soon as the monitor has read the event,
  // before the monitor (which holds this lock from before the read until
  // the flags are set) has marked anything; a transfer that syncs first
  // therefore sees every unmap that returned before it started. The
  // monitor makes `applying_` odd when it takes the lock and even when it
  // lets go, so a transfer reads one counter and waits (for the lock) only
  // while an invalidation is under way. The hooks mark regions in the
  // unmapping thread, before the call returns: nothing to wait for then.
  void sync() noexcept {
    if (applying()) std::lock_guard lock(mutex_);
  }
  // Whether sync() would wait now (an invalidation is under way); for a
  // caller that must not call out and takes its slow path instead.
  bool applying() const noexcept {
    return kind_ == MemoryMonitorKind::kUserfaultfd && (applying_.load(std::memory_order_acquire) & 1u) != 0;
  }

  std::mutex& sink_mutex() noexcept override { return mutex_; }
  void lock_sink() noexcept override {
    mutex_.lock();
    applying_.fetch_add(1, std::memory_order_seq_cst);
  }
  void unlock_sink() noexcept override {
    applying_.fetch_add(1, std::memory_order_release);
    mutex_.unlock();
  }
  void invalidate_locked(std::uintptr_t start, std::uintptr_t end) noexcept override;
  void invalidate_all_locked() noexcept override;

 private:
  OrphanTracker();
  std::mutex mutex_;
  std::atomic<std::uint32_t> applying_{0};  // odd while the monitor holds mutex_
  OrphanWatch* head_ = nullptr;
  MemoryMonitorKind kind_ = MemoryMonitorKind::kNone;
};

}  // namespace rma::swkit
