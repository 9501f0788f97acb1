// What a RoCE v2 frame is to the wire format and to every Link that carries
// it: an Ethernet address, and a frame to send in pieces. Here, not in the
// Link, so that the wire format depends on nothing that moves frames.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace rma::roce {

using MacAddress = std::array<std::uint8_t, 6>;

// One frame to send, Ethernet header first, without FCS, as up to three
// pieces so the payload can come straight from registered memory: the
// headers (Ethernet..transport), the payload, and the tail (pad + ICRC).
struct TxFrame {
  std::span<const std::uint8_t> head;
  std::span<const std::uint8_t> payload;
  std::span<const std::uint8_t> tail;
  std::size_t size() const noexcept { return head.size() + payload.size() + tail.size(); }
};

}  // namespace rma::roce
