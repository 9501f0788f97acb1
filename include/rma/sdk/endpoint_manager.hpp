// Endpoint manager: one reliable-connected QP per peer of a job (the peer
// may be this rank: a loopback QP, so a rank reaches its own memory through
// the same path as everyone else and its atomics stay atomic with theirs),
// connected through the Bootstrap by exchanging EndpointAddress blobs.
//
// Rails: the manager drives up to two devices, each with its protection
// domain, registration cache and CQ. The network rail (a NIC: verbs, else
// softroce) serves peers on other hosts; the node rail (shm) serves the
// peers on this rank's host, this rank included. Which rail serves which
// peer is the TransportPlan's choice (plan_transports: host identities
// exchanged at bootstrap, RMA_PROVIDER forcing one provider for all), and
// it is symmetric: both ends of a pair use the same rail. Memory a peer
// reaches is registered on every rail (register_exposed) and its keys are
// published packed (RemoteKeys); a peer picks the key of the rail that
// joins them. Local keys come from the rail of the endpoint that posts.
//
// On top of the provider contract it adds what every user of a QP would
// otherwise repeat:
//
//  - credits: a work request is posted only when its send-queue slot is
//    free, the CQ has room for its completion and, for READs and atomics,
//    the QP is below its limit of outstanding reads/atomics; otherwise the
//    poster progresses until it is (with a deadline, never forever);
//  - selective signaling: a request is signaled when something waits for it
//    (a request counter, a registration to release, bytes to copy out of
//    the bounce buffer), when it is a READ or atomic, or every
//    signal_interval posts so that unsignaled slots are recycled. RC
//    completes in order, so a signaled completion retires every earlier
//    slot;
//  - requests: a user operation is a Request counted up by each signaled
//    work request it posted; it is done when all have completed and failed
//    with the first error;
//  - bounce buffers: a small registered area per send slot for atomic
//    results and small READs, copied out to the user's buffer when the
//    completion is polled, so small operations never touch the
//    registration cache;
//  - progress(): polls the CQ and dispatches completions.
//
// Threading: by default a manager belongs to one thread at a time (one
// rank) and does no locking. With EndpointOptions::thread_safe (the API's
// RMA_THREAD_MULTIPLE, and what a layer driving one manager from several
// threads sets) every call of Endpoint and EndpointManager takes the
// manager's (recursive) lock itself, waits take it once per poll so that
// other threads post and progress meanwhile, and Request counters change
// only under it. A reserve() -> bounce() -> post() sequence must hold
// lock() across the three so that no other thread takes the slot between
// them; reading a Request's fields directly (rather than through wait())
// needs lock() too. Data-path calls are noexcept and never allocate.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "rma/sdk/bootstrap.hpp"
#include "rma/sdk/provider.hpp"
#include "rma/sdk/registration_cache.hpp"
#include "rma/sdk/status.hpp"

// librma is built with hidden visibility: what this header declares is
// part of its exported interface.
#pragma GCC visibility push(default)

