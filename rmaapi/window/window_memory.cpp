// Window memory and metadata: heap or node-local shared segments, and the
// mappings of the peers' segments (window_memory.hpp).
#include "window/window_memory.hpp"

#include <cstdlib>
#include <cstring>
#include <string>

#include "comm/collectives.hpp"
#include "datatype/errors.hpp"
#include "rma/sdk/log.hpp"
#include "window/context.hpp"
#include "window/window.hpp"

namespace rma::api {
namespace {

constexpr std::size_t kPage = 4096;
// Each rank's metadata in a contiguous shared window starts on its own cache
// line: ranks spinning on their lock words do not share lines.
constexpr std::size_t kMetaAlign = 64;
// node::SharedMemory's own limit; checked first so sums cannot overflow.
constexpr std::uint64_t kMaxSegmentBytes = std::uint64_t{1} << 46;

std::size_t round_up(std::size_t n, std::size_t to = kPage) { return (n + to - 1) / to * to; }

bool same_segment(const node::SegmentRef& a, const node::SegmentRef& b) noexcept {
  return a.nonce == b.nonce && std::strncmp(a.name, b.name, sizeof a.name) == 0;
}

// "2", "2 and 5", "1, 2 and 5".
std::string rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) s += i + 1 == ranks.size() ? " and " : ", ";
    s += std::to_string(ranks[i]);
  }
  return s;
}

Status allocate_heap(rma_Aint size, bool with_data, std::size_t meta_words, WindowStorage& out) {
  const std::size_t meta_bytes = round_up(meta_words * 8);
  void* meta = std::aligned_alloc(kPage, meta_bytes);
  if (meta == nullptr) return class_error(RMA_ERR_NO_MEM, "cannot allocate window metadata");
  std::memset(meta, 0, meta_bytes);
  out.heap_meta.reset(meta);
  out.meta = static_cast<std::uint64_t*>(meta);
  if (with_data && size > 0) {
    const std::size_t bytes = round_up(static_cast<std::size_t>(size));
    void* mem = std::aligned_alloc(kPage, bytes);
    if (mem == nullptr) {
      return class_error(RMA_ERR_NO_MEM, "cannot allocate a window of " + std::to_string(size) + " bytes");
    }
    std::memset(mem, 0, bytes);
    out.heap_data.reset(mem);
    out.data = static_cast<std::byte*>(mem);
  }
  return {};
}

// A segment of this rank's: [metadata, padded to a page][memory].
Status allocate_own_segment(rma_Aint size, std::size_t meta_words, std::string_view purpose, WindowStorage& out) {
  if (static_cast<std::uint64_t>(size) > kMaxSegmentBytes) {
    return class_error(RMA_ERR_NO_MEM, "a shared window segment holds at most " + std::to_string(kMaxSegmentBytes) +
                                           " bytes; " + std::to_string(size) + " asked for");
  }
  const std::size_t meta_bytes = round_up(meta_words * 8);
  auto seg = node::SharedMemory::allocate(meta_bytes + round_up(static_cast<std::size_t>(size)), purpose);
  if (!seg.ok()) {
    return class_error(RMA_ERR_NO_MEM, "cannot allocate the window's shared memory (" +
                                           std::to_string(size) + " bytes + metadata): " + seg.status().message());
  }
  out.segment = std::move(seg).value();
  out.meta_offset = 0;
  out.data_offset = meta_bytes;
  out.meta = reinterpret_cast<std::uint64_t*>(out.segment->data());
  out.data = size > 0 ? out.segment->data() + meta_bytes : nullptr;
  return {};
}

