#include "clock.hpp"

#include <fstream>
#include <string>

namespace rma::perftest {

TscScale g_tsc;

namespace {

// Both flags on the first processor's line (the kernel prints the same on
// every one).
bool invariant_tsc() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    const std::string padded = line + " ";
    return padded.find(" constant_tsc ") != std::string::npos && padded.find(" nonstop_tsc ") != std::string::npos;
  }
  return false;
}

}  // namespace

void calibrate_clock() {
#if defined(__x86_64__)
  if (!invariant_tsc()) return;
  const std::int64_t ns_start = steady_ns();
  const std::uint64_t tsc_start = __rdtsc();
  std::int64_t ns_end = ns_start;
  while (ns_end - ns_start < 20000000) ns_end = steady_ns();
  const std::uint64_t tsc_end = __rdtsc();
  if (tsc_end <= tsc_start) return;
  g_tsc.ns_per_tick = static_cast<double>(ns_end - ns_start) / static_cast<double>(tsc_end - tsc_start);
  g_tsc.tsc0 = tsc_end;
  g_tsc.ns0 = ns_end;
  g_tsc.use = true;
#endif
}

}  // namespace rma::perftest
