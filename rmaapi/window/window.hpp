// The object behind an rma_Win handle, and the operations on it.
//
// Each rank's window has a hidden metadata region next to it, registered for
// remote atomics, reads and writes, laid out in 8-byte words:
//
//   [0]                 passive-target lock: bit 63 writer, bits 32..62 the
//                       writer's rank + 1, bits 0..31 reader count
//   [1]                 accumulate lock: 0 free, else holder rank + 1
//   [2, 2+n)            post counters: word 2+i counts rma_win_post calls of
//                       rank i that included this rank (PSCW)
//   [2+n, 2+2n)         complete counters: word 2+n+i counts rma_win_complete
//                       calls of rank i towards this rank
//   [2+2n, ...)         dynamic windows: attachment table = version (odd
//                       while being changed), count, then kMaxAttach entries
//                       of (address, length, rkeys packed per rail)
//
// Every rank learns every other rank's base, size, disp_unit, rkey and
// metadata address at creation (one allgather), so every bound is checked at
// the origin before anything is sent. Where the memory and the metadata
// live, and which peers this rank reaches by loads and stores instead of
// work requests, is window/window_memory.hpp's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rma/sdk/endpoint_manager.hpp"
#include "rma/rma.h"
#include "window/context.hpp"
#include "window/deferred_accumulate.hpp"
#include "window/info.hpp"
#include "window/window_memory.hpp"

namespace rma::api {

struct PeerWindow {
  std::uint64_t base = 0;  // in the peer's address space (what the NIC targets)
  std::uint64_t size = 0;
  std::uint64_t meta = 0;
  endpoint::RemoteKeys rkeys;       // the window memory's, per rail
  endpoint::RemoteKeys meta_rkeys;  // the metadata's
  std::int32_t disp_unit = 1;
  std::int32_t flavor = 0;
  // The keys of the rail that joins this rank to the peer, resolved once
  // when the window is made.
  std::uint32_t rkey = 0;
  std::uint32_t meta_rkey = 0;
  // This rank's load/store view of the peer's window memory (a mapping of
  // the peer's shared segment, or this rank's own memory), or null
  // (window/window_memory.hpp). Byte `base + k` of the peer is `mapped + k`.
  std::byte* mapped = nullptr;
  // The peer's metadata words, when synchronization on them is CPU atomics
  // here (window/direct.hpp), or null: NIC atomics through the endpoint.
  std::uint64_t* direct_meta = nullptr;
  // Communication with the peer is loads, stores and CPU atomics on
  // `mapped` (and direct_meta), never a work request.
  bool direct = false;

  // Where the peer's byte at `addr` (its address space) is mapped here.
  std::byte* local(std::uint64_t addr) const noexcept { return mapped + (addr - base); }
};

// A dynamic window's attachment, as published in the metadata table.
struct Attachment {
  std::uint64_t addr = 0;
  std::uint64_t len = 0;
  std::uint64_t rkeys = 0;  // endpoint::RemoteKeys::pack()
};

inline constexpr std::uint64_t kWriterBit = std::uint64_t{1} << 63;
inline constexpr std::uint32_t kMaxAttach = 64;

}  // namespace rma::api

struct rma_win_s {
  static constexpr std::uint32_t kMagic = 0x5257494e;  // "RWIN"
  std::uint32_t magic = kMagic;
  rma::api::Context* ctx = nullptr;
  int flavor = RMA_WIN_FLAVOR_CREATE;
  int model = RMA_WIN_UNIFIED;
  void* base = nullptr;
  rma_Aint size = 0;
  int disp_unit = 1;
  rma_Errhandler errhandler = RMA_ERRORS_ARE_FATAL;
  rma::api::WindowHints hints;
  // The communicator the window was made on (a private copy: the program
  // may free its handle). Every rank number of the window is a rank of it:
  // window rank t is world rank comm.ranks[t], this process comm.rank.
  rma_comm_s comm;
  rma::endpoint::Endpoint& endpoint(int t) noexcept {
    return ctx->eps().endpoint(comm.ranks[static_cast<std::size_t>(t)]);
  }
  int rank() const noexcept { return comm.rank; }
  std::string name;                                  // rma_win_set_name
  std::vector<std::pair<int, void*>> attributes;     // user keyval -> value, in setting order

