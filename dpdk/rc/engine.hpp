// The device-level half of the RC protocol engine: one Link, the transmit
// ring, the QP table, receive dispatch by destination QPN, timers and the
// device counters.
//
// Threading: every call below except create() requires mutex() held. The
// provider takes it in post(), post_recv(), poll() and the control path; that
// one lock serialises the whole device (rx, timers, tx). No threads here.
//
// Buffers: the transmit ring (options.tx_ring slots, each with room for the
// largest header, one path-MTU payload and pad+ICRC) is allocated at
// creation; QPs build packets straight into it, progress() (and a post's
// kick()) hands the built frames to the link in bursts, and keeps the ones
// the link refused for the next call. Nothing on the data path allocates.
//
// Payload by reference: a QP whose payload already lies contiguous in
// registered memory (a WRITE/SEND from one SGE, a READ response) commits the
// frame with tx_commit() and a pointer to it instead of copying it into the
// slot; the link then copies straight from that memory (one copy fewer per
// frame). Such a reference is valid only while the device lock is held (a
// region cannot be deregistered and a work request cannot complete to the
// user meanwhile), so progress() and kick() copy the payload of every frame
// still in the ring into its slot before they return.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "link/link.hpp"
#include "rc/neighbour_table.hpp"
#include "rc/types.hpp"
#include "swkit/id_index.hpp"
#include "wire/packet_template.hpp"
#include "wire/pcap_writer.hpp"
#include "wire/wire.hpp"

namespace rma::roce::rc {

class RcQp;

struct EngineOptions {
  std::uint32_t path_mtu = 4096;         // device path MTU (already resolved against the link)
  // The requester stalls with this many PSNs unacknowledged. 512 (2 MiB
  // of 4 KiB packets): with 128, a 64 KiB WRITE stream over memif waited
  // for ACKs (2.3 against 3.0 GB/s, pinned pairs).
  std::uint32_t max_unacked_psns = 512;
  // A READ longer than this many packets goes out as several READ requests,
  // one after the other is answered, so no request spans half the 24-bit
  // PSN space (a 2^31-byte READ at MTU 256 is 2^23 packets: it never
  // completed). Below 2^22.
  std::uint32_t max_read_request_packets = 1u << 20;
  std::uint32_t ack_req_every = 64;      // AckReq at least every this many packets
  std::uint32_t tx_ring = 256;           // transmit slots, a power of two
  std::uint32_t max_qp = 4096;
  std::uint32_t max_neighbours = 4096;   // peer IPv4 addresses resolved by ARP (NeighbourTable)
  std::uint32_t rx_burst = 64;           // frames per Link::poll
  std::optional<std::uint32_t> initial_psn;  // tests: every QP sends (and so expects) this first PSN
  std::string pcap_path;                 // capture every frame sent and received (empty: off)
  // Called at the start of every progress(), before any frame is handled:
  // makes every unmap that returned before it visible in the regions'
  // orphaned flags (swkit::OrphanTracker::sync). Null: nothing to sync.
  void (*memory_sync)() = nullptr;
};

class Engine final : private FrameSink {
 public:
  static Result<std::unique_ptr<Engine>> create(std::unique_ptr<Link> link, const EngineOptions& options);
  ~Engine() override;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  std::mutex& mutex() noexcept { return mutex_; }
  KeyTable& keys() noexcept { return keys_; }
  const LinkInfo& link_info() const noexcept { return link_->info(); }
  const EngineOptions& options() const noexcept { return options_; }
  LinkCounters link_counters() const noexcept { return link_->counters(); }

  // Control path.
  Result<std::uint32_t> add_qp(RcQp* qp);
  void remove_qp(std::uint32_t qpn) noexcept;
  RcQp* find_qp(std::uint32_t qpn) const noexcept;
  std::uint32_t initial_psn() noexcept;

  // Neighbour resolution (control path): the MAC of peer `ip` on this
  // device's segment, learned by ARP (rc/neighbour_table.hpp). Queues an ARP
  // request when one is due; the caller then runs progress() (which sends
  // it and receives the reply) and asks again until kResolved or its own
  // deadline. kFull: the table has no room for another address.
  NeighbourTable::Step resolve_neighbour(std::uint32_t ip, MacAddress& mac) noexcept;
  std::uint32_t arp_requests_sent_to(std::uint32_t ip) const noexcept { return neighbours_.requests_sent(ip); }

