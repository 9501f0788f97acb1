// The OpenSHMEM runtime of one process (one PE): the bootstrap, the
// endpoints (one RC QP to every PE, the own one included, from
// engine/endpoint/), the symmetric heap and the program's data and bss
// segments, registered once and described to every other PE, and the
// primitives the C API is built from: put, get, NIC atomics, quiet, and the
// point-to-point signals the collectives use.
//
// Symmetric addresses: a local address inside the heap or a data segment is
// translated to the target PE's address by its offset in that area; every PE
// publishes its areas' bases and rkeys at shmem_init, so position-
// independent executables whose globals sit at different addresses on each
// PE still work.
//
// Errors: the spec has no error codes. Every bad input is reported with the
// routine, the PE and what was wrong, then the job ends as shmem_global_exit
// ends it (fail()).
//
// The direct path: to a PE whose heap is mapped here (SHMEM_TEAM_SHARED's
// PEs, which the node rail serves) and when no provider is forced
// (RMA_PROVIDER keeps everything on the endpoints), put and get of heap
// memory are memcpy into and out of the mapping and AMOs CPU atomics on it
// (shmem/direct.hpp), complete when the call returns; the program's
// globals (private memory of each process) stay on the endpoints. The
// software NICs execute remote atomics as CPU atomics on the target's
// memory, so an AMO here and one from another host through the NIC on the
// same word are atomic with respect to each other.
//
// Threading: under SHMEM_THREAD_MULTIPLE every call into the endpoint manager
// holds `mutex` (the manager belongs to one thread at a time); under the
// other levels the lock is skipped.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "rma/sdk/endpoint_manager.hpp"
#include "rma/sdk/bootstrap.hpp"
#include "rma/sdk/registration_cache.hpp"
#include "rma/shmem.h"
#include "shmem/heap.hpp"

// A team: its members are the world PEs start + i * stride, i < size (every
// team OpenSHMEM can make from SHMEM_TEAM_WORLD by strided and 2-D splits is
// such a progression).
struct shmem_team_s {
  static constexpr std::uint32_t kMagic = 0x53544d31;  // "STM1"
  std::uint32_t magic = kMagic;
  int start = 0, stride = 1, size = 1;
  int my_pe = -1;  // this PE's index, -1 when not a member
  shmem_team_config_t config{};
  long config_mask = 0;
  bool predefined = false;
  std::atomic<int> contexts{0};  // live contexts created on this team

  int world_pe(int team_pe) const noexcept { return start + team_pe * stride; }
  // The team index of a world PE, or -1.
  int team_pe(int world) const noexcept {
    const int d = world - start;
    if (stride == 0) return d == 0 ? 0 : -1;
    if (d % stride != 0) return -1;
    const int i = d / stride;
    return (i >= 0 && i < size) ? i : -1;
  }
};

namespace rma::shmem {
struct Channel;
}

struct shmem_ctx_s {
  static constexpr std::uint32_t kMagic = 0x53435831;  // "SCX1"
  std::uint32_t magic = kMagic;
  shmem_team_s* team = nullptr;
  long options = 0;
  // A private context's own connections (no lock needed), or nullptr: the
  // PE's shared ones, locked under SHMEM_THREAD_MULTIPLE.
  rma::shmem::Channel* channel = nullptr;
};

namespace rma::shmem {

// One registered symmetric area (the heap or a writable segment of the
// executable) as one PE sees it.
struct Area {
  std::uint64_t base = 0;
  std::uint64_t length = 0;
  endpoint::RemoteKeys rkeys;  // per rail (endpoint_manager.hpp)
};
inline constexpr int kMaxAreas = 4;  // the heap + up to 3 writable segments
struct PeerAreas {
  std::uint32_t count = 0;
  Area areas[kMaxAreas];
};

// Where a symmetric range lives on a target PE.
struct Remote {
  std::uint64_t addr = 0;
  std::uint32_t rkey = 0;
};

enum class AmoOp : std::uint8_t { kFetch, kSet, kCswap, kSwap, kAdd, kAnd, kOr, kXor };

// One set of connections to every PE (an endpoint manager on the PE's
// device) with the symmetric areas registered on its protection domain and
// every PE's rkeys for them. Channel 0 is the PE's shared one (the default
// context, collectives); the others are handed to private contexts, which
// then use them from one thread without any lock.
struct Channel {
  std::unique_ptr<endpoint::EndpointManager> eps;
  std::vector<endpoint::ExposedRegion> regs;     // one per local area
  std::vector<PeerAreas> peers;                  // every PE's areas, by world PE
  bool taken = false;                            // held by a private context
};

class Runtime {
 public:
  static Status init(int requested_thread_level);
  static void finalize();

