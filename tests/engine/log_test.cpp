#include "rma/sdk/log.hpp"

#include <gtest/gtest.h>

namespace rma::log {
namespace {

TEST(Log, ParseLevel) {
  EXPECT_EQ(*parse_level("error"), Level::kError);
  EXPECT_EQ(*parse_level("warn"), Level::kWarn);
  EXPECT_EQ(*parse_level("warning"), Level::kWarn);
  EXPECT_EQ(*parse_level("trace"), Level::kTrace);
  auto bad = parse_level("loud");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("RMA_LOG_LEVEL"), std::string::npos);
}

TEST(Log, ThresholdFiltersAndWritesOneLine) {
  Level saved = threshold();
  set_threshold(Level::kInfo);
  EXPECT_TRUE(enabled(Level::kWarn));
  EXPECT_TRUE(enabled(Level::kInfo));
  EXPECT_FALSE(enabled(Level::kDebug));
  testing::internal::CaptureStderr();
  RMA_LOG_INFO("hello %d", 42);
  RMA_LOG_DEBUG("hidden");
  std::string out = testing::internal::GetCapturedStderr();
  EXPECT_NE(out.find("info: hello 42\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("hidden"), std::string::npos);
  set_threshold(saved);
}

TEST(Log, LongLinesAreTruncatedNotOverflowed) {
  Level saved = threshold();
  set_threshold(Level::kError);
  std::string big(5000, 'x');
  testing::internal::CaptureStderr();
  RMA_LOG_ERROR("%s", big.c_str());
  std::string out = testing::internal::GetCapturedStderr();
  EXPECT_LT(out.size(), 1100u);
  EXPECT_EQ(out.back(), '\n');
  set_threshold(saved);
}

}  // namespace
}  // namespace rma::log
