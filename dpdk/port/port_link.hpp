// What a DPDK port offers beyond the Link interface: its state, detailed
// counters and an explicit orderly close. DPDK-free; private to dpdk/port,
// its tests and tools (dynamic_cast a Link from open_port to PortLink).
#pragma once

#include <cstdint>
#include <string>

#include "link/link.hpp"
#include "rma/sdk/status.hpp"

namespace rma::roce::port {

enum class PortState {
  kWaiting,     // started, link not up yet (memif peer not connected)
  kUp,          // link up, polling
  kPeerClosed,  // the peer sent FIN (memif): we answered FIN-ACK and stopped polling
  kDown,        // the link went down without FIN (peer died): stopped polling
  kClosed,      // close() ran
};
const char* port_state_name(PortState s) noexcept;

struct PortCounters {
  LinkCounters link;
  std::uint64_t tx_oversize = 0;     // frames larger than max_frame: taken and dropped
  std::uint64_t tx_no_mbuf = 0;      // transmit calls that stopped because the pool was empty
  std::uint64_t tx_link_down = 0;    // frames taken and dropped because the link is gone
  std::uint64_t rx_oversize = 0;     // received frames larger than the scratch buffer: dropped
  std::uint64_t rx_discarded = 0;    // data frames that arrived while closing: dropped
  std::uint64_t tx_control = 0, rx_control = 0;  // FIN / FIN-ACK frames
  std::uint64_t tx_payload_attached = 0;  // frames whose payload the driver copied from where it lay
};

class PortLink : public Link {
 public:
  virtual PortState state() const noexcept = 0;
  // Asks the PMD now (rte_eth_link_get_nowait) whether the link is up.
  virtual bool link_up() const noexcept = 0;
  virtual PortCounters port_counters() const noexcept = 0;
  // Orderly shutdown (memif: FIN / FIN-ACK handshake, bounded), then stop,
  // close and release every DPDK object. Idempotent; the destructor calls it.
  // Returns a non-OK status when the handshake timed out (the port is closed
  // anyway).
  virtual Status close() = 0;
};

// Debug view of the DPDK objects this layer holds, for leak checks in tests.
struct DpdkObjectCounts {
  unsigned ports = 0;       // ethdev ports available
  unsigned mempools = 0;    // rte_mempools alive
  unsigned open_links = 0;  // PortLinks alive
};
// Initialises nothing: all zero if the EAL is not up.
DpdkObjectCounts dpdk_object_counts() noexcept;

// The EAL arguments ensure_eal used (or would use), for logs and tools.
std::string eal_arguments();

}  // namespace rma::roce::port
