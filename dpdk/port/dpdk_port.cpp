// DPDK ports as Links: open_port() and the PortLink implementation.
//
// Every rte_* object is owned by the DpdkPort (or, for ring pairs, by the
// RingPair both ends share) and released in reverse order of creation by
// close(), which the destructor calls; open_port builds the DpdkPort first
// and fills it step by step, so an error half-way releases what exists.
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_bus_vdev.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_interrupts.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "port/eal.hpp"
#include "port/mbuf_handoff.hpp"
#include "port/mesh_port.hpp"
#include "port/port.hpp"
#include "port/port_link.hpp"
#include "port/spec.hpp"
#include "rma/log.hpp"

namespace rma::roce {
namespace port {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr std::uint32_t kDataRoom = 9216;        // bytes of frame per mbuf (jumbo)
constexpr unsigned kPoolSize = 2047;             // mbufs per port (2^n - 1)
constexpr unsigned kPoolSizePci = 4095;
constexpr unsigned kPoolCache = 128;
constexpr unsigned kRingSize = 1024;             // ring: slots per direction
constexpr std::uint16_t kDesc = 1024;
constexpr std::size_t kBurst = 32;
constexpr std::uint16_t kCtlEtherType = 0x88B5;  // IEEE local experimental
constexpr std::array<std::uint8_t, 8> kCtlMagic = {'R', 'M', 'A', 'P', 'O', 'R', 'T', 1};
constexpr std::uint8_t kFin = 1, kFinAck = 2;
constexpr auto kFinAckWait = 1000ms;             // active close: wait for FIN-ACK
constexpr auto kLinkDownWait = 5000ms;           // passive close: wait for the peer to disconnect (a mesh peer tears its links down one at a time)

std::atomic<unsigned> g_seq{0};
std::atomic<unsigned> g_open_links{0};
std::mutex g_ctl_mutex;  // serialises DPDK control calls (vdev create/remove, port setup)

std::string rte_err(int err) {
  if (err < 0) err = -err;
  return std::string(rte_strerror(err)) + " (" + std::to_string(err) + ")";
}

// ---- RAII pieces ----------------------------------------------------------

struct Mempool {
  rte_mempool* mp = nullptr;
  explicit Mempool(rte_mempool* p) : mp(p) {}
  Mempool(const Mempool&) = delete;
  Mempool& operator=(const Mempool&) = delete;
  ~Mempool() {
    if (mp != nullptr) rte_mempool_free(mp);
  }
};

Result<std::shared_ptr<Mempool>> make_pool(unsigned n) {
  const std::string name = "rma_mp" + std::to_string(g_seq.fetch_add(1));
  rte_mempool* mp = rte_pktmbuf_pool_create(name.c_str(), n, kPoolCache, 0,
                                            RTE_PKTMBUF_HEADROOM + kDataRoom, SOCKET_ID_ANY);
  if (mp == nullptr) {
    return resource_exhausted("cannot create mbuf pool of " + std::to_string(n) + " x " +
                              std::to_string(kDataRoom) + " B: " + rte_err(rte_errno) +
                              "; give the EAL more memory (-m in RMA_SOFTROCE_EAL_ARGS)");
  }
  return std::make_shared<Mempool>(mp);
}

// Two crossed rte_rings shared by the two ends of a ring:<name> pair, plus
// both ends' pools: an mbuf sent by one end may sit in the other's rx ring
// after the sender closed, so the pools live as long as the rings.
struct RingPair {
  std::string name;
  rte_ring* dir[2] = {nullptr, nullptr};  // dir[i]: frames sent by end i
  std::shared_ptr<Mempool> pools[2];
  int ends = 0;
  std::atomic<bool> closed[2] = {false, false};
  ~RingPair() {
    for (rte_ring* r : dir) {
      if (r == nullptr) continue;
      void* obj = nullptr;
      while (rte_ring_dequeue(r, &obj) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(obj));
      rte_ring_free(r);
    }
    pools[0].reset();
    pools[1].reset();
  }
};

std::mutex g_ring_mutex;
std::map<std::string, std::weak_ptr<RingPair>>& ring_registry() {
  static auto* m = new std::map<std::string, std::weak_ptr<RingPair>>;
  return *m;
}

int iface_mtu(const std::string& ifname) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return -1;
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  int mtu = ioctl(fd, SIOCGIFMTU, &ifr) == 0 ? ifr.ifr_mtu : -1;
  ::close(fd);
  return mtu;
}

// ---- the memif gate ---------------------------------------------------------
//
// DPDK 22.11's memif runs its control channel in the EAL interrupt thread.
// When the peer process dies, that thread reads EOF from the control socket
// and calls memif_disconnect(), which clears the "connected" flag, then
// munmap()s the shared regions and frees their descriptors while our thread
// may be inside rte_eth_rx_burst / rte_eth_tx_burst on those very rings: the
// burst passed the flag check earlier and now touches unmapped memory
// (segfault). Nothing in the PMD orders the two threads, so we do: the
// interrupt thread runs DPDK's handlers only while no memif burst is running.
//
// How: an always-readable eventfd registered as an EAL interrupt source makes
// the interrupt thread call park() on every pass of its event loop. park()
// opens the gate (bursts allowed), sleeps kParkInterval, closes the gate and
// waits until every burst in progress has left, then returns, and only then
// does the interrupt thread go on to the other handlers (memif's among them)
// before it comes back to park(). So every interrupt handler runs with the
// gate closed and no burst inside. A burst that finds the gate closed does
// not wait: poll() delivers nothing and transmit() takes nothing that round.
// The gate is a Dekker pair of sequentially consistent atomics (the burst
// side: increment `inside_`, then read `closed_`; the park side: set
// `closed_`, then read `inside_`), about two atomic operations per poll or
// transmit call. Interrupt handlers (memif connect / disconnect messages)
// are delayed by up to kParkInterval. With no memif port open the eventfd is
// drained and the interrupt thread sleeps in epoll as usual.
class MemifGate {
 public:
  static MemifGate& instance() {
    static auto* g = new MemifGate;  // lives as long as the EAL (never torn down)
    return *g;
  }

