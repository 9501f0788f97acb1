#include "wire/arp.hpp"

#include <algorithm>
#include <cstring>

#include "wire/byte_order.hpp"

namespace rma::roce {

using detail::load_be16;
using detail::load_be32;
using detail::store_be16;
using detail::store_be32;

namespace {

constexpr std::size_t kArp = 14;  // the ARP body follows the Ethernet header
constexpr std::uint16_t kHtypeEthernet = 1;
constexpr std::uint16_t kPtypeIpv4 = 0x0800;

bool is_zero(const MacAddress& m) noexcept {
  return std::all_of(m.begin(), m.end(), [](std::uint8_t b) { return b == 0; });
}

// The Ethernet header and the fixed part of an IPv4-over-Ethernet ARP body.
void write_arp(std::uint8_t* p, const MacAddress& eth_dst, const MacAddress& eth_src, std::uint16_t op,
               const MacAddress& sender_mac, std::uint32_t sender_ip, const MacAddress& target_mac,
               std::uint32_t target_ip) noexcept {
  std::memcpy(p, eth_dst.data(), 6);
  std::memcpy(p + 6, eth_src.data(), 6);
  store_be16(p + 12, kEtherTypeArp);
  std::uint8_t* a = p + kArp;
  store_be16(a, kHtypeEthernet);
  store_be16(a + 2, kPtypeIpv4);
  a[4] = 6;
  a[5] = 4;
  store_be16(a + 6, op);
  std::memcpy(a + 8, sender_mac.data(), 6);
  store_be32(a + 14, sender_ip);
  std::memcpy(a + 18, target_mac.data(), 6);
  store_be32(a + 24, target_ip);
}

}  // namespace

bool parse_arp(std::span<const std::uint8_t> frame, ArpMessage& out) noexcept {
  if (frame.size() < kArpFrameLen) return false;
  const std::uint8_t* p = frame.data();
  if (load_be16(p + 12) != kEtherTypeArp) return false;
  const std::uint8_t* a = p + kArp;
  if (load_be16(a) != kHtypeEthernet || load_be16(a + 2) != kPtypeIpv4 || a[4] != 6 || a[5] != 4) return false;
  out.op = load_be16(a + 6);
  if (out.op != kArpOpRequest && out.op != kArpOpReply) return false;
  std::memcpy(out.eth_dst.data(), p, 6);
  std::memcpy(out.eth_src.data(), p + 6, 6);
  std::memcpy(out.sender_mac.data(), a + 8, 6);
  // A multicast, broadcast or zero sender cannot be answered (and would make
  // us send to everybody on the segment), nor can it own an address.
  if ((out.sender_mac[0] & 1u) != 0 || is_zero(out.sender_mac)) return false;
  out.sender_ip = load_be32(a + 14);
  std::memcpy(out.target_mac.data(), a + 18, 6);
  out.target_ip = load_be32(a + 24);
  return true;
}

bool parse_arp_request(std::span<const std::uint8_t> frame, ArpRequest& out) noexcept {
  ArpMessage m;
  if (!parse_arp(frame, m) || m.op != kArpOpRequest) return false;
  out.sender_mac = m.sender_mac;
  out.sender_ip = m.sender_ip;
  out.target_ip = m.target_ip;
  return true;
}

std::size_t build_arp_reply(const ArpRequest& req, const MacAddress& our_mac, std::span<std::uint8_t> out) noexcept {
  if (out.size() < kArpReplyLen) return 0;
  std::uint8_t* p = out.data();
  std::fill(p, p + kArpReplyLen, std::uint8_t{0});
  write_arp(p, req.sender_mac, our_mac, kArpOpReply, our_mac, req.target_ip, req.sender_mac, req.sender_ip);
  return kArpReplyLen;
}

std::size_t build_arp_request(const MacAddress& our_mac, std::uint32_t our_ip, std::uint32_t target_ip,
                              std::span<std::uint8_t> out) noexcept {
  if (out.size() < kArpRequestLen) return 0;
  std::uint8_t* p = out.data();
  std::fill(p, p + kArpRequestLen, std::uint8_t{0});
  const MacAddress broadcast{0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  write_arp(p, broadcast, our_mac, kArpOpRequest, our_mac, our_ip, MacAddress{}, target_ip);
  return kArpRequestLen;
}

}  // namespace rma::roce
