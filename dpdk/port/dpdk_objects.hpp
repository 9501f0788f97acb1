// The DPDK objects a port owns, as RAII pieces, and the process-wide state
// the ports share (object names, the control-call lock, the ring registry).
// Private to dpdk/port.
#pragma once

#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "rma/sdk/status.hpp"

namespace rma::roce::port {

constexpr std::uint32_t kDataRoom = 9216;  // bytes of frame per mbuf (jumbo)
constexpr std::uint32_t kAfXdpDataRoom = 3072;  // af_xdp: mbuf + headroom + this fit a 4 KiB umem chunk
constexpr unsigned kPoolSize = 2047;       // mbufs per port (2^n - 1)
constexpr unsigned kPoolSizePci = 4095;
// af_xdp: the driver's fill queue (up to 4096), rx and tx rings (kDesc each)
// and its completion queue (2048) all hold mbufs of this pool; with too few,
// a receive can find the pool empty while the mbufs it needs wait in a
// completion queue that only a transmit reaps.
constexpr unsigned kPoolSizeAfXdp = 16383;
constexpr unsigned kPoolCache = 128;
constexpr unsigned kRingSize = 1024;       // ring: slots per direction

// "Operation not permitted (1)" for an rte_* error number (either sign).
std::string rte_err(int err);
// A fresh number for the names of DPDK objects (they are process-global).
unsigned next_object_seq() noexcept;
// Serialises DPDK control calls (vdev create/remove, port setup).
std::mutex& control_mutex() noexcept;
// DpdkPorts alive (dpdk_object_counts).
std::atomic<unsigned>& open_link_count() noexcept;

struct Mempool {
  rte_mempool* mp = nullptr;
  explicit Mempool(rte_mempool* p) : mp(p) {}
  Mempool(const Mempool&) = delete;
  Mempool& operator=(const Mempool&) = delete;
  ~Mempool() {
    if (mp != nullptr) rte_mempool_free(mp);
  }
};

// A pool of n mbufs of kDataRoom bytes.
Result<std::shared_ptr<Mempool>> make_pool(unsigned n, std::uint32_t data_room = kDataRoom);

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

// The ring pairs by name, under ring_mutex(): the second end of ring:<name>
// finds what the first created.
std::mutex& ring_mutex() noexcept;
std::map<std::string, std::weak_ptr<RingPair>>& ring_registry();

// The MTU of a network interface of this namespace; -1 when unknown.
int iface_mtu(const std::string& ifname);
// The interface's IFF_* flags (SIOCGIFFLAGS), or -1 when they cannot be read.
int iface_flags(const std::string& ifname);

}  // namespace rma::roce::port