  // A memif port is about to start: installs the parker once, counts the port.
  Status add_user() {
    std::lock_guard lock(mutex_);
    if (ih_ == nullptr) {
      efd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
      if (efd_ < 0) return io_error(std::string("memif gate: eventfd: ") + std::strerror(errno), errno);
      ih_ = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE);
      if (ih_ == nullptr || rte_intr_type_set(ih_, RTE_INTR_HANDLE_EXT) != 0 || rte_intr_fd_set(ih_, efd_) != 0) {
        return internal_error("memif gate: cannot set up an interrupt handle");
      }
      const int rc = rte_intr_callback_register(ih_, &MemifGate::park_cb, this);
      if (rc != 0) return io_error("memif gate: rte_intr_callback_register failed: " + rte_err(rc), 0);
    }
    if (users_.fetch_add(1) == 0) arm();
    return Status();
  }
  void remove_user() noexcept {
    std::lock_guard lock(mutex_);
    if (users_.fetch_sub(1) == 1) kick();
  }

  // Data path: true when a burst may run now; then leave() must follow.
  // Re-entrant per thread (a frame sink may transmit from inside poll):
  // a thread already inside stays inside, since the parker waits for it.
  bool enter() noexcept {
    if (t_depth_ > 0) {
      ++t_depth_;
      return true;
    }
    inside_.fetch_add(1, std::memory_order_seq_cst);
    if (closed_.load(std::memory_order_seq_cst) == 0) {
      t_depth_ = 1;
      return true;
    }
    inside_.fetch_sub(1, std::memory_order_release);
    return false;
  }
  void leave() noexcept {
    if (--t_depth_ == 0) inside_.fetch_sub(1, std::memory_order_release);
  }
  // Control path: waits (bounded) until bursts may run; false on timeout.
  bool enter_wait(std::chrono::milliseconds budget) noexcept {
    const auto deadline = Clock::now() + budget;
    while (!enter()) {
      if (Clock::now() >= deadline) return false;
      std::this_thread::sleep_for(50us);
    }
    return true;
  }
  std::uint64_t parks() const noexcept { return parks_.load(std::memory_order_relaxed); }

 private:
  static constexpr auto kParkInterval = 1ms;

