// The layout of a device's shared segment: what a peer process needs to
// reach this device's QPs and regions without this process's help.
//
//   SegmentHeader | QpSlot[kMaxQp] | MrSlot[kMaxMr]
//
// Peers map the segment read-write (it is created 0600: only processes of
// the same uid, which are also the only ones process_vm_* lets in). What a
// peer may write: a QP slot's request ring (requests, cancellations) and
// its break flag, and the header's doorbell. Everything else is written by
// the owner only. The owner validates what peers wrote (sizes, counts,
// opcodes) before using it: a peer is another program.
//
// Every field two processes (or a process and its progress thread) touch
// concurrently is a std::atomic: lock-free atomics on shared memory are
// address-free, and the release/acquire pairs below order the plain
// fields of a ring entry, as they would between threads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace rma::shm {

inline constexpr std::uint32_t kMaxQp = 256;          // QP slots per device
inline constexpr unsigned kMrSlotBits = 14;           // rkey & (kMaxMr - 1) is the region's slot
inline constexpr std::uint32_t kMaxMr = 1u << kMrSlotBits;
inline constexpr std::uint32_t kRingDepth = 4;        // request ring entries per QP
inline constexpr std::uint32_t kMaxRingSge = 32;      // = swkit::software_caps max_sge
inline constexpr std::uint32_t kSegmentVersion = 2;
inline constexpr char kSegmentMagic[8] = {'r', 'm', 'a', '-', 's', 'h', 'm', '2'};

// A request a requester leaves for the target's progress: the operations
// that need the target's CPU (atomics) or its receive queue (SEND,
// SEND_WITH_IMM, WRITE_WITH_IMM).
struct RingEntry {
  enum State : std::uint32_t {
    kEmpty = 0,
    kPosted,     // requester: request fields written (release)
    kTaken,      // target: executing (CAS from kPosted)
    kDone,       // target: response fields written (release)
    kCancelled,  // requester gave up (CAS from kPosted): the target skips it
  };
  std::atomic<std::uint32_t> state;
  std::atomic<std::uint32_t> rnr;  // target: no receive was posted when it looked

  // ---- request, written by the requester before state = kPosted
  std::uint64_t seq;  // the requester's ring sequence number (the target serves in order)
  std::uint32_t src_pid, src_qpn;
  std::uint32_t opcode;  // rma::Opcode
  std::uint32_t length;  // message bytes
  std::uint32_t rkey, imm_data;
  std::uint64_t remote_addr, compare_add, swap;
  // SEND / WRITE_WITH_IMM: where the payload is in the requester's memory
  // (the target pulls it with process_vm_readv).
  std::uint32_t num_sge;
  std::uint32_t pad0;
  std::uint64_t sge_addr[kMaxRingSge];
  std::uint32_t sge_len[kMaxRingSge];

  // ---- response, written by the target before state = kDone
  std::uint64_t result;  // atomics: the original value
  std::uint32_t status;  // rma::WcStatus
  std::uint32_t vendor_err;
};

struct QpSlot {
  std::atomic<std::uint32_t> qpn;    // 0: free
  std::atomic<std::uint32_t> state;  // rma::QpState
  std::atomic<std::uint32_t> pd;     // PD tag: an rkey is valid for QPs of its region's PD
  std::atomic<std::uint32_t> min_rnr_timer;
  // The requester this QP is connected to (set by connect): only its
  // requests are served.
  std::atomic<std::uint32_t> peer_pid;
  std::atomic<std::uint32_t> peer_qpn;
  // A requester found a remote access error on this QP (bad rkey, missing
  // right, out of bounds): the owner moves the QP to ERROR at its next
  // progress, as a NIC responder does after NAKing.
  std::atomic<std::uint32_t> break_request;
  std::atomic<std::uint32_t> pad0;
  RingEntry ring[kRingDepth];
};

// One registered region as a peer sees it. A seqlock: the owner makes
// `seq` odd, writes, makes it even; a reader retries on an odd or changed
// seq, so it never acts on half an update. A requester that cached what it
// read compares `seq` before each use: unchanged means the same
// registration (a re-registration or deregistration moves it on).
struct MrSlot {
  std::atomic<std::uint32_t> seq;
  std::atomic<std::uint32_t> rkey;  // 0: free
  std::atomic<std::uint64_t> addr;
  std::atomic<std::uint64_t> length;
  std::atomic<std::uint32_t> access;  // rma::Access
  std::atomic<std::uint32_t> pd;
  // The region lies inside a librma shared segment of the owner
  // (node::locate at registration): a requester that maps the segment
  // reaches the region at seg_offset with loads, stores and CPU atomics.
  // seg_size 0: not in one (cross-memory attach and the ring).
  std::atomic<std::uint64_t> seg_size;
  std::atomic<std::uint64_t> seg_nonce;
  std::atomic<std::uint64_t> seg_offset;
  std::atomic<std::uint32_t> seg_pid;
  std::atomic<std::uint32_t> pad0;
  std::atomic<std::uint64_t> seg_name[8];  // the shm_open name, 8 bytes a word, NUL-padded
};

struct SegmentHeader {
  char magic[8];
  std::uint32_t version;
  std::uint32_t pid;
  std::uint64_t nonce;
  std::uint32_t max_qp, max_mr, ring_depth, max_ring_sge;
  std::uint64_t size;  // bytes of the whole segment
  // Requesters bump it (and FUTEX_WAKE it) after posting a ring request or
  // a break request, so the owner's progress thread wakes.
  alignas(64) std::atomic<std::uint32_t> doorbell;
  // Set by the progress thread while it sleeps on the doorbell: a requester
  // makes the FUTEX_WAKE system call only then.
  std::atomic<std::uint32_t> sleeping;
};

struct SegmentLayout {
  SegmentHeader header;
  alignas(64) QpSlot qp[kMaxQp];
  alignas(64) MrSlot mr[kMaxMr];
};

static_assert(std::atomic<std::uint32_t>::is_always_lock_free && std::atomic<std::uint64_t>::is_always_lock_free,
              "shared-memory atomics must be lock-free (address-free across processes)");

inline constexpr std::size_t kSegmentSize = sizeof(SegmentLayout);

}  // namespace rma::shm
