// The RC engine's timers read the coarse clock where it can decide
// (Engine::passed, Engine::deadline_after): a long timer is never early and
// at most two coarse ticks late; a short one is as precise as before.
#include <gtest/gtest.h>

#include <time.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "link/fault_link.hpp"
#include "rc/engine.hpp"

namespace rma::roce::rc {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

std::unique_ptr<Engine> make_engine() {
  FaultLinkPair links = make_fault_link_pair(FaultConfig{});
  auto e = Engine::create(std::move(links.a), EngineOptions{});
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(e).value() : nullptr;
}

std::chrono::nanoseconds coarse_tick() {
  timespec res{};
  if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) != 0) return 0ns;
  return std::chrono::seconds(res.tv_sec) + std::chrono::nanoseconds(res.tv_nsec);
}

// Engine::now() is read once per call; progress() starts a new call.
void new_call(Engine& e) {
  std::lock_guard lock(e.mutex());
  e.progress();
}

TEST(EngineTimers, ALongTimerIsNeverEarlyAndAtMostTwoTicksLate) {
  auto e = make_engine();
  ASSERT_TRUE(e);
  const auto tick = coarse_tick();
  const auto d = std::max<std::chrono::nanoseconds>(100ms, 20 * tick);
  new_call(*e);
  const auto before = SteadyClock::now();
  const Clock::time_point deadline = e->deadline_after(d);
  const auto after = SteadyClock::now();
  EXPECT_GE(deadline, before + d) << "armed early";
  EXPECT_LE(deadline, after + d + 2 * tick + 1ms) << "armed more than two ticks late";
  // Not passed before the deadline, whatever the coarse clock says: a
  // "passed" answer is wrong when the clock, read after it, is still short
  // of the deadline (robust against this thread being descheduled).
  int early = 0, checks = 0;
  while (SteadyClock::now() < deadline) {
    new_call(*e);
    if (e->passed(deadline) && SteadyClock::now() < deadline) ++early;
    ++checks;
    std::this_thread::sleep_for(2ms);
  }
  EXPECT_EQ(early, 0) << "of " << checks << " checks before the deadline";
  EXPECT_GT(checks, 10);
  new_call(*e);
  EXPECT_TRUE(e->passed(deadline)) << "a deadline in the past must read as passed at once";
}

TEST(EngineTimers, AShortTimerIsPrecise) {
  auto e = make_engine();
  ASSERT_TRUE(e);
  new_call(*e);
  const auto before = SteadyClock::now();
  const Clock::time_point deadline = e->deadline_after(500us);
  EXPECT_GE(deadline, before + 500us);
  EXPECT_LE(deadline, SteadyClock::now() + 500us);
  std::this_thread::sleep_for(1ms);
  new_call(*e);
  EXPECT_TRUE(e->passed(deadline));
}

}  // namespace
}  // namespace rma::roce::rc