  void arm() noexcept {
    const std::uint64_t one = 1;
    if (::write(efd_, &one, sizeof one) < 0) RMA_LOG_WARN("softroce: memif gate: eventfd write failed");
  }
  void kick() noexcept {
    {
      std::lock_guard lock(park_mutex_);
      kicked_ = true;
    }
    park_cv_.notify_all();
  }

  // Runs in the EAL interrupt thread (see above).
  static void park_cb(void* arg) { static_cast<MemifGate*>(arg)->park(); }
  void park() noexcept {
    if (users_.load() == 0) {
      std::uint64_t v;
      (void)::read(efd_, &v, sizeof v);     // no memif port: let epoll sleep
      if (users_.load() != 0) arm();        // a port arrived meanwhile: stay armed
      return;
    }
    parks_.fetch_add(1, std::memory_order_relaxed);
    closed_.store(0, std::memory_order_seq_cst);
    {
      std::unique_lock lock(park_mutex_);
      park_cv_.wait_for(lock, kParkInterval, [this] { return kicked_; });
      kicked_ = false;
    }
    closed_.store(1, std::memory_order_seq_cst);
    for (unsigned spins = 0; inside_.load(std::memory_order_seq_cst) != 0; ++spins) {
      if (spins < 1000) rte_pause();
      else std::this_thread::sleep_for(20us);
    }
  }

  std::mutex mutex_;
  int efd_ = -1;
  rte_intr_handle* ih_ = nullptr;
  std::atomic<int> users_{0};
  std::atomic<int> closed_{1};   // 1: the interrupt thread may run handlers; no burst may start
  std::atomic<int> inside_{0};   // bursts in progress
  static thread_local int t_depth_;  // this thread's nesting of enter()
  std::atomic<std::uint64_t> parks_{0};
  std::mutex park_mutex_;
  std::condition_variable park_cv_;
  bool kicked_ = false;
};

thread_local int MemifGate::t_depth_ = 0;

// Holds the gate for one poll / transmit / shutdown step of a memif port.
class GateHold {
 public:
  explicit GateHold(bool memif) noexcept : memif_(memif), held_(!memif || MemifGate::instance().enter()) {}
  ~GateHold() {
    if (memif_ && held_) MemifGate::instance().leave();
  }
  GateHold(const GateHold&) = delete;
  GateHold& operator=(const GateHold&) = delete;
  bool held() const noexcept { return held_; }

 private:
  bool memif_;
  bool held_;
};

// ---- the port ---------------------------------------------------------------

class DpdkPort final : public PortLink {
 public:
  explicit DpdkPort(PortSpec spec) : spec_(std::move(spec)) {
    info_.name = spec_.canonical();
    info_.ipv4 = spec_.ipv4;
    g_open_links.fetch_add(1);
  }
  ~DpdkPort() override {
    (void)close();
    g_open_links.fetch_sub(1);
  }

  Status open();

  std::size_t transmit(std::span<const TxFrame> frames) noexcept override;
  std::size_t poll(FrameSink& sink, std::size_t max) noexcept override;
  const LinkInfo& info() const noexcept override { return info_; }
  LinkCounters counters() const noexcept override { return c_.link; }
  PortState state() const noexcept override { return state_; }
  bool link_up() const noexcept override {
    if (!started_) return false;
    rte_eth_link l{};
    return rte_eth_link_get_nowait(port_id_, &l) == 0 && l.link_status == RTE_ETH_LINK_UP;
  }
  PortCounters port_counters() const noexcept override { return c_; }
  void shutdown() noexcept override;
  Status close() override;

 private:
  Status create_device();
  Status configure();
  bool usable() noexcept;
  bool send_control(std::uint8_t type, std::chrono::milliseconds budget) noexcept;
  // Returns the control type if `m` is one of our control frames, else 0.
  std::uint8_t control_type(const rte_mbuf* m) const noexcept;
  void handle_control(std::uint8_t type) noexcept;
  bool wait_link_down(std::chrono::milliseconds budget) noexcept;
  void teardown() noexcept;

  PortSpec spec_;
  LinkInfo info_;
  PortState state_ = PortState::kWaiting;
  PortCounters c_;