namespace rma::endpoint {

// ------------------------------------------------------------------ rails
inline constexpr int kMaxRails = 2;
inline constexpr int kNetworkRail = 0;  // peers on other hosts; every peer when one provider is forced
inline constexpr int kNodeRail = 1;     // peers on this host (shm)

// The remote keys of one exposed region, one per rail (0 where the rank has
// no such rail). Published as is: 8 bytes, the same layout on every rank.
struct RemoteKeys {
  std::uint32_t key[kMaxRails] = {0, 0};
  std::uint32_t for_rail(int rail) const noexcept { return key[static_cast<unsigned>(rail) & 1u]; }
  // As one 64-bit word (tables peers read word by word): rail 0 low.
  std::uint64_t pack() const noexcept { return std::uint64_t{key[0]} | std::uint64_t{key[1]} << 32; }
  static RemoteKeys unpack(std::uint64_t w) noexcept {
    RemoteKeys k;
    k.key[0] = static_cast<std::uint32_t>(w);
    k.key[1] = static_cast<std::uint32_t>(w >> 32);
    return k;
  }
  friend bool operator==(const RemoteKeys& a, const RemoteKeys& b) noexcept {
    return a.key[0] == b.key[0] && a.key[1] == b.key[1];
  }
};
static_assert(sizeof(RemoteKeys) == 8);

// Which device serves which peer (see "Rails" above). Collective to build.
struct TransportPlan {
  std::shared_ptr<Device> devices[kMaxRails];  // either may be null: no peer needs it
  std::vector<std::uint8_t> rail_of;           // per rank of the job
  // Per rank: an index of its host (0 = the host of rank 0, then in order of
  // first appearance); equal values <=> same host identity (rma::node).
  std::vector<std::int32_t> host_of;
  bool forced = false;  // one provider serves every peer (RMA_PROVIDER, a named provider, or a given device)
  // One line for people: "shm (shm0) for 3 peers on this host, softroce
  // (softroce0) for 4 peers on 1 other host".
  std::string summary;
};

struct PlanRequest {
  std::string provider;             // "" = RMA_PROVIDER, else a provider per peer
  std::string device;               // "" = RMA_DEVICE, else the provider's first (the forced or network provider)
  std::shared_ptr<Device> device_object;  // set: this device serves every peer (tests, tools)
  // Per-peer choice only: the providers of each rail ("" = the best one of
  // reach host / network) and this rank's host identity ("" =
  // node::host_identity()); for tests that run a job's ranks as threads.
  std::string node_provider;
  std::string network_provider;
  std::string host_identity;
  // Replaces the cross-memory-attach probe of a peer (rank, pid, address,
  // expected word); empty = node::probe_cross_memory_attach. For tests of
  // the refusal paths, which need another user or a Yama setting otherwise.
  std::function<Status(int rank, std::uint32_t pid, std::uint64_t addr, std::uint64_t expect)> probe;
};

// Collective over the bootstrap: every rank publishes its host identity,
// its pid and whether it could open a node device; ranks of one host probe
// cross-memory attach to each other (process_vm_readv) and publish the
// result. A pair of ranks on one host uses the node rail when both opened
// the node provider and both probes succeeded; other pairs use the network
// rail. A refused probe (another user, kernel.yama.ptrace_scope) is an
// error naming the cause unless RMA_SHM_FALLBACK=network lets that pair use
// the network rail. With a forced provider every peer uses it (a host-only
// provider forced on a job that spans hosts is an error naming the ranks).
Result<TransportPlan> plan_transports(Bootstrap& bootstrap, const PlanRequest& request = {});

// One user operation: counts its signaled work requests still in flight.
struct Request {
  std::uint32_t pending = 0;
  WcStatus error = WcStatus::kSuccess;  // first error of any of its work requests
  std::uint32_t vendor_err = 0;
  int error_peer = -1;

