// DpdkPort's data path — transmit and poll, with the memif gate held and
// the link state watched — its teardown, and open_port().
#include "port/dpdk_port.hpp"

#include <rte_bus_vdev.h>
#include <rte_dev.h>
#include <rte_pause.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "port/eal.hpp"
#include "port/mbuf_handoff.hpp"
#include "port/memif_gate.hpp"
#include "port/memif_prefault.hpp"
#include "port/mesh_port.hpp"
#include "port/port.hpp"
#include "rma/sdk/copy_bytes.hpp"
#include "rma/sdk/log.hpp"

namespace rma::roce {
namespace port {

using namespace std::chrono_literals;

// True when the PMD may be polled / transmitted on. Detects link up (memif
// peer arrived), link down without FIN (memif peer died) and a closed ring end.
bool DpdkPort::usable() noexcept {
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
    mark_up();
    return true;
  }
  if (state_ == PortState::kWaiting) {
    // A memif client opened with wait=0. DPDK's control calls are serialised
    // by the control mutex; never waited for here, where the gate is held
    // (teardown takes the mutex, then the gate).
    std::unique_lock lock(control_mutex(), std::try_to_lock);
    if (lock.owns_lock()) connect_memif_client();
  }
  return false;
}

void DpdkPort::mark_up() noexcept {
  state_ = PortState::kUp;
  if (spec_.kind != PortKind::kMemif) return;
  // Inside the gate, so that memif's handlers cannot unmap a region under
  // the prefault (re-entrant: usable() runs inside it already).
  if (!MemifGate::instance().enter_wait(100ms)) return;
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t bytes = prefault_memif_regions();
  MemifGate::instance().leave();
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
  RMA_LOG_DEBUG("softroce: %s: prefaulted %zu bytes of memif regions in %lld us", info_.name.c_str(), bytes,
                static_cast<long long>(us.count()));
}

namespace {

// The attached payload is the program's registered memory: nothing to free.
void keep_payload(void*, void*) {}

// Chains head -> payload -> tail for a frame whose payload the driver
// copies from where it lies (sends_attached). The payload mbuf's own data
// room, unused while it carries the payload, holds the shared info DPDK
// wants with an external buffer; freeing the mbuf detaches it (keep_payload)
// and gives the room back.
void chain_attached(const TxFrame& f, rte_mbuf* head, rte_mbuf* body, rte_mbuf* tail) noexcept {
  if (!f.head.empty()) copy_bytes(rte_pktmbuf_mtod(head, std::uint8_t*), f.head.data(), f.head.size());
  head->data_len = static_cast<std::uint16_t>(f.head.size());

  auto* shinfo = rte_pktmbuf_mtod(body, rte_mbuf_ext_shared_info*);
  shinfo->free_cb = keep_payload;
  shinfo->fcb_opaque = nullptr;
  rte_mbuf_ext_refcnt_set(shinfo, 1);
  // The drivers that take attached payloads only read it (dpdk_port.hpp).
  void* payload = const_cast<std::uint8_t*>(f.payload.data());
  rte_pktmbuf_attach_extbuf(body, payload, static_cast<rte_iova_t>(reinterpret_cast<std::uintptr_t>(payload)),
                            static_cast<std::uint16_t>(f.payload.size()), shinfo);
  body->data_len = static_cast<std::uint16_t>(f.payload.size());

  write_tx_tail(f, rte_pktmbuf_mtod(tail, std::uint8_t*));
  tail->data_len = static_cast<std::uint16_t>(f.tail.size());

  head->next = body;
  body->next = tail;
  tail->next = nullptr;
  head->nb_segs = 3;
  head->pkt_len = static_cast<std::uint32_t>(f.size());
}

}  // namespace

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
    std::size_t attached = 0;
    if (attaches_payload_) {
      for (std::size_t i = 0; i < chunk; ++i) attached += sends_attached(frames[done + i]) ? 1 : 0;
    }
    if (rte_pktmbuf_alloc_bulk(pool_->mp, mbufs_.data(), static_cast<unsigned>(chunk)) != 0) {
      ++c_.tx_no_mbuf;
      c_.link.tx_dropped += frames.size() - done;
      return done;
    }
    // Without mbufs for the chains the frames still go, copied whole.
    if (attached != 0 && rte_pktmbuf_alloc_bulk(pool_->mp, segs_.data(), static_cast<unsigned>(2 * attached)) != 0) {
      attached = 0;
    }
    mbufs_arrive(mbufs_.data(), static_cast<std::uint16_t>(chunk));
    mbufs_arrive(segs_.data(), static_cast<std::uint16_t>(2 * attached));
    std::size_t built = 0;
    std::size_t seg = 0;
    std::uint64_t bytes[kBurst];
    static_assert(kBurst <= 32);
    std::uint32_t attached_at = 0;  // bit b: built frame b is a chain
    for (std::size_t i = 0; i < chunk; ++i) {
      const TxFrame& f = frames[done + i];
      const std::size_t len = f.size();
      if (len > info_.max_frame) {
        ++c_.tx_oversize;
        ++c_.link.tx_dropped;
        continue;
      }
      rte_mbuf* m = mbufs_[built];
      if (attached != 0 && sends_attached(f)) {
        chain_attached(f, m, segs_[seg], segs_[seg + 1]);
        seg += 2;
        attached_at |= 1u << built;
      } else {
        auto* p = rte_pktmbuf_mtod(m, std::uint8_t*);
        (void)write_tx_frame(f, p);
        m->data_len = static_cast<std::uint16_t>(len);
        m->pkt_len = static_cast<std::uint32_t>(len);
      }
      index_[built] = static_cast<std::uint16_t>(i);
      bytes[built] = len;
      ++built;
    }
    if (built < chunk) rte_pktmbuf_free_bulk(mbufs_.data() + built, static_cast<unsigned>(chunk - built));
    mbufs_leave(mbufs_.data(), static_cast<std::uint16_t>(built));
    mbufs_leave(segs_.data(), static_cast<std::uint16_t>(seg));
    const std::uint16_t sent = built == 0 ? 0 : rte_eth_tx_burst(port_id_, 0, mbufs_.data(), static_cast<std::uint16_t>(built));
    for (std::uint16_t i = 0; i < sent; ++i) c_.link.tx_bytes += bytes[i];
    c_.link.tx_frames += sent;
    if (attached_at != 0) {
      const std::uint32_t sent_mask = sent >= 32 ? ~0u : (1u << sent) - 1;
      c_.tx_payload_attached += static_cast<std::uint64_t>(std::popcount(attached_at & sent_mask));
    }
    if (sent < built) {
      // Frees each unsent frame's whole chain (and detaches its payload).
      rte_pktmbuf_free_bulk(mbufs_.data() + sent, static_cast<unsigned>(built - sent));
      const std::size_t taken = done + index_[sent];  // frames before the first unsent one
      c_.link.tx_dropped += frames.size() - taken;
      return taken;
    }
    done += chunk;
  }
  return done;
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

