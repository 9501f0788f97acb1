#include "self/endpoint_address.hpp"

#include <unistd.h>

#include <cstring>

#include "self/fabric.hpp"
#include "rma/sdk/text.hpp"
#include "swkit/endpoint_address.hpp"

namespace rma::self {

namespace {
constexpr char kMagic[4] = {'s', 'e', 'l', 'f'};
constexpr std::uint8_t kVersion = 1;


}  // namespace

using swkit::get_le;
using swkit::put_le;

EndpointAddress encode_endpoint(std::uint32_t qpn) {
  EndpointAddress a;
  std::uint8_t* p = a.bytes.data();
  std::memcpy(p, kMagic, 4);
  p[4] = kVersion;
  put_le(p + 5, static_cast<std::uint32_t>(::getpid()), 4);
  put_le(p + 9, Fabric::instance().nonce(), 8);
  put_le(p + 17, qpn, 4);
  a.size = kEndpointAddressSize;
  return a;
}

Result<std::uint32_t> decode_endpoint(const EndpointAddress& a) {
  RMA_RETURN_IF_ERROR(swkit::check_endpoint_header(a, "self", {kMagic, 4}, kEndpointAddressSize, kVersion));
  const std::uint8_t* p = a.bytes.data();
  const auto pid = static_cast<std::uint32_t>(get_le(p + 5, 4));
  const std::uint64_t nonce = get_le(p + 9, 8);
  if (pid != static_cast<std::uint32_t>(::getpid()) || nonce != Fabric::instance().nonce()) {
    return invalid_argument("self endpoint address was made by another process (pid " + dec(pid) +
                            "); the self provider only connects QPs within one process");
  }
  return static_cast<std::uint32_t>(get_le(p + 17, 4));
}

}  // namespace rma::self
