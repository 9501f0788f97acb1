// WaitBackoff: a wait yields first, sleeps once it has lasted, and starts
// short again after reset().
#include "rma/sdk/wait_backoff.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace rma {
namespace {

TEST(WaitBackoff, YieldsForAWhileThenSleeps) {
  WaitBackoff backoff;
  for (std::uint32_t i = 0; i < WaitBackoff::kYieldsBeforeSleeping; ++i) {
    EXPECT_FALSE(backoff.sleeping()) << "after " << i << " pauses";
    backoff.pause();
  }
  EXPECT_TRUE(backoff.sleeping());
  // sleep_for sleeps at least its duration; a yield does not wait for time.
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) backoff.pause();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 10 * WaitBackoff::kSleep);
  EXPECT_TRUE(backoff.sleeping());
}

TEST(WaitBackoff, ResetStartsShortAgain) {
  WaitBackoff backoff;
  for (std::uint32_t i = 0; i <= WaitBackoff::kYieldsBeforeSleeping; ++i) backoff.pause();
  ASSERT_TRUE(backoff.sleeping());
  backoff.reset();
  EXPECT_FALSE(backoff.sleeping());
}

}  // namespace
}  // namespace rma
