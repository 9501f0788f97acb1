#include "rc/engine.hpp"

#include <time.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <string>

#include "rc/qp.hpp"
#include "swkit/secure_random.hpp"
#include "wire/arp.hpp"

namespace rma::roce::rc {

namespace {
constexpr std::uint32_t kBurst = 32;

// P_Key match (IBA 10.9.3): the same partition (low 15 bits) and at least
// one of the two a full member (bit 15), as rxe checks on every packet.
bool pkey_matches(std::uint16_t a, std::uint16_t b) noexcept {
  return (a & 0x7FFFu) == (b & 0x7FFFu) && ((a | b) & 0x8000u) != 0;
}
}  // namespace

Engine::Engine(std::unique_ptr<Link> link, const EngineOptions& options)
    : link_(std::move(link)), options_(options), neighbours_(options.max_neighbours) {
  // Two ticks of the coarse clock (a tick is 4 ms at HZ=250); none when the
  // kernel has no such clock or an implausible resolution.
  timespec res{};
  if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0 && res.tv_sec == 0 && res.tv_nsec > 0 &&
      res.tv_nsec <= 20'000'000) {
    coarse_slack_ = std::chrono::nanoseconds(2 * res.tv_nsec);
  }
}

Engine::~Engine() = default;

Result<std::unique_ptr<Engine>> Engine::create(std::unique_ptr<Link> link, const EngineOptions& options) {
  if (!link) return invalid_argument("softroce: no link");
  const std::uint32_t mtu = options.path_mtu;
  if (mtu < 256 || mtu > 4096 || (mtu & (mtu - 1)) != 0) {
    return invalid_argument("softroce: path MTU " + std::to_string(mtu) +
                            " must be one of 256, 512, 1024, 2048, 4096");
  }
  if (options.tx_ring == 0 || (options.tx_ring & (options.tx_ring - 1)) != 0) {
    return invalid_argument("softroce: transmit ring of " + std::to_string(options.tx_ring) +
                            " slots; it must be a power of two");
  }
  if (options.max_qp == 0 || options.max_qp > (1u << 20) || options.max_neighbours > (1u << 20) ||
      options.max_unacked_psns == 0 || options.max_unacked_psns >= (1u << 22) ||
      options.ack_req_every == 0 || options.rx_burst == 0 || options.max_read_request_packets == 0 ||
      options.max_read_request_packets >= (1u << 22)) {
    return invalid_argument("softroce: engine options out of range");
  }
  std::unique_ptr<Engine> e(new (std::nothrow) Engine(std::move(link), options));
  if (!e) return resource_exhausted("softroce: out of memory");
  e->tx_.reset(new (std::nothrow) TxSlot[options.tx_ring]);
  // Zeroed, so that every page is faulted in here and not on a slot's first
  // use: a fault costs tens of microseconds on these VMs, and uninitialized,
  // the ring's first pass (256 slots, a page each) made the first 130 round
  // trips of an 8 B WRITE ping-pong take about 30 us each instead of 3.
  e->payload_store_.reset(new (std::nothrow) std::uint8_t[std::size_t{options.tx_ring} * mtu]());
  e->burst_.reset(new (std::nothrow) TxFrame[kBurst]);
  if (!e->tx_ || !e->payload_store_ || !e->burst_) {
    return resource_exhausted("softroce: cannot allocate the transmit ring");
  }
  for (std::uint32_t i = 0; i < options.tx_ring; ++i) e->tx_[i].payload = e->payload_store_.get() + std::size_t{i} * mtu;
  e->table_.assign(options.max_qp, nullptr);
  e->active_.reserve(options.max_qp);
  if (!options.pcap_path.empty()) {
    e->pcap_ = std::make_unique<PcapWriter>();
    Status st = e->pcap_->open(options.pcap_path);
    if (!st.ok()) return st.with_context("softroce: packet capture");
  }
  e->open_icrc_ = e->link_->info().completes_icrc && !e->pcap_ && icrc_folds_in_copy();
  e->rx_icrc_ = icrc_folds_in_copy() ? IcrcCheck::kDeferReadPayload : IcrcCheck::kNow;
  e->posts_wait_for_progress_ = e->link_->info().transmit_enters_kernel;
  return e;
}

Clock::time_point Engine::coarse_now() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return Clock::time_point(std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec));
}

