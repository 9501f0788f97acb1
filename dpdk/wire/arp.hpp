// ARP (RFC 826) for IPv4 over Ethernet, as much of it as a RoCE v2 NIC
// needs: answering "who has <our IPv4>?", so that kernel peers (rdma_rxe, a
// RoCE NIC's driver) reach it through their own neighbour resolution
// without a static entry, and asking "who has <peer IPv4>?" to learn the
// MAC of a peer on a shared segment (dpdk/rc/neighbour_table.hpp decides
// which answers it believes). Bounds-checked like every parser of the wire
// format; no DPDK here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "wire/frame.hpp"

namespace rma::roce {

constexpr std::uint16_t kEtherTypeArp = 0x0806;
// Ethernet header + the 28-byte ARP body for IPv4 over Ethernet.
constexpr std::size_t kArpFrameLen = 14 + 28;
// What a request or reply is padded to: the minimum Ethernet frame without
// its FCS.
constexpr std::size_t kArpReplyLen = 60;
constexpr std::size_t kArpRequestLen = 60;

constexpr std::uint16_t kArpOpRequest = 1;
constexpr std::uint16_t kArpOpReply = 2;

// One ARP message for IPv4 over Ethernet, as it came off the wire.
struct ArpMessage {
  std::uint16_t op = 0;        // kArpOpRequest or kArpOpReply
  MacAddress eth_dst{};        // the Ethernet header's addresses
  MacAddress eth_src{};
  MacAddress sender_mac{};     // who speaks
  std::uint32_t sender_ip = 0; // host byte order, as LinkInfo::ipv4
  MacAddress target_mac{};     // zero in requests
  std::uint32_t target_ip = 0;
};

// True when `frame` is an ARP request or reply for IPv4 over Ethernet
// (EtherType 0x0806, htype 1, ptype 0x0800, hlen 6, plen 4, op 1 or 2) from
// a unicast, non-zero sender MAC; anything else, including a truncated
// frame, is false and leaves `out` in an unspecified state. Bytes after the
// 28-byte body (Ethernet padding) are ignored.
bool parse_arp(std::span<const std::uint8_t> frame, ArpMessage& out) noexcept;

struct ArpRequest {
  MacAddress sender_mac{};
  std::uint32_t sender_ip = 0;  // host byte order, as LinkInfo::ipv4
  std::uint32_t target_ip = 0;
};

// True when `frame` parses (parse_arp) as a request (opcode 1).
bool parse_arp_request(std::span<const std::uint8_t> frame, ArpRequest& out) noexcept;

// Writes the reply "target_ip is at our_mac" to the requester into `out`
// (kArpReplyLen bytes, zero-padded); returns the length, 0 when `out` is
// too small.
std::size_t build_arp_reply(const ArpRequest& req, const MacAddress& our_mac, std::span<std::uint8_t> out) noexcept;

// Writes the broadcast request "who has target_ip? tell our_ip (our_mac)"
// into `out` (kArpRequestLen bytes, zero-padded); returns the length, 0 when
// `out` is too small.
std::size_t build_arp_request(const MacAddress& our_mac, std::uint32_t our_ip, std::uint32_t target_ip,
                              std::span<std::uint8_t> out) noexcept;

}  // namespace rma::roce
