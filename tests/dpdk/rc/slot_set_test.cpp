// SlotSet: the responder's set of resources with responses to send.
#include <gtest/gtest.h>

#include <vector>

#include "rc/slot_set.hpp"

namespace rma::roce::rc {
namespace {

std::vector<std::uint32_t> members_from(const SlotSet<128>& s, std::uint32_t from) {
  std::vector<std::uint32_t> v;
  for (std::uint32_t i = s.first_from(from); i < 128; i = s.first_from(i + 1)) v.push_back(i);
  return v;
}

TEST(SlotSet, WalksItsMembersInOrderAcrossWords) {
  SlotSet<128> s;
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.first_from(0), 128u);
  for (std::uint32_t i : {0u, 5u, 63u, 64u, 100u, 127u}) s.insert(i);
  EXPECT_FALSE(s.empty());
  EXPECT_EQ(members_from(s, 0), (std::vector<std::uint32_t>{0, 5, 63, 64, 100, 127}));
  EXPECT_EQ(members_from(s, 6), (std::vector<std::uint32_t>{63, 64, 100, 127}));
  EXPECT_EQ(members_from(s, 64), (std::vector<std::uint32_t>{64, 100, 127}));
  EXPECT_EQ(s.first_from(128), 128u);
  EXPECT_TRUE(s.contains(63));
  s.erase(63);
  s.erase(63);  // erasing a non-member changes nothing
  EXPECT_FALSE(s.contains(63));
  EXPECT_EQ(members_from(s, 6), (std::vector<std::uint32_t>{64, 100, 127}));
  s.clear();
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.first_from(0), 128u);
}

TEST(SlotSet, EveryMemberOfAFullSetIsFound) {
  SlotSet<128> s;
  for (std::uint32_t i = 0; i < 128; ++i) s.insert(i);
  EXPECT_EQ(members_from(s, 0).size(), 128u);
  for (std::uint32_t i = 0; i < 128; ++i) EXPECT_EQ(s.first_from(i), i);
  for (std::uint32_t i = 0; i < 128; i += 2) s.erase(i);
  for (std::uint32_t i = 0; i < 128; i += 2) EXPECT_EQ(s.first_from(i), i + 1);
}

}  // namespace
}  // namespace rma::roce::rc