  // Data path: receive, run timers, transmit.
  void progress() noexcept;
  // A post: begin_post() before RcQp::post(), kick() after it, in one hold
  // of the lock. begin_post() makes the unmaps that returned before it
  // visible (memory_sync) and starts a new check epoch (check_epoch()).
  // kick() is the doorbell: builds what `qp` can send now and hands the
  // transmit ring to the link once, however long the post list was. No
  // receive and no timers: poll() and the progress thread run those. On a
  // link whose transmit enters the kernel (LinkInfo::transmit_enters_kernel)
  // it sends nothing until the posts since the last send make a burst
  // (`frames`: what this post puts on the wire): the next progress() does.
  void begin_post() noexcept;
  void kick(RcQp* qp, std::uint32_t frames = 1) noexcept;
  // Builds what `qp` can send now and hands it to the link, whatever the
  // link (kick() without waiting for a burst): a QP about to be destroyed
  // sends the ACK it holds (RcQp::release_held_ack).
  void send_now(RcQp* qp) noexcept;
  bool posts_wait_for_progress() const noexcept { return posts_wait_for_progress_; }
  // Changes with every progress() and begin_post(), so at least whenever the
  // lock was released in between: a local key check made in the current
  // epoch still holds (no region can be deregistered, and no unmap becomes
  // visible, without a new epoch), and need not be repeated at send time.
  std::uint64_t check_epoch() const noexcept { return check_epoch_; }
  // Free transmit slots.
  std::uint32_t tx_room() const noexcept { return options_.tx_ring - tx_count_; }
  // How many times progress() ran; read without the lock (a background
  // progress thread skips its turn when someone else progressed meanwhile).
  std::uint64_t progress_calls() const noexcept { return progress_calls_.load(std::memory_order_relaxed); }

  // Transmit staging for QPs: a payload buffer of path-MTU bytes in the next
  // free slot (nullptr when the ring is full), then commit the packet built
  // from the QP's template and `f`, its payload the slot's `payload_len`
  // bytes, or `payload_len` bytes read from `payload` when that is set (see
  // "Payload by reference").
  std::uint8_t* tx_payload() noexcept;
  void tx_commit(const PacketTemplate& tmpl, const PacketFields& f, const std::uint8_t* payload,
                 std::size_t payload_len) noexcept;
  std::uint16_t next_ip_id() noexcept {
    ip_id_ = static_cast<std::uint16_t>(ip_id_ + 1);
    if (ip_id_ == 0) ip_id_ = 1;
    return ip_id_;
  }

  // Receive: the ICRC of a packet parsed with its check deferred
  // (IcrcCheck::kDeferReadPayload), checked now (true when it holds, or was
  // checked at parse); a failure is counted as parse counts one.
  bool icrc_holds(const Packet& pkt) noexcept;
  void count_bad_icrc() noexcept;
  // A READ response whose ICRC was checked in the copy that placed it.
  void count_icrc_in_copy() noexcept { ++dev_.rx_icrc_in_copy; }

  DeviceCounters counters() const noexcept;
  // QPs fold their counters in here when they are destroyed.
  void retire_counters(const RcCounters& c) noexcept { retired_.add(c); }
  // The time, read from the clock at most once per progress() or kick() and
  // only when something asks (a QP with a timer running or to arm): a
  // responder that only acknowledges never reads it.
  Clock::time_point now() noexcept {
    if (!now_fresh_) {
      now_ = Clock::now();
      now_fresh_ = true;
    }
    return now_;
  }
  // Timers. The RC timers run for milliseconds (the ACK timeout is 67 ms by
  // default), yet a requester in a stream arms one with every ACK and runs
  // it on every call; reading the precise clock for that cost a tenth of an
  // 8-byte message (70 TSC cycles, against 15 for the coarse clock). So:
  // a deadline more than two ticks of CLOCK_MONOTONIC_COARSE (the same clock
  // as of its last tick) past the coarse time has not passed, and a timer
  // whose duration is long against a tick is armed from the coarse time
  // plus two ticks: never early, at most two ticks late. Short timers (RNR
  // waits, the tests' short ACK timeouts) and anything near its deadline
  // read the precise clock, as before.
  bool passed(Clock::time_point deadline) noexcept {
    if (coarse_slack_ != Clock::duration::zero() && coarse_now() + coarse_slack_ < deadline) return false;
    return now() >= deadline;
  }
  Clock::time_point deadline_after(Clock::duration d) noexcept {
    if (coarse_slack_ != Clock::duration::zero() && d >= 8 * coarse_slack_) return coarse_now() + coarse_slack_ + d;
    return now() + d;
  }

