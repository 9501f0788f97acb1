// ARP for IPv4 over Ethernet (dpdk/wire/arp): requests and replies built
// byte for byte as RFC 826 lays them out, parsed back, and every frame the
// parser must refuse (truncated at every length, other hardware or
// protocol types and lengths, other opcodes, a multicast or zero sender)
// refused without reading past its end.
#include <gtest/gtest.h>

#include <vector>

#include "wire/arp.hpp"
#include "wire/byte_order.hpp"

namespace rma::roce {
namespace {

const MacAddress kOurs{0x06, 0x12, 0x34, 0x56, 0x00, 0x01};
const MacAddress kTheirs{0x06, 0x12, 0x34, 0x56, 0x00, 0x02};
constexpr std::uint32_t kOurIp = 0xA9FE0101;    // 169.254.1.1
constexpr std::uint32_t kTheirIp = 0xA9FE0102;  // 169.254.1.2

TEST(Arp, RequestIsABroadcastWhoHasInRfc826Layout) {
  std::uint8_t f[kArpRequestLen + 4];
  std::fill(std::begin(f), std::end(f), 0xEE);
  ASSERT_EQ(build_arp_request(kOurs, kOurIp, kTheirIp, {f, kArpRequestLen}), kArpRequestLen);
  const std::uint8_t expected[42] = {
      0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x06, 0x12, 0x34, 0x56, 0x00, 0x01, 0x08, 0x06,  // Ethernet
      0x00, 0x01, 0x08, 0x00, 6, 4, 0x00, 0x01,                                              // htype ptype hlen plen op
      0x06, 0x12, 0x34, 0x56, 0x00, 0x01, 169, 254, 1, 1,                                    // sender
      0, 0, 0, 0, 0, 0, 169, 254, 1, 2};                                                     // target
  EXPECT_TRUE(std::equal(std::begin(expected), std::end(expected), f));
  for (std::size_t i = 42; i < kArpRequestLen; ++i) EXPECT_EQ(f[i], 0) << "padding byte " << i;
  EXPECT_EQ(f[kArpRequestLen], 0xEE) << "nothing written past the frame";
  EXPECT_EQ(build_arp_request(kOurs, kOurIp, kTheirIp, {f, kArpRequestLen - 1}), 0u);

  ArpMessage m;
  ASSERT_TRUE(parse_arp({f, kArpRequestLen}, m));
  EXPECT_EQ(m.op, kArpOpRequest);
  EXPECT_EQ(m.sender_mac, kOurs);
  EXPECT_EQ(m.sender_ip, kOurIp);
  EXPECT_EQ(m.target_ip, kTheirIp);
  EXPECT_EQ(m.target_mac, MacAddress{});
  ArpRequest r;
  ASSERT_TRUE(parse_arp_request({f, kArpRequestLen}, r));
  EXPECT_EQ(r.sender_mac, kOurs);
}

TEST(Arp, ReplyAnswersTheAskerAndParsesBack) {
  std::uint8_t req[kArpRequestLen];
  ASSERT_EQ(build_arp_request(kTheirs, kTheirIp, kOurIp, req), kArpRequestLen);
  ArpRequest asked;
  ASSERT_TRUE(parse_arp_request(req, asked));
  std::uint8_t rep[kArpReplyLen];
  ASSERT_EQ(build_arp_reply(asked, kOurs, rep), kArpReplyLen);
  ArpMessage m;
  ASSERT_TRUE(parse_arp(rep, m));
  EXPECT_EQ(m.op, kArpOpReply);
  EXPECT_EQ(m.eth_dst, kTheirs);
  EXPECT_EQ(m.eth_src, kOurs);
  EXPECT_EQ(m.sender_mac, kOurs);
  EXPECT_EQ(m.sender_ip, kOurIp);
  EXPECT_EQ(m.target_mac, kTheirs);
  EXPECT_EQ(m.target_ip, kTheirIp);
  ArpRequest not_a_request;
  EXPECT_FALSE(parse_arp_request(rep, not_a_request));
}

TEST(Arp, MalformedFramesAreRefusedAtEveryLength) {
  std::uint8_t good[kArpReplyLen];
  ASSERT_EQ(build_arp_reply(ArpRequest{kTheirs, kTheirIp, kOurIp}, kOurs, good), kArpReplyLen);
  ArpMessage m;
  // Every truncation below the 42-byte body, each in a buffer of exactly
  // that size (AddressSanitizer sees any read past it).
  for (std::size_t n = 0; n < kArpFrameLen; ++n) {
    std::vector<std::uint8_t> f(good, good + n);
    EXPECT_FALSE(parse_arp(f, m)) << n << " bytes";
  }
  std::vector<std::uint8_t> exact(good, good + kArpFrameLen);
  EXPECT_TRUE(parse_arp(exact, m)) << "padding is optional";

  struct Bad {
    std::size_t off;
    std::uint8_t value;
    const char* what;
  };
  for (const Bad& b : {Bad{12, 0x86, "EtherType 0x8606"}, Bad{13, 0x00, "EtherType IPv4"}, Bad{15, 6, "htype IEEE 802"},
                       Bad{16, 0x86, "ptype IPv6"}, Bad{18, 8, "hlen 8"}, Bad{19, 16, "plen 16"},
                       Bad{21, 3, "op RARP request"}, Bad{21, 0, "op 0"}, Bad{20, 1, "op 258"},
                       Bad{22, 0x07, "multicast sender"}}) {
    std::vector<std::uint8_t> f(good, good + kArpReplyLen);
    f[b.off] = b.value;
    EXPECT_FALSE(parse_arp(f, m)) << b.what;
  }
  std::vector<std::uint8_t> zero(good, good + kArpReplyLen);
  std::fill(zero.begin() + 22, zero.begin() + 28, 0);
  EXPECT_FALSE(parse_arp(zero, m)) << "a zero sender owns no address";
}

}  // namespace
}  // namespace rma::roce
