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
constexpr std::uint16_t kOpRequest = 1;
constexpr std::uint16_t kOpReply = 2;

}  // namespace

bool parse_arp_request(std::span<const std::uint8_t> frame, ArpRequest& out) noexcept {
  if (frame.size() < kArpFrameLen) return false;
  const std::uint8_t* p = frame.data();
  if (load_be16(p + 12) != kEtherTypeArp) return false;
  const std::uint8_t* a = p + kArp;
  if (load_be16(a) != kHtypeEthernet || load_be16(a + 2) != kPtypeIpv4 || a[4] != 6 || a[5] != 4 ||
      load_be16(a + 6) != kOpRequest) {
    return false;
  }
  std::memcpy(out.sender_mac.data(), a + 8, 6);
  // A multicast or broadcast sender cannot be answered (and would make us
  // send to everybody on the segment).
  if ((out.sender_mac[0] & 1u) != 0) return false;
  out.sender_ip = load_be32(a + 14);
  out.target_ip = load_be32(a + 24);
  return true;
}

std::size_t build_arp_reply(const ArpRequest& req, const MacAddress& our_mac, std::span<std::uint8_t> out) noexcept {
  if (out.size() < kArpReplyLen) return 0;
  std::uint8_t* p = out.data();
  std::fill(p, p + kArpReplyLen, std::uint8_t{0});
  std::memcpy(p, req.sender_mac.data(), 6);
  std::memcpy(p + 6, our_mac.data(), 6);
  store_be16(p + 12, kEtherTypeArp);
  std::uint8_t* a = p + kArp;
  store_be16(a, kHtypeEthernet);
  store_be16(a + 2, kPtypeIpv4);
  a[4] = 6;
  a[5] = 4;
  store_be16(a + 6, kOpReply);
  std::memcpy(a + 8, our_mac.data(), 6);
  store_be32(a + 14, req.target_ip);
  std::memcpy(a + 18, req.sender_mac.data(), 6);
  store_be32(a + 24, req.sender_ip);
  return kArpReplyLen;
}

}  // namespace rma::roce