// rma_win_allocate_shared's default layout: one segment of window rank 0's,
// every rank's metadata first (kMetaAlign apart), then every rank's memory,
// rank i's first byte right after rank i - 1's last (MPI 4.x 12.2.3).
Status allocate_contiguous(Context& ctx, const rma_comm_s& comm, rma_Aint size, std::size_t meta_words,
                           WindowStorage& out) {
  const int n = comm.size(), me = comm.rank;
  const std::int64_t mine = size;
  RMA_ASSIGN_OR_RETURN(auto sizes,
                       comm_allgather(ctx, comm, {reinterpret_cast<const std::uint8_t*>(&mine), sizeof mine}));
  const std::size_t meta_stride = round_up(meta_words * 8, kMetaAlign);
  std::uint64_t total = round_up(static_cast<std::size_t>(n) * meta_stride);
  std::vector<std::uint64_t> data_offset(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    std::int64_t s = 0;
    if (sizes[static_cast<std::size_t>(r)].size() != sizeof s) {
      return class_error(RMA_ERR_OTHER, "rank " + std::to_string(r) + " sent a malformed window size");
    }
    std::memcpy(&s, sizes[static_cast<std::size_t>(r)].data(), sizeof s);
    if (s < 0 || static_cast<std::uint64_t>(s) > kMaxSegmentBytes - total) {
      return class_error(RMA_ERR_NO_MEM, "the ranks' sizes add up to more than the " +
                                             std::to_string(kMaxSegmentBytes) +
                                             " bytes a shared window segment holds (rank " + std::to_string(r) +
                                             " asked for " + std::to_string(s) + ")");
    }
    data_offset[static_cast<std::size_t>(r)] = total;
    total += static_cast<std::uint64_t>(s);
  }
  // Rank 0 allocates and offers its segment (or says that it failed).
  struct Offer {
    node::SegmentRef ref;
    std::int32_t failed = 0;
    std::int32_t pad = 0;
  } offer;
  Status own;
  if (me == 0) {
    auto seg = node::SharedMemory::allocate(static_cast<std::size_t>(total), "win_shared");
    if (seg.ok()) {
      out.segment = std::move(seg).value();
      offer.ref = out.segment->ref();
    } else {
      own = class_error(RMA_ERR_NO_MEM, "cannot allocate the shared window's segment of " + std::to_string(total) +
                                            " bytes: " + seg.status().message());
      offer.failed = 1;
    }
  }
  RMA_ASSIGN_OR_RETURN(auto offers,
                       comm_allgather(ctx, comm, {reinterpret_cast<const std::uint8_t*>(&offer), sizeof offer}));
  RMA_RETURN_IF_ERROR(own);
  if (offers[0].size() != sizeof offer) return class_error(RMA_ERR_OTHER, "rank 0 sent a malformed segment offer");
  std::memcpy(&offer, offers[0].data(), sizeof offer);
  if (offer.failed != 0) {
    return class_error(RMA_ERR_NO_MEM, "rank 0 of the communicator could not allocate the shared window's " +
                                           std::to_string(total) + " bytes (its error says why)");
  }
  if (me != 0) {
    auto seg = node::SharedMemory::attach(offer.ref);
    if (!seg.ok()) {
      return class_error(RMA_ERR_RMA_SHARED,
                         "cannot map the shared window's segment of rank 0: " + seg.status().message());
    }
    out.segment = std::move(seg).value();
  }
  if (out.segment->size() < total) {
    return class_error(RMA_ERR_RMA_SHARED, "rank 0's segment " + std::string(offer.ref.name) + " holds " +
                                               std::to_string(out.segment->size()) + " bytes, the window needs " +
                                               std::to_string(total));
  }
  out.meta_offset = static_cast<std::uint64_t>(me) * meta_stride;
  out.data_offset = data_offset[static_cast<std::size_t>(me)];
  out.meta = reinterpret_cast<std::uint64_t*>(out.segment->data() + out.meta_offset);
  out.data = size > 0 ? out.segment->data() + out.data_offset : nullptr;
  return {};
}

}  // namespace

void WindowStorage::HeapFree::operator()(void* p) const noexcept { std::free(p); }

bool direct_rail(Context& ctx, const rma_comm_s& comm, int t) {
  endpoint::EndpointManager& eps = ctx.eps();
  return !eps.plan().forced &&
         eps.endpoint(comm.ranks[static_cast<std::size_t>(t)]).rail() == endpoint::kNodeRail;
}

Status allocate_storage(Context& ctx, const rma_comm_s& comm, int flavor, rma_Aint size, std::size_t meta_words,
                        bool noncontig, WindowStorage& out) {
  const int n = comm.size(), me = comm.rank;
  if (flavor == RMA_WIN_FLAVOR_SHARED) {
    // Every rank decides from the same transport plan: all fail together.
    const auto& host_of = ctx.eps().plan().host_of;
    const std::int32_t host0 = host_of[static_cast<std::size_t>(comm.ranks[0])];
    std::vector<int> elsewhere, elsewhere_world;
    for (int t = 1; t < n; ++t) {
      const int w = comm.ranks[static_cast<std::size_t>(t)];
      if (host_of[static_cast<std::size_t>(w)] != host0) {
        elsewhere.push_back(t);
        elsewhere_world.push_back(w);
      }
    }
    if (!elsewhere.empty()) {
      return class_error(RMA_ERR_RMA_SHARED,
                         std::string(elsewhere.size() == 1 ? "rank " : "ranks ") + rank_list(elsewhere) +
                             " of the communicator (RMA_COMM_WORLD " + rank_list(elsewhere_world) + ") " +
                             (elsewhere.size() == 1 ? "is" : "are") +
                             " on another host than its rank 0: every rank of a shared window must be on one "
                             "host (rma_comm_split_type with RMA_COMM_TYPE_SHARED makes such communicators)");
    }
    if (noncontig) return allocate_own_segment(size, meta_words, "win_shared", out);
    return allocate_contiguous(ctx, comm, size, meta_words, out);
  }
  if (flavor == RMA_WIN_FLAVOR_ALLOCATE) {
    bool node_peers = false;
    for (int t = 0; t < n && !node_peers; ++t) node_peers = t != me && direct_rail(ctx, comm, t);
    if (node_peers) {
      Status s = allocate_own_segment(size, meta_words, "win", out);
      if (s.ok()) return s;
      // Peers then reach this rank's memory through their endpoints.
      RMA_LOG_INFO("rma_win_allocate: %s; the window's memory comes from the heap", s.message().c_str());
      out = WindowStorage{};
    }
    return allocate_heap(size, true, meta_words, out);
  }
  return allocate_heap(size, false, meta_words, out);
}