  bool done() const noexcept { return pending == 0; }
  bool failed() const noexcept { return error != WcStatus::kSuccess; }
};

struct EndpointOptions {
  std::uint32_t sq_depth = 128;         // send-queue slots per QP
  std::uint32_t signal_interval = 0;    // 0: sq_depth / 4
  std::uint32_t bounce_bytes = 256;     // bounce area per send slot (>= 8)
  std::uint32_t max_sge = 16;           // capped by the device
  std::uint32_t max_inline = 256;       // capped by the device
  std::chrono::milliseconds timeout{60000};  // deadline of every blocking wait
  bool thread_safe = false;             // lock every call (see "Threading" above)
  // Bootstrap key the addresses are exchanged under: a job that creates
  // several managers (OpenSHMEM's private contexts) gives each its own.
  std::string bootstrap_key = "rma.endpoints";
};

// What happens when a posted work request completes.
struct OnComplete {
  Request* request = nullptr;          // counted down (and failed on error)
  RegistrationCache::Handle handle;    // released
  void* copy_to = nullptr;             // receives copy_len bytes of the slot's bounce area
  std::uint32_t copy_len = 0;
};

class EndpointManager;

// One device the manager drives, and what the manager owns on it.
struct Rail {
  std::shared_ptr<Device> device;
  std::shared_ptr<ProtectionDomain> pd;
  std::unique_ptr<RegistrationCache> rcache;
  std::shared_ptr<CompletionQueue> cq;
  std::uint32_t cq_depth = 0;
  std::uint32_t cq_outstanding = 0;  // signaled posts whose completion is not yet polled
  std::unordered_map<std::uint32_t, int> by_qpn;  // QP number -> peer
  std::uint32_t last_qpn = 0xffffffffu;  // QP numbers are 24 bits: never matches at first
  int last_peer = 0;
  std::uint32_t lkey_bounce = 0;  // the bounce areas' local key on this device
};

// Memory registered on every rail of a manager (exactly its bytes, never
// cached: see RegistrationCache::acquire_exact), for memory peers reach.
class ExposedRegion {
 public:
  ExposedRegion() = default;
  explicit operator bool() const noexcept { return any_; }
  // The local key on `rail` (0 when the manager has no such rail).
  std::uint32_t lkey(int rail) const noexcept {
    return handles_[rail] ? handles_[rail].lkey() : 0;
  }
  // What peers need: the rkey of each rail.
  RemoteKeys rkeys() const noexcept;
  void reset() noexcept;

 private:
  friend class EndpointManager;
  RegistrationCache::Handle handles_[kMaxRails];
  bool any_ = false;
};

class Endpoint {
 public:
  int peer() const noexcept { return peer_; }
  // The rail that serves this peer (kNetworkRail or kNodeRail).
  int rail() const noexcept { return rail_index_; }
  // Its device's registration cache: local keys of what this endpoint posts.
  RegistrationCache& rcache() noexcept;
  const DeviceCaps& caps() const noexcept;
  // The key of this endpoint's rail among a peer's published keys.
  std::uint32_t rkey(const RemoteKeys& keys) const noexcept { return keys.for_rail(rail_index_); }
  // Nothing posted to this peer is still in flight. Every operation's last
  // work request must be signaled (post(..., signal = true)) for this to
  // become true: an unsignaled tail has no completion to wait for.
  bool idle() const noexcept { return head_ == tail_ && retired_ == next_seq_; }
  // A work request failed: the QP is in the error state and takes no more.
  bool broken() const noexcept { return broken_; }
  WcStatus error() const noexcept { return error_; }
  std::uint32_t vendor_err() const noexcept { return vendor_err_; }
  std::uint32_t max_inline() const noexcept { return max_inline_; }
  std::uint32_t max_sge() const noexcept { return max_sge_; }
  // READs and atomics this endpoint keeps in flight at most: the smaller of
  // what its QP may initiate and what the peer's device can answer.
  std::uint32_t max_rd_atomic() const noexcept { return max_rd_atomic_; }

  // Waits (progressing) for a send slot, CQ room and, when read_or_atomic,
  // a read/atomic credit. After kOk, bounce() names the slot the next post()
  // uses. kTimeout when the deadline passes, kFailedPrecondition when broken.
  StatusCode reserve(bool read_or_atomic) noexcept;
  // The bounce area of the next post (valid until that request completes):
  // an SGE of `len` bytes (<= bounce_bytes) with its lkey. Call reserve() first.
  Sge bounce(std::uint32_t len) const noexcept;
  std::uint32_t bounce_bytes() const noexcept;

  // Posts one work request (wr_id and the signaled flag are set here) after
  // reserve(). wr.wr_id and wr.flags are overwritten. `signal` forces a completion; so does a non-empty on_complete,
  // a READ or an atomic. Errors: kFailedPrecondition (broken), kTimeout, or
  // the provider's rejection (reason in last_reject()).
  StatusCode post(WorkRequest& wr, OnComplete&& on_complete, bool signal = false) noexcept;
  // One 8-byte atomic (kAtomicCmpSwap or kAtomicFetchAdd) at remote_addr:
  // reserve(), bounce() and post() under one lock(). The old value lands in
  // the slot's bounce area and is copied to on_complete.copy_to (copy_len 8)
  // on completion.
  StatusCode post_atomic(Opcode op, std::uint64_t remote_addr, std::uint32_t rkey,
                         std::uint64_t compare_add, std::uint64_t swap,
                         OnComplete&& on_complete) noexcept;

