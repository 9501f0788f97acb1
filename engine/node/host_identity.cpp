// The host identity (include/rma/sdk/node.hpp): kernel boot, pid namespace
// and network namespace, so that peers in another network namespace count
// as another host.
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <fstream>
#include <string>

#include "rma/sdk/node.hpp"

namespace rma::node {
namespace {

constexpr std::size_t kMaxIdentity = 127;

std::string first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

// "net:[4026531992]" -> "4026531992"; "" when the link cannot be read.
std::string namespace_id(const char* link) {
  std::array<char, 64> buf{};
  const ssize_t n = ::readlink(link, buf.data(), buf.size() - 1);
  if (n <= 0) return {};
  std::string s(buf.data(), static_cast<std::size_t>(n));
  const auto open = s.find('[');
  const auto close = s.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return s;
  return s.substr(open + 1, close - open - 1);
}

}  // namespace

std::string host_identity() {
  if (const char* forced = std::getenv("RMA_HOST_ID"); forced != nullptr && *forced != '\0') {
    std::string id(forced);
    if (id.size() > kMaxIdentity) id.resize(kMaxIdentity);
    return id;
  }
  std::string boot = first_line("/proc/sys/kernel/random/boot_id");
  if (boot.empty()) {
    // No procfs: the hostname is the best we have (namespaces unknown).
    std::array<char, 65> host{};
    (void)::gethostname(host.data(), host.size() - 1);
    boot = std::string("host:") + host.data();
  }
  std::string id = boot + "/" + namespace_id("/proc/self/ns/pid") + "/" + namespace_id("/proc/self/ns/net");
  if (id.size() > kMaxIdentity) id.resize(kMaxIdentity);
  return id;
}

}  // namespace rma::node