Result<std::uint32_t> Engine::add_qp(RcQp* qp) {
  const std::uint32_t n = options_.max_qp;
  for (std::uint32_t k = 0; k < n; ++k) {
    const std::uint32_t i = (next_slot_ + k) % n;
    if (table_[i] == nullptr) {
      // A random 24-bit QPN (0 and 1 are special in IB) that is not in use:
      // a peer cannot guess which QPs exist here.
      std::uint32_t qpn;
      do {
        qpn = swkit::secure_random_u32() & 0xFFFFFFu;  // QPNs are 24 bits
      } while (qpn < 2 || qpns_.contains(qpn));
      qpns_.insert(qpn, i);
      table_[i] = qp;
      next_slot_ = (i + 1) % n;
      active_.push_back(qp);
      return qpn;
    }
  }
  return resource_exhausted("create_qp: all " + std::to_string(n) + " QPs of the device are in use");
}

void Engine::remove_qp(std::uint32_t qpn) noexcept {
  std::uint32_t i;
  if (!qpns_.find(qpn, i)) return;
  qpns_.erase(qpn);
  RcQp* qp = table_[i];
  table_[i] = nullptr;
  active_.erase(std::remove(active_.begin(), active_.end(), qp), active_.end());
}

RcQp* Engine::find_qp(std::uint32_t qpn) const noexcept {
  std::uint32_t i;
  return qpns_.find(qpn, i) ? table_[i] : nullptr;
}

std::uint32_t Engine::initial_psn() noexcept {
  if (options_.initial_psn) return *options_.initial_psn & kPsnMask;
  // Unpredictable, so a blind spoofer cannot place a request at ePSN.
  return swkit::secure_random_u32() & kPsnMask;
}

std::uint8_t* Engine::tx_payload() noexcept {
  if (tx_count_ == options_.tx_ring) {
    ++dev_.tx_ring_full;
    return nullptr;
  }
  return slot(tx_head_ + tx_count_).payload;
}

void Engine::tx_commit(const PacketTemplate& tmpl, const PacketFields& f, const std::uint8_t* payload,
                       std::size_t payload_len) noexcept {
  TxSlot& s = slot(tx_head_ + tx_count_);
  const std::size_t hl = header_length(f.opcode);
  if (hl == 0 || hl > sizeof s.head || payload_len > options_.path_mtu) return;
  const std::uint8_t* data = payload != nullptr ? payload : s.payload;
  // The ICRC of a payload of kOpenIcrcFrom bytes or more is left to the
  // link, which computes it while it copies the payload out
  // (TxFrame::icrc_open): the payload is read once, not twice.
  s.icrc_open = open_icrc_ && payload_len >= kOpenIcrcFrom;
  const std::size_t tl =
      tmpl.build(f, s.head, {data, payload_len}, {s.tail, sizeof s.tail}, s.icrc_open ? &s.icrc_partial : nullptr);
  if (tl == 0) return;  // cannot happen with the sizes above
  if (s.icrc_open) ++dev_.tx_icrc_open;
  s.head_len = static_cast<std::uint16_t>(hl);
  s.tail_len = static_cast<std::uint8_t>(tl);
  s.payload_len = static_cast<std::uint32_t>(payload_len);
  s.ref = payload;
  ++tx_count_;
}

void Engine::own_pending_payloads() noexcept {
  for (std::uint32_t i = 0; i < tx_count_; ++i) {
    TxSlot& s = slot(tx_head_ + i);
    if (s.ref == nullptr) continue;
    std::memcpy(s.payload, s.ref, s.payload_len);
    s.ref = nullptr;
    ++dev_.tx_payload_owned;
  }
}

bool Engine::flush() noexcept {
  while (tx_count_ > 0) {
    const std::uint32_t n = std::min(tx_count_, kBurst);
    for (std::uint32_t i = 0; i < n; ++i) {
      const TxSlot& s = slot(tx_head_ + i);
      burst_[i] = TxFrame{{s.head, s.head_len},
                          {s.ref != nullptr ? s.ref : s.payload, s.payload_len},
                          {s.tail, s.tail_len},
                          s.icrc_open,
                          s.icrc_partial};
    }
    const std::size_t taken = link_->transmit({burst_.get(), n});
    for (std::size_t i = 0; i < taken; ++i) {
      ++dev_.tx_frames;
      dev_.tx_bytes += burst_[i].size();
      if (pcap_) pcap_->write(burst_[i]);
    }
    for (std::size_t i = 0; i < taken; ++i) slot(tx_head_ + i).ref = nullptr;
    tx_head_ = static_cast<std::uint32_t>((tx_head_ + taken) & (options_.tx_ring - 1));
    tx_count_ -= static_cast<std::uint32_t>(taken);
    if (taken < n) {
      ++dev_.tx_link_full;
      return false;
    }
  }
  return true;
}

