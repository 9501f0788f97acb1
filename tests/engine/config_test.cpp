#include "rma/sdk/config.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <limits>

namespace rma::config {
namespace {

// Sets an environment variable for one test and restores it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old, had_ = true;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_.c_str(), old_.c_str(), 1); else unsetenv(name_.c_str());
  }
 private:
  std::string name_, old_;
  bool had_ = false;
};

TEST(Config, EngineVariablesAreDeclaredWithDocs) {
  auto vars = variables();
  for (const char* name : {"RMA_PROVIDER", "RMA_LOG_LEVEL", "RMA_RCACHE_MAX_BYTES",
                           "RMA_RCACHE_MAX_REGIONS", "RMA_RCACHE_MONITOR", "RMA_DEVICE"}) {
    auto it = std::find_if(vars.begin(), vars.end(), [&](const Variable& v) { return v.name == name; });
    ASSERT_NE(it, vars.end()) << name;
    EXPECT_FALSE(it->doc.empty()) << name;
  }
  EXPECT_TRUE(std::is_sorted(vars.begin(), vars.end(),
                             [](const Variable& a, const Variable& b) { return a.name < b.name; }));
}

TEST(Config, DefaultThenEnvironment) {
  ASSERT_TRUE(declare({"RMA_TEST_COLOUR", "blue", "a test variable"}).ok());
  EXPECT_EQ(*get_string("RMA_TEST_COLOUR"), "blue");
  ScopedEnv env("RMA_TEST_COLOUR", "red");
  EXPECT_EQ(*get_string("RMA_TEST_COLOUR"), "red");
}

TEST(Config, DeclareRules) {
  EXPECT_EQ(declare({"NOT_RMA", "", ""}).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(declare({"RMA_TEST_TWICE", "1", "x"}).ok());
  EXPECT_TRUE(declare({"RMA_TEST_TWICE", "1", "x"}).ok());
  EXPECT_EQ(declare({"RMA_TEST_TWICE", "2", "x"}).code(), StatusCode::kAlreadyExists);
}

TEST(Config, UndeclaredIsNotFound) {
  auto r = get_string("RMA_NEVER_DECLARED");
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("RMA_NEVER_DECLARED"), std::string::npos);
}

TEST(Config, ParseSize) {
  EXPECT_EQ(*parse_size("4096"), 4096u);
  EXPECT_EQ(*parse_size("64K"), 65536u);
  EXPECT_EQ(*parse_size("2m"), 2u << 20);
  EXPECT_EQ(*parse_size("1GiB"), 1u << 30);
  EXPECT_EQ(*parse_size("3t"), 3ull << 40);
  EXPECT_EQ(*parse_size("inf"), std::numeric_limits<std::uint64_t>::max());
  for (const char* bad : {"", "K", "-1", "12Q", "99999999999999999999", "17179869184G", "1.5G"}) {
    auto r = parse_size(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(Config, ParseBool) {
  for (const char* t : {"y", "yes", "ON", "true", "1"}) EXPECT_TRUE(*parse_bool(t)) << t;
  for (const char* f : {"n", "No", "off", "false", "0"}) EXPECT_FALSE(*parse_bool(f)) << f;
  EXPECT_FALSE(parse_bool("maybe").ok());
}

TEST(Config, TypedGettersNameTheVariableInErrors) {
  ASSERT_TRUE(declare({"RMA_TEST_SIZE", "1K", "x"}).ok());
  EXPECT_EQ(*get_size("RMA_TEST_SIZE"), 1024u);
  ScopedEnv env("RMA_TEST_SIZE", "lots");
  auto r = get_size("RMA_TEST_SIZE");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("RMA_TEST_SIZE"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("lots"), std::string::npos);
}

TEST(Config, ChoiceListsTheChoices) {
  ASSERT_TRUE(declare({"RMA_TEST_CHOICE", "a", "x"}).ok());
  EXPECT_EQ(*get_choice("RMA_TEST_CHOICE", {"a", "b"}), "a");
  ScopedEnv env("RMA_TEST_CHOICE", "B");
  EXPECT_EQ(*get_choice("RMA_TEST_CHOICE", {"a", "b"}), "b");
  ScopedEnv env2("RMA_TEST_CHOICE", "c");
  auto r = get_choice("RMA_TEST_CHOICE", {"a", "b"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("a, b"), std::string::npos) << r.status().message();
}

TEST(Config, BoolGetter) {
  ASSERT_TRUE(declare({"RMA_TEST_BOOL", "no", "x"}).ok());
  EXPECT_FALSE(*get_bool("RMA_TEST_BOOL"));
  ScopedEnv env("RMA_TEST_BOOL", "perhaps");
  EXPECT_FALSE(get_bool("RMA_TEST_BOOL").ok());
}

}  // namespace
}  // namespace rma::config
