// DpdkPort: port control frames (EtherType 0x88B5, our magic) and the memif
// close handshake: the closing side sends FIN and waits for FIN-ACK; the
// other side answers, stops, and waits for the peer to disconnect. Only
// memif has this control channel (point to point); on other kinds a control
// frame is dropped and counted (poll, dpdk_port.cpp).
#include <rte_ether.h>
#include <rte_pause.h>

#include <cstring>
#include <thread>

#include "port/dpdk_port.hpp"
#include "port/mbuf_handoff.hpp"
#include "port/memif_gate.hpp"
#include "rma/sdk/log.hpp"

namespace rma::roce::port {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {
constexpr std::uint16_t kCtlEtherType = 0x88B5;  // IEEE local experimental
constexpr std::array<std::uint8_t, 8> kCtlMagic = {'R', 'M', 'A', 'P', 'O', 'R', 'T', 1};
constexpr std::uint8_t kFin = 1, kFinAck = 2;
constexpr auto kFinAckWait = 1000ms;             // active close: wait for FIN-ACK
constexpr auto kLinkDownWait = 5000ms;           // passive close: wait for the peer to disconnect (a mesh peer tears its links down one at a time)
}  // namespace

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

bool DpdkPort::wait_link_down(std::chrono::milliseconds budget) noexcept {
  const auto deadline = Clock::now() + budget;
  const MemifGate::Hurry hurry;  // memif's handler for the disconnect, without the settled delay
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

}  // namespace rma::roce::port
