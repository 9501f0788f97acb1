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

}  // namespace rma::swkit