  std::vector<rma::api::PeerWindow> peers;
  int npeers = 0;                 // peers.size(), for the data path's bound check
  std::uint64_t* meta = nullptr;  // this rank's metadata words
  std::size_t meta_words = 0;
  // Declared before the registrations: they are released first.
  rma::api::WindowStorage storage;
  rma::endpoint::ExposedRegion win_reg;
  rma::endpoint::ExposedRegion meta_reg;

  // Dynamic windows: this rank's attachments (with their registrations) and
  // what this rank last read of every peer's table.
  struct Local {
    std::uint64_t addr, len;
    rma::endpoint::ExposedRegion reg;
  };
  std::vector<Local> attached;
  std::vector<std::vector<rma::api::Attachment>> remote_tables;

  // Epochs (MPI 4.x 12.5). access_count[t] > 0: an epoch allows access to t.
  bool fence_open = false;
  bool lock_all = false;
  bool lock_all_nocheck = false;
  std::vector<std::uint8_t> locks;  // 0 none, 1 shared, 2 exclusive, per target
  std::vector<std::uint32_t> access_count;
  bool start_active = false;
  std::vector<int> start_group;
  std::vector<std::uint64_t> starts_with;  // epochs started towards each target
  bool post_active = false;
  std::vector<int> post_group;
  std::vector<std::uint64_t> completes_expected;  // from each origin
  // Accumulates recorded under accumulate_ordering=none, run at the next
  // synchronization (made on first use).
  std::unique_ptr<rma::api::DeferredAccumulates> deferred;

  std::uint64_t post_word(int rank) const noexcept { return 2 + static_cast<std::uint64_t>(rank); }
  std::uint64_t complete_word(int rank) const noexcept {
    return 2 + peers.size() + static_cast<std::uint64_t>(rank);
  }
  std::uint64_t table_word() const noexcept { return 2 + 2 * peers.size(); }
  // Attachment tables read from peers are trusted only until the next
  // synchronization call: MPI makes programs synchronize between a detach
  // and later accesses, so re-reading after each one sees every detach.
  void forget_remote_tables() noexcept {
    for (auto& t : remote_tables) t.clear();
  }
  bool may_access(int target) const noexcept {
    return fence_open || lock_all || access_count[static_cast<std::size_t>(target)] != 0;
  }
};

