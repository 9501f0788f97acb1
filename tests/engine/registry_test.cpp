#include "rma/sdk/registry.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace rma {
namespace {

// A provider for registry tests: the registry only sees the contract.
class FakeProvider final : public Provider {
 public:
  FakeProvider(std::string name, int priority, bool has_device)
      : name_(std::move(name)), priority_(priority), has_device_(has_device) {}
  std::string_view name() const noexcept override { return name_; }
  std::string_view description() const noexcept override { return "fake"; }
  int priority() const noexcept override { return priority_; }
  Result<std::vector<DeviceInfo>> query_devices() override {
    if (!has_device_) return std::vector<DeviceInfo>{};
    DeviceInfo d;
    d.name = name_ + "0";
    return std::vector<DeviceInfo>{d};
  }
  Result<std::shared_ptr<Device>> open_device(std::string_view n) override {
    return not_found("fake provider cannot open '" + std::string(n) + "'");
  }

 private:
  std::string name_;
  int priority_;
  bool has_device_;
};

TEST(ProviderRegistry, OrdersByPriorityAndRejectsDuplicates) {
  ProviderRegistry r;
  ASSERT_TRUE(r.add(std::make_unique<FakeProvider>("low", 1, true)).ok());
  ASSERT_TRUE(r.add(std::make_unique<FakeProvider>("high", 9, true)).ok());
  EXPECT_EQ(r.add(std::make_unique<FakeProvider>("low", 5, true)).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(r.add(nullptr).code(), StatusCode::kInvalidArgument);
  auto ps = r.providers();
  ASSERT_EQ(ps.size(), 2u);
  EXPECT_EQ(ps[0]->name(), "high");
  EXPECT_EQ(ps[1]->name(), "low");
}

TEST(ProviderRegistry, FindNamesTheAlternatives) {
  ProviderRegistry r;
  ASSERT_TRUE(r.add(std::make_unique<FakeProvider>("a", 1, true)).ok());
  ASSERT_TRUE(r.add(std::make_unique<FakeProvider>("b", 2, true)).ok());
  EXPECT_EQ((*r.find("a"))->name(), "a");
  auto missing = r.find("zz");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("b, a"), std::string::npos) << missing.status().message();
}

TEST(ProviderRegistry, SelectSkipsProvidersWithoutDevices) {
  ProviderRegistry r;
  ASSERT_TRUE(r.add(std::make_unique<FakeProvider>("nodev", 100, false)).ok());
  ASSERT_TRUE(r.add(std::make_unique<FakeProvider>("dev", 1, true)).ok());
  unsetenv("RMA_PROVIDER");
  EXPECT_EQ((*r.select())->name(), "dev");
  EXPECT_EQ((*r.select("nodev"))->name(), "nodev");
}

TEST(ProviderRegistry, SelectHonoursRmaProvider) {
  ProviderRegistry r;
  ASSERT_TRUE(r.add(std::make_unique<FakeProvider>("a", 100, true)).ok());
  ASSERT_TRUE(r.add(std::make_unique<FakeProvider>("b", 1, true)).ok());
  setenv("RMA_PROVIDER", "b", 1);
  EXPECT_EQ((*r.select())->name(), "b");
  setenv("RMA_PROVIDER", "nope", 1);
  auto bad = r.select();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("RMA_PROVIDER"), std::string::npos) << bad.status().message();
  unsetenv("RMA_PROVIDER");
}

TEST(ProviderRegistry, SelectWithNoDeviceExplainsEachProvider) {
  ProviderRegistry r;
  ASSERT_TRUE(r.add(std::make_unique<FakeProvider>("x", 1, false)).ok());
  unsetenv("RMA_PROVIDER");
  auto s = r.select();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("x: no devices"), std::string::npos) << s.status().message();
}

TEST(ProviderRegistry, OpenReportsTheProvider) {
  ProviderRegistry r;
  ASSERT_TRUE(r.add(std::make_unique<FakeProvider>("x", 1, true)).ok());
  auto d = r.open("x", "x9");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("provider x"), std::string::npos) << d.status().message();
}

TEST(ProviderRegistry, GlobalHasTheSelfProvider) {
  auto p = ProviderRegistry::global().find("self");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  auto devs = (*p)->query_devices();
  ASSERT_TRUE(devs.ok());
  ASSERT_FALSE(devs->empty());
  auto dev = ProviderRegistry::global().open("self");
  ASSERT_TRUE(dev.ok()) << dev.status().to_string();
  EXPECT_EQ((*dev)->info().provider, "self");
}

}  // namespace
}  // namespace rma
