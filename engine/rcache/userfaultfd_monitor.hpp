// The userfaultfd backend of the memory monitor: one userfaultfd per process
// with UNMAP/REMOVE/REMAP events, ranges registered in write-protect mode
// (we never write-protect a page, so no fault ever waits on us), and a
// thread that reads events and applies them to every registration cache.
#pragma once

#include <cstdint>

#include "rma/sdk/status.hpp"

namespace rma::rcache {

class UserfaultfdMonitor {
 public:
  // Starts the monitor on first use; fails with a message naming why
  // userfaultfd is not usable (permissions, kernel features).
  static Status start();
  static bool running() noexcept;
  enum class Watch { kOk, kNotWatchable, kNotMapped };
  static Watch watch(std::uintptr_t start, std::uintptr_t end) noexcept;
  // In a fork child: the monitor thread does not exist there.
  static void forget_after_fork() noexcept;
};

}  // namespace rma::rcache
