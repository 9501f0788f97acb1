#include "port/memif_gate.hpp"

#include <linux/futex.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <rte_ethdev.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "port/dpdk_objects.hpp"
#include "rma/sdk/log.hpp"

namespace rma::roce::port {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

thread_local int MemifGate::t_depth_ = 0;

MemifGate& MemifGate::instance() {
  static auto* g = new MemifGate;  // lives as long as the EAL (never torn down)
  return *g;
}

Status MemifGate::add_user(std::uint16_t port_id) {
  std::lock_guard lock(mutex_);
  if (ih_ == nullptr) {
    efd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (efd_ < 0) return io_error(std::string("memif gate: eventfd: ") + std::strerror(errno), errno);
    ih_ = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE);
    if (ih_ == nullptr || rte_intr_type_set(ih_, RTE_INTR_HANDLE_EXT) != 0 || rte_intr_fd_set(ih_, efd_) != 0) {
      return internal_error("memif gate: cannot set up an interrupt handle");
    }
    const int rc = rte_intr_callback_register(ih_, &MemifGate::park_cb, this);
    if (rc != 0) return io_error("memif gate: rte_intr_callback_register failed: " + rte_err(rc), 0);
  }
  {
    std::lock_guard pl(ports_mutex_);
    ports_.push_back(port_id);
  }
  if (users_.fetch_add(1) == 0) arm();
  kick();  // a parker in its settled interval: look at the new port's link now
  return Status();
}

void MemifGate::remove_user(std::uint16_t port_id) noexcept {
  std::lock_guard lock(mutex_);
  {
    std::lock_guard pl(ports_mutex_);
    if (auto it = std::find(ports_.begin(), ports_.end(), port_id); it != ports_.end()) ports_.erase(it);
  }
  if (users_.fetch_sub(1) == 1) kick();
}

MemifGate::Hurry::Hurry() noexcept {
  MemifGate& g = instance();
  g.hurrying_.fetch_add(1);
  g.kick();  // a parker in its settled interval: come back now
}

MemifGate::Hurry::~Hurry() { instance().hurrying_.fetch_sub(1); }

bool MemifGate::settled() noexcept {
  if (hurrying_.load() != 0) return false;
  std::lock_guard pl(ports_mutex_);
  if (ports_.empty()) return false;
  for (std::uint16_t id : ports_) {
    // Reads the PMD's connected flag; an unknown or closed port id fails.
    rte_eth_link l{};
    if (id == kNoPort || rte_eth_link_get_nowait(id, &l) != 0 || l.link_status != RTE_ETH_LINK_UP) return false;
  }
  return true;
}

bool MemifGate::enter_wait(std::chrono::milliseconds budget) noexcept {
  const auto deadline = Clock::now() + budget;
  while (!enter()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(50us);
  }
  return true;
}

void MemifGate::arm() noexcept {
  const std::uint64_t one = 1;
  if (::write(efd_, &one, sizeof one) < 0) RMA_LOG_WARN("softroce: memif gate: eventfd write failed");
}

void MemifGate::kick() noexcept {
  {
    std::lock_guard lock(park_mutex_);
    kicked_ = true;
  }
  park_cv_.notify_all();
}

void MemifGate::wake_parker() noexcept {
  (void)::syscall(SYS_futex, reinterpret_cast<int*>(&inside_), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

bool MemifGate::wait_bursts_out(std::chrono::microseconds budget) noexcept {
  static_assert(sizeof(std::atomic<int>) == sizeof(int), "inside_ is the futex word");
  const auto deadline = Clock::now() + budget;
  parker_waits_.store(1, std::memory_order_seq_cst);
  bool out = false;
  for (;;) {
    const int v = inside_.load(std::memory_order_seq_cst);
    if (v == 0) {
      out = true;
      break;
    }
    const auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero()) break;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
    // Returns at once when inside_ is no longer v (EAGAIN), on a wake, a
    // signal or the timeout; the loop looks again in every case.
    (void)::syscall(SYS_futex, reinterpret_cast<int*>(&inside_), FUTEX_WAIT_PRIVATE, v, &ts, nullptr, 0);
  }
  parker_waits_.store(0, std::memory_order_relaxed);
  return out;
}

void MemifGate::park_cb(void* arg) { static_cast<MemifGate*>(arg)->park(); }

void MemifGate::park() noexcept {
  if (users_.load() == 0) {
    std::uint64_t v;
    (void)::read(efd_, &v, sizeof v);     // no memif port: let epoll sleep
    if (users_.load() != 0) arm();        // a port arrived meanwhile: stay armed
    return;
  }
  parks_.fetch_add(1, std::memory_order_relaxed);
  const auto interval = settled() ? std::chrono::milliseconds(kSettledInterval) : kParkInterval;
  closed_.store(0, std::memory_order_seq_cst);
  {
    std::unique_lock lock(park_mutex_);
    park_cv_.wait_for(lock, interval, [this] { return kicked_; });
    kicked_ = false;
  }
  // Close, and keep it closed only if no burst is inside. A burst that is
  // inside is short while its thread runs, so block for it briefly (which
  // also hands the CPU to a thread this one preempted); if it does not
  // leave, its thread is not running (another program has the CPU) and
  // waiting would keep every burst of the process out until the scheduler
  // comes back to it: tens of microseconds per park, in which a
  // busy-polling program receives nothing and sends nothing (a third of a
  // stream's post lists found the link "full"). So reopen, let it run, and
  // try again shortly. Bursts that are inside at
  // every try for kReopenBudget (threads that leave and re-enter at once,
  // or one that does not run) would hold the handlers back for good: then
  // the gate stays closed until they have left.
  const auto give_up = Clock::now() + kReopenBudget;
  for (;;) {
    closed_.store(1, std::memory_order_seq_cst);
    if (wait_bursts_out(kCloseWait)) return;
    if (Clock::now() >= give_up) break;
    closed_.store(0, std::memory_order_seq_cst);
    std::this_thread::sleep_for(kRetryInterval);
  }
  while (inside_.load(std::memory_order_seq_cst) != 0) std::this_thread::sleep_for(kRetryInterval);
}

}  // namespace rma::roce::port
