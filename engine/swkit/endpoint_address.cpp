#include "swkit/endpoint_address.hpp"

#include <cstring>
#include <string>

namespace rma::swkit {

namespace {
// The first few bytes, printable, for "this is not ours" messages.
std::string printable_prefix(const EndpointAddress& a) {
  std::string s;
  for (std::uint32_t i = 0; i < a.size && i < 8; ++i) {
    const auto c = static_cast<unsigned char>(a.bytes[i]);
    s += (c >= 32 && c < 127) ? static_cast<char>(c) : '.';
  }
  return s;
}
}  // namespace

Status check_endpoint_header(const EndpointAddress& a, std::string_view provider, std::string_view tag,
                             std::uint32_t size, std::uint8_t version) {
  const std::string who(provider);
  if (a.size > EndpointAddress::kMaxSize) {
    return invalid_argument("endpoint address size " + std::to_string(a.size) + " exceeds " +
                            std::to_string(EndpointAddress::kMaxSize));
  }
  if (a.size < tag.size() || std::memcmp(a.bytes.data(), tag.data(), tag.size()) != 0) {
    return invalid_argument("endpoint address (" + std::to_string(a.size) + " bytes, starting \"" +
                            printable_prefix(a) + "\") was not made by the " + who +
                            " provider; it must start with \"" + std::string(tag) + "\"");
  }
  if (a.size != size) {
    return invalid_argument(who + " endpoint address has " + std::to_string(a.size) + " bytes, expected " +
                            std::to_string(size) + " (truncated or corrupt)");
  }
  const std::uint8_t v = a.bytes[tag.size()];
  if (v != version) {
    return invalid_argument(who + " endpoint address has version " + std::to_string(v) + ", expected " +
                            std::to_string(version));
  }
  return {};
}

}  // namespace rma::swkit
