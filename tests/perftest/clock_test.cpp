// The tools' clock: a latency loop's raw stamps, converted after the loop,
// read as now_ns() would have read them.
#include "clock.hpp"

#include <gtest/gtest.h>

namespace rma::perftest {
namespace {

TEST(PerftestClock, StampConvertsToNowNs) {
  calibrate_clock();
  for (int i = 0; i < 1000; ++i) {
    const std::int64_t before = now_ns();
    const std::int64_t stamp = now_stamp();
    const std::int64_t after = now_ns();
    const std::int64_t ns = stamp_to_ns(stamp);
    // The same scaling as now_ns(); a nanosecond either way for the
    // conversion's rounding.
    EXPECT_GE(ns, before - 1) << "iteration " << i;
    EXPECT_LE(ns, after + 1) << "iteration " << i;
  }
}

TEST(PerftestClock, StampsKeepTheirOrder) {
  calibrate_clock();
  std::int64_t last = stamp_to_ns(now_stamp());
  for (int i = 0; i < 10000; ++i) {
    const std::int64_t next = stamp_to_ns(now_stamp());
    EXPECT_GE(next, last);
    last = next;
  }
}

}  // namespace
}  // namespace rma::perftest
