// The verbs provider's EndpointAddress layout (big-endian integers):
//   "verbs" | version (1) | link layer (1: 1 Ethernet, 2 InfiniBand) |
//   qpn (4) | psn (4) | gid (16) | lid (2) | path MTU in bytes (2) |
//   gid index (1) | max_rd_atomic (1)
// The PSN is the first PSN the QP sends; the peer expects it (perftest's
// meaning, and the softroce provider's).
// The GID is what a RoCE v2 peer addresses; the LID what an InfiniBand peer
// in the same subnet addresses. max_rd_atomic is how many READs/atomics the
// sender will have outstanding, so the receiver sizes its responder
// resources (max_dest_rd_atomic) to match.
#pragma once

#include <cstdint>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/status.hpp"
#include "verbs/gid_selection.hpp"

namespace rma::verbs {

inline constexpr std::uint32_t kEndpointAddressSize = 5 + 1 + 1 + 4 + 4 + 16 + 2 + 2 + 1 + 1;

struct EndpointFields {
  bool ethernet = true;
  std::uint32_t qpn = 0;
  std::uint32_t psn = 0;
  Gid gid{};
  std::uint16_t lid = 0;
  std::uint32_t mtu = 0;
  std::uint8_t gid_index = 0;
  std::uint8_t max_rd_atomic = 0;
};

EndpointAddress encode_endpoint(const EndpointFields& f);
// Every field checked: tag, size, version, link layer, QPN and PSN within
// 24 bits, MTU one of 256..4096, a GID for RoCE, a LID or GID for IB.
Result<EndpointFields> decode_endpoint(const EndpointAddress& a);

}  // namespace rma::verbs
