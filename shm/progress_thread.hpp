// The device's progress thread: the target side of a passive peer. A
// process that never polls (it computes, or waits on something else) must
// still serve the atomics, SENDs and WRITE_WITH_IMMs that peers leave in
// its rings, as a NIC would. The thread sleeps on the segment's doorbell
// (a futex in shared memory that requesters ring after posting) and runs
// one round of the device's progress under the device lock when woken.
#pragma once

#include <atomic>
#include <functional>
#include <thread>

#include "rma/sdk/status.hpp"
#include "shm/segment.hpp"

namespace rma::shm {

class ProgressThread {
 public:
  ProgressThread() = default;
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;
  ~ProgressThread() { stop(); }

  // `round` runs one progress round (it takes the device lock itself).
  Status start(Segment* segment, std::function<void()> round);
  void stop() noexcept;

 private:
  void run() noexcept;

  Segment* segment_ = nullptr;
  std::function<void()> round_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace rma::shm
