// The engine's provider contract: one verbs-shaped interface that the
// in-process provider, the ibverbs provider and the software RoCE v2 NIC all
// implement, and that everything above the engine is written against.
//
// Object model (as in libibverbs):
//   Provider ─ lists/open ─▶ Device ─▶ ProtectionDomain ─▶ MemoryRegion
//                               │                      └─▶ QueuePair (RC)
//                               └────▶ CompletionQueue ◀──────┘
// Children keep their parents alive, so releasing handles in any order is
// safe. Control-path calls return Status/Result; post() and poll() are the
// data path: noexcept, allocation-free, and report small status codes.
// Threads: as with libibverbs, post(), post_recv() and poll() may be called
// from any thread, concurrently with each other and with the control path
// of other objects (a registration, another QP's creation), unless the
// caller promised otherwise for a QP (QpConfig::serialized).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rma/sdk/status.hpp"

// librma is built with hidden visibility: what this header declares is
// part of its exported interface.
#pragma GCC visibility push(default)

namespace rma {

// ---------------------------------------------------------------- access rights
enum class Access : std::uint32_t {
  kNone = 0,
  kLocalWrite = 1u << 0,    // the NIC may write here on our behalf (READ/atomic results, receives)
  kRemoteWrite = 1u << 1,   // peers may RDMA WRITE here
  kRemoteRead = 1u << 2,    // peers may RDMA READ here
  kRemoteAtomic = 1u << 3,  // peers may run atomics here
};
constexpr Access operator|(Access a, Access b) noexcept {
  return static_cast<Access>(static_cast<std::uint32_t>(a) | static_cast<std::uint32_t>(b));
}
constexpr Access operator&(Access a, Access b) noexcept {
  return static_cast<Access>(static_cast<std::uint32_t>(a) & static_cast<std::uint32_t>(b));
}
constexpr Access& operator|=(Access& a, Access b) noexcept { return a = a | b; }
// True when every right in `wanted` is in `have`.
constexpr bool has_access(Access have, Access wanted) noexcept {
  return (have & wanted) == wanted;
}
constexpr Access kAllAccess =
    Access::kLocalWrite | Access::kRemoteWrite | Access::kRemoteRead | Access::kRemoteAtomic;
// "LOCAL_WRITE|REMOTE_READ", or "NONE".
std::string access_to_string(Access a);

// ---------------------------------------------------------------- opcodes
// Work-request opcodes, plus the two receive-side completion opcodes.
enum class Opcode : std::uint8_t {
  kRdmaWrite,
  kRdmaWriteWithImm,
  kRdmaRead,
  kAtomicFetchAdd,
  kAtomicCmpSwap,
  kSend,
  kSendWithImm,
  kRecv,              // completion only: a SEND arrived in a posted receive
  kRecvRdmaWithImm,   // completion only: a WRITE_WITH_IMM consumed a posted receive
};
std::string_view opcode_name(Opcode op) noexcept;  // "RDMA_WRITE", ...

// Completion status; names and meanings follow enum ibv_wc_status.
enum class WcStatus : std::uint8_t {
  kSuccess,
  kLocLenErr,        // local length error: a message does not fit its buffer
  kLocQpOpErr,       // local QP operation error
  kLocEecOpErr,
  kLocProtErr,       // local protection error: bad lkey or SGE outside its region
                     // (kernel rxe reports a deregistered lkey as LOC_QP_OP_ERR)
  kWrFlushErr,       // work request flushed because the QP entered the error state
  kMwBindErr,
  kBadRespErr,       // unexpected response from the responder
  kLocAccessErr,     // local access error
  kRemInvReqErr,     // remote invalid request (bad opcode, length, misaligned atomic)
  kRemAccessErr,     // remote access error: bad rkey, missing right, or out of bounds
  kRemOpErr,         // remote operational error
  kRetryExcErr,      // transport retry counter exceeded: the peer does not answer
  kRnrRetryExcErr,   // receiver-not-ready retry counter exceeded: no receive posted
  kLocRddViolErr,
  kRemInvRdReqErr,
  kRemAbortErr,
  kInvEecnErr,
  kInvEecStateErr,
  kFatalErr,
  kRespTimeoutErr,
  kGeneralErr,
};
std::string_view wc_status_name(WcStatus s) noexcept;         // "REM_ACCESS_ERR"
std::string_view wc_status_description(WcStatus s) noexcept;  // "remote access error"

// ---------------------------------------------------------------- work requests
struct Sge {
  std::uint64_t addr = 0;
  std::uint32_t length = 0;
  std::uint32_t lkey = 0;
};

enum WrFlags : std::uint32_t {
  kWrSignaled = 1u << 0,   // produce a completion on success (errors always do)
  kWrFence = 1u << 1,      // wait for earlier READs/atomics to finish before starting
  kWrInline = 1u << 2,     // copy the payload at post time; lkeys are ignored
  kWrSolicited = 1u << 3,  // solicited event at the receiver (SEND, WRITE_WITH_IMM)
};

struct WorkRequest {
  std::uint64_t wr_id = 0;
  Opcode opcode = Opcode::kRdmaWrite;
  std::uint32_t flags = kWrSignaled;
  std::span<const Sge> sgl;          // local buffers; atomics take exactly one 8-byte SGE
  std::uint64_t remote_addr = 0;     // RDMA and atomic target address
  std::uint32_t rkey = 0;
  std::uint64_t compare_add = 0;     // FETCH_ADD: addend; CMP_SWAP: compare value
  std::uint64_t swap = 0;            // CMP_SWAP: value written when the compare matches
  std::uint32_t imm_data = 0;        // *_WITH_IMM, host byte order
};

struct RecvRequest {
  std::uint64_t wr_id = 0;
  std::span<const Sge> sgl;
};

struct Completion {
  std::uint64_t wr_id = 0;
  WcStatus status = WcStatus::kSuccess;
  Opcode opcode = Opcode::kRdmaWrite;
  bool has_imm = false;
  // Send-side completions of *_WITH_IMM report the base opcode (RDMA_WRITE,
  // SEND), as verbs does; the receiver's says RECV_RDMA_WITH_IMM / RECV.
  std::uint32_t byte_len = 0;   // bytes moved (receives, READ); atomics report 8
  std::uint32_t qp_num = 0;     // the local QP this completion belongs to
  std::uint32_t imm_data = 0;   // valid when has_imm
  std::uint32_t vendor_err = 0; // provider-specific detail for error statuses
};

// Outcome of post()/post_recv(). Data-path type: no allocation; `reason` is a
// static string that names what was wrong with the rejected request.
struct [[nodiscard]] PostResult {
  StatusCode code = StatusCode::kOk;
  std::uint32_t bad_index = 0;   // index of the first request NOT posted
  const char* reason = nullptr;  // static text, non-null when !ok()

