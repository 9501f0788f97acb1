// UnicastFilter: makes a kernel interface accept frames for one more
// unicast MAC while it lives, for a port (af_packet, af_xdp) whose NIC has
// an address of its own on an interface it shares with the host and with
// other ranks. Private to dpdk/port; DPDK-free.
//
// The kernel keeps the address in the interface's unicast filter
// (PACKET_ADD_MEMBERSHIP, PACKET_MR_UNICAST on a packet socket that
// receives nothing): counted per holder and dropped when the socket closes,
// also when the process is killed, so several ranks each add their own and
// nobody's exit takes another's away. A device without unicast filtering
// (veth, tun) is put in promiscuous mode for as long as any such address
// is held, the same count. The interface's own MAC and flags stay as they
// are: setting a port's MAC on the interface (what DPDK's af_packet driver
// does for rte_eth_dev_default_mac_addr_set) would give the host's IP stack
// the last rank's address and make it answer every rank's frames.
#pragma once

#include <string>

#include "wire/frame.hpp"
#include "rma/sdk/status.hpp"

namespace rma::roce::port {

class UnicastFilter {
 public:
  UnicastFilter() = default;
  ~UnicastFilter();
  UnicastFilter(const UnicastFilter&) = delete;
  UnicastFilter& operator=(const UnicastFilter&) = delete;

  // Adds `mac` to interface `ifname`'s unicast filter; `who` names the port
  // in errors.
  Status add(const std::string& who, const std::string& ifname, const MacAddress& mac);

 private:
  int fd_ = -1;
};

}  // namespace rma::roce::port
