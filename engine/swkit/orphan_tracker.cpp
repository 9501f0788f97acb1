#include "swkit/orphan_tracker.hpp"

#include <unistd.h>

#include "rma/sdk/log.hpp"

namespace rma::swkit {

RegionWatch::RegionWatch(std::uint64_t addr, std::uint64_t length) {
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  watch_.start = addr & ~(page - 1);
  watch_.end = (addr + length + page - 1) & ~(page - 1);
  OrphanTracker::instance().add(&watch_);
}

RegionWatch::~RegionWatch() { OrphanTracker::instance().remove(&watch_); }

OrphanTracker& OrphanTracker::instance() {
  static OrphanTracker* t = new OrphanTracker;  // immortal, like the fabric
  return *t;
}

OrphanTracker::OrphanTracker() {
  // The same choice as the registration cache: userfaultfd where it works,
  // else the munmap/madvise/... hooks.
  auto kind = rcache::MemoryMonitor::instance().activate(MemoryMonitorKind::kAuto);
  if (kind.ok()) {
    kind_ = *kind;
  } else {
    RMA_LOG_WARN("software providers: cannot watch registered memory (%s); unmapping memory that is still "
                 "registered can crash a later transfer", kind.status().message().c_str());
  }
  rcache::MemoryMonitor::instance().subscribe(this);
}

void OrphanTracker::add(OrphanWatch* w) noexcept {
  // An unmap racing with the registration itself is the caller's race, as
  // it would be on any NIC.
  (void)rcache::MemoryMonitor::instance().watch(kind_, w->start, w->end);
  std::lock_guard lock(mutex_);
  w->prev = nullptr;
  w->next = head_;
  if (head_ != nullptr) head_->prev = w;
  head_ = w;
}

void OrphanTracker::remove(OrphanWatch* w) noexcept {
  std::lock_guard lock(mutex_);
  if (w->prev != nullptr) w->prev->next = w->next; else head_ = w->next;
  if (w->next != nullptr) w->next->prev = w->prev;
  w->prev = w->next = nullptr;
}

void OrphanTracker::invalidate_locked(std::uintptr_t start, std::uintptr_t end) noexcept {
  for (OrphanWatch* w = head_; w != nullptr; w = w->next) {
    if (w->start < end && start < w->end) w->orphaned.store(true, std::memory_order_release);
  }
}

void OrphanTracker::invalidate_all_locked() noexcept {
  // After fork() the child's copies of registered pages are its own: what
  // the parent registered describes the parent's memory.
  for (OrphanWatch* w = head_; w != nullptr; w = w->next) w->orphaned.store(true, std::memory_order_release);
}

}  // namespace rma::swkit
