// The softroce device's background progress (see softroce_device.hpp): a
// thread that wakes every interval and runs Engine::progress() if nobody
// did since its last look and the device lock is free.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "rc/engine.hpp"
#include "rma/sdk/status.hpp"

namespace rma::softroce {

class ProgressThread {
 public:
  ProgressThread() = default;
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;
  ~ProgressThread() { stop(); }

  // `engine` must outlive stop() (the device declares this after it).
  Status start(roce::rc::Engine* engine, std::chrono::microseconds interval);
  void stop() noexcept;
  std::uint64_t runs() const noexcept { return runs_.load(std::memory_order_relaxed); }

 private:
  void run() noexcept;

  roce::rc::Engine* engine_ = nullptr;
  std::chrono::microseconds interval_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mutex_
  std::atomic<std::uint64_t> runs_{0};  // progress() calls made by the thread
  std::thread thread_;
};

}  // namespace rma::softroce