  std::shared_ptr<Mempool> pool_;
  std::shared_ptr<RingPair> ring_;
  int ring_end_ = 0;
  std::string vdev_name_;      // non-empty: rte_vdev_uninit on close
  rte_device* probed_dev_ = nullptr;  // rte_dev_remove on close
  std::uint16_t port_id_ = RTE_MAX_ETHPORTS;
  bool have_port_ = false;
  bool started_ = false;
  bool closed_ = false;
  bool gated_ = false;         // memif: counted as a MemifGate user
  std::uint32_t link_checks_ = 0;

  // memif shutdown handshake
  bool closing_ = false;  // shutdown() ran: the port no longer polls nor transmits
  Status shutdown_status_;  // what the handshake ended with (close() reports it)
  bool sent_fin_ = false;
  bool got_fin_ack_ = false;
  bool passive_ = false;  // answered the peer's FIN: wait for its disconnect

  std::vector<std::uint8_t> scratch_;
  std::array<rte_mbuf*, kBurst> mbufs_{};
  std::array<std::uint16_t, kBurst> index_{};
};

Status DpdkPort::open() {
  std::lock_guard lock(g_ctl_mutex);
  RMA_RETURN_IF_ERROR(create_device());
  RMA_RETURN_IF_ERROR(configure());
  return Status();
}

