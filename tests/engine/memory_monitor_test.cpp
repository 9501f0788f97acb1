#include "rcache/memory_monitor.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vector>

namespace rma::rcache {
namespace {

const std::size_t kPage = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));

// Records what the monitor reports.
class RecordingSink : public InvalidationSink {
 public:
  std::mutex& sink_mutex() noexcept override { return mutex_; }
  void invalidate_locked(std::uintptr_t s, std::uintptr_t e) noexcept override {
    if (events_.size() < events_.capacity()) events_.emplace_back(s, e);
  }
  void invalidate_all_locked() noexcept override {}
  bool saw(std::uintptr_t s, std::uintptr_t e) {
    std::lock_guard lock(mutex_);
    for (auto [a, b] : events_) if (a <= s && e <= b) return true;
    return false;
  }
  RecordingSink() { events_.reserve(4096); }  // no allocation inside the callback

 private:
  std::mutex mutex_;
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> events_;
};

TEST(MemoryMonitor, UserfaultfdReportsUnmapBeforeMunmapReturns) {
  auto kind = MemoryMonitor::instance().activate(MemoryMonitorKind::kUserfaultfd);
  if (!kind.ok()) GTEST_SKIP() << kind.status().to_string();
  RecordingSink sink;
  MemoryMonitor::instance().subscribe(&sink);
  auto* p = static_cast<char*>(mmap(nullptr, 4 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  auto s = reinterpret_cast<std::uintptr_t>(p);
  ASSERT_EQ(MemoryMonitor::instance().watch(MemoryMonitorKind::kUserfaultfd, s, s + 4 * kPage),
            MemoryMonitor::WatchResult::kWatched);
  auto before = monitor_counters().userfaultfd_events;
  ASSERT_EQ(munmap(p + kPage, kPage), 0);
  // No waiting: the event is applied before munmap returns.
  EXPECT_TRUE(sink.saw(s + kPage, s + 2 * kPage));
  EXPECT_GT(monitor_counters().userfaultfd_events, before);
  ASSERT_EQ(madvise(p, kPage, MADV_DONTNEED), 0);
  EXPECT_TRUE(sink.saw(s, s + kPage));
  MemoryMonitor::instance().unsubscribe(&sink);
  munmap(p, 4 * kPage);
}

TEST(MemoryMonitor, UserfaultfdDoesNotWatchUnmappedRanges) {
  auto kind = MemoryMonitor::instance().activate(MemoryMonitorKind::kUserfaultfd);
  if (!kind.ok()) GTEST_SKIP() << kind.status().to_string();
  auto* p = static_cast<char*>(mmap(nullptr, 2 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  ASSERT_EQ(munmap(p, 2 * kPage), 0);
  auto s = reinterpret_cast<std::uintptr_t>(p);
  // Kernels differ (ENOMEM or EINVAL), and a range with a hole in the middle
  // is accepted by recent ones, which watch the parts that exist; the
  // provider then refuses to register it. Never "watched" when nothing is.
  EXPECT_NE(MemoryMonitor::instance().watch(MemoryMonitorKind::kUserfaultfd, s, s + 2 * kPage),
            MemoryMonitor::WatchResult::kWatched);
}

TEST(MemoryMonitor, HooksReportMunmapAndMadvise) {
  ASSERT_TRUE(MemoryMonitor::instance().activate(MemoryMonitorKind::kHooks).ok());
  EXPECT_TRUE(memory_hooks_enabled());
  RecordingSink sink;
  MemoryMonitor::instance().subscribe(&sink);
  auto* p = static_cast<char*>(mmap(nullptr, 3 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  auto s = reinterpret_cast<std::uintptr_t>(p);
  auto before = monitor_counters().hook_events;
  ASSERT_EQ(madvise(p, kPage, MADV_DONTNEED), 0);
  EXPECT_TRUE(sink.saw(s, s + kPage));
  ASSERT_EQ(madvise(p, kPage, MADV_WILLNEED), 0);  // does not discard: not reported
  ASSERT_EQ(munmap(p, 3 * kPage), 0);
  EXPECT_TRUE(sink.saw(s, s + 3 * kPage));
  EXPECT_EQ(monitor_counters().hook_events, before + 2);
  // A failed call reports nothing.
  EXPECT_NE(munmap(reinterpret_cast<void*>(1), kPage), 0);
  EXPECT_EQ(monitor_counters().hook_events, before + 2);
  MemoryMonitor::instance().unsubscribe(&sink);
}

TEST(MemoryMonitor, AutoPicksAWorkingMonitor) {
  auto kind = MemoryMonitor::instance().activate(MemoryMonitorKind::kAuto);
  ASSERT_TRUE(kind.ok());
  EXPECT_TRUE(*kind == MemoryMonitorKind::kUserfaultfd || *kind == MemoryMonitorKind::kHooks);
}

}  // namespace
}  // namespace rma::rcache
