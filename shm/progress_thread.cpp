#include "shm/progress_thread.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ctime>
#include <string>
#include <system_error>

namespace rma::shm {

Status ProgressThread::start(Segment* segment, std::function<void()> round) {
  segment_ = segment;
  round_ = std::move(round);
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error& e) {
    return resource_exhausted(std::string("shm: cannot start the progress thread: ") + e.what());
  }
  return {};
}

void ProgressThread::stop() noexcept {
  if (!thread_.joinable()) return;
  stopping_.store(true, std::memory_order_seq_cst);
  segment_->ring_doorbell();
  thread_.join();
}

void ProgressThread::run() noexcept {
  SegmentHeader& h = segment_->layout().header;
  while (!stopping_.load(std::memory_order_seq_cst)) {
    const std::uint32_t seen = h.doorbell.load(std::memory_order_seq_cst);
    round_();
    // No lost wake-up: a requester bumps the doorbell and then looks at
    // `sleeping`; we set `sleeping` and then compare the doorbell (all
    // seq_cst), and FUTEX_WAIT compares it again in the kernel.
    h.sleeping.store(1, std::memory_order_seq_cst);
    if (!stopping_.load(std::memory_order_seq_cst) && h.doorbell.load(std::memory_order_seq_cst) == seen) {
      // A bound, not a poll interval: every request rings the doorbell.
      timespec limit{0, 100 * 1000 * 1000};
      ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&h.doorbell), FUTEX_WAIT, seen, &limit, nullptr, 0);
    }
    h.sleeping.store(0, std::memory_order_seq_cst);
  }
}

}  // namespace rma::shm