void Engine::on_frame(std::span<const std::uint8_t> frame) noexcept {
  ++dev_.rx_frames;
  dev_.rx_bytes += frame.size();
  if (pcap_) pcap_->write(frame);
  const std::uint32_t max_frame = link_->info().max_frame;
  if (max_frame != 0 && frame.size() > max_frame) {  // more than the link says it carries
    ++dev_.oversized_frames;
    return;
  }
  const std::uint32_t own_ip = link_->info().ipv4;
  // An IPv4 frame for another address is not ours to validate: on an
  // interface shared with the host and with other ranks (each its own NIC
  // with its own address) most frames are theirs, and checking their ICRC
  // would cost every rank the whole interface's traffic.
  if (const std::uint32_t dst = peek_ipv4_destination(frame); own_ip != 0 && dst != 0 && dst != own_ip) {
    ++dev_.not_for_us;
    return;
  }
  Packet& pkt = rx_packet_;
  const ParseError err = parse_packet(frame, pkt, rx_icrc_);
  if (err == ParseError::kNotIpv4 && handle_arp(frame)) return;
  if (err != ParseError::kOk) {
    const auto i = static_cast<std::size_t>(err);
    if (i < std::size(dev_.parse_errors)) ++dev_.parse_errors[i];
    if (err == ParseError::kBadIcrc) ++dev_.icrc_errors;
    return;
  }
  // A packet dropped here with its ICRC still pending is checked first, so
  // that a corrupt one is counted as corrupt, as when parse checks it.
  if (own_ip != 0 && pkt.h.dst_ip != own_ip) {
    if (icrc_holds(pkt)) ++dev_.not_for_us;
    return;
  }
  RcQp* qp = find_qp(pkt.h.dest_qp);
  if (qp == nullptr) {
    if (icrc_holds(pkt)) ++dev_.unknown_qpn;
    return;
  }
  // The connected peer only (rxe's check_addr/check_keys): its source IPv4
  // and the P_Key. RC packets carry no source QPN; the UDP source port is
  // flow entropy that RoCE v2 lets a sender choose and change (ECMP, some
  // NICs vary it per retry), so it identifies nobody and is not checked.
  if (qp->state() == QpState::kReset || pkt.h.src_ip != qp->peer().ipv4) {
    if (icrc_holds(pkt)) ++dev_.wrong_peer;
    return;
  }
  if (!pkey_matches(pkt.h.pkey, kDefaultPkey)) {
    if (icrc_holds(pkt)) ++dev_.bad_pkey;
    return;
  }
  qp->receive(pkt, frame.size());
}

bool Engine::icrc_holds(const Packet& pkt) noexcept {
  if (deferred_icrc_holds(pkt)) return true;
  count_bad_icrc();
  return false;
}

void Engine::count_bad_icrc() noexcept {
  ++dev_.parse_errors[static_cast<std::size_t>(ParseError::kBadIcrc)];
  ++dev_.icrc_errors;
}

Engine::TxSlot* Engine::raw_slot() noexcept {
  if (tx_count_ == options_.tx_ring) {
    ++dev_.tx_ring_full;
    return nullptr;
  }
  TxSlot& s = slot(tx_head_ + tx_count_);
  s.tail_len = 0;
  s.payload_len = 0;
  s.ref = nullptr;
  return &s;
}

