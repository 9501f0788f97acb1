#include "port/unicast_filter.hpp"

#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rma::roce::port {

UnicastFilter::~UnicastFilter() {
  if (fd_ >= 0) ::close(fd_);
}

Status UnicastFilter::add(const std::string& who, const std::string& ifname, const MacAddress& mac) {
  const unsigned index = if_nametoindex(ifname.c_str());
  if (index == 0) return not_found(who + ": no network interface " + ifname + " in this network namespace");
  // Protocol 0: the socket is on no receive list and never holds a frame.
  const int fd = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return permission_denied(who + ": cannot open a packet socket to add the port's MAC to " + ifname +
                             "'s unicast filter: " + std::strerror(errno) + " (needs root or CAP_NET_RAW)");
  }
  packet_mreq mr{};
  mr.mr_ifindex = static_cast<int>(index);
  mr.mr_type = PACKET_MR_UNICAST;
  mr.mr_alen = 6;
  std::memcpy(mr.mr_address, mac.data(), 6);
  if (::setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof mr) != 0) {
    const int err = errno;
    ::close(fd);
    return io_error(who + ": cannot add the port's MAC to " + ifname + "'s unicast filter (PACKET_ADD_MEMBERSHIP)", err);
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  return {};
}

}  // namespace rma::roce::port
