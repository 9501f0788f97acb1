#include "provider/progress_thread.hpp"

#include <string>
#include <system_error>

namespace rma::softroce {

Status ProgressThread::start(roce::rc::Engine* engine, std::chrono::microseconds interval) {
  engine_ = engine;
  interval_ = interval;
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error& e) {
    return resource_exhausted(std::string("softroce: cannot start the progress thread: ") + e.what() +
                              " (set RMA_SOFTROCE_PROGRESS_US=0 to run without it)");
  }
  return {};
}

void ProgressThread::stop() noexcept {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void ProgressThread::run() noexcept {
  std::uint64_t seen = engine_->progress_calls();
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, interval_, [this] { return stopping_; })) {
    const std::uint64_t now = engine_->progress_calls();
    if (now == seen) {
      // Idle for a whole interval: progress, unless someone holds the
      // device (they are progressing or about to).
      std::unique_lock device(engine_->mutex(), std::try_to_lock);
      if (device.owns_lock()) {
        engine_->progress();
        runs_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    seen = engine_->progress_calls();
  }
}

}  // namespace rma::softroce
