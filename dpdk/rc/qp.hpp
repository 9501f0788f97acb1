// One reliable-connected queue pair of the RC protocol engine: requester,
// responder and completer, after the model of rdma_rxe (rxe_req.c,
// rxe_resp.c, rxe_comp.c) and IBA chapter 9.
//
// Send queue: a swkit work queue (WQEs, SGEs, inline bytes preallocated to
// max_send_wr; swkit/work_queue.hpp), indexed by 64-bit sequence numbers
// that never wrap:
//
//    retired <= comp <= send <= assigned?.. <= tail
//
//  - [comp, tail)      work not yet completed
//  - send              next WQE the requester transmits (pkt_ within it)
//  - assigned          WQEs below it have their PSN range (set on first send)
//  - a slot retires when a completion covering it is polled (as verbs and
//    the self provider count queue occupancy).
//
// PSNs: req_psn_ the next PSN to send, comp_psn_ the oldest unacknowledged,
// next_psn_ the first PSN not yet given to any WQE. Go-back-N rewinds the
// send position to (comp, comp_psn_); a retried READ asks only for the part
// not yet received.
//
// Responder: ePSN, the MSN, one pending ACK (coalesced: it always says
// ePSN-1, and leaves in the device call that received what it
// acknowledges, but in a ping-pong with the answer: see
// transmit_responses), one pending NAK, and max_qp_rd_atom responder resources that
// remember executed READs and atomics, so duplicates are replayed from the
// requested PSN and atomics never run twice.
//
// Everything here runs with the engine's mutex held.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>

#include "rc/engine.hpp"
#include "rc/slot_set.hpp"
#include "rc/types.hpp"
#include "swkit/lkey_cache.hpp"

namespace rma::roce::rc {

struct QpParams {
  const void* pd = nullptr;
  std::uint32_t max_send_wr = 128, max_recv_wr = 128;
  std::uint32_t max_send_sge = 1, max_recv_sge = 1;
  std::uint32_t max_inline = 0;
  std::uint32_t max_rd_atomic = 1;   // outstanding READs/atomics this QP initiates
  std::uint8_t timeout = 14, retry_cnt = 7, rnr_retry = 7, min_rnr_timer = 12;
  std::uint32_t path_mtu = 4096;     // this side's MTU (the smaller of both is used)
  std::uint32_t max_msg_size = 1u << 31;
  CompletionRing* send_cq = nullptr;
  CompletionRing* recv_cq = nullptr;
};

struct PeerParams {
  MacAddress mac{};
  std::uint32_t ipv4 = 0;
  std::uint32_t qpn = 0;
  std::uint32_t psn = 0;   // the first PSN the peer sends (ours to expect)
  std::uint32_t mtu = 0;
};

class RcQp {
 public:
  // Responder resources (max_dest_rd_atomic), rdma_rxe's number: with 16 a
  // stream of 4 KiB READs over memif kept the link 35-42 % busy, the
  // responses of one window leaving while the next requests waited behind
  // them.
  static constexpr std::uint32_t kResources = 128;

  RcQp(Engine& engine, const QpParams& params) noexcept;
  ~RcQp();
  RcQp(const RcQp&) = delete;
  RcQp& operator=(const RcQp&) = delete;

  // Control path, engine lock held.
  Status init();
  std::uint32_t qpn() const noexcept { return qpn_; }
  QpState state() const noexcept { return state_.load(std::memory_order_relaxed); }
  std::uint32_t local_psn() const noexcept { return local_psn_; }  // first PSN we send
  std::uint32_t path_mtu() const noexcept { return mtu_; }
  Status connect(const PeerParams& peer);
  void set_error() noexcept;
  const RcCounters& counters() const noexcept { return ctr_; }
  const PeerParams& peer() const noexcept { return peer_; }

  // Data path, engine lock held.
  PostResult post(std::span<const WorkRequest> wrs) noexcept;
  PostResult post_recv(std::span<const RecvRequest> wrs) noexcept;
  void receive(const Packet& pkt, std::size_t frame_len) noexcept;
  void run_timers() noexcept;
  // Builds frames into the engine's ring; true when it stopped for lack of room.
  bool transmit() noexcept;
  void retire(bool send_queue, std::uint64_t seq) noexcept;
  // The QP is about to go: an ACK it still owes (one held for its
  // program's answer, see transmit_responses) must leave now; the caller
  // then transmits (Engine::send_now). True when it owes one.
  bool release_held_ack() noexcept;