Status DpdkPort::create_device() {
  const unsigned seq = g_seq.fetch_add(1);
  if (spec_.kind == PortKind::kRing) {
    RMA_ASSIGN_OR_RETURN(pool_, make_pool(kPoolSize));
    std::lock_guard lock(g_ring_mutex);
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
  if (spec_.kind == PortKind::kMemif) {
    vdev_name_ = "net_memif" + std::to_string(seq);
    std::string sock = spec_.name[0] == '/' ? spec_.name : "/" + spec_.name;
    args = std::string("role=") + (spec_.memif_server ? "server" : "client") + ",socket=" + sock +
           ",socket-abstract=yes,id=0,rsize=" + std::to_string(spec_.memif_rsize) +
           ",bsize=" + std::to_string(spec_.memif_bsize);
    // One descriptor per frame: memif 22.11 tx splits a frame chained over
    // several descriptors into pieces when its ring fills mid-frame (measured
    // with rma_frame_pump: 4154 B frames over 2048 B buffers arrived as
    // 2048 B + 2106 B fragments), so frames never exceed one buffer.
    info_.max_frame = std::min(kDataRoom, spec_.memif_bsize);
  } else if (spec_.kind == PortKind::kAfPacket) {
    if (if_nametoindex(spec_.name.c_str()) == 0) {
      return not_found("af_packet:" + spec_.name + ": no network interface of that name in this network namespace");
    }
    vdev_name_ = "net_af_packet" + std::to_string(seq);
    args = "iface=" + spec_.name + ",qpairs=1,blocksz=" + std::to_string(spec_.blocksz) +
           ",framesz=" + std::to_string(spec_.framesz) + ",framecnt=" + std::to_string(spec_.framecnt);
    // The kernel puts the frame 66 bytes into a TPACKET_V2 slot (80 with alignment slack).
    std::uint32_t mf = std::min<std::uint32_t>(kDataRoom, spec_.framesz - 80);
    int mtu = iface_mtu(spec_.name);
    if (mtu > 0) mf = std::min<std::uint32_t>(mf, static_cast<std::uint32_t>(mtu) + RTE_ETHER_HDR_LEN);
    info_.max_frame = mf;
  } else {  // tap
    vdev_name_ = "net_tap" + std::to_string(seq);
    args = "iface=" + spec_.name;
    info_.max_frame = 1504 + RTE_ETHER_HDR_LEN;  // the tap PMD caps MTU at 1504 and drops larger tx
  }
  RMA_ASSIGN_OR_RETURN(pool_, make_pool(kPoolSize));
  int rc = rte_vdev_init(vdev_name_.c_str(), args.c_str());
  if (rc < 0) {
    std::string hint;
    if (spec_.kind == PortKind::kMemif) hint = " (is another memif " + std::string(spec_.memif_server ? "server" : "client") + " using this socket name?)";
    if (spec_.kind == PortKind::kAfPacket || spec_.kind == PortKind::kTap) hint = " (needs root or CAP_NET_RAW/CAP_NET_ADMIN)";
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
  if (rc != 0) return io_error(n + ": rte_eth_rx_queue_setup failed: " + rte_err(rc), 0);
  rc = rte_eth_tx_queue_setup(port_id_, 0, ntx, static_cast<unsigned>(socket), nullptr);
  if (rc != 0) return io_error(n + ": rte_eth_tx_queue_setup failed: " + rte_err(rc), 0);

  rte_ether_addr addr{};
  if (spec_.mac) {
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
  (void)rte_eth_promiscuous_enable(port_id_);  // frames for a MAC the PMD does not know

  // A memif client cannot start while no server listens on the socket:
  // retry until the link wait runs out, so either side may start first.
  if (spec_.kind == PortKind::kMemif) {
    RMA_RETURN_IF_ERROR(MemifGate::instance().add_user().with_context(n));
    gated_ = true;
  }
  const auto deadline = Clock::now() + std::chrono::milliseconds(spec_.link_wait_ms);
  const bool retry = spec_.kind == PortKind::kMemif && !spec_.memif_server;
  while ((rc = rte_eth_dev_start(port_id_)) != 0 && retry && Clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  if (rc != 0 && retry) {
    return timeout_error(n + ": memif client could not connect within " + std::to_string(spec_.link_wait_ms) +
                         " ms (no server listening on abstract socket '" + spec_.name + "'; last error " +
                         rte_err(rc) + ")");
  }
  if (rc != 0) return io_error(n + ": rte_eth_dev_start failed: " + rte_err(rc), 0);
  started_ = true;
  scratch_.resize(kDataRoom);

  if (spec_.kind != PortKind::kMemif) {
    state_ = PortState::kUp;
    return Status();
  }
  if (spec_.link_wait_ms == 0) return Status();  // poll() notices link up
  while (!link_up()) {
    if (Clock::now() >= deadline) {
      return timeout_error(n + ": memif link not up within " + std::to_string(spec_.link_wait_ms) + " ms (" +
                           (spec_.memif_server ? "no client connected" : "no server listening") +
                           " on abstract socket '" + spec_.name + "'); add ,wait=0 to open without waiting");
    }
    std::this_thread::sleep_for(1ms);
  }
  state_ = PortState::kUp;
  return Status();
}

// True when the PMD may be polled / transmitted on. Detects link up (memif
// peer arrived), link down without FIN (memif peer died) and a closed ring end.
inline bool DpdkPort::usable() noexcept {
  if (closing_) return false;
  if (state_ == PortState::kUp) {
    // Asking the PMD costs about as much as an empty rx burst: every 32nd
    // call is soon enough to notice a dead peer (its bursts do nothing).
    if (spec_.kind == PortKind::kMemif && (++link_checks_ & 31u) == 0) {
      rte_eth_link l{};
      if (rte_eth_link_get_nowait(port_id_, &l) == 0 && l.link_status == RTE_ETH_LINK_DOWN) {
        state_ = PortState::kDown;
        RMA_LOG_WARN("softroce: %s: link went down without FIN from the peer (peer died?); port stopped",
                     info_.name.c_str());
        return false;
      }
    } else if (ring_ && ring_->closed[1 - ring_end_].load(std::memory_order_relaxed)) {
      state_ = PortState::kPeerClosed;
      return false;
    }
    return true;
  }
  if (state_ == PortState::kWaiting && started_ && link_up()) {
    state_ = PortState::kUp;
    return true;
  }
  return false;
}

std::size_t DpdkPort::transmit(std::span<const TxFrame> frames) noexcept {
  const GateHold gate(gated_);
  if (!gate.held()) return 0;  // memif handlers running: offer again later
  if (!usable()) {
    if (state_ == PortState::kWaiting) return 0;  // not yet: offer again later
    c_.tx_link_down += frames.size();
    c_.link.tx_dropped += frames.size();
    return frames.size();
  }
  std::size_t done = 0;
  while (done < frames.size()) {
    const std::size_t chunk = std::min(kBurst, frames.size() - done);
    if (rte_pktmbuf_alloc_bulk(pool_->mp, mbufs_.data(), static_cast<unsigned>(chunk)) != 0) {
      ++c_.tx_no_mbuf;
      c_.link.tx_dropped += frames.size() - done;
      return done;
    }
    mbufs_arrive(mbufs_.data(), static_cast<std::uint16_t>(chunk));
    std::size_t built = 0;
    std::uint64_t bytes[kBurst];
    for (std::size_t i = 0; i < chunk; ++i) {
      const TxFrame& f = frames[done + i];
      const std::size_t len = f.size();
      if (len > info_.max_frame) {
        ++c_.tx_oversize;
        ++c_.link.tx_dropped;
        continue;
      }
      rte_mbuf* m = mbufs_[built];
      auto* p = rte_pktmbuf_mtod(m, std::uint8_t*);
      if (!f.head.empty()) std::memcpy(p, f.head.data(), f.head.size());
      if (!f.payload.empty()) std::memcpy(p + f.head.size(), f.payload.data(), f.payload.size());
      if (!f.tail.empty()) std::memcpy(p + f.head.size() + f.payload.size(), f.tail.data(), f.tail.size());
      m->data_len = static_cast<std::uint16_t>(len);
      m->pkt_len = static_cast<std::uint32_t>(len);
      index_[built] = static_cast<std::uint16_t>(i);
      bytes[built] = len;
      ++built;
    }
    if (built < chunk) rte_pktmbuf_free_bulk(mbufs_.data() + built, static_cast<unsigned>(chunk - built));
    mbufs_leave(mbufs_.data(), static_cast<std::uint16_t>(built));
    const std::uint16_t sent = built == 0 ? 0 : rte_eth_tx_burst(port_id_, 0, mbufs_.data(), static_cast<std::uint16_t>(built));
    for (std::uint16_t i = 0; i < sent; ++i) c_.link.tx_bytes += bytes[i];
    c_.link.tx_frames += sent;
    if (sent < built) {
      rte_pktmbuf_free_bulk(mbufs_.data() + sent, static_cast<unsigned>(built - sent));
      const std::size_t taken = done + index_[sent];  // frames before the first unsent one
      c_.link.tx_dropped += frames.size() - taken;
      return taken;
    }
    done += chunk;
  }
  return done;
}

std::uint8_t DpdkPort::control_type(const rte_mbuf* m) const noexcept {
  constexpr std::size_t need = RTE_ETHER_HDR_LEN + kCtlMagic.size() + 1;
  if (m->data_len < need) return 0;
  const auto* p = rte_pktmbuf_mtod(m, const std::uint8_t*);
  if (p[12] != (kCtlEtherType >> 8) || p[13] != (kCtlEtherType & 0xff)) return 0;
  if (std::memcmp(p + RTE_ETHER_HDR_LEN, kCtlMagic.data(), kCtlMagic.size()) != 0) return 0;
  return p[RTE_ETHER_HDR_LEN + kCtlMagic.size()];
}

bool DpdkPort::send_control(std::uint8_t type, std::chrono::milliseconds budget) noexcept {
  rte_mbuf* m = rte_pktmbuf_alloc(pool_->mp);
  if (m == nullptr) return false;
  mbufs_arrive(&m, 1);
  auto* p = rte_pktmbuf_mtod(m, std::uint8_t*);
  std::memset(p, 0, 60);
  std::memset(p, 0xff, 6);  // broadcast
  std::memcpy(p + 6, info_.mac.data(), 6);
  p[12] = kCtlEtherType >> 8;
  p[13] = kCtlEtherType & 0xff;
  std::memcpy(p + RTE_ETHER_HDR_LEN, kCtlMagic.data(), kCtlMagic.size());
  p[RTE_ETHER_HDR_LEN + kCtlMagic.size()] = type;
  m->data_len = 60;
  m->pkt_len = 60;
  mbufs_leave(&m, 1);
  const auto deadline = Clock::now() + budget;
  while (rte_eth_tx_burst(port_id_, 0, &m, 1) == 0) {
    if (Clock::now() >= deadline) {
      rte_pktmbuf_free(m);
      return false;
    }
    rte_pause();
  }
  ++c_.tx_control;
  return true;
}

void DpdkPort::handle_control(std::uint8_t type) noexcept {
  ++c_.rx_control;
  if (type == kFinAck) {
    got_fin_ack_ = true;
    return;
  }
  if (type != kFin) return;
  (void)send_control(kFinAck, 100ms);
  // We stop polling now, except a closing client whose own FIN is still
  // unanswered: it keeps polling for that FIN-ACK while the server (which
  // yields on simultaneous close) stops and waits for the client to leave.
  if (closing_ && sent_fin_ && !spec_.memif_server) return;
  passive_ = true;
  if (state_ == PortState::kUp) state_ = PortState::kPeerClosed;
  if (!closing_) RMA_LOG_INFO("softroce: %s: peer closed the link (FIN)", info_.name.c_str());
}

std::size_t DpdkPort::poll(FrameSink& sink, std::size_t max) noexcept {
  const GateHold gate(gated_);
  if (!gate.held()) return 0;
  std::size_t delivered = 0;
  while (delivered < max) {
    if (!usable()) return delivered;
    const std::uint16_t want = static_cast<std::uint16_t>(std::min(kBurst, max - delivered));
    const std::uint16_t n = rte_eth_rx_burst(port_id_, 0, mbufs_.data(), want);
    mbufs_arrive(mbufs_.data(), n);
    for (std::uint16_t i = 0; i < n; ++i) {
      rte_mbuf* m = mbufs_[i];
      if (state_ != PortState::kUp) continue;  // a FIN earlier in this burst: the rest is dropped
      if (std::uint8_t t = control_type(m); t != 0) {
        // Only memif has a control channel: it is point-to-point (one peer
        // process on the socket), so a control frame on it comes from that
        // peer. On a shared segment (af_packet, tap, PCI) anybody can send
        // one, and on a ring it is not ours either: one forged broadcast
        // must not stop the port. Dropped, counted, never delivered.
        if (spec_.kind == PortKind::kMemif) {
          handle_control(t);
        } else {
          ++c_.link.rx_control_dropped;
        }
        continue;
      }
      const std::uint8_t* data;
      const std::size_t len = m->pkt_len;
      if (m->nb_segs == 1) {
        data = rte_pktmbuf_mtod(m, const std::uint8_t*);
      } else if (len <= scratch_.size()) {
        data = static_cast<const std::uint8_t*>(rte_pktmbuf_read(m, 0, static_cast<std::uint32_t>(len), scratch_.data()));
      } else {
        ++c_.rx_oversize;
        continue;
      }
      ++c_.link.rx_frames;
      c_.link.rx_bytes += len;
      ++delivered;
      sink.on_frame(std::span<const std::uint8_t>(data, len));
    }
    mbufs_leave(mbufs_.data(), n);
    if (n > 0) rte_pktmbuf_free_bulk(mbufs_.data(), n);
    if (n < want) break;
  }
  return delivered;
}

bool DpdkPort::wait_link_down(std::chrono::milliseconds budget) noexcept {
  const auto deadline = Clock::now() + budget;
  while (link_up()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

void DpdkPort::shutdown() noexcept {
  if (closing_ || closed_) return;
  closing_ = true;
  if (!started_ || spec_.kind != PortKind::kMemif || state_ != PortState::kUp) return;
  // Active close: FIN, then poll (discarding data) until FIN-ACK, or until
  // the peer's own FIN makes us the passive side.
  if (MemifGate::instance().enter_wait(kFinAckWait)) {
    sent_fin_ = send_control(kFin, 100ms);
    MemifGate::instance().leave();
  }
  const auto deadline = Clock::now() + kFinAckWait;
  while (sent_fin_ && !got_fin_ack_ && !passive_ && Clock::now() < deadline) {
    rte_eth_link l{};
    if (rte_eth_link_get_nowait(port_id_, &l) == 0 && l.link_status == RTE_ETH_LINK_DOWN) break;
    const GateHold gate(gated_);
    if (!gate.held()) {
      std::this_thread::sleep_for(50us);
      continue;
    }
    const std::uint16_t n = rte_eth_rx_burst(port_id_, 0, mbufs_.data(), kBurst);
    mbufs_arrive(mbufs_.data(), n);
    for (std::uint16_t i = 0; i < n; ++i) {
      if (std::uint8_t t = control_type(mbufs_[i]); t != 0) handle_control(t);
      else ++c_.rx_discarded;
    }
    mbufs_leave(mbufs_.data(), n);
    if (n > 0) rte_pktmbuf_free_bulk(mbufs_.data(), n);
    if (n == 0) rte_pause();
  }
  if (!passive_ && !got_fin_ack_ && link_up()) {
    shutdown_status_ = timeout_error(info_.name + ": no FIN-ACK from the peer within " +
                                     std::to_string(kFinAckWait.count()) + " ms; closed anyway");
  }
}

Status DpdkPort::close() {
  if (closed_) return Status();
  shutdown();
  closed_ = true;
  Status st = shutdown_status_;
  // The passive side (it answered the peer's FIN) waits for the peer, which
  // disconnects once it has our FIN-ACK.
  if (started_ && spec_.kind == PortKind::kMemif && passive_ && !wait_link_down(kLinkDownWait)) {
    st = timeout_error(info_.name + (sent_fin_ ? ": peer did not disconnect after the FIN exchange"
                                               : ": peer did not disconnect after its FIN"));
  }
  if (!st.ok()) RMA_LOG_WARN("softroce: %s", st.message().c_str());
  if (ring_) ring_->closed[ring_end_].store(true);
  teardown();
  state_ = PortState::kClosed;
  return st;
}

void DpdkPort::teardown() noexcept {
  std::lock_guard lock(g_ctl_mutex);
  // memif: stop and close with the interrupt thread parked, so its handlers
  // cannot disconnect (unmap) concurrently with ours (see MemifGate).
  const bool held = gated_ && MemifGate::instance().enter_wait(2000ms);
  if (gated_ && !held) RMA_LOG_WARN("softroce: %s: memif gate not acquired for teardown", info_.name.c_str());
  if (have_port_) {
    if (started_) {
      int rc = rte_eth_dev_stop(port_id_);
      if (rc != 0) RMA_LOG_WARN("softroce: %s: rte_eth_dev_stop: %s", info_.name.c_str(), rte_err(rc).c_str());
      started_ = false;
    }
    int rc = rte_eth_dev_close(port_id_);
    if (rc != 0) RMA_LOG_WARN("softroce: %s: rte_eth_dev_close: %s", info_.name.c_str(), rte_err(rc).c_str());
    have_port_ = false;
  }
  if (!vdev_name_.empty()) {
    int rc = rte_vdev_uninit(vdev_name_.c_str());
    if (rc != 0 && rc != -ENOENT) RMA_LOG_DEBUG("softroce: rte_vdev_uninit(%s): %d", vdev_name_.c_str(), rc);
    vdev_name_.clear();
  }
  if (probed_dev_ != nullptr) {
    (void)rte_dev_remove(probed_dev_);
    probed_dev_ = nullptr;
  }
  if (held) MemifGate::instance().leave();
  if (gated_) {
    MemifGate::instance().remove_user();
    gated_ = false;
  }
  if (ring_) {
    std::lock_guard rl(g_ring_mutex);
    ring_.reset();
  }
  pool_.reset();
}

}  // namespace

const char* port_state_name(PortState s) noexcept {
  switch (s) {
    case PortState::kWaiting: return "waiting";
    case PortState::kUp: return "up";
    case PortState::kPeerClosed: return "peer-closed";
    case PortState::kDown: return "down";
    case PortState::kClosed: return "closed";
  }
  return "?";
}

DpdkObjectCounts dpdk_object_counts() noexcept {
  DpdkObjectCounts c;
  c.open_links = g_open_links.load();
  if (!eal_ready()) return c;
  c.ports = rte_eth_dev_count_avail();
  rte_mempool_walk([](rte_mempool*, void* arg) { ++*static_cast<unsigned*>(arg); }, &c.mempools);
  return c;
}

}  // namespace port

Result<std::unique_ptr<Link>> open_port(std::string_view spec) {
  RMA_ASSIGN_OR_RETURN(port::PortSpec ps, port::parse_port_spec(spec));
  RMA_RETURN_IF_ERROR(ensure_eal().with_context("open_port(" + std::string(spec) + ")"));
  if (ps.kind == port::PortKind::kMemifMesh) return port::open_memif_mesh(ps);
  auto p = std::make_unique<port::DpdkPort>(std::move(ps));
  Status st = p->open();
  if (!st.ok()) return st;  // ~DpdkPort releases what open() created
  return std::unique_ptr<Link>(std::move(p));
}

}  // namespace rma::roce