  bool ok() const noexcept { return code == StatusCode::kOk; }
  // Control-path rendering: "work request 3: too many SGEs (5 > max_send_sge 4)".
  Status to_status() const;
};

// ---------------------------------------------------------------- device
struct DeviceCaps {
  std::uint32_t max_sge = 0;            // per work request (send side)
  std::uint32_t max_recv_sge = 0;
  std::uint32_t max_inline_data = 0;    // bytes copied at post time
  std::uint32_t max_qp_rd_atom = 0;     // outstanding READs/atomics a QP may initiate
  std::uint32_t max_qp_wr = 0;          // send/receive queue depth
  std::uint32_t max_cqe = 0;
  std::uint32_t max_qp = 0;
  std::uint32_t max_mr = 0;
  std::uint64_t max_mr_size = 0;
  std::uint32_t max_msg_size = 0;       // bytes per message
  bool atomics = false;                 // 8-byte fetch-add and compare-swap
  std::uint32_t path_mtu = 0;           // bytes: 256..4096
  // One-sided requests aimed at this device's memory land promptly only
  // while its owner polls a CQ (a software NIC driven by the caller's
  // thread); false when the hardware, the kernel, a thread of the device or
  // the initiator itself moves them. A ping-pong that spins on a buffer
  // polls the CQ on every spin only when this is true.
  bool target_needs_polls = true;
};

struct DeviceInfo {
  std::string name;            // "self0", "rxe0", "softroce0"
  std::string provider;        // provider name
  std::string transport;       // "in-process", "RoCE v2", "InfiniBand"
  std::string link_layer;      // "Ethernet", "InfiniBand", "none"
  std::array<std::uint8_t, 16> gid{};  // RoCE v2: IPv4-mapped IPv6; zero when not applicable
  std::array<std::uint8_t, 6> mac{};
  DeviceCaps caps;
};

// ---------------------------------------------------------------- observability
// One named counter, monotonic unless its name says otherwise
// ("tx_frames", "nak_seq_err", "rx_icrc_errors"). Names are snake_case and
// stable: tools and tests look them up by name.
struct CounterSample {
  std::string name;
  std::uint64_t value = 0;
};

// The counters of one queue pair, as a device reports them for all its QPs.
struct QpCounters {
  std::uint32_t qp_num = 0;
  std::vector<CounterSample> counters;
};

// Asynchronous events, named as in enum ibv_event_type.
enum class AsyncEventType : std::uint8_t {
  kCqErr,              // a CQ overran
  kQpFatal,            // a QP hit an error that no work request reports
  kQpReqErr,           // invalid request arrived at a QP
  kQpAccessErr,        // remote access violation at a QP
  kCommEst,            // first packet arrived on a QP in RTR
  kSqDrained,
  kPathMig,
  kPathMigErr,
  kDeviceFatal,        // the device is unusable
  kPortActive,         // a port came up
  kPortErr,            // a port went down
  kLidChange,
  kPkeyChange,
  kSmChange,
  kSrqErr,
  kSrqLimitReached,
  kQpLastWqeReached,
  kClientReregister,
  kGidChange,
};
std::string_view async_event_name(AsyncEventType t) noexcept;  // "QP_FATAL", "PORT_ERR"

struct AsyncEvent {
  AsyncEventType type = AsyncEventType::kDeviceFatal;
  std::uint32_t qp_num = 0;    // QP events
  std::uint8_t port = 0;       // port events (1-based, as in verbs)
  std::string description;     // what happened, in words a user can act on
};

class CompletionQueue;
class ProtectionDomain;

class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const noexcept = 0;
  const std::string& name() const noexcept { return info().name; }
  const DeviceCaps& caps() const noexcept { return info().caps; }

