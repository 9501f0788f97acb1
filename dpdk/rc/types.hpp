// Shared pieces of the RC protocol engine: counters, IB timer encodings,
// and the software-QP kit (engine/swkit) it is built on. No DPDK (DESIGN.md).
#pragma once

#include <chrono>
#include <cstdint>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/status.hpp"
#include "swkit/completion_ring.hpp"
#include "swkit/key_table.hpp"
#include "swkit/sgl.hpp"
#include "swkit/vendor_err.hpp"
#include "swkit/work_queue.hpp"
#include "wire/wire.hpp"

namespace rma::roce::rc {

using Clock = std::chrono::steady_clock;
using VerbOp = ::rma::Opcode;  // work-request opcodes (rma::roce::Opcode is the wire's)

// ---------------------------------------------------------------- counters
// Protocol counters, kept per QP and summed per device. All monotonic.
struct RcCounters {
  std::uint64_t tx_frames = 0, tx_bytes = 0;   // frames this QP generated
  std::uint64_t rx_frames = 0, rx_bytes = 0;   // valid frames delivered to this QP
  std::uint64_t retransmitted_packets = 0;     // request packets sent again (go-back-N)
  std::uint64_t retry_timeouts = 0;            // local ACK timer expiries that rewound
  std::uint64_t fast_retries = 0;              // rewinds on NAK / response gap
  std::uint64_t acks_sent = 0, acks_received = 0;
  std::uint64_t naks_sent[5] = {};             // by NakCode (sequence, invalid req, access, op, rd)
  std::uint64_t naks_received[5] = {};
  std::uint64_t rnr_naks_sent = 0, rnr_naks_received = 0;
  std::uint64_t duplicate_requests = 0;        // responder: PSN behind ePSN
  std::uint64_t out_of_sequence = 0;           // responder: PSN ahead of ePSN, dropped
  std::uint64_t read_replays = 0;              // duplicate READs answered from responder resources
  std::uint64_t atomic_replays = 0;            // duplicate atomics answered from saved values
  std::uint64_t stale_duplicates = 0;          // duplicate READ/atomic with no resource left: dropped
  std::uint64_t duplicate_responses = 0;       // requester: ACK/response for PSNs already done
  std::uint64_t bad_responses = 0;             // requester: response that fits nothing outstanding
  std::uint64_t dropped_state = 0;             // frame for a QP not accepting it (RESET/ERROR)
  std::uint64_t bad_opcode_sequence = 0;       // responder: MIDDLE without FIRST, etc.

  void add(const RcCounters& o) noexcept;
};

struct DeviceCounters {
  RcCounters qp;                               // sum over live and destroyed QPs
  std::uint64_t rx_frames = 0, rx_bytes = 0;   // every frame the link delivered
  std::uint64_t tx_frames = 0, tx_bytes = 0;   // every frame handed to the link
  std::uint64_t tx_link_full = 0;              // transmit refused a frame (retried later)
  std::uint64_t tx_ring_full = 0;              // a QP waited for a transmit slot
  std::uint64_t tx_payload_owned = 0;          // referenced payloads copied into the ring (link was full)
  std::uint64_t tx_icrc_open = 0;              // frames sent with the ICRC left to the link's copy (TxFrame::icrc_open)
  std::uint64_t parse_errors[static_cast<int>(ParseError::kCount)] = {};  // by ParseError
  std::uint64_t icrc_errors = 0;               // = parse_errors[kBadIcrc]
  std::uint64_t rx_icrc_in_copy = 0;           // READ responses whose ICRC was checked in the copy placing them
  std::uint64_t unknown_qpn = 0;               // no such QP here
  std::uint64_t wrong_peer = 0;                // source IP is not the QP's peer
  std::uint64_t bad_pkey = 0;                  // P_Key does not match the QP's partition
  std::uint64_t oversized_frames = 0;          // longer than the link's max_frame: dropped unparsed
  std::uint64_t not_for_us = 0;                // IPv4 frame for another destination address (not validated)
  std::uint64_t arp_requests_answered = 0;     // "who has <our IPv4>?" answered
  std::uint64_t arp_requests_sent = 0;         // "who has <peer IPv4>?" asked (neighbour resolution)
  std::uint64_t arp_replies_accepted = 0;      // replies that taught a peer's MAC
  std::uint64_t arp_replies_ignored = 0;       // replies not believed (unsolicited, not for us, already answered...)
  std::uint64_t arp_address_conflicts = 0;     // ARP from another station claiming our IPv4
};

// ---------------------------------------------------------------- timers
// Local ACK timeout, 4.096 us * 2^code; code 0 = infinite (returns 0).
inline std::chrono::nanoseconds ack_timeout(std::uint8_t code) noexcept {
  if (code == 0) return std::chrono::nanoseconds(0);
  return std::chrono::nanoseconds(std::uint64_t{4096} << (code & 31u));
}
// RNR NAK timer (IBA table 45): code 1 = 10 us ... 31 = 491.52 ms, 0 = 655.36 ms.
std::chrono::nanoseconds rnr_interval(std::uint8_t code) noexcept;

// ---------------------------------------------------------------- the kit
// Vendor errors, the key table, completion rings, SGL checks and copies,
// work queues: the software-QP kit every software provider shares
// (engine/swkit), named here as the RC code uses them.
using enum swkit::VendorErr;
using swkit::CompletionRing;
using swkit::CqEntry;
using swkit::KeyTable;
using swkit::MrEntry;
using swkit::check_local_sgl;
using swkit::check_remote;
using swkit::copy_from_sgl;
using swkit::copy_to_sgl;
using swkit::sgl_bytes;
using swkit::sgl_contiguous;

}  // namespace rma::roce::rc