  // Progresses until everything posted to this peer has completed.
  StatusCode flush() noexcept;
  // Progresses until every local buffer that a post to this peer named is
  // free again (MPI's flush_local): the user's origin buffers may be
  // reused and fetched results are in place. Writes whose payload was
  // copied at post time (inline, or from the bounce area) are locally
  // complete once posted, so this does not wait for the target's
  // acknowledgement of them; READs, atomics and writes from user memory
  // (which a retransmission reads again) wait for their completion. As for
  // flush(), an operation's last work request must be signaled.
  StatusCode flush_local() noexcept;
  // Every post so far is locally complete (see flush_local()).
  bool locally_idle() const noexcept { return retired_ >= local_seq_; }

  const char* last_reject() const noexcept { return last_reject_; }
  QueuePair& qp() noexcept { return *qp_; }

 private:
  friend class EndpointManager;
  struct Pending {
    std::uint64_t seq = 0;
    bool read_or_atomic = false;
    OnComplete action;
  };

  void complete(std::uint64_t seq, WcStatus status, std::uint32_t vendor_err) noexcept;
  void finish(Pending& p, WcStatus status, std::uint32_t vendor_err) noexcept;
  void fail_all(WcStatus status, std::uint32_t vendor_err) noexcept;

  EndpointManager* mgr_ = nullptr;
  Rail* rail_ = nullptr;
  int rail_index_ = kNetworkRail;
  int peer_ = -1;
  std::unique_ptr<QueuePair> qp_;
  std::uint32_t depth_ = 0;       // send-queue credits
  std::uint64_t mask_ = 0;        // ring/bounce slots - 1 (a power of two >= depth_)
  std::uint32_t signal_interval_ = 1;
  std::uint32_t max_rd_atomic_ = 1;
  std::uint32_t max_inline_ = 0;
  std::uint32_t max_sge_ = 1;
  std::uint8_t* bounce_base_ = nullptr;  // (mask_ + 1) * bounce_bytes
  std::uint64_t next_seq_ = 0;       // seq of the next post
  std::uint64_t retired_ = 0;        // every seq below is complete
  std::uint64_t last_signaled_ = 0;  // seq + 1 of the last signaled post
  std::uint64_t local_seq_ = 0;      // seq + 1 of the last post that uses local memory until it completes
  std::uint32_t reads_ = 0;          // READs/atomics in flight
  std::unique_ptr<Pending[]> ring_;  // signaled posts in flight, mask_ + 1 entries
  std::uint64_t head_ = 0, tail_ = 0;
  bool broken_ = false;
  WcStatus error_ = WcStatus::kSuccess;
  std::uint32_t vendor_err_ = 0;
  const char* last_reject_ = nullptr;
};

class EndpointManager {
 public:
  // Collective over the bootstrap: creates one QP per rank, on the device of
  // the rail the plan gives it, exchanges their addresses (key
  // options.bootstrap_key), connects them all and waits at a barrier until
  // every rank is connected.
  static Result<std::unique_ptr<EndpointManager>> create(Bootstrap& bootstrap, const TransportPlan& plan,
                                                         EndpointOptions options = {});
  // The same with `device` serving every peer (plan_transports with it forced).
  static Result<std::unique_ptr<EndpointManager>> create(Bootstrap& bootstrap,
                                                         std::shared_ptr<Device> device,
                                                         EndpointOptions options = {});
  ~EndpointManager();
  EndpointManager(const EndpointManager&) = delete;
  EndpointManager& operator=(const EndpointManager&) = delete;

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return static_cast<int>(endpoints_.size()); }
  Endpoint& endpoint(int peer) noexcept { return endpoints_[static_cast<std::size_t>(peer)]; }
  const EndpointOptions& options() const noexcept { return options_; }