  virtual Result<std::shared_ptr<ProtectionDomain>> alloc_pd() = 0;
  // depth: completions the queue holds before it overruns (1..caps().max_cqe).
  virtual Result<std::shared_ptr<CompletionQueue>> create_cq(std::uint32_t depth) = 0;

  // Device-wide counters (frames, bytes, retransmissions, NAKs by kind...).
  // Control path; safe to call from any thread. Providers without counters
  // return an empty list.
  virtual Result<std::vector<CounterSample>> read_counters() const { return std::vector<CounterSample>{}; }
  // The counters of every live QP of this device (what QueuePair::read_counters
  // returns for each), for tools that see only the device.
  virtual Result<std::vector<QpCounters>> read_qp_counters() const { return std::vector<QpCounters>{}; }
  // Takes the oldest pending asynchronous event (port down, QP fatal...), if
  // any. Never blocks. Providers without asynchronous events return nullopt.
  virtual std::optional<AsyncEvent> poll_async_event() { return std::nullopt; }
};

// ---------------------------------------------------------------- memory
// A registered memory region. Destroying it deregisters the memory.
// Upper layers obtain regions through the RegistrationCache, never directly.
class MemoryRegion {
 public:
  virtual ~MemoryRegion() = default;
  MemoryRegion(const MemoryRegion&) = delete;
  MemoryRegion& operator=(const MemoryRegion&) = delete;

