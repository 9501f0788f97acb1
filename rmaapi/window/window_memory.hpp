// Where a window's memory and metadata live, and the load/store view the
// ranks of one host get of each other's.
//
//  - rma_win_create, rma_win_create_dynamic: the program's memory (or none)
//    and metadata words from the heap.
//  - rma_win_allocate: when some other rank of the window is on this host
//    and served by the node rail (the transport plan, no provider forced),
//    one node::SharedMemory segment per rank holds [metadata, padded to a
//    page][memory]; the window's peers on this host map it at creation and
//    then reach it with loads, stores and CPU atomics (window/direct.hpp),
//    as Open MPI's osc sm does. Otherwise (a single host rank, or a forced
//    provider) the heap, as before.
//  - rma_win_allocate_shared: always shared memory, every rank on this host:
//    one segment of the window's rank 0 holding every rank's metadata and,
//    contiguous in rank order, every rank's memory; with
//    alloc_shared_noncontig=true a segment per rank, as for allocate. Every
//    rank maps every segment (the program loads and stores through
//    rma_win_shared_query's pointers), also under a forced provider.
//
// Segments are unlinked as soon as every rank of the window mapped them
// (after one more collective), so nothing is left in /dev/shm even when a
// rank is killed later; a rank killed during creation leaves its segment
// to node::remove_stale_segments() (rmarun, the next librma process,
// rma_info --cleanup).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "rma/rma.h"
#include "rma/sdk/endpoint_manager.hpp"
#include "rma/sdk/node.hpp"
#include "rma/sdk/status.hpp"

struct rma_comm_s;

namespace rma::api {

class Context;
struct PeerWindow;

// What every rank publishes about its window at creation (one allgather).
struct WindowDescriptor {
  std::uint64_t base = 0;  // the window memory in the owner's address space
  std::uint64_t size = 0;
  std::uint64_t meta = 0;
  endpoint::RemoteKeys rkeys;       // the window memory's, per rail
  endpoint::RemoteKeys meta_rkeys;  // the metadata's
  std::int32_t disp_unit = 1;
  std::int32_t flavor = 0;
  std::int32_t failed = 0;  // this rank could not set up its memory (its own error says why)
  std::int32_t pad = 0;
  node::SegmentRef segment;  // name empty: memory and metadata are not in a shared segment
  std::uint64_t data_offset = 0;  // base and meta in `segment`
  std::uint64_t meta_offset = 0;
};

// This rank's window memory and metadata, and the segments of its peers
// that it maps. Frees what it owns on destruction.
struct WindowStorage {
  std::byte* data = nullptr;        // allocate flavors: the window memory (null for size 0)
  std::uint64_t* meta = nullptr;    // the metadata words, zeroed
  std::shared_ptr<node::SharedMemory> segment;  // holding data and meta, or null (the heap)
  std::uint64_t data_offset = 0, meta_offset = 0;
  struct HeapFree {
    void operator()(void* p) const noexcept;
  };
  std::unique_ptr<void, HeapFree> heap_data, heap_meta;
  std::vector<std::shared_ptr<node::SharedMemory>> mapped;  // peers' segments mapped here
};

// Whether window rank t's peer is reached by loads and stores from this
// rank when its memory is mapped here: the node rail serves it and no
// provider is forced (a forced provider keeps everything on its endpoints).
bool direct_rail(Context& ctx, const rma_comm_s& comm, int t);

// Allocates `meta_words` metadata words and, for the allocate flavors,
// `size` bytes of window memory, where the comment above says.
// Collective for rma_win_allocate_shared's contiguous layout (it exchanges
// the sizes and rank 0's segment); every rank then returns together, also
// on error.
Status allocate_storage(Context& ctx, const rma_comm_s& comm, int flavor, rma_Aint size, std::size_t meta_words,
                        bool noncontig, WindowStorage& out);

// This rank's descriptor fields about its storage (segment, offsets).
void describe_storage(const WindowStorage& s, WindowDescriptor& d);

// After the descriptor allgather: maps the segments of the peers on this
// host, sets every PeerWindow's load/store view (mapped, direct), then,
// collectively, unlinks this rank's segment once everyone mapped it.
// Shared windows fail on every rank (RMA_ERR_RMA_SHARED naming the ranks)
// when one rank could not map one segment; other flavors fall back to the
// endpoints for that peer.
Status map_peer_storage(Context& ctx, const rma_comm_s& comm, int flavor, std::size_t meta_words,
                        const std::vector<WindowDescriptor>& all, WindowStorage& storage,
                        std::vector<PeerWindow>& peers);

}  // namespace rma::api