  // Posts in a row, each the device's next call after one that asked this
  // QP for an ACK, from which on the QP holds such an ACK for the answer.
  static constexpr std::uint8_t kAnswersBeforeHold = 8;

 private:
  // The request as posted (swkit) and what the requester and completer
  // track of it.
  struct SendWqe : swkit::SendWqe {
    std::uint32_t vendor_err;   // local check failed at post time (kLocProtErr)
    std::uint64_t checked_epoch;  // Engine::check_epoch() of a passed post-time check (0: none)
    std::uint32_t first_psn, last_psn, npkts;
    bool done;                  // READ fully received / atomic answered
  };
  struct Resource {
    enum Kind : std::uint8_t { kFree, kRead, kAtomic } kind = kFree;
    std::uint32_t first_psn = 0, last_psn = 0, cur_psn = 0;  // responses left from cur_psn while in res_pending_
    std::uint64_t va = 0;
    std::uint32_t len = 0, rkey = 0;
    std::uint64_t orig = 0;     // atomic: value before the operation
    std::uint32_t msn = 0;
  };
  enum class InMsg : std::uint8_t { kNone, kWrite, kSend };

  // posting
  SendWqe& sq(std::uint64_t seq) const noexcept { return sq_[seq]; }

  // requester
  bool send_request_packet(std::uint64_t seq, SendWqe& w) noexcept;
  // Whether transmit() sends another request packet right after the last
  // packet of `w` (which ends before PSN `after`): then that one need not
  // carry AckReq.
  bool packet_follows(const SendWqe& w, std::uint32_t after) const noexcept;
  void rewind_to_comp() noexcept;
  void catch_up() noexcept;
  void arm_timer() noexcept;

  // completer
  void on_response(const Packet& pkt) noexcept;
  // A READ response whose ICRC parse left for the copy that places it
  // (IcrcCheck::kDeferReadPayload); false when dropped for a bad ICRC.
  bool on_unverified_read_response(const Packet& pkt) noexcept;
  // Where the payload of `pkt` goes when it is the next response the READ
  // at the head of the send queue expects and its local buffer takes it in
  // one piece; nullptr otherwise. Changes nothing.
  std::uint8_t* read_response_target(const Packet& pkt) noexcept;
  // Whether `pkt` (a READ response for PSN index `idx` of READ `w`) has the
  // opcode, syndrome and payload size that index expects; `off` and `want`
  // are then where its payload lies in the READ and how long it is.
  bool read_response_fits(const Packet& pkt, const SendWqe& w, std::uint32_t idx, std::uint64_t& off,
                          std::uint64_t& want) const noexcept;
  // After the payload of READ response `psn` of the head READ is placed.
  void read_response_placed(std::uint32_t psn) noexcept;
  // Completes WQEs covered by an acknowledgement of every PSN up to `psn`;
  // false when it stopped at a READ/atomic whose answer is missing.
  bool ack_through(std::uint32_t psn) noexcept;
  void progress_made() noexcept;
  void fast_retry() noexcept;
  void retry_after_timeout() noexcept;
  void complete_send(std::uint64_t seq, WcStatus status, std::uint32_t byte_len,
                     std::uint32_t vendor_err) noexcept;
  void fail_head(WcStatus status, std::uint32_t vendor_err) noexcept;
  void check_head_local_error() noexcept;
  bool outstanding() const noexcept;

  // responder
  void on_request(const Packet& pkt) noexcept;
  void on_duplicate(const Packet& pkt) noexcept;
  void responder_error(std::uint8_t nak_code, std::uint32_t vendor_err) noexcept;
  void rnr_nak() noexcept;
  bool execute_write(const Packet& pkt, bool first, bool last, bool imm) noexcept;
  bool execute_send(const Packet& pkt, bool first, bool last, bool imm) noexcept;
  void execute_read(const Packet& pkt) noexcept;
  void execute_atomic(const Packet& pkt) noexcept;
  bool transmit_responses() noexcept;
  bool send_read_response(std::uint32_t slot) noexcept;
  bool send_ack(std::uint8_t syndrome, std::uint32_t psn, bool atomic, std::uint64_t orig) noexcept;
  void complete_recv(WcStatus status, VerbOp opcode, std::uint32_t byte_len, bool has_imm,
                     std::uint32_t imm, std::uint32_t vendor_err) noexcept;

