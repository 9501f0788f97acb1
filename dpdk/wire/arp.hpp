// ARP (RFC 826) for IPv4 over Ethernet, as much of it as a RoCE v2 NIC
// needs: answering "who has <our IPv4>?", so that kernel peers (rdma_rxe, a
// RoCE NIC's driver) reach it through their own neighbour resolution
// without a static entry. Bounds-checked like every parser of the wire
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
// What a reply is padded to: the minimum Ethernet frame without its FCS.
constexpr std::size_t kArpReplyLen = 60;

struct ArpRequest {
  MacAddress sender_mac{};
  std::uint32_t sender_ip = 0;  // host byte order, as LinkInfo::ipv4
  std::uint32_t target_ip = 0;
};

// True when `frame` is an ARP request (opcode 1) for IPv4 over Ethernet
// (htype 1, ptype 0x0800, hlen 6, plen 4) from a unicast sender MAC;
// anything else, including a truncated frame, is false.
bool parse_arp_request(std::span<const std::uint8_t> frame, ArpRequest& out) noexcept;

// Writes the reply "target_ip is at our_mac" to the requester into `out`
// (kArpReplyLen bytes, zero-padded); returns the length, 0 when `out` is
// too small.
std::size_t build_arp_reply(const ArpRequest& req, const MacAddress& our_mac, std::span<std::uint8_t> out) noexcept;

}  // namespace rma::roce
