// Shared pieces of the RC protocol engine: counters, IB timer encodings,
// completion-queue rings, vendor error codes and the memory-key table.
// No DPDK (DESIGN.md).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "rma/sdk/provider.hpp"
#include "swkit/id_index.hpp"
#include "rma/sdk/status.hpp"
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
  std::uint64_t parse_errors[static_cast<int>(ParseError::kCount)] = {};  // by ParseError
  std::uint64_t icrc_errors = 0;               // = parse_errors[kBadIcrc]
  std::uint64_t unknown_qpn = 0;               // no such QP here
  std::uint64_t wrong_peer = 0;                // source IP is not the QP's peer
  std::uint64_t bad_pkey = 0;                  // P_Key does not match the QP's partition
  std::uint64_t oversized_frames = 0;          // longer than the link's max_frame: dropped unparsed
  std::uint64_t not_for_us = 0;                // destination IP is not ours
};

// ---------------------------------------------------------------- timers
// Local ACK timeout, 4.096 us * 2^code; code 0 = infinite (returns 0).
inline std::chrono::nanoseconds ack_timeout(std::uint8_t code) noexcept {
  if (code == 0) return std::chrono::nanoseconds(0);
  return std::chrono::nanoseconds(std::uint64_t{4096} << (code & 31u));
}
// RNR NAK timer (IBA table 45): code 1 = 10 us ... 31 = 491.52 ms, 0 = 655.36 ms.
std::chrono::nanoseconds rnr_interval(std::uint8_t code) noexcept;

// ---------------------------------------------------------------- vendor errors
// Completion::vendor_err of the softroce provider: which check failed.
enum VendorErr : std::uint32_t {
  kVeNone = 0,
  kVeBadLkey = 1,
  kVeLkeyOtherPd = 2,
  kVeLocalOutOfBounds = 3,
  kVeNoLocalWrite = 4,
  kVeRetryExceeded = 5,       // no answer within retry_cnt timeouts
  kVeRnrExceeded = 6,         // RNR NAKs beyond rnr_retry
  kVeBadRkey = 7,             // responder: unknown rkey
  kVeRkeyOtherPd = 8,
  kVeNoRemoteRight = 9,
  kVeRemoteOutOfBounds = 10,
  kVeAtomicUnaligned = 11,
  kVeRecvTooSmall = 12,
  kVeRecvBufferInvalid = 13,
  kVeFlushed = 15,
  kVeNakInvalidRequest = 20,  // requester: NAK invalid request received
  kVeNakRemoteAccess = 21,    // requester: NAK remote access error received
  kVeNakRemoteOp = 22,        // requester: NAK remote operational error received
  kVeBadOpcodeSequence = 23,  // responder: opcode out of message order
  kVeBadLength = 24,          // responder: payload length inconsistent with the message
  kVeCqOverrun = 25,
  kVeLocalUnmapped = 26,      // requester/receiver: the local region's memory was unmapped
  kVeRemoteUnmapped = 27,     // responder: the rkey's region's memory was unmapped
};

// ---------------------------------------------------------------- completion rings
struct CqEntry {
  Completion wc;
  bool send_queue = true;  // retires a send-queue slot (else receive-queue)
  std::uint64_t seq = 0;   // the queue sequence number this entry covers
};

// A fixed ring; producing into a full ring overruns it for good (verbs).
// Guarded by the device lock.
class CqRing {
 public:
  Status init(std::uint32_t depth);
  bool push(const CqEntry& e) noexcept;
  // Takes up to `max` entries into `out`.
  std::uint32_t pop(CqEntry* out, std::uint32_t max) noexcept;
  bool overrun() const noexcept { return overrun_; }
  const char* reason() const noexcept { return reason_; }
  std::uint32_t depth() const noexcept { return depth_; }
  std::uint32_t size() const noexcept { return count_; }

 private:
  std::unique_ptr<CqEntry[]> ring_;
  std::uint32_t depth_ = 0, head_ = 0, count_ = 0;
  bool overrun_ = false;
  char reason_[160] = {};
};

// ---------------------------------------------------------------- memory keys
struct MrEntry {
  std::uint64_t addr = 0;
  std::uint64_t length = 0;
  Access access = Access::kNone;
  const void* pd = nullptr;  // identity of the owning protection domain
  // Set when the region's memory was unmapped or discarded (swkit's
  // OrphanTracker); null when nobody watches (engine-level tests).
  const std::atomic<bool>* orphaned = nullptr;
  bool contains(std::uint64_t a, std::uint64_t len) const noexcept {
    return a >= addr && len <= length && a - addr <= length - len;
  }
  bool is_orphaned() const noexcept { return orphaned != nullptr && orphaned->load(std::memory_order_acquire); }
};

// lkey/rkey -> region. Both keys of a region are drawn at random (getrandom)
// and looked up through a hash index, so a peer cannot guess a key (the odds
// are live regions / 2^32 per try, and a wrong rkey breaks the QP it was
// sent on); a deregistered region's keys leave the index at once, so a stale
// key names nothing. Device lock held.
class KeyTable {
 public:
  struct Keys {
    std::uint32_t lkey = 0, rkey = 0;
  };
  Result<Keys> insert(const MrEntry& e, std::size_t max_entries);
  void erase(std::uint32_t lkey) noexcept;
  const MrEntry* find_lkey(std::uint32_t key) const noexcept { return find(key, 0); }
  const MrEntry* find_rkey(std::uint32_t key) const noexcept { return find(key, 1); }
  std::size_t live() const noexcept { return live_; }

 private:
  struct Slot {
    MrEntry e;
    std::uint32_t lkey = 0, rkey = 0;
    bool live = false;
  };
  const MrEntry* find(std::uint32_t key, unsigned kind) const noexcept;
  std::uint32_t fresh_key() const noexcept;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_;  // slots of deregistered regions
  swkit::IdIndex index_;             // key -> slot << 1 | kind (0 lkey, 1 rkey)
  std::size_t live_ = 0;
};

// Checks a requester's local SGEs: first `bytes` bytes within live regions
// of `pd` with `needed` rights. Returns kVeNone or the failed check.
std::uint32_t check_local_sgl(const KeyTable& keys, const void* pd, std::span<const Sge> sgl,
                              std::uint64_t bytes, Access needed) noexcept;
// Responder: `rkey` names a region of `pd` granting `right` over [addr, addr+len).
std::uint32_t check_remote(const KeyTable& keys, const void* pd, std::uint32_t rkey,
                           std::uint64_t addr, std::uint64_t len, Access right) noexcept;

// The `len` bytes at `offset` into an SGE list when they lie within one SGE
// (the payload can be sent from there without copying), else nullptr.
const std::uint8_t* sgl_contiguous(std::span<const Sge> sgl, std::uint64_t offset, std::uint64_t len) noexcept;

// Scatter/gather copies between an SGE list (from `offset` bytes into it)
// and contiguous memory. The caller checked the list holds offset+len bytes.
void copy_to_sgl(std::span<const Sge> sgl, std::uint64_t offset, const std::uint8_t* src,
                 std::uint64_t len) noexcept;
void copy_from_sgl(std::span<const Sge> sgl, std::uint64_t offset, std::uint8_t* dst,
                   std::uint64_t len) noexcept;

}  // namespace rma::roce::rc
