// The shm provider's EndpointAddress layout (72 bytes):
//   "shm" | version (1) | pid (4, LE) | nonce (8, LE) | qpn (4, LE) |
//   QP slot (4, LE) | segment name (48, NUL-padded)
// The pid and nonce name the process incarnation (the segment header
// repeats them, so a reused pid is caught), the name says which segment to
// map, the slot where the QP is in it (its qpn must match there).
#pragma once

#include <cstdint>
#include <string>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/status.hpp"

namespace rma::shm {

inline constexpr std::uint32_t kNameField = 48;
inline constexpr std::uint32_t kEndpointAddressSize = 3 + 1 + 4 + 8 + 4 + 4 + kNameField;

struct Endpoint {
  std::uint32_t pid = 0;
  std::uint64_t nonce = 0;
  std::uint32_t qpn = 0;
  std::uint32_t slot = 0;
  std::string segment;  // "/rma.<uid>.<pid>.dev.<16 hex digits>"
};

EndpointAddress encode_endpoint(const Endpoint& e);
// Checks the header (provider tag, size, version) and that the fields are
// possible (slot in range, a segment name of this pid's shape); clear
// INVALID_ARGUMENT messages otherwise.
Result<Endpoint> decode_endpoint(const EndpointAddress& a);

}  // namespace rma::shm