namespace rma::api {

// ---- window life cycle (window.cpp)
// Collective over `comm`.
Result<rma_win_s*> create_window(Context& ctx, const rma_comm_s& comm, int flavor, void* base,
                                 rma_Aint size, int disp_unit, const WindowHints& hints = {});
// Deregisters and frees a window's memory locally (free_window after its
// barrier, and a context's windows the program never freed).
void release_window_memory(rma_win_s* win) noexcept;
// RMA_ERR_RMA_SYNC while an epoch is open (nothing is freed then).
Status check_free(rma_win_s* win);
// Collective; frees the window even when it reports an error.
Status free_window(rma_win_s* win);
Status attach(rma_win_s* win, void* base, rma_Aint size);
Status detach(rma_win_s* win, const void* base);
// Checks that the handle is a live window of the calling thread's context.
Status check_window(rma_win_s* win);

// ---- user attributes (attributes.cpp)
// Whether the window has a value for a user keyval; RMA_ERR_KEYVAL for an unknown keyval.
Result<bool> find_window_attribute(rma_win_s* win, int keyval, void** value);
// Runs every attribute's delete callback (rma_win_free); stops at a failing one.
Status delete_window_attributes(rma_win_s* win);

// ---- communication (operations.cpp). `req` (may be null) is counted up by
// every signaled work request; blocking calls pass the window's own.
struct OpArgs {
  const void* origin = nullptr;
  int origin_count = 0;
  rma_Datatype origin_type = nullptr;
  void* result = nullptr;
  int result_count = 0;
  rma_Datatype result_type = nullptr;
  const void* compare = nullptr;
  int target = 0;
  rma_Aint target_disp = 0;
  int target_count = 0;
  rma_Datatype target_type = nullptr;
  rma_Op op = RMA_OP_NULL;
};
Status put(rma_win_s* win, const char* call, const OpArgs& a, endpoint::Request* req);
Status get(rma_win_s* win, const char* call, const OpArgs& a, endpoint::Request* req);
// accumulate (fetch = false) and get_accumulate (fetch = true).
Status accumulate(rma_win_s* win, const char* call, const OpArgs& a, bool fetch,
                  endpoint::Request* req);
Status compare_and_swap(rma_win_s* win, const char* call, const OpArgs& a,
                        endpoint::Request* req);

// Data-path shortcuts for small operations on dense types: true when the
// call was posted; false (nothing posted) sends the caller down the checked
// path above. Never report errors.
// (FastArgs has no initialisers: building an OpArgs zero-fills ~100 bytes,
// which costs more than the checks.) origin is the local buffer, also for get.
struct FastArgs {
  const void* origin;
  int origin_count;
  rma_Datatype origin_type;
  int target;
  rma_Aint target_disp;
  int target_count;
  rma_Datatype target_type;
};
bool put_fast(rma_win_s* win, const FastArgs& a) noexcept;
bool get_fast(rma_win_s* win, const FastArgs& a) noexcept;
bool fetch_and_op_fast(rma_win_s* win, const FastArgs& a, const void* result, rma_Op op) noexcept;
// rma_accumulate of one predefined type (not an 8-byte one) on a mapped
// target, in place under the target's accumulate lock (accumulate.cpp).
bool accumulate_fast(rma_win_s* win, const FastArgs& a, rma_Op op) noexcept;
// 8-byte integer compare_and_swap; a.origin is the new value.
bool compare_and_swap_fast(rma_win_s* win, const FastArgs& a, const void* compare, void* result) noexcept;
// rma_win_flush's: a passive epoch to `target` is open, nothing was
// recorded (accumulate_ordering=none), and its operations completed.
bool flush_fast(rma_win_s* win, int target) noexcept;

// A synchronous 8-byte atomic on `target`'s metadata word: the old value.
Result<std::uint64_t> meta_atomic(rma_win_s* win, int target, std::uint64_t word, Opcode op,
                                  std::uint64_t compare_add, std::uint64_t swap);
// Turns an endpoint failure into an RMA_ERR_OTHER status naming the call and peer.
Status transport_error(rma_win_s* win, const char* call, int target, StatusCode code);

// ---- synchronization (synchronization.cpp)
Status fence(rma_win_s* win, int assert_);
Status lock(rma_win_s* win, int lock_type, int target, int assert_);
Status unlock(rma_win_s* win, int target);
Status lock_all(rma_win_s* win, int assert_);
Status unlock_all(rma_win_s* win);
// What a flush waits for: every operation completed at the target
// (rma_win_flush), or only locally, its origin and result buffers free
// (rma_win_flush_local: inline puts need no acknowledgement for that).
enum class FlushScope { kRemote, kLocal };
Status flush(rma_win_s* win, const char* call, int target, FlushScope scope = FlushScope::kRemote);
// The epoch-free core of flush: the target's operations complete (a fence
// for a mapped target, the endpoint's flush otherwise).
StatusCode flush_target(rma_win_s* win, int target, FlushScope scope) noexcept;
Status flush_all(rma_win_s* win, const char* call, FlushScope scope = FlushScope::kRemote);
Status post(rma_win_s* win, rma_group_s* group, int assert_);
Status start(rma_win_s* win, rma_group_s* group, int assert_);
Status complete(rma_win_s* win);
Status wait(rma_win_s* win);
Result<bool> test(rma_win_s* win);

}  // namespace rma::api
