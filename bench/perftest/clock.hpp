// The tools' clock: nanoseconds on the monotonic clock, read once or twice
// per iteration by every loop. perftest reads the CPU's time-stamp counter
// there (get_cycles), and so does ucx_perftest (ucs_get_time): one
// instruction. Where the counter is invariant (the CPU says constant_tsc
// and nonstop_tsc: one rate in every power state, on every core) so do we,
// scaled by its rate against steady_clock, measured once before the run
// (calibrate_clock); elsewhere steady_clock (clock_gettime, some tens of
// nanoseconds more per read).
#pragma once

#include <chrono>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace rma::perftest {

struct TscScale {
  bool use = false;        // the counter is invariant and calibrated
  std::uint64_t tsc0 = 0;  // a counter reading ...
  std::int64_t ns0 = 0;    // ... and the steady_clock nanoseconds at it
  double ns_per_tick = 0;
};
extern TscScale g_tsc;

// Measures the counter's rate (about 20 ms); call once, before any
// measurement. Without an invariant counter it leaves steady_clock in use.
void calibrate_clock();

inline std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Nanoseconds on the monotonic clock.
inline std::int64_t now_ns() {
#if defined(__x86_64__)
  if (g_tsc.use) {
    return g_tsc.ns0 + static_cast<std::int64_t>(static_cast<double>(__rdtsc() - g_tsc.tsc0) * g_tsc.ns_per_tick);
  }
#endif
  return steady_ns();
}

// A latency loop's per-iteration stamp: the raw counter where now_ns()
// scales it, else now_ns() itself. The scaling (a conversion to double, a
// multiply and one back) is done after the loop, as perftest converts its
// cycles at the report: it was a tenth of an 8 B mapped READ's iteration.
inline std::int64_t now_stamp() {
#if defined(__x86_64__)
  if (g_tsc.use) return static_cast<std::int64_t>(__rdtsc());
#endif
  return steady_ns();
}

// now_ns()'s reading for a now_stamp() stamp of this process.
inline std::int64_t stamp_to_ns(std::int64_t stamp) {
#if defined(__x86_64__)
  if (g_tsc.use) {
    return g_tsc.ns0 +
           static_cast<std::int64_t>(static_cast<double>(static_cast<std::uint64_t>(stamp) - g_tsc.tsc0) * g_tsc.ns_per_tick);
  }
#endif
  return stamp;
}

}  // namespace rma::perftest