  int me = 0, npes = 1;
  int thread_level = SHMEM_THREAD_SINGLE;
  std::unique_ptr<Bootstrap> boot;
  std::vector<std::unique_ptr<Channel>> channels;  // [0]: shared; then private contexts' pool
  endpoint::EndpointManager* eps = nullptr;        // channels[0]'s
  Channel& main() noexcept { return *channels[0]; }

  // Heap: [heap, heap + heap_bytes); offsets [0, reserved) hold the runtime's
  // own symmetric state (signal counters, collective scratch).
  std::byte* heap = nullptr;
  std::size_t heap_bytes = 0;
  int heap_fd = -1;                      // the heap's memfd (-1: anonymous memory)
  std::vector<std::byte*> peer_heaps;    // every PE's heap mapped here, or nullptr
  // The heaps the direct path reaches (see above): peer_heaps[pe] when the
  // node rail serves pe and no provider is forced, else nullptr.
  std::vector<std::byte*> direct_heaps;
  bool any_direct = false;
  // Where symmetric [addr, addr + bytes) of world PE wpe is mapped here when
  // the direct path reaches it (heap memory of a direct PE), else nullptr.
  std::byte* direct(const void* addr, std::size_t bytes, int wpe) const noexcept {
    std::byte* base = direct_heaps[static_cast<std::size_t>(wpe)];
    const std::uintptr_t off = reinterpret_cast<std::uintptr_t>(addr) - reinterpret_cast<std::uintptr_t>(heap);
    if (base == nullptr || off > heap_bytes || bytes > heap_bytes - off) return nullptr;
    return base + off;
  }

  std::size_t reserved = 0;
  SymmetricAllocator alloc;
  PeerAreas local;  // areas as registered here (rkeys of channel 0)

  // Signals: signal_in[j] (symmetric, in the reserved area) counts what PE j
  // signalled to this PE; sent[j] / consumed[j] are this PE's local counts.
  volatile std::uint64_t* signal_in = nullptr;
  std::vector<std::uint64_t> sent, consumed;
  // Reduction scratch (symmetric): slot j (slot_bytes) receives what world
  // PE j contributes as a tree child; then one local accumulator.
  std::size_t slot_bytes = 0;
  std::byte* scratch = nullptr;
  std::byte* accumulator = nullptr;

  shmem_team_s* world = nullptr;   // SHMEM_TEAM_WORLD
  shmem_team_s* shared = nullptr;  // SHMEM_TEAM_SHARED
  std::set<const void*> live_teams, live_ctxs;
  std::vector<shmem_ctx_s*> retired_ctxs;  // destroyed: kept so a stale handle is detected, freed at finalize

  std::recursive_mutex mutex;

  // ---- checks (fail() on bad input)
  [[noreturn]] void fail(const char* routine, int pe, const std::string& what);
  int world_pe(const char* routine, shmem_ctx_t ctx, int pe);  // ctx's team PE -> world PE
  shmem_team_s* team(const char* routine, shmem_team_t t);
  shmem_ctx_s* context(const char* routine, shmem_ctx_t c);
  // The channel a context's operations use (nullptr: the shared one).
  Channel* channel_of(const char* routine, shmem_ctx_t c);
  // The target's address for a local symmetric range, or fail().
  Remote remote(const char* routine, const void* local_addr, std::size_t bytes, int wpe, const Channel& ch);
  bool is_symmetric(const void* addr, std::size_t bytes) const noexcept;
  // shmem_ptr: a load/store pointer to `addr` on world PE wpe (its heap
  // mapped here, or this PE's own memory), or nullptr.
  void* local_pointer(const void* addr, int wpe) const noexcept;
  // The lkey of a local registered area holding [addr, addr+bytes), or false.
  bool local_key(const void* addr, std::size_t bytes, int rail, std::uint32_t& lkey, const Channel& ch) const noexcept;

