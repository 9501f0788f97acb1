// The Link: how the RoCE v2 protocol engine moves Ethernet frames. The wire
// format and the RC protocol never see DPDK; DPDK ports (dpdk/port), the
// fault-injecting in-memory link (dpdk/link/fault_link.hpp) and test links
// all implement this.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "wire/frame.hpp"  // MacAddress, TxFrame

namespace rma::roce {

// Receives frames during Link::poll. The bytes are valid only during the
// call; the receiver copies what it keeps.
class FrameSink {
 public:
  virtual ~FrameSink() = default;
  virtual void on_frame(std::span<const std::uint8_t> frame) noexcept = 0;
};

struct LinkInfo {
  std::string name;            // "memif:rma-test", "ring0", "fault:A"
  MacAddress mac{};
  std::uint32_t ipv4 = 0;      // host byte order; 0 = none configured
  std::uint32_t max_frame = 0; // largest frame it carries, Ethernet header included
  // How a device finds a peer's MAC. False: the link leads to exactly the
  // peers it was built for (memif, ring, a memif mesh, test links), and the
  // MAC in the peer's endpoint address is the one to use. True: a shared
  // Ethernet segment (a kernel interface: af_packet, af_xdp, tap, pci),
  // where the next hop to a peer's IPv4 is found by ARP (NeighbourTable),
  // as a kernel's IP stack finds it.
  bool neighbours_by_arp = false;
  // True: the link writes every frame out with write_tx_frame, so a sender
  // may leave a frame's ICRC open (TxFrame::icrc_open) for that copy to
  // complete. A link that hands frames on by their pieces says false.
  bool completes_icrc = false;
  // True: handing frames to the link enters the kernel (af_packet's sendto,
  // af_xdp's wakeup, tap's write), so it pays to hand over many at once: a
  // post's requests then wait for the device's next progress() (a CQ poll,
  // a post_recv or the progress thread), or until the posts fill a burst,
  // and every QP's frames leave in shared bursts, instead of one system
  // call per post. False (memif, ring,
  // PCI, a memif mesh without such an uplink, test links): a post's
  // requests leave before post() returns.
  bool transmit_enters_kernel = false;
};

struct LinkCounters {
  std::uint64_t tx_frames = 0, tx_bytes = 0, tx_dropped = 0;  // dropped: no room on the link
  std::uint64_t rx_frames = 0, rx_bytes = 0;
  std::uint64_t tx_loss_injected = 0;  // frames a LossyLink dropped on purpose (RMA_SOFTROCE_LOSS)
  // Port control frames (EtherType 0x88B5, the memif FIN) received on a port
  // kind without a control channel (af_packet, tap, PCI, ring): dropped.
  std::uint64_t rx_control_dropped = 0;
};

class Link {
 public:
  virtual ~Link() = default;
  // Sends frames in order; returns how many were taken (the rest found no
  // room and should be offered again later). Data path: noexcept, no
  // allocation; copies the frames or keeps them alive until sent.
  virtual std::size_t transmit(std::span<const TxFrame> frames) noexcept = 0;
  // Delivers up to `max` received frames to `sink`; returns how many.
  virtual std::size_t poll(FrameSink& sink, std::size_t max) noexcept = 0;
  virtual const LinkInfo& info() const noexcept = 0;
  virtual LinkCounters counters() const noexcept = 0;
  // Ends the conversation with the peer before the link is destroyed
  // (memif: the FIN / FIN-ACK handshake), so that an owner of several links
  // can finish every handshake before any link releases its resources; after
  // it the owner only destroys the link. Bounded, idempotent; the destructor
  // runs it when nobody did. Default: nothing to tell the peer.
  virtual void shutdown() noexcept {}
};

}  // namespace rma::roce
