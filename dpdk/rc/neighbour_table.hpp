// The MAC addresses of peer IPv4 addresses on a shared Ethernet segment,
// learned by ARP: what a kernel's neighbour table is to its IP stack, for
// one softroce device. The device asks (Engine::resolve_neighbour) when a QP
// connects to a peer whose MAC it must not take from the peer's endpoint
// address (a kernel interface: af_packet, af_xdp, tap, pci; see
// LinkInfo::neighbours_by_arp).
//
// Whom it believes. Every frame on a shared segment may come from an
// attacker, and a wrong entry sends a QP's traffic (payloads of WRITEs,
// READ responses) to whoever planted it. So an entry is created only by the
// device itself, when it asks; it is filled only by an ARP reply that
//   - answers a question this device asked and has not had answered yet
//     (unsolicited replies, and replies for an address already resolved,
//     are ignored: the first answer stays for the device's lifetime),
//   - is addressed to this device: Ethernet destination, target MAC and
//     target IPv4 all ours (a reply meant for another station on the
//     segment, e.g. another rank sharing the interface, teaches nothing),
//   - comes from the station it names: Ethernet source = sender MAC,
//     unicast and not zero (parse_arp), and the sender IPv4 is the address
//     asked for (a gratuitous ARP, sender = target IPv4, never matches
//     because the target must be our own address).
// ARP requests never teach anything (RFC 826 lets a station learn the
// asker's address; we do not, so a forged request cannot plant an entry).
// What remains possible is what ARP cannot prevent: a station on the
// segment that answers first for an address it does not own. A second,
// different answer for the same address is counted (arp_replies_ignored)
// but does not replace the first.
//
// Bounded: `capacity` entries, allocated at construction; no allocation
// afterwards. Not thread-safe: the engine calls it under its device lock.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "wire/arp.hpp"

namespace rma::roce::rc {

// Depends on the wire format only (the parser's fuzz target builds it alone).
class NeighbourTable {
 public:
  using Clock = std::chrono::steady_clock;
  explicit NeighbourTable(std::size_t capacity);

  enum class Step {
    kResolved,     // `mac` holds the answer
    kSendRequest,  // ask now (the table counted the request and scheduled the next one)
    kWait,         // asked recently: wait for the answer
    kFull,         // no room for another address
  };
  // Resolving `ip` at `now`: asks at once, then again after 10, 20, 40 ...
  // milliseconds (at most 500 between two requests) until a reply arrives.
  Step resolve(std::uint32_t ip, Clock::time_point now, MacAddress& mac) noexcept;

  // An ARP reply that arrived for this device (our_mac/our_ip): true when
  // it taught the MAC of an address this device asked for (see above).
  bool on_reply(const ArpMessage& reply, const MacAddress& our_mac, std::uint32_t our_ip) noexcept;

  // Requests sent so far for `ip` (0 when never asked).
  std::uint32_t requests_sent(std::uint32_t ip) const noexcept;
  std::size_t size() const noexcept { return entries_.size(); }

 private:
  struct Entry {
    std::uint32_t ip = 0;
    bool resolved = false;
    MacAddress mac{};
    std::uint32_t requests = 0;
    Clock::time_point next_request{};
  };
  Entry* find(std::uint32_t ip) noexcept;
  const Entry* find(std::uint32_t ip) const noexcept;

  std::size_t capacity_;
  std::vector<Entry> entries_;  // reserved to capacity_ at construction
};

}  // namespace rma::roce::rc