void describe_storage(const WindowStorage& s, WindowDescriptor& d) {
  if (s.segment) d.segment = s.segment->ref();
  d.data_offset = s.data_offset;
  d.meta_offset = s.meta_offset;
}

Status map_peer_storage(Context& ctx, const rma_comm_s& comm, int flavor, std::size_t meta_words,
                        const std::vector<WindowDescriptor>& all, WindowStorage& storage,
                        std::vector<PeerWindow>& peers) {
  const int n = comm.size(), me = comm.rank;
  const bool shared = flavor == RMA_WIN_FLAVOR_SHARED;
  std::string problem;  // why this rank could not map a peer's segment
  bool any_segment = false;
  for (int t = 0; t < n; ++t) {
    const WindowDescriptor& d = all[static_cast<std::size_t>(t)];
    PeerWindow& p = peers[static_cast<std::size_t>(t)];
    any_segment = any_segment || d.segment.name[0] != '\0';
    const bool direct = direct_rail(ctx, comm, t);
    if (t == me) {
      // This rank's own memory needs no mapping: a load/store view of it
      // exists whatever the flavor (dynamic windows: no fixed base).
      if (flavor != RMA_WIN_FLAVOR_DYNAMIC) p.mapped = reinterpret_cast<std::byte*>(p.base);
      p.direct_meta = direct ? storage.meta : nullptr;
      p.direct = direct && flavor != RMA_WIN_FLAVOR_DYNAMIC;
      continue;
    }
    if (d.segment.name[0] == '\0' || !(direct || shared)) continue;
    std::shared_ptr<node::SharedMemory> seg;
    if (storage.segment && same_segment(storage.segment->ref(), d.segment)) seg = storage.segment;
    for (const auto& m : storage.mapped) {
      if (!seg && same_segment(m->ref(), d.segment)) seg = m;
    }
    if (!seg) {
      auto attached = node::SharedMemory::attach(d.segment);
      if (!attached.ok()) {
        if (problem.empty()) {
          problem = "cannot map the window segment of rank " + std::to_string(t) + ": " + attached.status().message();
        }
        RMA_LOG_DEBUG("window: cannot map rank %d's segment (%s); reaching it through the endpoint", t,
                      attached.status().message().c_str());
        continue;
      }
      seg = std::move(attached).value();
      storage.mapped.push_back(seg);
    }
    // What a peer published must lie inside what was mapped.
    const std::uint64_t limit = seg->size();
    const bool meta_fits = d.meta_offset % 8 == 0 && d.meta_offset <= limit && meta_words * 8 <= limit - d.meta_offset;
    const bool data_fits = d.size == 0 || (d.data_offset <= limit && d.size <= limit - d.data_offset);
    if (!meta_fits || !data_fits) {
      if (problem.empty()) {
        problem = "rank " + std::to_string(t) + " described its window outside its segment " + d.segment.name;
      }
      continue;
    }
    p.mapped = d.size > 0 ? seg->data() + d.data_offset : nullptr;
    if (direct) {
      p.direct_meta = reinterpret_cast<std::uint64_t*>(seg->data() + d.meta_offset);
      p.direct = true;
    }
  }
  if (!any_segment) return {};
  // Every rank mapped what it could: the names may go. The status also
  // makes a shared window fail on every rank when one rank failed.
  const std::uint8_t failed = problem.empty() ? 0 : 1;
  RMA_ASSIGN_OR_RETURN(auto statuses, comm_allgather(ctx, comm, {&failed, 1}));
  if (storage.segment) storage.segment->unlink();
  if (!shared) return {};
  std::vector<int> bad;
  for (int t = 0; t < n; ++t) {
    const auto& s = statuses[static_cast<std::size_t>(t)];
    if (s.size() != 1 || s[0] != 0) bad.push_back(t);
  }
  if (bad.empty()) return {};
  if (!problem.empty()) return class_error(RMA_ERR_RMA_SHARED, problem);
  return class_error(RMA_ERR_RMA_SHARED, std::string(bad.size() == 1 ? "rank " : "ranks ") + rank_list(bad) +
                                             " could not map every rank's window segment (their errors say why)");
}

}  // namespace rma::api
