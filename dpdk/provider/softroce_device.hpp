// The softroce device: the provider contract (rma/provider.hpp) implemented
// by the RC protocol engine (dpdk/rc) over one Link. Opened by the softroce
// provider on a DPDK port, or directly on any Link (tests run the whole
// provider over the fault-injecting in-memory link).
//
// Threading: one mutex per device serialises everything (post, post_recv,
// poll, progress, registration, QP and CQ life cycle). post() hands its
// requests to the link before it returns (the doorbell, once per post
// list); post_recv() and CompletionQueue::poll() drive progress (receive,
// timers, transmit). The ACK of what a call received leaves in that call,
// before the program can see the data (it may exit at once, and this NIC
// with it). Any thread may call any object.
//
// A NIC answers RDMA READs, WRITEs and atomics while its host computes or
// sleeps; a software NIC only when someone progresses it. With
// progress_interval_us set, a background thread runs progress() whenever
// that long passed without any (it takes the lock only if it is free, so a
// busy-polling program never waits for it): a target inside a barrier, a
// bootstrap exchange or its own computation still acknowledges, and its
// peers do not exhaust their retries on it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "link/link.hpp"
#include "rc/types.hpp"
#include "rma/sdk/provider.hpp"
#include "rma/sdk/status.hpp"

namespace rma::softroce {

struct DeviceOptions {
  std::string name = "softroce0";
  std::uint32_t path_mtu = 0;            // 0: the largest IB MTU (<= 4096) the link carries
  std::uint32_t max_unacked_psns = 512;  // requester window (EngineOptions says why)
  std::uint32_t max_read_request_packets = 1u << 20;  // longer READs are split (EngineOptions)
  std::uint32_t ack_req_every = 64;      // AckReq at least every this many packets
  std::uint32_t tx_ring = 256;           // transmit slots, a power of two
  std::optional<std::uint32_t> initial_psn;  // tests: every QP sends (and so expects) this first PSN
  std::string pcap_path;                 // capture file (RMA_SOFTROCE_PCAP); empty = none
  // Transport timer codes for QPs whose QpConfig leaves the field at the
  // contract's default (RMA_SOFTROCE_TIMEOUT, _RETRY_CNT, _RNR_RETRY).
  std::optional<std::uint8_t> timeout, retry_cnt, rnr_retry;
  // Background progress when idle this long (RMA_SOFTROCE_PROGRESS_US for
  // the provider's devices); 0 = no thread, progress only from calls.
  std::uint32_t progress_interval_us = 0;
  // Peers on a link that finds them by ARP (LinkInfo::neighbours_by_arp:
  // a kernel interface): connect() resolves the peer's IPv4 to the MAC of
  // the station that answers, waiting at most this long, and fails naming
  // the port, the peer and this timeout when nobody does. 0: no ARP, the
  // MAC in the peer's endpoint address is used (how devices opened
  // directly on a link behave unless told; the provider's devices take
  // RMA_SOFTROCE_ARP_TIMEOUT_MS). Links that find no peer by ARP (memif,
  // ring, a memif mesh) always use the endpoint address, and a QP
  // connected to its own device's address uses the device's own MAC.
  std::uint32_t arp_timeout_ms = 0;
};

// Extra surface of a softroce device beyond rma::Device.
class SoftRoceDevice : public Device {
 public:
  // Device-wide protocol counters (every QP, live and destroyed, plus
  // receive-path drops: parse errors by kind, ICRC, unknown QPN...).
  virtual roce::rc::DeviceCounters counters() const = 0;
  // One live QP's counters; kNotFound when there is no such QP.
  virtual Result<roce::rc::RcCounters> qp_counters(std::uint32_t qpn) const = 0;
  virtual roce::LinkCounters link_counters() const = 0;
  // Runs receive, timers and transmit once (poll() and post() do too).
  virtual void progress() = 0;
};

// Opens a device on `link`. The link's max_frame bounds the path MTU.
Result<std::shared_ptr<Device>> open_softroce_device(std::unique_ptr<roce::Link> link,
                                                     DeviceOptions options = {});

// The largest IB path MTU (256..4096) whose packets fit frames of `max_frame`
// bytes (Ethernet header included); 0 when not even 256 fits.
std::uint32_t largest_path_mtu(std::uint32_t max_frame) noexcept;

// The device's capabilities at path MTU `mtu` with a QP table of `max_qp`
// (the RC engine's, EngineOptions::max_qp): what query_devices describes
// and what an opened device reports are the same numbers.
DeviceCaps softroce_caps(std::uint32_t mtu, std::uint32_t max_qp) noexcept;

// The softroce endpoint address: "softroce" | version | MAC | IPv4 | QPN |
// PSN (the first PSN this QP sends; the peer expects it) | MTU.
struct EndpointFields {
  roce::MacAddress mac{};
  std::uint32_t ipv4 = 0;
  std::uint32_t qpn = 0;
  std::uint32_t psn = 0;
  std::uint32_t mtu = 0;
};
EndpointAddress encode_endpoint(const EndpointFields& f);
Result<EndpointFields> decode_endpoint(const EndpointAddress& a);

}  // namespace rma::softroce

namespace rma {
class ProviderRegistry;
namespace providers {
Status register_softroce(ProviderRegistry& registry);
}  // namespace providers
}  // namespace rma