  std::uint64_t addr() const noexcept { return addr_; }
  std::uint64_t length() const noexcept { return length_; }
  // Keys of different regions of one device differ (two registrations of
  // the same memory too); a region's lkey and rkey may be equal (rxe).
  std::uint32_t lkey() const noexcept { return lkey_; }
  std::uint32_t rkey() const noexcept { return rkey_; }
  Access access() const noexcept { return access_; }
  // True when [addr, addr+len) lies inside this region (len 0 counts as inside).
  bool contains(std::uint64_t addr, std::uint64_t len) const noexcept {
    return addr >= addr_ && len <= length_ && addr - addr_ <= length_ - len;
  }

 protected:
  MemoryRegion(std::uint64_t addr, std::uint64_t length, std::uint32_t lkey, std::uint32_t rkey,
               Access access) noexcept
      : addr_(addr), length_(length), lkey_(lkey), rkey_(rkey), access_(access) {}

 private:
  std::uint64_t addr_;
  std::uint64_t length_;
  std::uint32_t lkey_;
  std::uint32_t rkey_;
  Access access_;
};

// ---------------------------------------------------------------- completion queue
class CompletionQueue {
 public:
  virtual ~CompletionQueue() = default;
  // Takes up to out.size() completions, oldest first; returns how many.
  // Returns -1 once the queue has overrun (more completions than its depth
  // were produced before being polled); overrun_reason() then says why, and
  // which QP where the provider can know it (verbs cannot: the kernel's CQ
  // error event names the CQ only). Whether the QPs using the CQ also move
  // to the error state is the provider's (self: yes).
  virtual int poll(std::span<Completion> out) noexcept = 0;
  virtual std::uint32_t depth() const noexcept = 0;
  virtual const char* overrun_reason() const noexcept = 0;
};

// ---------------------------------------------------------------- endpoint address
// Opaque bytes that name one QP to its peer (QPN, GID/IP, MAC, PSN, MTU...),
// moved between processes by the bootstrap. The provider that made it is the
// only one that can read it; it starts with the provider's name.
struct EndpointAddress {
  static constexpr std::size_t kMaxSize = 96;
  std::array<std::uint8_t, kMaxSize> bytes{};
  std::uint32_t size = 0;

  std::span<const std::uint8_t> view() const noexcept { return {bytes.data(), size}; }
  std::string to_hex() const;
  static Result<EndpointAddress> from_bytes(std::span<const std::uint8_t> data);
  static Result<EndpointAddress> from_hex(std::string_view hex);
};

// ---------------------------------------------------------------- queue pair
enum class QpState : std::uint8_t { kReset, kInit, kRtr, kRts, kError };
std::string_view qp_state_name(QpState s) noexcept;  // "RTS"

struct QpConfig {
  std::shared_ptr<CompletionQueue> send_cq;
  std::shared_ptr<CompletionQueue> recv_cq;   // may equal send_cq
  std::uint32_t max_send_wr = 128;            // outstanding send work requests
  std::uint32_t max_recv_wr = 128;
  std::uint32_t max_send_sge = 1;
  std::uint32_t max_recv_sge = 1;
  std::uint32_t max_inline_data = 0;
  std::uint32_t max_rd_atomic = 1;            // outstanding READs/atomics this QP initiates
  // Transport timers, encoded as verbs encodes them.
  std::uint8_t timeout = 14;        // local ACK timeout 4.096 us * 2^timeout (0 = infinite)
  std::uint8_t retry_cnt = 7;       // transport retries (3 bits)
  std::uint8_t rnr_retry = 7;       // receiver-not-ready retries (7 = infinite)
  std::uint8_t min_rnr_timer = 12;  // RNR NAK timer code
  std::uint32_t path_mtu = 0;       // bytes; 0 = the device's
  // The caller's promise that no two of these calls ever run at once: this
  // QP's post(), post_recv(), set_error(), connect() and destruction, and
  // poll() of its send and receive CQs (one thread at a time, as UCX's
  // UCS_THREAD_MODE_SERIALIZED or a verbs thread domain). Without it every
  // call may come from any thread at any time. A provider may use it to
  // leave its own locks off the data path (shm does); nothing else changes,
  // and a provider that has no use for it ignores it.
  bool serialized = false;
};

