// The checks every software provider makes on an EndpointAddress before it
// reads its fields: the size fits, the address starts with the provider's
// tag, has the provider's exact size and the version right after the tag.
// Each failure says what the bytes look like, because the usual cause is an
// address made by another provider (or another build) reaching connect().
#pragma once

#include <cstdint>
#include <string_view>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/status.hpp"

namespace rma::swkit {

// `provider` names the provider in messages; the layout is
// tag | version (1 byte) | provider fields, `size` bytes in all.
Status check_endpoint_header(const EndpointAddress& a, std::string_view provider, std::string_view tag,
                             std::uint32_t size, std::uint8_t version);

// The fields after the header: `n` bytes little-endian, whatever the host's
// byte order, so an address reads the same in every process that gets it.
inline void put_le(std::uint8_t* p, std::uint64_t v, int n) noexcept {
  for (int i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
inline std::uint64_t get_le(const std::uint8_t* p, int n) noexcept {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= std::uint64_t{p[i]} << (8 * i);
  return v;
}

}  // namespace rma::swkit
