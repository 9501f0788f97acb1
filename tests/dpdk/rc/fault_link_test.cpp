#include <gtest/gtest.h>

#include <vector>

#include "link/fault_link.hpp"

namespace rma::roce {
namespace {

struct Collect : FrameSink {
  std::vector<std::vector<std::uint8_t>> frames;
  void on_frame(std::span<const std::uint8_t> f) noexcept override { frames.emplace_back(f.begin(), f.end()); }
};

std::vector<std::vector<std::uint8_t>> run(const FaultConfig& cfg, int n) {
  auto p = make_fault_link_pair(cfg);
  for (int i = 0; i < n; ++i) {
    std::uint8_t b[8] = {static_cast<std::uint8_t>(i), static_cast<std::uint8_t>(i >> 8), 1, 2, 3, 4, 5, 6};
    TxFrame f{{b, 8}, {}, {}};
    EXPECT_EQ(p.a->transmit({&f, 1}), 1u);
  }
  Collect c;
  for (int i = 0; i < 100; ++i) p.b->poll(c, 1000);
  return c.frames;
}

TEST(FaultLink, CleanLinkDeliversInOrder) {
  auto frames = run(FaultConfig{}, 100);
  ASSERT_EQ(frames.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(frames[i][0], static_cast<std::uint8_t>(i));
}

TEST(FaultLink, FaultsAreCountedAndDeterministic) {
  FaultConfig cfg;
  cfg.drop = 0.1;
  cfg.duplicate = 0.05;
  cfg.reorder = 0.05;
  cfg.delay = 0.05;
  cfg.corrupt = 0.05;
  cfg.seed = 42;
  auto p = make_fault_link_pair(cfg);
  for (int i = 0; i < 2000; ++i) {
    std::uint8_t b[8] = {static_cast<std::uint8_t>(i)};
    TxFrame f{{b, 8}, {}, {}};
    ASSERT_EQ(p.a->transmit({&f, 1}), 1u);
  }
  Collect c;
  for (int i = 0; i < 100; ++i) p.b->poll(c, 1000);
  FaultCounters fc = p.a->fault_counters();
  EXPECT_EQ(fc.offered, 2000u);
  EXPECT_GT(fc.dropped, 100u);
  EXPECT_GT(fc.duplicated, 40u);
  EXPECT_GT(fc.reordered, 40u);
  EXPECT_GT(fc.delayed, 40u);
  EXPECT_GT(fc.corrupted, 40u);
  EXPECT_EQ(c.frames.size(), fc.offered - fc.dropped + fc.duplicated);
  EXPECT_EQ(fc.delivered, c.frames.size());
  EXPECT_EQ(run(cfg, 500), run(cfg, 500));  // same seed, same outcome
  FaultConfig other = cfg;
  other.seed = 43;
  EXPECT_NE(run(cfg, 500), run(other, 500));
}

TEST(FaultLink, DelayHoldsFramesForPolls) {
  FaultConfig cfg;
  cfg.delay = 1.0;
  cfg.max_delay_polls = 3;
  auto p = make_fault_link_pair(cfg);
  std::uint8_t b[4] = {1, 2, 3, 4};
  TxFrame f{{b, 4}, {}, {}};
  ASSERT_EQ(p.a->transmit({&f, 1}), 1u);
  Collect c;
  EXPECT_EQ(p.b->poll(c, 10), 0u);  // held at least one poll
  for (int i = 0; i < 3; ++i) p.b->poll(c, 10);
  EXPECT_EQ(c.frames.size(), 1u);
}

TEST(FaultLink, CapacityRefusesAndFilterDrops) {
  FaultConfig cfg;
  cfg.capacity = 4;
  auto p = make_fault_link_pair(cfg);
  std::uint8_t b[4] = {};
  std::vector<TxFrame> fs(6, TxFrame{{b, 4}, {}, {}});
  EXPECT_EQ(p.a->transmit(fs), 4u);
  EXPECT_EQ(p.a->counters().tx_dropped, 1u);
  Collect c;
  p.b->poll(c, 10);
  p.a->set_drop_filter([](std::uint64_t i, std::span<const std::uint8_t>) { return i == 5; });
  EXPECT_EQ(p.a->transmit({fs.data(), 2}), 2u);  // index 4 passes, 5 dropped
  p.b->poll(c, 10);
  EXPECT_EQ(c.frames.size(), 5u);
  EXPECT_EQ(p.b->counters().rx_frames, 5u);
}

}  // namespace
}  // namespace rma::roce
