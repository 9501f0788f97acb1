// DpdkPort: a DPDK ethdev (ring, memif, af_packet, tap, PCI) as a
// PortLink. Private to dpdk/port; open_port() (port.hpp) makes one.
//   dpdk_port.cpp      the data path (transmit, poll) and teardown
//   device_setup.cpp   creating and configuring the device of each kind
//   port_control.cpp   control frames and the memif FIN/FIN-ACK close
// Every rte_* object is owned by the DpdkPort (or, for ring pairs, by the
// RingPair both ends share) and released in reverse order of creation by
// close(), which the destructor calls; open_port builds the DpdkPort first
// and fills it step by step, so an error half-way releases what exists.
#pragma once

#include <sys/types.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "port/dpdk_objects.hpp"
#include "port/port_link.hpp"
#include "port/spec.hpp"
#include "port/unicast_filter.hpp"
#include "wire/wire.hpp"  // kIcrcLen

namespace rma::roce::port {

constexpr std::uint16_t kDesc = 1024;  // rx/tx descriptors asked for
constexpr std::size_t kBurst = 32;

// From how many payload bytes a frame goes to a driver that copies it
// (attaches_payload) as three chained mbufs, its payload attached where it
// lies in registered memory: the driver's copy is then the only one, where
// a frame written into one mbuf is copied twice. Below it the copy saved
// shrinks while the two extra mbufs and the driver's per-segment copies
// cost the same (measured at 512 B - 4 KiB: bench/README.md, "Issue 15").
constexpr std::size_t kAttachPayloadFrom = 1024;

class DpdkPort final : public PortLink {
 public:
  explicit DpdkPort(PortSpec spec) : spec_(std::move(spec)) {
    info_.name = spec_.canonical();
    // transmit writes every frame into its mbuf with write_tx_frame, or its
    // tail with write_tx_tail when the payload goes attached
    info_.completes_icrc = true;
    info_.ipv4 = spec_.ipv4;
    // A kernel interface is a segment shared with others: peers by ARP.
    info_.neighbours_by_arp = spec_.kind == PortKind::kAfPacket || spec_.kind == PortKind::kAfXdp ||
                              spec_.kind == PortKind::kTap || spec_.kind == PortKind::kPci;
    // Every transmit burst is a system call there (a PCI NIC's doorbell is a
    // store, memif's a ring update).
    info_.transmit_enters_kernel = spec_.kind == PortKind::kAfPacket || spec_.kind == PortKind::kAfXdp ||
                                   spec_.kind == PortKind::kTap;
    // Drivers whose tx_burst copies every mbuf it takes and frees it before
    // returning (memif without zero-copy, which we never ask for; af_packet
    // into its TPACKET ring; ../shared/reference/dpdk.md section 4): an
    // attached payload is read only inside transmit(). Not ring (the peer
    // gets the mbuf itself, so the payload would be read after the sender's
    // memory may be gone), nor af_xdp (its zero-copy transmit ignores an
    // attached buffer), nor tap (not measured), nor a PCI NIC (DMA later).
    attaches_payload_ = spec_.kind == PortKind::kMemif || spec_.kind == PortKind::kAfPacket;
    open_link_count().fetch_add(1);
  }
  ~DpdkPort() override {
    (void)close();
    open_link_count().fetch_sub(1);
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
  // Whether frame `f` goes as head, attached payload and tail mbufs.
  bool sends_attached(const TxFrame& f) const noexcept {
    return attaches_payload_ && f.payload.size() >= kAttachPayloadFrom && f.tail.size() >= kIcrcLen &&
           f.size() <= info_.max_frame;
  }
  // The link is up: kUp, and memif's regions prefaulted (memif_prefault.hpp).
  void mark_up() noexcept;
  bool send_control(std::uint8_t type, std::chrono::milliseconds budget) noexcept;
  // Returns the control type if `m` is one of our control frames, else 0.
  std::uint8_t control_type(const rte_mbuf* m) const noexcept;
  void handle_control(std::uint8_t type) noexcept;
  bool wait_link_down(std::chrono::milliseconds budget) noexcept;
  // A memif client: connects (again, when the server closed the connection
  // before the link came up; see device_setup.cpp), at most once per retry
  // wait while it fails. Call with the memif gate and the control mutex held.
  void connect_memif_client() noexcept;
  std::vector<ino_t> sockets_to_server(std::vector<int>* fd_of = nullptr) const noexcept;
  void find_control_socket(const std::vector<ino_t>& before) noexcept;
  bool control_socket_closed() const noexcept;
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
  // memif client: its control socket (find_control_socket), and when it may
  // try to connect next.
  std::string memif_socket_;  // memif: the socket= given to DPDK (abstract)
  int control_fd_ = -1;
  ino_t control_ino_ = 0;
  std::uint32_t refusals_ = 0;
  std::chrono::steady_clock::time_point next_start_{};
  std::chrono::milliseconds retry_wait_{10};

  // memif shutdown handshake
  bool closing_ = false;  // shutdown() ran: the port no longer polls nor transmits
  Status shutdown_status_;  // what the handshake ended with (close() reports it)
  bool sent_fin_ = false;
  bool got_fin_ack_ = false;
  bool passive_ = false;  // answered the peer's FIN: wait for its disconnect

  UnicastFilter unicast_;  // af_packet/af_xdp with mac=: the interface accepts our MAC

  std::vector<std::uint8_t> scratch_;
  bool attaches_payload_ = false;
  std::array<rte_mbuf*, kBurst> mbufs_{};
  std::array<rte_mbuf*, 2 * kBurst> segs_{};  // payload and tail mbufs of attached frames
  std::array<std::uint16_t, kBurst> index_{};
};

// Opens one DPDK port (every kind but the composed ones, memif-mesh and
// bridged, which mesh_port.cpp builds from these).
Result<std::unique_ptr<Link>> open_dpdk_port(PortSpec spec);

}  // namespace rma::roce::port