  // Rails: whether this manager has one, and its parts (has_rail first).
  bool has_rail(int rail) const noexcept { return rails_[rail].device != nullptr; }
  Device& device(int rail) noexcept { return *rails_[rail].device; }
  ProtectionDomain& pd(int rail) noexcept { return *rails_[rail].pd; }
  RegistrationCache& rcache(int rail) noexcept { return *rails_[rail].rcache; }
  // The plan the manager was built from (rails per peer, hosts).
  const TransportPlan& plan() const noexcept { return plan_; }
  bool same_host(int peer) const noexcept {
    return plan_.host_of[static_cast<std::size_t>(peer)] == plan_.host_of[static_cast<std::size_t>(rank_)];
  }
  // "shm (shm0)": the provider and device that serve `peer`.
  std::string transport_of(int peer) const;

  // Registers exactly [addr, addr+length) with exactly `access` on every
  // rail, for memory whose keys are given to peers.
  Result<ExposedRegion> expose(const void* addr, std::size_t length, Access access);
  // Drops every rail's cached registrations of [addr, addr+length).
  void invalidate(const void* addr, std::size_t length) noexcept;

  // Polls every rail's CQ once and dispatches what it found; returns the
  // number of completions, or -1 when a CQ overran (every endpoint is then
  // broken).
  int progress() noexcept;
  // Progresses until `request` is done. kTimeout at the deadline.
  StatusCode wait(const Request& request) noexcept;
  // Progresses until every endpoint is idle.
  StatusCode flush_all() noexcept;

  // Held across a reserve() -> bounce() -> post() sequence (and while reading
  // Requests) when the manager is thread-safe; owns nothing otherwise.
  // Recursive: the calls made while holding it take it again.
  std::unique_lock<std::recursive_mutex> lock() noexcept {
    return thread_safe_ ? std::unique_lock<std::recursive_mutex>(mu_)
                        : std::unique_lock<std::recursive_mutex>();
  }
  bool thread_safe() const noexcept { return thread_safe_; }

  // Deadline helper for callers' own waits: true once `start + timeout` passed.
  bool expired(std::chrono::steady_clock::time_point start) const noexcept {
    return std::chrono::steady_clock::now() - start > options_.timeout;
  }

 private:
  friend class Endpoint;
  EndpointManager() = default;

  Rail rails_[kMaxRails];
  int first_rail_ = kNetworkRail;  // progress polls [first_rail_, last_rail_]
  int last_rail_ = kNetworkRail;
  TransportPlan plan_;
  EndpointOptions options_;
  int rank_ = 0;
  std::vector<std::uint8_t> bounce_;      // every endpoint's bounce areas
  ExposedRegion bounce_reg_;
  std::vector<Endpoint> endpoints_;
  static constexpr int kPollBatch = 32;
  std::unique_ptr<Completion[]> poll_buf_;  // filled by poll(), never re-initialised
  bool thread_safe_ = false;
  std::recursive_mutex mu_;  // taken only when thread_safe_
  int progress_locked() noexcept;
  int poll_rail(Rail& rail) noexcept;
  // Progresses (taking lock() once per poll, so other threads post
  // meanwhile) until done() holds; kTimeout at the deadline,
  // kFailedPrecondition when the CQ overran.
  template <typename Done>
  StatusCode progress_until(Done&& done) noexcept;
  // The SGEs name only the bounce areas (copied there by the poster).
  bool in_bounce(std::span<const Sge> sgl) const noexcept;
  bool cq_overrun_ = false;
};

// "REM_ACCESS_ERR (vendor error 17)".
std::string describe_error(WcStatus status, std::uint32_t vendor_err);

}  // namespace rma::endpoint

#pragma GCC visibility pop