  // ---- data path (callers hold the lock for the shared channel: see Lock).
  // ch == nullptr: the shared channel.
  void put(const char* routine, void* dest, const void* src, std::size_t bytes, int wpe, bool nbi,
           Channel* ch = nullptr);
  void get(const char* routine, void* dest, const void* src, std::size_t bytes, int wpe, bool nbi,
           Channel* ch = nullptr);
  // An atomic on `bytes` (4 or 8) at symmetric `dest` of PE wpe; returns the
  // old value (zero-extended). nbi: a non-fetching op may stay in flight.
  std::uint64_t amo(const char* routine, AmoOp op, void* dest, std::size_t bytes, std::uint64_t operand,
                    std::uint64_t compare, int wpe, bool fetch, Channel* ch = nullptr);
  void quiet(const char* routine, Channel* ch = nullptr);
  // Orders this PE's puts, AMOs and signals to each PE (shmem_fence): the
  // direct path's stores by a fence, and what the endpoints still hold for a
  // PE that is also reached directly by completing it first (one QP keeps
  // the rest in order).
  void fence(const char* routine, Channel* ch = nullptr);
  // An 8-byte flag (signal) that must not be seen before the data put ahead
  // of it to the same PE: a release store on the direct path (after
  // completing what the endpoint still holds for that PE), else a put.
  void put_flag(const char* routine, std::uint64_t* dest, std::uint64_t value, int wpe, Channel* ch = nullptr);
  void progress() noexcept;
  // One turn of a wait for another PE: progress, and every 64 turns let
  // the CPU go (sched_yield), so that a PE whose action is awaited runs
  // when the job has more PEs than free cores.
  void wait_turn(std::uint32_t& turns) noexcept;
  // After a wait saw the NIC's write land: one progress under the lock, so
  // this thread synchronizes with the NIC (a software NIC writes under its
  // device lock) before it reads the data that came with the write.
  void sync_with_nic() noexcept;

  // ---- signals for collectives
  void signal(int wpe);
  void wait_signal(int wpe);
  // Waits (progressing) until pred() is true.
  template <typename Pred>
  void wait_local(Pred pred) {
    for (std::uint32_t turns = 0; !pred();) wait_turn(turns);
  }

 private:
  Status setup(int requested);
  Status map_peer_heaps();
  void choose_direct_heaps();
  void report_environment() const;
  Status open_channel(const endpoint::TransportPlan& plan, const std::string& key);
  std::uint64_t nic_atomic(Channel& ch, const char* routine, int wpe, Remote r, bool cas, std::uint64_t compare_add,
                           std::uint64_t swap);
  void post_or_fail(Channel& ch, const char* routine, int wpe, WorkRequest& wr, endpoint::OnComplete&& oc);
  void wait_or_fail(Channel& ch, const char* routine, int wpe, const endpoint::Request& r);
  [[noreturn]] void transport_failure(Channel& ch, const char* routine, int wpe, StatusCode code);
};

// The process's runtime, nullptr before shmem_init and after shmem_finalize.
// RMA_SHMEM_HEAP_EXHAUSTED=null: an allocation the heap cannot hold returns
// NULL (the specification allows it); by default it ends the job with a
// message, since most programs never check.
bool heap_exhaustion_returns_null();
Runtime* runtime() noexcept;
// The runtime, or a message naming `routine` and exit when shmem_init was not called.
Runtime& rt(const char* routine);

// Holds the runtime's lock under SHMEM_THREAD_MULTIPLE; with a private
// channel (a private context's own connections) no lock at all.
class Lock {
 public:
  explicit Lock(Runtime& r, const Channel* ch = nullptr)
      : r_(r), locked_(r.thread_level == SHMEM_THREAD_MULTIPLE && ch == nullptr) {
    if (locked_) r_.mutex.lock();
  }
  ~Lock() {
    if (locked_) r_.mutex.unlock();
  }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

 private:
  Runtime& r_;
  bool locked_;
};

}  // namespace rma::shmem
