// The opcode table, names and addressing helpers of dpdk/wire, checked
// against an independent transcription of roce-v2.md 2.3 / 2.6.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "wire/wire.hpp"

namespace rma::roce {
namespace {

struct Expected {
  std::uint8_t op;
  const char* name;
  std::size_t ext;   // bytes of headers after the BTH
  bool payload;
  bool request;
};

// roce-v2.md 2.3, typed in by hand.
constexpr Expected kExpected[] = {
    {0x00, "SEND_FIRST", 0, true, true},
    {0x01, "SEND_MIDDLE", 0, true, true},
    {0x02, "SEND_LAST", 0, true, true},
    {0x03, "SEND_LAST_WITH_IMMEDIATE", 4, true, true},
    {0x04, "SEND_ONLY", 0, true, true},
    {0x05, "SEND_ONLY_WITH_IMMEDIATE", 4, true, true},
    {0x06, "RDMA_WRITE_FIRST", 16, true, true},
    {0x07, "RDMA_WRITE_MIDDLE", 0, true, true},
    {0x08, "RDMA_WRITE_LAST", 0, true, true},
    {0x09, "RDMA_WRITE_LAST_WITH_IMMEDIATE", 4, true, true},
    {0x0A, "RDMA_WRITE_ONLY", 16, true, true},
    {0x0B, "RDMA_WRITE_ONLY_WITH_IMMEDIATE", 20, true, true},
    {0x0C, "RDMA_READ_REQUEST", 16, false, true},
    {0x0D, "RDMA_READ_RESPONSE_FIRST", 4, true, false},
    {0x0E, "RDMA_READ_RESPONSE_MIDDLE", 0, true, false},
    {0x0F, "RDMA_READ_RESPONSE_LAST", 4, true, false},
    {0x10, "RDMA_READ_RESPONSE_ONLY", 4, true, false},
    {0x11, "ACKNOWLEDGE", 4, false, false},
    {0x12, "ATOMIC_ACKNOWLEDGE", 12, false, false},
    {0x13, "COMPARE_SWAP", 28, false, true},
    {0x14, "FETCH_ADD", 28, false, true},
};

TEST(OpcodeTable, MatchesReference) {
  for (const Expected& e : kExpected) {
    SCOPED_TRACE(e.name);
    const OpcodeTraits t = opcode_traits(e.op);
    EXPECT_TRUE(t.valid);
    EXPECT_EQ(t.has_payload, e.payload);
    EXPECT_EQ(t.is_request, e.request);
    EXPECT_EQ(opcode_name(e.op), e.name);
    EXPECT_EQ(opcode_name(static_cast<Opcode>(e.op)), e.name);
    EXPECT_EQ(header_length(e.op), 14u + 20 + 8 + 12 + e.ext);
    std::size_t ext = 0;
    if (t.headers & kHasReth) ext += 16;
    if (t.headers & kHasAeth) ext += 4;
    if (t.headers & kHasAtomicEth) ext += 28;
    if (t.headers & kHasAtomicAckEth) ext += 8;
    if (t.headers & kHasImm) ext += 4;
    EXPECT_EQ(ext, e.ext);
    EXPECT_TRUE(!t.payload_required || t.has_payload);
  }
}

TEST(OpcodeTable, SpecificHeaderSets) {
  EXPECT_EQ(opcode_traits(0x0B).headers, kHasReth | kHasImm);
  EXPECT_EQ(opcode_traits(0x12).headers, kHasAeth | kHasAtomicAckEth);
  EXPECT_EQ(opcode_traits(0x0D).headers, kHasAeth);
  EXPECT_EQ(opcode_traits(0x0E).headers, 0);  // READ RESPONSE MIDDLE has no AETH
  EXPECT_EQ(opcode_traits(0x13).headers, kHasAtomicEth);
  EXPECT_EQ(opcode_traits(0x03).headers, kHasImm);
  // FIRST/MIDDLE packets must carry data; ONLY/LAST may be empty.
  for (std::uint8_t op : {0x00, 0x01, 0x06, 0x07, 0x0D, 0x0E}) EXPECT_TRUE(opcode_traits(op).payload_required) << int(op);
  for (std::uint8_t op : {0x02, 0x03, 0x04, 0x05, 0x08, 0x09, 0x0A, 0x0B, 0x0F, 0x10})
    EXPECT_FALSE(opcode_traits(op).payload_required) << int(op);
}

TEST(OpcodeTable, EverythingElseInvalid) {
  for (int op = 0; op < 256; ++op) {
    const bool known = op <= 0x14;
    EXPECT_EQ(opcode_traits(static_cast<std::uint8_t>(op)).valid, known) << op;
    if (!known) {
      EXPECT_EQ(header_length(static_cast<std::uint8_t>(op)), 0u) << op;
      EXPECT_EQ(opcode_name(static_cast<std::uint8_t>(op)), "UNKNOWN") << op;
    }
  }
}

TEST(ParseErrorName, DistinctAndNonEmpty) {
  std::set<std::string> names;
  for (int i = 0; i < static_cast<int>(ParseError::kCount); ++i) {
    const std::string_view n = parse_error_name(static_cast<ParseError>(i));
    EXPECT_FALSE(n.empty());
    EXPECT_NE(n, "unknown") << i;
    names.emplace(n);
  }
  EXPECT_EQ(names.size(), static_cast<std::size_t>(ParseError::kCount));
  EXPECT_EQ(parse_error_name(ParseError::kBadIcrc), "bad_icrc");
}

TEST(Addressing, Ipv4Gid) {
  const auto gid = ipv4_gid(0x0A000102);  // 10.0.1.2
  const std::array<std::uint8_t, 16> want = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 0, 1, 2};
  EXPECT_EQ(gid, want);
}

TEST(Addressing, UdpSourcePortMatchesRdmaGetUdpSport) {
  // Values from the kernel formula evaluated in Python (roce-v2.md 2.6).
  EXPECT_EQ(udp_source_port(0x11, 0x12), 0xC132);
  EXPECT_EQ(udp_source_port(0xABCDE, 0x12345), 0xC2B9);
  EXPECT_EQ(udp_source_port(0, 5), 0xC000);
  EXPECT_EQ(udp_source_port(0xFFFFFF, 0xFFFFFF), 0xFF21);
  EXPECT_EQ(udp_source_port(1, 0xFFFFFF), 0xFFCF);
  for (std::uint32_t q = 0; q < 5000; q += 7) EXPECT_GE(udp_source_port(q, q * 3 + 1), 0xC000);
}

TEST(Psn, Arithmetic) {
  EXPECT_EQ(psn_add(0xFFFFFF, 1), 0u);
  EXPECT_EQ(psn_add(0xFFFFFE, 5), 3u);
  EXPECT_GT(psn_compare(0, 0xFFFFFF), 0);
  EXPECT_LT(psn_compare(0xFFFFFF, 0), 0);
  EXPECT_EQ(psn_compare(7, 7), 0);
  EXPECT_GT(psn_compare(0x7FFFFF, 0), 0);
  EXPECT_LT(psn_compare(0x800001, 0), 0);
}

TEST(Syndrome, Helpers) {
  const std::uint8_t s = make_syndrome(AckType::kNak, kNakRemoteAccessError);
  EXPECT_EQ(s, 0x62);
  EXPECT_EQ(syndrome_type(s), AckType::kNak);
  EXPECT_EQ(syndrome_value(s), 2);
  EXPECT_EQ(make_syndrome(AckType::kAck, kAckUnlimitedCredits), 0x1F);
  EXPECT_EQ(make_syndrome(AckType::kRnrNak, 1), 0x21);
}

}  // namespace
}  // namespace rma::roce
