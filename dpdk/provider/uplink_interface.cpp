#include "provider/uplink_interface.hpp"

#include <ifaddrs.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <sstream>

namespace rma::softroce {

namespace {

std::string describe(const InterfaceFacts& f) {
  std::string d = f.name + " (";
  d += f.up ? "up" : "down";
  if (f.up && !f.running) d += ", no carrier";
  if (f.loopback) d += ", loopback";
  if (!f.ethernet) d += ", not Ethernet";
  d += f.has_ipv4 ? ", IPv4" : ", no IPv4";
  return d + ")";
}

bool usable(const InterfaceFacts& f) { return f.up && f.running && !f.loopback && f.ethernet && f.has_ipv4; }

constexpr const char* kHowToChoose =
    "set RMA_SOFTROCE_PORT=af_packet:<interface that reaches the other hosts>,ip=<an IPv4 of this rank's own>,"
    "mac=<a MAC of its own> (see README, the softroce provider)";

}  // namespace

Result<UplinkInterface> choose_uplink(const std::vector<InterfaceFacts>& facts, const std::string& default_route_iface) {
  std::vector<const InterfaceFacts*> usable_ones;
  for (const InterfaceFacts& f : facts) {
    if (usable(f)) usable_ones.push_back(&f);
  }
  if (usable_ones.size() == 1) return UplinkInterface{usable_ones[0]->name, usable_ones[0]->mtu};
  for (const InterfaceFacts* f : usable_ones) {
    if (f->name == default_route_iface) return UplinkInterface{f->name, f->mtu};
  }
  std::string seen;
  for (const InterfaceFacts& f : facts) seen += (seen.empty() ? "" : ", ") + describe(f);
  if (seen.empty()) seen = "none";
  if (usable_ones.empty()) {
    return failed_precondition(
        "softroce: the job's ranks are on several hosts, and this host has no interface that could reach them "
        "(one that is up, running, Ethernet, not loopback, with an IPv4 address); interfaces: " + seen + "; " +
        kHowToChoose);
  }
  return failed_precondition("softroce: the job's ranks are on several hosts, and " +
                             std::to_string(usable_ones.size()) +
                             " interfaces of this host could reach them, none of them the default route's (" +
                             (default_route_iface.empty() ? std::string("there is none") : default_route_iface) +
                             "); interfaces: " + seen + "; " + kHowToChoose);
}

Result<std::vector<InterfaceFacts>> read_interfaces() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return io_error("softroce: getifaddrs", errno);
  std::vector<InterfaceFacts> facts;
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_name == nullptr) continue;
    InterfaceFacts* f = nullptr;
    for (InterfaceFacts& g : facts) {
      if (g.name == a->ifa_name) f = &g;
    }
    if (f == nullptr) {
      facts.push_back(InterfaceFacts{});
      f = &facts.back();
      f->name = a->ifa_name;
      f->up = (a->ifa_flags & IFF_UP) != 0;
      f->running = (a->ifa_flags & IFF_RUNNING) != 0;
      f->loopback = (a->ifa_flags & IFF_LOOPBACK) != 0;
      if (fd >= 0 && f->name.size() < IFNAMSIZ) {
        ifreq ifr{};
        std::memcpy(ifr.ifr_name, f->name.c_str(), f->name.size());
        if (::ioctl(fd, SIOCGIFHWADDR, &ifr) == 0) f->ethernet = ifr.ifr_hwaddr.sa_family == ARPHRD_ETHER;
        if (::ioctl(fd, SIOCGIFMTU, &ifr) == 0) f->mtu = ifr.ifr_mtu;
      }
    }
    if (a->ifa_addr != nullptr && a->ifa_addr->sa_family == AF_INET) f->has_ipv4 = true;
  }
  if (fd >= 0) ::close(fd);
  ::freeifaddrs(list);
  return facts;
}

std::string default_route_interface() {
  // /proc/net/route: Iface Destination Gateway Flags RefCnt Use Metric Mask ...
  // (hexadecimal), this process's network namespace.
  std::ifstream in("/proc/net/route");
  std::string line, best;
  long best_metric = LONG_MAX;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string iface, dest, gw, flags, refcnt, use, metric, mask;
    if (!(fields >> iface >> dest >> gw >> flags >> refcnt >> use >> metric >> mask)) continue;
    const long f = std::strtol(flags.c_str(), nullptr, 16);
    if (dest != "00000000" || mask != "00000000" || (f & 1) == 0) continue;  // RTF_UP default routes only
    const long m = std::strtol(metric.c_str(), nullptr, 10);
    if (m < best_metric) {
      best_metric = m;
      best = iface;
    }
  }
  return best;
}

Result<UplinkInterface> choose_uplink_interface() {
  RMA_ASSIGN_OR_RETURN(std::vector<InterfaceFacts> facts, read_interfaces());
  return choose_uplink(facts, default_route_interface());
}

}  // namespace rma::softroce