// Kernel peers (rxe, a RoCE NIC's driver) resolve our IPv4 with ARP before
// they send: answer "who has <our address>?" so that they need no static
// neighbour entry. Replies go to the neighbour table, which believes only
// answers to its own questions (neighbour_table.hpp). Any other ARP is the
// host's business and counted with the other non-RoCE frames.
bool Engine::handle_arp(std::span<const std::uint8_t> frame) noexcept {
  ArpMessage m;
  const LinkInfo& li = link_->info();
  if (li.ipv4 == 0 || !parse_arp(frame, m)) return false;
  if (m.sender_ip == li.ipv4 && m.sender_mac != li.mac) {
    // Another station uses our address: peers that resolve it may reach
    // either of us. Counted so that the user can see it (arp_address_conflicts).
    ++dev_.arp_address_conflicts;
    return true;
  }
  if (m.op == kArpOpReply) {
    if (neighbours_.on_reply(m, li.mac, li.ipv4)) {
      ++dev_.arp_replies_accepted;
    } else {
      ++dev_.arp_replies_ignored;
    }
    return true;
  }
  if (m.target_ip != li.ipv4) return false;
  TxSlot* s = raw_slot();
  if (s == nullptr) return true;  // no slot: the peer asks again
  const ArpRequest req{m.sender_mac, m.sender_ip, m.target_ip};
  const std::size_t n = build_arp_reply(req, li.mac, {s->head, sizeof s->head});
  if (n == 0) return true;
  s->head_len = static_cast<std::uint16_t>(n);
  ++tx_count_;
  ++dev_.arp_requests_answered;
  return true;
}

NeighbourTable::Step Engine::resolve_neighbour(std::uint32_t ip, MacAddress& mac) noexcept {
  const NeighbourTable::Step step = neighbours_.resolve(ip, Clock::now(), mac);
  if (step != NeighbourTable::Step::kSendRequest) return step;
  const LinkInfo& li = link_->info();
  TxSlot* s = raw_slot();
  if (s == nullptr) return NeighbourTable::Step::kWait;  // the next retry asks again
  const std::size_t n = build_arp_request(li.mac, li.ipv4, ip, {s->head, sizeof s->head});
  if (n == 0) return NeighbourTable::Step::kWait;
  s->head_len = static_cast<std::uint16_t>(n);
  ++tx_count_;
  ++dev_.arp_requests_sent;
  return NeighbourTable::Step::kSendRequest;
}

void Engine::progress() noexcept {
  progress_calls_.store(progress_calls_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (options_.memory_sync != nullptr) options_.memory_sync();
  ++check_epoch_;
  now_fresh_ = false;
  // Requests that posts left here leave first: a receive can cost a system
  // call too (af_xdp wakes the kernel to refill), and it would delay them.
  if (requests_waiting_) {
    requests_waiting_ = false;
    frames_waiting_ = 0;
    transmit_all();
  }
  // Receive everything waiting (bounded), so ACKs queued behind a burst of
  // data are seen before the retransmission timers run.
  for (int i = 0; i < 256; ++i) {
    if (link_->poll(*this, options_.rx_burst) < options_.rx_burst) break;
  }
  for (RcQp* qp : active_) qp->run_timers();
  transmit_all();
  own_pending_payloads();
  now_fresh_ = false;  // a later call reads the clock again
}

void Engine::transmit_all() noexcept {
  // Responses first (inside transmit()), then new requests, in rounds so
  // one QP cannot hold the ring while the link drains it.
  for (int round = 0; round < 8; ++round) {
    bool starved = false;
    for (RcQp* qp : active_) starved |= qp->transmit();
    const bool drained = flush();
    if (!starved || !drained) break;
  }
}

void Engine::begin_post() noexcept {
  // As progress(): the unmaps that returned before this post are seen by the
  // checks of its requests.
  if (options_.memory_sync != nullptr) options_.memory_sync();
  ++check_epoch_;
}

void Engine::kick(RcQp* qp, std::uint32_t frames) noexcept {
  // Where a burst costs a system call, the requests wait for progress(),
  // which sends them with everything else due (LinkInfo::transmit_enters_kernel),
  // unless they fill a burst already: a stream of large messages then
  // leaves as it is posted, as elsewhere, one system call per burst.
  if (posts_wait_for_progress_) {
    if (frames < kBurst - frames_waiting_) {  // frames_waiting_ < kBurst: no overflow
      frames_waiting_ += frames;
      requests_waiting_ = true;
      return;
    }
    frames_waiting_ = 0;
  }
  send_now(qp);
}

void Engine::send_now(RcQp* qp) noexcept {
  now_fresh_ = false;
  for (int round = 0; round < 8; ++round) {
    const bool starved = qp->transmit();
    const bool drained = flush();
    if (!starved || !drained) break;
  }
  own_pending_payloads();
  now_fresh_ = false;
}

DeviceCounters Engine::counters() const noexcept {
  DeviceCounters c = dev_;
  c.qp = retired_;
  for (const RcQp* qp : active_) c.qp.add(qp->counters());
  return c;
}

}  // namespace rma::roce::rc
