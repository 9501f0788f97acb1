#include "shm/endpoint_address.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "rma/sdk/text.hpp"
#include "shm/layout.hpp"
#include "shm/segment.hpp"
#include "swkit/endpoint_address.hpp"

namespace rma::shm {

namespace {
constexpr char kTag[3] = {'s', 'h', 'm'};
constexpr std::uint8_t kVersion = 1;
}  // namespace

using swkit::get_le;
using swkit::put_le;

EndpointAddress encode_endpoint(const Endpoint& e) {
  EndpointAddress a;
  std::uint8_t* p = a.bytes.data();
  std::memcpy(p, kTag, 3);
  p[3] = kVersion;
  put_le(p + 4, e.pid, 4);
  put_le(p + 8, e.nonce, 8);
  put_le(p + 16, e.qpn, 4);
  put_le(p + 20, e.slot, 4);
  std::memcpy(p + 24, e.segment.data(), std::min<std::size_t>(e.segment.size(), kNameField - 1));
  a.size = kEndpointAddressSize;
  return a;
}

Result<Endpoint> decode_endpoint(const EndpointAddress& a) {
  RMA_RETURN_IF_ERROR(swkit::check_endpoint_header(a, "shm", {kTag, 3}, kEndpointAddressSize, kVersion));
  const std::uint8_t* p = a.bytes.data();
  Endpoint e;
  e.pid = static_cast<std::uint32_t>(get_le(p + 4, 4));
  e.nonce = get_le(p + 8, 8);
  e.qpn = static_cast<std::uint32_t>(get_le(p + 16, 4));
  e.slot = static_cast<std::uint32_t>(get_le(p + 20, 4));
  const char* name = reinterpret_cast<const char*>(p + 24);
  const std::size_t len = strnlen(name, kNameField);
  if (len == kNameField) return invalid_argument("shm endpoint address: the segment name is not terminated (corrupt)");
  e.segment.assign(name, len);
  if (e.pid == 0 || e.qpn == 0 || e.qpn > 0xFFFFFFu || e.slot >= kMaxQp) {
    return invalid_argument("shm endpoint address names pid " + dec(e.pid) + ", QP " + dec(e.qpn) + " in slot " +
                            dec(e.slot) + ": not a QP an shm device can have (corrupt)");
  }
  // Only ever map a segment of the shape we create, of the uid we run as
  // (shm_open would refuse another user's anyway) and of the pid named.
  const std::string prefix = segment_prefix(static_cast<std::uint32_t>(::getuid()), e.pid);
  if (e.segment.compare(0, prefix.size(), prefix) != 0 || e.segment.size() != prefix.size() + 16 ||
      e.segment.find_first_not_of("0123456789abcdef", prefix.size()) != std::string::npos) {
    return invalid_argument("shm endpoint address names segment \"" + e.segment + "\", expected " + prefix +
                            "<16 hex digits> (corrupt, or made by another user)");
  }
  return e;
}

}  // namespace rma::shm
