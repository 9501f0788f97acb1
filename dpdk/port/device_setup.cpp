// DpdkPort: creating the device of each port kind (ring pair, PCI probe,
// memif / af_packet / af_xdp / tap vdevs) and configuring it (queues, MAC, start,
// the memif link wait).
#include <dirent.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_bus_vdev.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ether.h>
#include <rte_lcore.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "port/dpdk_port.hpp"
#include "port/memif_gate.hpp"
#include "rma/sdk/log.hpp"

namespace rma::roce::port {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {
// Between two tries of a memif client to connect (no server listening, or
// one that refused the handshake): doubling from the first to the last, so
// that a client left waiting neither spins nor floods the log (DPDK prints
// an error for every connect that fails).
constexpr std::chrono::milliseconds kFirstRetryWait = 10ms;
constexpr std::chrono::milliseconds kLastRetryWait = 1000ms;
}  // namespace

Status DpdkPort::open() {
  std::lock_guard lock(control_mutex());
  RMA_RETURN_IF_ERROR(create_device());
  RMA_RETURN_IF_ERROR(configure());
  return Status();
}

Status DpdkPort::create_device() {
  const unsigned seq = next_object_seq();
  if (spec_.kind == PortKind::kRing) {
    RMA_ASSIGN_OR_RETURN(pool_, make_pool(kPoolSize));
    std::lock_guard lock(ring_mutex());
    auto& reg = ring_registry();
    auto it = reg.find(spec_.name);
    std::shared_ptr<RingPair> pair = it == reg.end() ? nullptr : it->second.lock();
    if (pair && pair->ends >= 2) {
      return already_exists("ring:" + spec_.name + " already has both ends open");
    }
    if (!pair) {
      pair = std::make_shared<RingPair>();
      pair->name = spec_.name;
      for (int d = 0; d < 2; ++d) {
        const std::string rn = "rma_rg" + std::to_string(seq) + (d == 0 ? "ab" : "ba");
        pair->dir[d] = rte_ring_create(rn.c_str(), kRingSize, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
        if (pair->dir[d] == nullptr) {
          return resource_exhausted("ring:" + spec_.name + ": rte_ring_create failed: " + rte_err(rte_errno));
        }
      }
      reg[spec_.name] = pair;
    }
    ring_end_ = pair->ends;
    rte_ring* rx = pair->dir[1 - ring_end_];
    rte_ring* tx = pair->dir[ring_end_];
    const std::string dev = "rma" + std::to_string(seq);
    int pid = rte_eth_from_rings(dev.c_str(), &rx, 1, &tx, 1, SOCKET_ID_ANY);
    if (pid < 0) {
      return io_error("ring:" + spec_.name + ": rte_eth_from_rings failed: " + rte_err(rte_errno), 0);
    }
    vdev_name_ = "net_ring_" + dev;
    port_id_ = static_cast<std::uint16_t>(pid);
    have_port_ = true;
    pair->pools[ring_end_] = pool_;
    pair->ends++;
    ring_ = std::move(pair);
    info_.max_frame = kDataRoom;
    return Status();
  }

  if (spec_.kind == PortKind::kPci) {
    RMA_ASSIGN_OR_RETURN(pool_, make_pool(kPoolSizePci));
    std::uint16_t pid = 0;
    if (rte_eth_dev_get_port_by_name(spec_.name.c_str(), &pid) != 0) {
      int rc = rte_dev_probe(spec_.name.c_str());
      if (rc < 0) {
        return not_found("pci:" + spec_.name + ": no such device for DPDK (rte_dev_probe: " + rte_err(rc) +
                         "). The device must exist, be bound to vfio-pci/uio (or a bifurcated driver such as "
                         "mlx5) and the EAL must scan PCI: the default EAL arguments include --no-pci; set "
                         "RMA_SOFTROCE_EAL_ARGS, e.g. '-a " + spec_.name + " -l 0 --in-memory'");
      }
      if (rte_eth_dev_get_port_by_name(spec_.name.c_str(), &pid) != 0) {
        return not_found("pci:" + spec_.name + ": the device was probed but has no ethdev port with that name");
      }
      rte_eth_dev_info di{};
      if (rte_eth_dev_info_get(pid, &di) == 0) probed_dev_ = di.device;
    }
    port_id_ = pid;
    have_port_ = true;
    return Status();
  }

  std::string args;
  if (spec_.kind == PortKind::kAfPacket || spec_.kind == PortKind::kAfXdp) {
    const std::string kind = port_kind_name(spec_.kind);
    if (if_nametoindex(spec_.name.c_str()) == 0) {
      return not_found(kind + ":" + spec_.name + ": no network interface of that name in this network namespace");
    }
    // A down interface opens fine and then carries nothing: say so now.
    if (const int flags = iface_flags(spec_.name); flags >= 0 && (flags & IFF_UP) == 0) {
      return failed_precondition(kind + ":" + spec_.name + ": the interface is down; bring it up first (ip link set " +
                                 spec_.name + " up)");
    }
  }
  if (spec_.kind == PortKind::kMemif) {
    vdev_name_ = "net_memif" + std::to_string(seq);
    memif_socket_ = spec_.name[0] == '/' ? spec_.name : "/" + spec_.name;
    args = std::string("role=") + (spec_.memif_server ? "server" : "client") + ",socket=" + memif_socket_ +
           ",socket-abstract=yes,id=0,rsize=" + std::to_string(spec_.memif_rsize) +
           ",bsize=" + std::to_string(spec_.memif_bsize);
    // One descriptor per frame: memif 22.11 tx splits a frame chained over
    // several descriptors into pieces when its ring fills mid-frame (measured
    // with rma_frame_pump: 4154 B frames over 2048 B buffers arrived as
    // 2048 B + 2106 B fragments), so frames never exceed one buffer.
    info_.max_frame = std::min(kDataRoom, spec_.memif_bsize);
  } else if (spec_.kind == PortKind::kAfXdp) {
    // The driver registers our pool as its umem: every mbuf (headers, the
    // kernel's XDP headroom and the frame) must fit one 4 KiB umem chunk.
    vdev_name_ = "net_af_xdp" + std::to_string(seq);
    args = "iface=" + spec_.name + ",start_queue=0,queue_count=1";
    std::uint32_t mf = kAfXdpDataRoom - 256;  // XDP_PACKET_HEADROOM
    int mtu = iface_mtu(spec_.name);
    if (mtu > 0) mf = std::min<std::uint32_t>(mf, static_cast<std::uint32_t>(mtu) + RTE_ETHER_HDR_LEN);
    info_.max_frame = mf;
  } else if (spec_.kind == PortKind::kAfPacket) {
    vdev_name_ = "net_af_packet" + std::to_string(seq);
    args = "iface=" + spec_.name + ",qpairs=1,blocksz=" + std::to_string(spec_.blocksz) +
           ",framesz=" + std::to_string(spec_.framesz) + ",framecnt=" + std::to_string(spec_.framecnt);
    // The kernel puts the frame 66 bytes into a TPACKET_V2 slot (80 with alignment slack).
    static_assert(kAfPacketMaxFramesz - 32 <= kDataRoom, "the af_packet driver copies a frame slot into one mbuf");
    std::uint32_t mf = std::min<std::uint32_t>(kDataRoom, spec_.framesz - 80);
    int mtu = iface_mtu(spec_.name);
    if (mtu > 0) mf = std::min<std::uint32_t>(mf, static_cast<std::uint32_t>(mtu) + RTE_ETHER_HDR_LEN);
    info_.max_frame = mf;
  } else {  // tap
    vdev_name_ = "net_tap" + std::to_string(seq);
    args = "iface=" + spec_.name;
    info_.max_frame = 1504 + RTE_ETHER_HDR_LEN;  // the tap PMD caps MTU at 1504 and drops larger tx
  }
  if (spec_.kind == PortKind::kAfXdp) {
    // The driver keeps 2048 mbufs in its fill queue beside the ones in flight.
    RMA_ASSIGN_OR_RETURN(pool_, make_pool(kPoolSizeAfXdp, kAfXdpDataRoom));
  } else {
    RMA_ASSIGN_OR_RETURN(pool_, make_pool(kPoolSize));
  }
  int rc = rte_vdev_init(vdev_name_.c_str(), args.c_str());
  if (rc < 0) {
    std::string hint;
    if (spec_.kind == PortKind::kMemif) hint = " (is another memif " + std::string(spec_.memif_server ? "server" : "client") + " using this socket name?)";
    if (spec_.kind == PortKind::kAfPacket || spec_.kind == PortKind::kAfXdp || spec_.kind == PortKind::kTap) {
      hint = geteuid() != 0 ? " (needs root or CAP_NET_RAW/CAP_NET_ADMIN)"
                            : " (the driver refused these options; its log line above says why)";
    }
    std::string name = vdev_name_;
    vdev_name_.clear();  // nothing to uninit
    return io_error(info_.name + ": rte_vdev_init(" + name + ", \"" + args + "\") failed: " + rte_err(rc) + hint, 0);
  }
  std::uint16_t pid = 0;
  if (rte_eth_dev_get_port_by_name(vdev_name_.c_str(), &pid) != 0) {
    return internal_error(info_.name + ": vdev " + vdev_name_ + " created but has no ethdev port");
  }
  port_id_ = pid;
  have_port_ = true;
  return Status();
}

Status DpdkPort::configure() {
  const std::string& n = info_.name;
  rte_eth_dev_info dev_info{};
  int rc = rte_eth_dev_info_get(port_id_, &dev_info);
  if (rc != 0) return io_error(n + ": rte_eth_dev_info_get failed: " + rte_err(rc), 0);
  rte_eth_conf conf{};
  if (spec_.kind == PortKind::kPci) {
    // A real NIC: the largest MTU it and our mbufs allow.
    std::uint32_t mtu = std::min<std::uint32_t>(dev_info.max_mtu, kDataRoom - RTE_ETHER_HDR_LEN - 4);
    conf.rxmode.mtu = mtu;
    info_.max_frame = mtu + RTE_ETHER_HDR_LEN;
  } else {
    // memif, af_packet and tap report max_rx_pktlen 1518: ethdev refuses a
    // larger MTU although memif and af_packet carry jumbo frames (dpdk.md).
    conf.rxmode.mtu = std::min<std::uint32_t>(RTE_ETHER_MTU, dev_info.max_mtu);
  }
  rc = rte_eth_dev_configure(port_id_, 1, 1, &conf);
  if (rc != 0) return io_error(n + ": rte_eth_dev_configure failed: " + rte_err(rc), 0);
  std::uint16_t nrx = kDesc, ntx = kDesc;
  (void)rte_eth_dev_adjust_nb_rx_tx_desc(port_id_, &nrx, &ntx);
  const int socket = rte_eth_dev_socket_id(port_id_) < 0 ? static_cast<int>(rte_socket_id()) : rte_eth_dev_socket_id(port_id_);
  rc = rte_eth_rx_queue_setup(port_id_, 0, nrx, static_cast<unsigned>(socket), nullptr, pool_->mp);
  if (rc != 0) {
    // af_xdp fails here when the kernel refuses the XDP program or the socket;
    // the usual cause on a veth is an MTU that does not fit a page.
    const std::string hint = spec_.kind != PortKind::kAfXdp ? "" :
        " (the driver could not attach XDP to " + spec_.name + "; its log above says why. A frame must fit one page: "
        "on a veth both ends need an MTU of at most 3506, e.g. ip link set " + spec_.name + " mtu 3498)";
    return io_error(n + ": rte_eth_rx_queue_setup failed: " + rte_err(rc) + hint, 0);
  }
  rc = rte_eth_tx_queue_setup(port_id_, 0, ntx, static_cast<unsigned>(socket), nullptr);
  if (rc != 0) return io_error(n + ": rte_eth_tx_queue_setup failed: " + rte_err(rc), 0);

  rte_ether_addr addr{};
  // af_packet and af_xdp share a kernel interface with the host (and with
  // other ranks): the interface keeps its MAC and its flags, and a MAC of
  // our own only joins its unicast filter (unicast_filter.hpp). DPDK's
  // af_packet driver would otherwise set it on the interface itself, and
  // its promiscuous switch is one flag for everybody, cleared by whoever
  // closes first.
  const bool shared_iface = spec_.kind == PortKind::kAfPacket || spec_.kind == PortKind::kAfXdp;
  if (spec_.mac && shared_iface) {
    std::memcpy(addr.addr_bytes, spec_.mac->data(), 6);
    RMA_RETURN_IF_ERROR(unicast_.add(n, spec_.name, *spec_.mac));
  } else if (spec_.mac) {
    std::memcpy(addr.addr_bytes, spec_.mac->data(), 6);
    rc = rte_eth_dev_default_mac_addr_set(port_id_, &addr);
    if (rc != 0) RMA_LOG_DEBUG("softroce: %s: PMD did not take MAC from the spec (%d); using it anyway", n.c_str(), rc);
  } else {
    (void)rte_eth_macaddr_get(port_id_, &addr);
    if (rte_is_zero_ether_addr(&addr)) {
      rte_eth_random_addr(addr.addr_bytes);
      (void)rte_eth_dev_default_mac_addr_set(port_id_, &addr);
    }
  }
  std::memcpy(info_.mac.data(), addr.addr_bytes, 6);
  if (!shared_iface) (void)rte_eth_promiscuous_enable(port_id_);  // frames for a MAC the PMD does not know

  // A memif client cannot start while no server listens on the socket:
  // retry until the link wait runs out, so either side may start first.
  if (spec_.kind == PortKind::kMemif) {
    RMA_RETURN_IF_ERROR(MemifGate::instance().add_user(port_id_).with_context(n));
    gated_ = true;
  }
  const auto deadline = Clock::now() + std::chrono::milliseconds(spec_.link_wait_ms);
  if (spec_.kind == PortKind::kMemif && !spec_.memif_server) {
    retry_wait_ = kFirstRetryWait;
    for (;;) {
      // Waits for the gate rather than skip a round: with wait=0 this is the
      // only try. Without it (an interrupt thread that did not come back
      // within a second), the start goes ahead untracked: a refusal is then
      // not retried, as before the tracking existed.
      if (MemifGate::instance().enter_wait(1000ms)) {
        connect_memif_client();
        MemifGate::instance().leave();
      } else if (!started_) {
        control_fd_ = -1;
        started_ = rte_eth_dev_start(port_id_) == 0;
      }
      if (started_ || Clock::now() >= deadline) break;
      std::this_thread::sleep_for(1ms);
    }
    if (!started_) {
      return timeout_error(n + ": memif client could not connect within " + std::to_string(spec_.link_wait_ms) +
                           " ms (no server listening on abstract socket '" + spec_.name + "')");
    }
  } else {
    rc = rte_eth_dev_start(port_id_);
    if (rc != 0) return io_error(n + ": rte_eth_dev_start failed: " + rte_err(rc), 0);
    started_ = true;
  }
  scratch_.resize(kDataRoom);

  if (spec_.kind != PortKind::kMemif) {
    state_ = PortState::kUp;
    return Status();
  }
  if (spec_.link_wait_ms == 0) return Status();  // poll() notices link up
  while (!link_up()) {
    if (const GateHold gate(gated_); gate.held()) connect_memif_client();
    if (Clock::now() >= deadline) {
      const bool refused = !spec_.memif_server && refusals_ > 0;
      const std::string why = spec_.memif_server ? "no client connected on"
                              : refused          ? "the server took the connection but refused the handshake, on"
                              : started_         ? "the server took the connection but did not finish the handshake, on"
                                                 : "no server listening on";
      return timeout_error(n + ": memif link not up within " + std::to_string(spec_.link_wait_ms) + " ms (" + why +
                           " abstract socket '" + spec_.name + "'" +
                           (refused ? "; not started yet, or another client holds it?" : "") +
                           "); add ,wait=0 to open without waiting");
    }
    std::this_thread::sleep_for(1ms);
  }
  mark_up();
  return Status();
}

// DPDK 22.11's memif server listens from the moment its device is created
// but refuses a client's handshake until it is started ("ID not found"),
// and the refused client stays disconnected: it connects only in
// rte_eth_dev_start. Ranks of a mesh start at their own pace, so a client
// can reach a sibling's server in that window (a job that then waited 30 s
// and failed). A refused client's control channel is gone (memif closed its
// socket), while one whose handshake is only slow still has it: so the
// client starts again exactly when its socket has closed with the link
// down, and never cuts a handshake short. Called with the memif gate held,
// so no memif handler runs meanwhile (none can close the socket between
// the start and the look for it), and with the control mutex.
void DpdkPort::connect_memif_client() noexcept {
  if (spec_.kind != PortKind::kMemif || spec_.memif_server || !have_port_) return;
  const auto now = Clock::now();
  auto back_off = [&] {
    next_start_ = now + retry_wait_;
    retry_wait_ = std::min(retry_wait_ * 2, kLastRetryWait);
  };
  if (started_) {
    if (link_up() || !control_socket_closed()) return;
    (void)rte_eth_dev_stop(port_id_);
    started_ = false;
    control_fd_ = -1;
    if (++refusals_ == 1) {
      RMA_LOG_INFO("softroce: %s: the memif server closed the connection before the link came up (a server that "
                   "has not started yet refuses clients); connecting again",
                   info_.name.c_str());
    }
    back_off();  // a server that refuses at once would otherwise be asked again and again
  }
  if (now < next_start_) return;
  const std::vector<ino_t> before = sockets_to_server();
  started_ = rte_eth_dev_start(port_id_) == 0;
  if (started_) {
    find_control_socket(before);
  } else {
    back_off();
  }
}

// This process's unix sockets connected to the server's abstract address
// (the socket= memif was given, memif_socket_), by their inodes, with
// `fd_of` (optional) filled with their descriptors.
std::vector<ino_t> DpdkPort::sockets_to_server(std::vector<int>* fd_of) const noexcept {
  std::vector<ino_t> found;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return found;
  while (const dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    struct stat st {};
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_un peer{};
    socklen_t len = sizeof peer;
    if (getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &len) != 0) continue;
    const std::size_t path_len = len > offsetof(sockaddr_un, sun_path) ? len - offsetof(sockaddr_un, sun_path) : 0;
    if (peer.sun_family != AF_UNIX || path_len < 2 || peer.sun_path[0] != '\0') continue;
    if (std::string_view(peer.sun_path + 1, path_len - 1) != memif_socket_) continue;
    found.push_back(st.st_ino);
    if (fd_of != nullptr) fd_of->push_back(static_cast<int>(fd));
  }
  closedir(dir);
  return found;
}

// The client's control socket: the one to the server that the start just
// made (not one this process had before, such as a descriptor inherited
// from a parent connected to the same name: DPDK's are not close-on-exec).
// Its inode tells it from a later socket that reuses the descriptor.
void DpdkPort::find_control_socket(const std::vector<ino_t>& before) noexcept {
  control_fd_ = -1;
  std::vector<int> fds;
  const std::vector<ino_t> now = sockets_to_server(&fds);
  for (std::size_t i = 0; i < now.size(); ++i) {
    if (std::find(before.begin(), before.end(), now[i]) != before.end()) continue;
    control_fd_ = fds[i];
    control_ino_ = now[i];
    return;
  }
  RMA_LOG_DEBUG("softroce: %s: memif's control socket not found; a refused handshake will not be retried",
                info_.name.c_str());
}

bool DpdkPort::control_socket_closed() const noexcept {
  if (control_fd_ < 0) return false;  // not known: never start again on a guess
  struct stat st {};
  return fstat(control_fd_, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_ino != control_ino_;
}

}  // namespace rma::roce::port