class QueuePair {
 public:
  virtual ~QueuePair() = default;
  virtual std::uint32_t qp_num() const noexcept = 0;
  virtual QpState state() const noexcept = 0;
  // The first packet sequence number this QP sends (24 bits; the peer
  // expects it), as tools such as perftest print it. A provider with no
  // packets on any wire (self) has none and says 0.
  virtual std::uint32_t initial_psn() const noexcept = 0;

  // This QP's address, to be handed to the peer.
  virtual Result<EndpointAddress> local_address() const = 0;
  // Connects to the peer QP named by `remote`: RESET/INIT -> RTR -> RTS.
  virtual Status connect(const EndpointAddress& remote) = 0;
  // Moves the QP to the error state: outstanding work completes with
  // WR_FLUSH_ERR. Idempotent.
  virtual Status set_error() = 0;

  // Posts work requests in order. Stops at the first invalid request, which
  // is not posted, and says why; requests before it are posted. In the
  // error state both return FAILED_PRECONDITION (where verbs would accept
  // and flush). Errors that complete: a remote access error moves both QPs
  // to the error state, RNR retries exhausted only the requester; a
  // WRITE_WITH_IMM consumes a receive and, with none posted, is
  // receiver-not-ready before any rkey or rights check.
  virtual PostResult post(std::span<const WorkRequest> wrs) noexcept = 0;
  virtual PostResult post_recv(std::span<const RecvRequest> wrs) noexcept = 0;

  // This QP's counters; same naming rules as Device::read_counters().
  virtual Result<std::vector<CounterSample>> read_counters() const { return std::vector<CounterSample>{}; }
};

class ProtectionDomain {
 public:
  virtual ~ProtectionDomain() = default;
  virtual Device& device() noexcept = 0;
  // Registers [addr, addr+length). Upper layers go through the registration
  // cache; this is the cache's backend.
  virtual Result<std::unique_ptr<MemoryRegion>> register_memory(void* addr, std::size_t length,
                                                                Access access) = 0;
  virtual Result<std::unique_ptr<QueuePair>> create_qp(const QpConfig& config) = 0;
};

// ---------------------------------------------------------------- provider
// Which peers a provider's QPs can reach: the threads of this process
// (self), the processes of this host (shm), or any host (a NIC). The
// endpoint manager picks the best provider of each reach that a peer needs
// (engine/endpoint/transport_plan.cpp).
enum class ProviderReach : std::uint8_t { kProcess, kHost, kNetwork };
std::string_view provider_reach_name(ProviderReach r) noexcept;  // "process", "host", "network"

class Provider {
 public:
  virtual ~Provider() = default;
  virtual std::string_view name() const noexcept = 0;         // "self", "verbs", "softroce"
  virtual std::string_view description() const noexcept = 0;
  // Higher wins among providers of one reach when RMA_PROVIDER does not
  // name one.
  virtual int priority() const noexcept = 0;
  virtual ProviderReach reach() const noexcept { return ProviderReach::kNetwork; }
  // Devices this provider can open on this machine; empty when none.
  virtual Result<std::vector<DeviceInfo>> query_devices() = 0;
  virtual Result<std::shared_ptr<Device>> open_device(std::string_view name) = 0;
};

}  // namespace rma

#pragma GCC visibility pop
