// Which kernel interface of this host reaches the other hosts of a job, for
// a softroce device that opens its port from the job alone (job_port.hpp):
//   - the one interface that is up and running, is Ethernet, is not
//     loopback and carries an IPv4 address (a host with one network, or a
//     network namespace joined to others by a veth pair);
//   - among several such, the one the default route leaves through (the
//     lowest metric when there are several default routes);
//   - otherwise an error that lists what was found and names
//     RMA_SOFTROCE_PORT, since guessing would send the job's traffic where
//     its peers may not be.
// No DPDK: getifaddrs, SIOCGIF* and /proc/net/route of this network
// namespace.
#pragma once

#include <string>
#include <vector>

#include "rma/sdk/status.hpp"

namespace rma::softroce {

struct UplinkInterface {
  std::string name;
  int mtu = 0;  // the interface's MTU (bytes of IP per frame)
};

// One candidate as the rule above sees it (exposed for tests).
struct InterfaceFacts {
  std::string name;
  bool up = false, running = false, loopback = false, ethernet = false, has_ipv4 = false;
  int mtu = 0;
};

// The rule above over `facts` and the default route's interface (empty:
// none). `facts` holds one entry per interface.
Result<UplinkInterface> choose_uplink(const std::vector<InterfaceFacts>& facts, const std::string& default_route_iface);

// The facts of this namespace's interfaces and its default route.
Result<std::vector<InterfaceFacts>> read_interfaces();
std::string default_route_interface();

// choose_uplink(read_interfaces(), default_route_interface()).
Result<UplinkInterface> choose_uplink_interface();

}  // namespace rma::softroce
