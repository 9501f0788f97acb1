#include "rma/sdk/status.hpp"

#include <gtest/gtest.h>

#include <memory>

namespace rma {
namespace {

TEST(Status, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.to_string(), "OK");
  EXPECT_EQ(s.message(), "");
}

TEST(Status, CarriesCodeAndMessage) {
  Status s = invalid_argument("length 0");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.to_string(), "INVALID_ARGUMENT: length 0");
}

TEST(Status, OkCodeDropsMessage) {
  Status s(StatusCode::kOk, "ignored");
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.message(), "");
}

TEST(Status, WithContextPrefixesAndKeepsCode) {
  Status s = not_found("no device").with_context("provider self");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "provider self: no device");
  EXPECT_TRUE(Status().with_context("x").ok());
}

TEST(Status, IoErrorAppendsErrno) {
  Status s = io_error("open /dev/x", ENOENT);
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find("No such file"), std::string::npos) << s.message();
  EXPECT_EQ(io_error("plain", 0).message(), "plain");
}

TEST(Status, InternalSaysItIsABug) {
  EXPECT_NE(internal_error("x").message().find("bug in librma"), std::string::npos);
}

TEST(Status, EveryCodeHasAName) {
  for (int c = 0; c <= static_cast<int>(StatusCode::kInternal); ++c) {
    EXPECT_NE(status_code_name(static_cast<StatusCode>(c)), "UNKNOWN") << c;
  }
}

Result<int> half(int x) {
  if (x % 2 != 0) return invalid_argument(std::to_string(x) + " is odd");
  return x / 2;
}

Result<int> quarter(int x) {
  RMA_ASSIGN_OR_RETURN(int h, half(x));
  RMA_ASSIGN_OR_RETURN(int q, half(h));
  return q;
}

Status check_even(int x) {
  RMA_RETURN_IF_ERROR(half(x).status());
  return {};
}

TEST(Result, HoldsValueOrStatus) {
  Result<int> r = half(8);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 4);
  EXPECT_TRUE(r.status().ok());
  Result<int> e = half(3);
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(), "3 is odd");
}

TEST(Result, MacrosPropagate) {
  EXPECT_EQ(*quarter(8), 2);
  EXPECT_EQ(quarter(6).status().message(), "3 is odd");
  EXPECT_TRUE(check_even(2).ok());
  EXPECT_FALSE(check_even(1).ok());
}

TEST(Result, MoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(7);
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 7);
}

TEST(Result, OkStatusWithoutValueBecomesInternalError) {
  Result<int> r{Status()};
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

TEST(ResultDeathTest, ValueOnErrorAbortsWithMessage) {
  Result<int> e = half(3);
  EXPECT_DEATH({ (void)e.value(); }, "3 is odd");
}

}  // namespace
}  // namespace rma
