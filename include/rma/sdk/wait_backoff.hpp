// How a thread that polls for another process's action lets the CPU go.
//
// A rank waiting for a peer (an ACK, a lock word, a barrier counter) polls,
// and between bursts of polls it must give the CPU to whoever else needs
// it. sched_yield alone is not enough when ranks outnumber cores: under
// Linux's EEVDF scheduler a yielding thread stays runnable and keeps being
// picked, and two ranks of a 2-core machine that both yield-spin starved
// the two ranks they were waiting for for up to 18 s (perf: 0 samples for
// the starved ranks; a 2+2 mpirun across two network namespaces failed
// with RETRY_EXC_ERR in 10-25 % of runs at load 10-18, 0 of 30 once long
// waits sleep). So: yield while the wait is short (a peer on its own core
// answers within microseconds and latency matters), sleep briefly once it
// has lasted a while (a peer without a core needs ours).
//
// Header-only and hidden: each library that includes it keeps its own copy.
#pragma once

#include <chrono>
#include <cstdint>
#include <thread>

namespace rma {

class WaitBackoff {
 public:
  // Yields before sleeping: with a few hundred polls between pauses this is
  // about a millisecond of waiting.
  static constexpr std::uint32_t kYieldsBeforeSleeping = 64;
  // Long enough for the scheduler to run a starved peer, short against the
  // millisecond the wait has lasted already.
  static constexpr std::chrono::microseconds kSleep{20};

  // Gives the CPU away once; later calls of a long wait sleep.
  void pause() noexcept {
    if (yields_ < kYieldsBeforeSleeping) {
      ++yields_;
      std::this_thread::yield();
      return;
    }
    std::this_thread::sleep_for(kSleep);
  }

  // The next wait starts short again.
  void reset() noexcept { yields_ = 0; }

  bool sleeping() const noexcept { return yields_ >= kYieldsBeforeSleeping; }

 private:
  std::uint32_t yields_ = 0;
};

}  // namespace rma