 private:
  struct TxSlot {
    std::uint8_t head[128];
    std::uint8_t tail[8];
    std::uint16_t head_len = 0;
    std::uint8_t tail_len = 0;
    std::uint32_t payload_len = 0;
    std::uint8_t* payload = nullptr;  // path-MTU bytes in payload_store_
    const std::uint8_t* ref = nullptr;  // payload in registered memory instead (this progress() only)
    bool icrc_open = false;             // TxFrame::icrc_open
    std::uint32_t icrc_partial = 0;
  };

  Engine(std::unique_ptr<Link> link, const EngineOptions& options);
  // Slot `i` of the transmit ring, counting from anywhere (a power of two:
  // a mask, where a modulo by a run-time size was a division per frame).
  TxSlot& slot(std::size_t i) const noexcept { return tx_[i & (options_.tx_ring - 1)]; }
  void on_frame(std::span<const std::uint8_t> frame) noexcept override;
  // An ARP frame: answers a request for our IPv4, hands a reply to the
  // neighbour table, counts a station that claims our address; true when
  // `frame` was ARP for IPv4 over Ethernet (parse_arp).
  bool handle_arp(std::span<const std::uint8_t> frame) noexcept;
  // A transmit slot for a frame built here (ARP), or nullptr when the ring
  // is full (counted as tx_ring_full).
  TxSlot* raw_slot() noexcept;
  // Hands built frames to the link; false when it refused some.
  bool flush() noexcept;
  // Every QP's responses and requests that can go now, built and flushed.
  void transmit_all() noexcept;
  // Copies referenced payloads of frames still in the ring into their slots.
  void own_pending_payloads() noexcept;

  std::mutex mutex_;
  std::unique_ptr<Link> link_;
  EngineOptions options_;
  KeyTable keys_;
  NeighbourTable neighbours_;

  std::vector<RcQp*> table_;    // QP slots, max_qp of them
  swkit::IdIndex qpns_;         // QPN (random, 24 bits) -> slot
  std::vector<RcQp*> active_;   // live QPs, for timers and transmit
  std::uint32_t next_slot_ = 0;

  std::unique_ptr<TxSlot[]> tx_;
  std::unique_ptr<std::uint8_t[]> payload_store_;
  std::uint32_t tx_head_ = 0, tx_count_ = 0;  // built, not yet taken by the link
  std::unique_ptr<TxFrame[]> burst_;

  static Clock::time_point coarse_now() noexcept;

  std::uint16_t ip_id_ = 0;
  Clock::time_point now_{};
  Clock::duration coarse_slack_{};  // two ticks of the coarse clock; zero: no coarse clock, always precise
  bool now_fresh_ = false;  // now_ was read in this progress() / kick()
  std::uint64_t check_epoch_ = 1;
  // Written only under mutex_ (a plain load+store, not a locked increment).
  std::atomic<std::uint64_t> progress_calls_{0};

  // The frame on_frame() is decoding: a member, not a local, because a
  // Packet's default initialisation (zeroing ~150 bytes) cost every frame
  // more than parsing most of it; parse_packet writes every field.
  Packet rx_packet_;

  std::unique_ptr<PcapWriter> pcap_;
  // The link completes open ICRCs, it folds the CRC into its copy, and no
  // capture needs whole frames (the capture writes the tail as the engine
  // holds it).
  bool open_icrc_ = false;
  // Parse READ responses with their ICRC left to the copy that places them
  // (IcrcCheck::kDeferReadPayload): where the copy can fold the CRC in.
  IcrcCheck rx_icrc_ = IcrcCheck::kNow;
  // The link's transmit enters the kernel (LinkInfo::transmit_enters_kernel):
  // kick() leaves the requests of a post to progress(), and says so in
  // requests_waiting_.
  bool posts_wait_for_progress_ = false;
  bool requests_waiting_ = false;
  std::uint32_t frames_waiting_ = 0;  // of the posts since the last send
  DeviceCounters dev_;
  RcCounters retired_;
};

}  // namespace rma::roce::rc
