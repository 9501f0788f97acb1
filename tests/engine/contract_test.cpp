#include <gtest/gtest.h>

#include "rma/sdk/provider.hpp"

namespace rma {
namespace {

TEST(Contract, AccessFlags) {
  Access a = Access::kLocalWrite | Access::kRemoteRead;
  EXPECT_TRUE(has_access(a, Access::kLocalWrite));
  EXPECT_FALSE(has_access(a, Access::kRemoteWrite));
  EXPECT_TRUE(has_access(kAllAccess, a));
  EXPECT_EQ(access_to_string(a), "LOCAL_WRITE|REMOTE_READ");
  EXPECT_EQ(access_to_string(Access::kNone), "NONE");
}

TEST(Contract, NamesMatchVerbs) {
  EXPECT_EQ(wc_status_name(WcStatus::kRemAccessErr), "REM_ACCESS_ERR");
  EXPECT_EQ(wc_status_description(WcStatus::kWrFlushErr), "Work Request Flushed Error");
  EXPECT_EQ(wc_status_name(WcStatus::kGeneralErr), "GENERAL_ERR");
  EXPECT_EQ(wc_status_name(static_cast<WcStatus>(200)), "UNKNOWN_STATUS");
  EXPECT_EQ(opcode_name(Opcode::kAtomicCmpSwap), "ATOMIC_CMP_AND_SWP");
  EXPECT_EQ(qp_state_name(QpState::kRts), "RTS");
}

TEST(Contract, PostResultRendersTheReason) {
  PostResult ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_TRUE(ok.to_status().ok());
  PostResult bad{StatusCode::kInvalidArgument, 3, "too many SGEs"};
  EXPECT_EQ(bad.to_status().to_string(), "INVALID_ARGUMENT: work request 3: too many SGEs");
}

TEST(Contract, MemoryRegionContains) {
  struct Mr : MemoryRegion {
    Mr() : MemoryRegion(1000, 100, 1, 2, kAllAccess) {}
  } mr;
  EXPECT_TRUE(mr.contains(1000, 100));
  EXPECT_TRUE(mr.contains(1099, 1));
  EXPECT_TRUE(mr.contains(1100, 0));
  EXPECT_FALSE(mr.contains(1099, 2));
  EXPECT_FALSE(mr.contains(999, 1));
  EXPECT_FALSE(mr.contains(1050, ~0ull));
}

TEST(Contract, EndpointAddressHexRoundTrip) {
  const std::uint8_t raw[] = {0x73, 0x65, 0x6c, 0x66, 0x00, 0xff};
  auto a = EndpointAddress::from_bytes(raw);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->to_hex(), "73656c6600ff");
  auto b = EndpointAddress::from_hex("73656C6600FF");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->size, 6u);
  EXPECT_TRUE(std::equal(raw, raw + 6, b->bytes.begin()));
}

TEST(Contract, EndpointAddressRejectsBadInput) {
  EXPECT_FALSE(EndpointAddress::from_bytes({}).ok());
  std::vector<std::uint8_t> big(EndpointAddress::kMaxSize + 1);
  EXPECT_FALSE(EndpointAddress::from_bytes(big).ok());
  EXPECT_FALSE(EndpointAddress::from_hex("abc").ok());
  auto r = EndpointAddress::from_hex("zz");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("offset 0"), std::string::npos);
  EXPECT_FALSE(EndpointAddress::from_hex(std::string(2 * EndpointAddress::kMaxSize + 2, 'a')).ok());
}

}  // namespace
}  // namespace rma