  void enter_error() noexcept;
  // The fields of a packet with this opcode and PSN (the rest zero).
  static PacketFields fields(std::uint8_t opcode, std::uint32_t psn) noexcept {
    PacketFields f;
    set_op(f, opcode, psn);
    return f;
  }
  // The same into fields still as constructed: the requester fills its
  // header in place, because `h = fields(...)` built a copy on the stack and
  // read it back 16 bytes at a time across a 4-byte store just made, a
  // store-forwarding stall that was two fifths of send_request_packet
  // (perf annotate, 8-byte WRITEs).
  static void set_op(PacketFields& f, std::uint8_t opcode, std::uint32_t psn) noexcept {
    f.opcode = opcode;
    f.psn = psn & kPsnMask;
  }
  // Commits the packet of `f` whose `len` bytes of payload are in the slot
  // (tx_buffer) or, when `ref` is set, in registered memory
  // (Engine::tx_commit).
  void emit(PacketFields& f, std::size_t len, const std::uint8_t* ref = nullptr) noexcept;
  std::uint8_t* tx_buffer() noexcept;

  Engine& engine_;
  const void* pd_;
  CompletionRing* const send_cq_;
  CompletionRing* const recv_cq_;
  const std::uint32_t max_send_wr_, max_recv_wr_, max_send_sge_, max_recv_sge_, max_inline_;
  const std::uint32_t max_rd_atomic_;
  const std::uint8_t timeout_code_, retry_cnt_, rnr_retry_, min_rnr_timer_;
  const std::uint32_t max_msg_size_;
  std::uint32_t mtu_;
  std::uint32_t qpn_ = 0;
  std::uint32_t local_psn_ = 0;
  std::atomic<QpState> state_{QpState::kReset};
  PeerParams peer_;
  PacketTemplate tmpl_;   // addresses and ports, laid out at connect
  RcCounters ctr_;

  // send queue
  swkit::WorkQueue<SendWqe> sq_;
  swkit::LkeyCache lkeys_;               // post()'s local key checks (under the engine's mutex)
  std::uint64_t sq_send_ = 0, sq_assigned_ = 0, sq_comp_ = 0;
  std::uint32_t send_pkt_ = 0;           // packet index within sq_send_
  std::uint32_t req_psn_ = 0, comp_psn_ = 0, next_psn_ = 0;
  std::uint32_t sent_psn_ = 0;           // one past the highest PSN ever sent
  bool cq_lost_ = false;                 // a completion was lost to a CQ overrun
  std::uint32_t rd_atomic_outstanding_ = 0;
  std::uint32_t pkts_since_ackreq_ = 0;
  std::uint32_t retries_left_ = 0, rnr_left_ = 0;
  bool fast_retried_ = false;            // one fast retry per comp_psn_ position
  bool timer_armed_ = false;
  Clock::time_point timer_deadline_{};
  bool rnr_waiting_ = false;
  Clock::time_point rnr_deadline_{};

  // receive queue
  swkit::WorkQueue<swkit::RecvWqe> rq_;
  std::uint64_t rq_next_ = 0;

  // responder
  std::uint32_t epsn_ = 0, msn_ = 0;
  bool nak_sent_ = false;
  bool ack_pending_ = false;
  // The ping-pong rule (transmit_responses): the check epoch of the call
  // whose packets asked for the pending ACK (0: a duplicate's, never held),
  // that of the last post on this QP, and how many posts in a row were the
  // device's very next call after a call that asked for an ACK.
  std::uint64_t ack_asked_epoch_ = 0;
  std::uint64_t post_epoch_ = 0;
  std::uint8_t answers_ = 0;
  bool nak_pending_ = false;
  std::uint8_t nak_syndrome_ = 0;
  std::uint32_t nak_psn_ = 0;
  InMsg in_msg_ = InMsg::kNone;
  std::uint64_t write_va_ = 0;
  std::uint32_t write_rkey_ = 0;         // rkey of the WRITE in progress, checked on every packet
  std::uint32_t write_resid_ = 0, write_total_ = 0;
  std::uint32_t recv_offset_ = 0;        // bytes of the current SEND placed
  Resource res_[kResources];
  std::uint32_t res_next_ = 0;           // next slot to (re)use: the oldest
  SlotSet<kResources> res_pending_;      // slots with responses left to send
  bool error_after_nak_ = false;
};

}  // namespace rma::roce::rc