void DpdkPort::teardown() noexcept {
  std::lock_guard lock(control_mutex());
  // memif: stop and close with the interrupt thread parked, so its handlers
  // cannot disconnect (unmap) concurrently with ours (see MemifGate).
  const bool held = gated_ && MemifGate::instance().enter_wait(2000ms);
  if (gated_ && !held) RMA_LOG_WARN("softroce: %s: memif gate not acquired for teardown", info_.name.c_str());
  // Before the close frees the port id: the interrupt thread asks the gate's
  // ports for their links, and DPDK logs "Invalid port_id" for a closed one.
  if (gated_) {
    MemifGate::instance().remove_user(port_id_);
    gated_ = false;
  }
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
  if (ring_) {
    std::lock_guard rl(ring_mutex());
    ring_.reset();
  }
  pool_.reset();
}

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
  c.open_links = open_link_count().load();
  if (!eal_ready()) return c;
  c.ports = rte_eth_dev_count_avail();
  rte_mempool_walk([](rte_mempool*, void* arg) { ++*static_cast<unsigned*>(arg); }, &c.mempools);
  return c;
}

Result<std::unique_ptr<Link>> open_dpdk_port(PortSpec spec) {
  auto p = std::make_unique<DpdkPort>(std::move(spec));
  Status st = p->open();
  if (!st.ok()) return st;  // ~DpdkPort releases what open() created
  return std::unique_ptr<Link>(std::move(p));
}

}  // namespace port

Result<std::unique_ptr<Link>> open_port(std::string_view spec) {
  RMA_ASSIGN_OR_RETURN(port::PortSpec ps, port::parse_port_spec(spec));
  RMA_RETURN_IF_ERROR(ensure_eal().with_context("open_port(" + std::string(spec) + ")"));
  if (ps.kind == port::PortKind::kMemifMesh) return port::open_memif_mesh(ps);
  if (port::is_bridged(ps)) return port::open_bridged_port(ps);
  return port::open_dpdk_port(std::move(ps));
}

}  // namespace rma::roce
