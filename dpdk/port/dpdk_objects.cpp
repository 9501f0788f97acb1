#include "port/dpdk_objects.hpp"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_errno.h>

#include <cstring>

namespace rma::roce::port {

std::string rte_err(int err) {
  if (err < 0) err = -err;
  return std::string(rte_strerror(err)) + " (" + std::to_string(err) + ")";
}

unsigned next_object_seq() noexcept {
  static std::atomic<unsigned> seq{0};
  return seq.fetch_add(1);
}

std::mutex& control_mutex() noexcept {
  static std::mutex m;
  return m;
}

std::atomic<unsigned>& open_link_count() noexcept {
  static std::atomic<unsigned> n{0};
  return n;
}

Result<std::shared_ptr<Mempool>> make_pool(unsigned n, std::uint32_t data_room) {
  const std::string name = "rma_mp" + std::to_string(next_object_seq());
  rte_mempool* mp = rte_pktmbuf_pool_create(name.c_str(), n, kPoolCache, 0,
                                            static_cast<std::uint16_t>(RTE_PKTMBUF_HEADROOM + data_room), SOCKET_ID_ANY);
  if (mp == nullptr) {
    return resource_exhausted("cannot create mbuf pool of " + std::to_string(n) + " x " +
                              std::to_string(data_room) + " B: " + rte_err(rte_errno) +
                              "; give the EAL more memory (-m in RMA_SOFTROCE_EAL_ARGS)");
  }
  return std::make_shared<Mempool>(mp);
}

std::mutex& ring_mutex() noexcept {
  static std::mutex m;
  return m;
}

std::map<std::string, std::weak_ptr<RingPair>>& ring_registry() {
  static auto* m = new std::map<std::string, std::weak_ptr<RingPair>>;
  return *m;
}

namespace {

// One SIOCGIF* query of a network interface of this namespace; false when
// the interface or the socket is not there.
bool query_iface(const std::string& ifname, unsigned long request, ifreq& ifr) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return false;
  ifr = ifreq{};
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  const bool ok = ioctl(fd, request, &ifr) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

int iface_flags(const std::string& ifname) {
  ifreq ifr;
  return query_iface(ifname, SIOCGIFFLAGS, ifr) ? ifr.ifr_flags : -1;
}

int iface_mtu(const std::string& ifname) {
  ifreq ifr;
  return query_iface(ifname, SIOCGIFMTU, ifr) ? ifr.ifr_mtu : -1;
}

}  // namespace rma::roce::port
