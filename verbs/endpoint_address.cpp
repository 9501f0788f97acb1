#include "verbs/endpoint_address.hpp"

#include "rma/sdk/text.hpp"
#include "rma/sdk/verbs.hpp"

#include <cstring>

namespace rma::verbs {
namespace {

constexpr char kTag[5] = {'v', 'e', 'r', 'b', 's'};
constexpr std::uint8_t kVersion = 1;
constexpr std::uint8_t kLinkEthernet = 1;
constexpr std::uint8_t kLinkInfiniBand = 2;
constexpr std::uint32_t k24Bits = 0xffffff;

void put_be(std::uint8_t* p, std::uint32_t v, int n) noexcept {
  for (int i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * (n - 1 - i)));
}
std::uint32_t get_be(const std::uint8_t* p, int n) noexcept {
  std::uint32_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

EndpointAddress encode_endpoint(const EndpointFields& f) {
  EndpointAddress a;
  std::uint8_t* p = a.bytes.data();
  std::memcpy(p, kTag, 5);
  p[5] = kVersion;
  p[6] = f.ethernet ? kLinkEthernet : kLinkInfiniBand;
  put_be(p + 7, f.qpn, 4);
  put_be(p + 11, f.psn, 4);
  std::memcpy(p + 15, f.gid.data(), 16);
  put_be(p + 31, f.lid, 2);
  put_be(p + 33, f.mtu, 2);
  p[35] = f.gid_index;
  p[36] = f.max_rd_atomic;
  a.size = kEndpointAddressSize;
  return a;
}

Result<EndpointFields> decode_endpoint(const EndpointAddress& a) {
  if (a.size > EndpointAddress::kMaxSize) {
    return invalid_argument("endpoint address size " + dec(a.size) + " exceeds " +
                            dec(EndpointAddress::kMaxSize));
  }
  if (a.size < 5 || std::memcmp(a.bytes.data(), kTag, 5) != 0) {
    std::string prefix;
    for (std::uint32_t i = 0; i < a.size && i < 8; ++i) {
      const char c = static_cast<char>(a.bytes[i]);
      prefix += (c >= 32 && c < 127) ? c : '.';
    }
    return invalid_argument("endpoint address (" + dec(a.size) + " bytes, starting \"" + prefix +
                            "\") was not made by the verbs provider; it must start with \"verbs\"");
  }
  if (a.size != kEndpointAddressSize) {
    return invalid_argument("verbs endpoint address has " + dec(a.size) + " bytes, expected " +
                            dec(kEndpointAddressSize) + " (truncated or corrupt)");
  }
  const std::uint8_t* p = a.bytes.data();
  if (p[5] != kVersion) {
    return invalid_argument("verbs endpoint address has version " + dec(p[5]) + ", expected " +
                            dec(kVersion));
  }
  if (p[6] != kLinkEthernet && p[6] != kLinkInfiniBand) {
    return invalid_argument("verbs endpoint address: link layer code " + dec(p[6]) +
                            " is neither 1 (Ethernet) nor 2 (InfiniBand)");
  }
  EndpointFields f;
  f.ethernet = p[6] == kLinkEthernet;
  f.qpn = get_be(p + 7, 4);
  f.psn = get_be(p + 11, 4);
  std::memcpy(f.gid.data(), p + 15, 16);
  f.lid = static_cast<std::uint16_t>(get_be(p + 31, 2));
  f.mtu = get_be(p + 33, 2);
  f.gid_index = p[35];
  f.max_rd_atomic = p[36];
  if (f.qpn == 0 || f.qpn > k24Bits) {
    return invalid_argument("verbs endpoint address: QPN " + dec(f.qpn) + " is outside 1..16777215");
  }
  if (f.psn > k24Bits) {
    return invalid_argument("verbs endpoint address: PSN " + dec(f.psn) + " does not fit 24 bits");
  }
  if (f.mtu < 256 || f.mtu > 4096 || (f.mtu & (f.mtu - 1)) != 0) {
    return invalid_argument("verbs endpoint address: MTU " + dec(f.mtu) +
                            " is not one of 256, 512, 1024, 2048, 4096");
  }
  if (f.ethernet && gid_is_zero(f.gid)) {
    return invalid_argument("verbs endpoint address: RoCE peer has no GID");
  }
  if (!f.ethernet && f.lid == 0 && gid_is_zero(f.gid)) {
    return invalid_argument("verbs endpoint address: InfiniBand peer has neither LID nor GID");
  }
  return f;
}

Result<QpEndpoint> describe_endpoint(const EndpointAddress& address) {
  RMA_ASSIGN_OR_RETURN(EndpointFields f, decode_endpoint(address));
  QpEndpoint e;
  e.ethernet = f.ethernet;
  e.qpn = f.qpn;
  e.psn = f.psn;
  e.gid = f.gid;
  e.lid = f.lid;
  e.mtu = f.mtu;
  e.max_rd_atomic = f.max_rd_atomic;
  return e;
}

Result<EndpointAddress> make_endpoint(const QpEndpoint& e) {
  EndpointFields f;
  f.ethernet = e.ethernet;
  f.qpn = e.qpn;
  f.psn = e.psn;
  f.gid = e.gid;
  f.lid = e.lid;
  f.mtu = e.mtu;
  f.max_rd_atomic = e.max_rd_atomic;
  EndpointAddress a = encode_endpoint(f);
  RMA_RETURN_IF_ERROR(decode_endpoint(a).status());
  return a;
}

}  // namespace rma::verbs
