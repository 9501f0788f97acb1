// The self provider's EndpointAddress layout:
//   "self" | version (1) | pid (4, LE) | nonce (8, LE) | qpn (4, LE)
// The pid and the per-process nonce let connect() refuse an address that was
// made in another process (or in the parent before a fork), which an
// in-process transport can never reach.
#pragma once

#include <cstdint>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/status.hpp"

namespace rma::self {

inline constexpr std::uint32_t kEndpointAddressSize = 4 + 1 + 4 + 8 + 4;

EndpointAddress encode_endpoint(std::uint32_t qpn);
// The QP number named by `addr`, after checking that the address is a
// well-formed self address made in this process. Clear errors otherwise.
Result<std::uint32_t> decode_endpoint(const EndpointAddress& addr);

}  // namespace rma::self
