#include "rcache/interval_map.hpp"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

namespace rma::rcache {
namespace {

using Seen = std::vector<std::pair<std::uintptr_t, std::uintptr_t>>;

TEST(IntervalMap, FindCovering) {
  IntervalMap<int> m;
  m.insert(0x1000, 0x3000, 1);
  m.insert(0x5000, 0x6000, 2);
  EXPECT_EQ(*m.find_covering(0x1000, 0x3000), 1);
  EXPECT_EQ(*m.find_covering(0x2000, 0x2001), 1);
  EXPECT_EQ(m.find_covering(0x2000, 0x3001), nullptr);  // runs past the end
  EXPECT_EQ(m.find_covering(0x0, 0x1000), nullptr);
  EXPECT_EQ(m.find_covering(0x3000, 0x4000), nullptr);
  EXPECT_EQ(*m.find_covering(0x5000, 0x6000), 2);
  EXPECT_EQ(m.find_covering(0x6000, 0x7000), nullptr);
}

TEST(IntervalMap, TouchingIncludesAdjacent) {
  IntervalMap<int> m;
  m.insert(0x1000, 0x2000, 1);
  m.insert(0x3000, 0x4000, 2);
  m.insert(0x6000, 0x7000, 3);
  Seen seen;
  m.for_each_touching(0x2000, 0x3000, [&](auto s, auto e, int) { seen.emplace_back(s, e); });
  EXPECT_EQ(seen, (Seen{{0x1000, 0x2000}, {0x3000, 0x4000}}));
  seen.clear();
  m.for_each_touching(0x4800, 0x5000, [&](auto s, auto e, int) { seen.emplace_back(s, e); });
  EXPECT_TRUE(seen.empty());
}

TEST(IntervalMap, EraseOverlappingLeavesAdjacent) {
  IntervalMap<int> m;
  m.insert(0x1000, 0x2000, 1);
  m.insert(0x2000, 0x3000, 2);
  m.insert(0x3000, 0x4000, 3);
  Seen seen;
  m.erase_overlapping(0x2000, 0x3000, [&](auto s, auto e, int) { seen.emplace_back(s, e); });
  EXPECT_EQ(seen, (Seen{{0x2000, 0x3000}}));
  EXPECT_EQ(m.size(), 2u);
  seen.clear();
  m.erase_touching(0x2000, 0x3000, [&](auto s, auto e, int) { seen.emplace_back(s, e); });
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_TRUE(m.empty());
}

// Random operations against a page bitmap model.
TEST(IntervalMap, MatchesAModel) {
  std::mt19937 rng(12345);
  IntervalMap<int> m;
  std::vector<int> owner(256, -1);
  int next = 0;
  for (int step = 0; step < 20000; ++step) {
    std::uintptr_t s = rng() % 250, e = s + 1 + rng() % 6;
    if (rng() % 2 == 0) {
      // Insert only where free, as the cache does after erasing.
      bool free = true;
      for (auto p = s; p < e; ++p) free &= owner[p] < 0;
      if (!free) continue;
      m.insert(s, e, next);
      for (auto p = s; p < e; ++p) owner[p] = next;
      ++next;
    } else {
      std::set<int> expected;
      for (auto p = s; p < e; ++p) if (owner[p] >= 0) expected.insert(owner[p]);
      std::set<int> got;
      m.erase_overlapping(s, e, [&](auto rs, auto re, int v) {
        got.insert(v);
        for (auto p = rs; p < re; ++p) owner[p] = -1;
      });
      ASSERT_EQ(got, expected);
    }
    std::uintptr_t q = rng() % 255;
    const int* c = m.find_covering(q, q + 1);
    ASSERT_EQ(c == nullptr ? -1 : *c, owner[q]) << "page " << q;
  }
}

TEST(IntervalMap, EraseIfCompactsInOrder) {
  IntervalMap<int> m;
  for (int i = 0; i < 10; ++i) m.insert(static_cast<std::uintptr_t>(i) * 0x2000, static_cast<std::uintptr_t>(i) * 0x2000 + 0x1000, i);
  std::vector<int> removed;
  m.erase_if([](auto, auto, int v) { return v % 3 == 0; }, [&](auto, auto, int v) { removed.push_back(v); });
  EXPECT_EQ(removed, (std::vector<int>{0, 3, 6, 9}));
  std::vector<int> left;
  m.for_each([&](auto, auto, int v) { left.push_back(v); });
  EXPECT_EQ(left, (std::vector<int>{1, 2, 4, 5, 7, 8}));
  EXPECT_EQ(*m.find_covering(0x8000, 0x9000), 4);
}

TEST(IntervalMap, GrowsPastItsFirstCapacity) {
  IntervalMap<int> m;
  for (int i = 999; i >= 0; --i) m.insert(static_cast<std::uintptr_t>(i) * 0x2000, static_cast<std::uintptr_t>(i) * 0x2000 + 0x1000, i);
  ASSERT_EQ(m.size(), 1000u);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(*m.find_covering(static_cast<std::uintptr_t>(i) * 0x2000 + 5, static_cast<std::uintptr_t>(i) * 0x2000 + 6), i);
}

}  // namespace
}  // namespace rma::rcache
