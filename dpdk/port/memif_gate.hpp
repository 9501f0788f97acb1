// The memif gate: keeps DPDK 22.11's memif disconnect handler (EAL
// interrupt thread) from unmapping rings under a running burst. Private to
// dpdk/port.
//
// DPDK 22.11's memif runs its control channel in the EAL interrupt thread.
// When the peer process dies, that thread reads EOF from the control socket
// and calls memif_disconnect(), which clears the "connected" flag, then
// munmap()s the shared regions and frees their descriptors while our thread
// may be inside rte_eth_rx_burst / rte_eth_tx_burst on those very rings: the
// burst passed the flag check earlier and now touches unmapped memory
// (segfault). Nothing in the PMD orders the two threads, so we do: the
// interrupt thread runs DPDK's handlers only while no memif burst is running.
//
// How: an always-readable eventfd registered as an EAL interrupt source makes
// the interrupt thread call park() on every pass of its event loop. park()
// opens the gate (bursts allowed), sleeps (see the intervals below), closes
// the gate and returns once no burst is inside, and only then does the
// interrupt thread go on to the other handlers (memif's among them) before it
// comes back to park(). So every interrupt handler runs with the gate closed
// and no burst inside. A burst that finds the gate closed does not wait:
// poll() delivers nothing and transmit() takes nothing that round. So the
// gate is closed only briefly: when a burst is still inside after kCloseWait
// (its thread preempted by another program), park() reopens the gate, sleeps
// kRetryInterval and tries again, rather than shutting every burst out until
// the scheduler returns to that thread; only after kReopenBudget of failed
// tries does it keep the gate closed and wait, so bursts that never leave all
// at once cannot hold the handlers back. The gate is a Dekker pair of
// sequentially consistent atomics (the burst side: increment `inside_`, then
// read `closed_`; the park side: set `closed_`, then read `inside_`), about
// two atomic operations per poll or transmit call. A closing park() that
// finds a burst inside blocks on `inside_` (a futex) and the last burst to
// leave wakes it: spinning could not succeed when the burst's thread shares
// the CPU with this one (the burst cannot leave while the parker runs), and
// each sleep between tries cost two context switches. Interrupt handlers
// (memif connect / disconnect messages) are delayed by up to kParkInterval
// while a port's link is not up (a handshake in progress) or a caller waits
// for a handler (Hurry), and by up to kSettledInterval once every port's link
// is up: then the only message left is a disconnect, and each pass of the
// interrupt thread costs the data path two context switches when the thread
// shares its CPU (with a pass every millisecond, a pinned 8 B WRITE
// ping-pong's round trips averaged 4.0 us once warm, against 3.3 us with a
// pass every 50 ms). With no memif port open the eventfd is drained and the
// interrupt thread sleeps in epoll as usual.
#pragma once

#include <rte_interrupts.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "rma/sdk/status.hpp"

namespace rma::roce::port {

class MemifGate {
 public:
  static MemifGate& instance();

  // A port that no link check applies to (tests): keeps the short interval.
  static constexpr std::uint16_t kNoPort = UINT16_MAX;

  // A memif port is about to start: installs the parker once, counts the
  // port, and watches its link to choose the park interval.
  Status add_user(std::uint16_t port_id);
  void remove_user(std::uint16_t port_id) noexcept;
  // While one exists, a caller waits for a memif handler to run (the peer's
  // disconnect): the interrupt thread parks for the short interval.
  class Hurry {
   public:
    Hurry() noexcept;
    ~Hurry();
    Hurry(const Hurry&) = delete;
    Hurry& operator=(const Hurry&) = delete;
  };

  // Data path: true when a burst may run now; then leave() must follow.
  // Re-entrant per thread (a frame sink may transmit from inside poll):
  // a thread already inside stays inside, since the parker waits for it.
  bool enter() noexcept {
    if (t_depth_ > 0) {
      ++t_depth_;
      return true;
    }
    inside_.fetch_add(1, std::memory_order_seq_cst);
    if (closed_.load(std::memory_order_seq_cst) == 0) {
      t_depth_ = 1;
      return true;
    }
    step_out();
    return false;
  }
  void leave() noexcept {
    if (--t_depth_ == 0) step_out();
  }
  // Control path: waits (bounded) until bursts may run; false on timeout.
  bool enter_wait(std::chrono::milliseconds budget) noexcept;
  std::uint64_t parks() const noexcept { return parks_.load(std::memory_order_relaxed); }

 private:
  static constexpr auto kParkInterval = std::chrono::milliseconds(1);
  static constexpr auto kSettledInterval = std::chrono::milliseconds(50);
  // How long a closing park() blocks for the bursts inside to leave. The
  // thread inside is often the one this thread preempted on a shared CPU:
  // blocking hands it the CPU, and it leaves within a microsecond or two.
  static constexpr auto kCloseWait = std::chrono::microseconds(200);
  static constexpr auto kRetryInterval = std::chrono::microseconds(20);
  // After this long of reopening, park() keeps the gate closed until the
  // bursts inside have left, so the handlers always get their turn.
  static constexpr auto kReopenBudget = std::chrono::milliseconds(250);

  void arm() noexcept;
  void kick() noexcept;
  // The last one out (a burst leaving, or one refused at the door) wakes a
  // parker that blocks for it (see park()).
  void step_out() noexcept {
    if (inside_.fetch_sub(1, std::memory_order_seq_cst) == 1 && parker_waits_.load(std::memory_order_seq_cst) != 0) {
      wake_parker();
    }
  }
  void wake_parker() noexcept;
  // Blocks until no burst is inside or `budget` has passed; true when none is.
  bool wait_bursts_out(std::chrono::microseconds budget) noexcept;
  // Every watched port's link is up and nobody hurries: the long interval.
  bool settled() noexcept;
  // Runs in the EAL interrupt thread (see above).
  static void park_cb(void* arg);
  void park() noexcept;

  std::mutex mutex_;
  int efd_ = -1;
  rte_intr_handle* ih_ = nullptr;
  std::atomic<int> users_{0};
  std::atomic<int> closed_{1};   // 1: the interrupt thread may run handlers; no burst may start
  std::atomic<int> inside_{0};   // bursts in progress (also the parker's futex word)
  std::atomic<int> parker_waits_{0};  // 1: park() blocks until inside_ is 0
  static thread_local int t_depth_;  // this thread's nesting of enter()
  std::atomic<std::uint64_t> parks_{0};
  std::mutex ports_mutex_;  // guards ports_ (settled() reads links under it: no EAL lock taken)
  std::vector<std::uint16_t> ports_;
  std::atomic<int> hurrying_{0};  // live Hurry objects
  std::mutex park_mutex_;
  std::condition_variable park_cv_;
  bool kicked_ = false;
};

// Holds the gate for one poll / transmit / shutdown step of a memif port.
class GateHold {
 public:
  explicit GateHold(bool memif) noexcept : memif_(memif), held_(!memif || MemifGate::instance().enter()) {}
  ~GateHold() {
    if (memif_ && held_) MemifGate::instance().leave();
  }
  GateHold(const GateHold&) = delete;
  GateHold& operator=(const GateHold&) = delete;
  bool held() const noexcept { return held_; }

 private:
  bool memif_;
  bool held_;
};

}  // namespace rma::roce::port
