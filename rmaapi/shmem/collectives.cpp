#include "shmem/collectives.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace rma::shmem {
namespace {

int lowbit(int r) { return r & -r; }

// Binomial tree over relative ranks 0..n-1 (0 is the root): the parent of
// r clears its lowest set bit; the children of r are r + 2^k for every
// 2^k below r's lowest set bit (every 2^k < n for the root). The subtree of
// r covers relative ranks [r, r + span(r)).
int tree_parent(int r) { return r - lowbit(r); }
int span(int r, int n) { return r == 0 ? n : std::min(lowbit(r), n - r); }
template <typename F>
void for_children(int r, int n, F f) {
  const int limit = r == 0 ? n : lowbit(r);
  // Largest subtree first: it has the longest way to go.
  int top = 1;
  while (top * 2 < limit) top *= 2;
  for (int k = top; k >= 1; k /= 2) {
    if (k < limit && r + k < n) f(r + k);
  }
}

}  // namespace

PeSet team_set(const shmem_team_s& t) { return PeSet{t.start, t.stride, t.size, t.my_pe}; }

PeSet active_set(Runtime& r, const char* routine, int pe_start, int log_stride, int pe_size) {
  if (log_stride < 0 || log_stride > 30) {
    r.fail(routine, -1, "logPE_stride " + std::to_string(log_stride) + " is outside 0..30");
  }
  const long stride = 1L << log_stride;
  if (pe_size < 1 || pe_start < 0 || pe_start + (pe_size - 1L) * stride >= r.npes) {
    r.fail(routine, -1,
           "the active set (PE_start " + std::to_string(pe_start) + ", stride " + std::to_string(stride) +
               ", PE_size " + std::to_string(pe_size) + ") does not fit in the job's " + std::to_string(r.npes) +
               " PEs");
  }
  const long d = r.me - pe_start;
  if (d < 0 || d % stride != 0 || d / stride >= pe_size) {
    r.fail(routine, -1,
           "this PE is not in the active set (PE_start " + std::to_string(pe_start) + ", stride " +
               std::to_string(stride) + ", PE_size " + std::to_string(pe_size) + ")");
  }
  return PeSet{pe_start, static_cast<int>(stride), pe_size, static_cast<int>(d / stride)};
}

void barrier(Runtime& r, const PeSet& s) {
  for (int k = 1; k < s.size; k *= 2) {
    r.signal(s.world((s.me + k) % s.size));
    r.wait_signal(s.world((s.me - k % s.size + s.size) % s.size));
  }
}

void broadcast(Runtime& r, const char* routine, const PeSet& s, void* dest, const void* src, std::size_t bytes,
               int root, bool root_gets_copy) {
  if (root < 0 || root >= s.size) {
    r.fail(routine, -1, "PE_root " + std::to_string(root) + " is not in the team or active set (size " +
                            std::to_string(s.size) + ")");
  }
  const int rel = (s.me - root + s.size) % s.size;
  const void* from = src;
  if (rel != 0) {
    r.wait_signal(s.world((tree_parent(rel) + root) % s.size));
    from = dest;
  } else if (root_gets_copy && dest != src) {
    std::memmove(dest, src, bytes);
  }
  bool forwarded = false;
  for_children(rel, s.size, [&](int child) {
    const int wpe = s.world((child + root) % s.size);
    r.put(routine, dest, from, bytes, wpe, true);
    r.signal(wpe);
    forwarded = true;
  });
  // The buffers must be reusable on return: the puts from them complete here.
  if (forwarded) r.quiet(routine);
}

void fcollect(Runtime& r, const char* routine, const PeSet& s, void* dest, const void* src, std::size_t bytes) {
  auto* d = static_cast<std::byte*>(dest);
  const int rel = s.me;
  if (d + static_cast<std::size_t>(rel) * bytes != src) std::memmove(d + static_cast<std::size_t>(rel) * bytes, src, bytes);
  for_children(rel, s.size, [&](int child) { r.wait_signal(s.world(child)); });
  if (rel != 0) {
    const int parent = s.world(tree_parent(rel));
    std::byte* mine = d + static_cast<std::size_t>(rel) * bytes;
    r.put(routine, mine, mine, static_cast<std::size_t>(span(rel, s.size)) * bytes, parent, true);
    r.signal(parent);
  }
  broadcast(r, routine, s, dest, dest, static_cast<std::size_t>(s.size) * bytes, 0, false);
}

namespace {
void sum_u64(void* acc, const void* in, std::size_t n) {
  auto* a = static_cast<std::uint64_t*>(acc);
  const auto* b = static_cast<const std::uint64_t*>(in);
  for (std::size_t i = 0; i < n; ++i) a[i] += b[i];
}
}  // namespace

void collect(Runtime& r, const char* routine, const PeSet& s, void* dest, const void* src, std::size_t bytes) {
  // Every PE's size: a sum reduction of vectors that are zero but at the
  // PE's own index. The vectors live in the symmetric heap's scratch.
  const std::size_t n = static_cast<std::size_t>(s.size);
  std::vector<std::uint64_t> sizes(n, 0);
  sizes[static_cast<std::size_t>(s.me)] = bytes;
  std::vector<std::uint64_t> all(n, 0);
  reduce(r, routine, s, all.data(), sizes.data(), n, 8, sum_u64);
  std::vector<std::size_t> offset(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) offset[i + 1] = offset[i] + all[i];
  auto* d = static_cast<std::byte*>(dest);
  const int rel = s.me;
  std::byte* mine = d + offset[static_cast<std::size_t>(rel)];
  if (mine != src && bytes != 0) std::memmove(mine, src, bytes);
  for_children(rel, s.size, [&](int child) { r.wait_signal(s.world(child)); });
  if (rel != 0) {
    const int parent = s.world(tree_parent(rel));
    const std::size_t end = offset[static_cast<std::size_t>(rel + span(rel, s.size))];
    r.put(routine, mine, mine, end - offset[static_cast<std::size_t>(rel)], parent, true);
    r.signal(parent);
  }
  broadcast(r, routine, s, dest, dest, offset[n], 0, false);
}

namespace {

// Bruck's all-to-all on `in` (n blocks of `bytes`, block j meant for set
// index j) into `out` (block j from set index j), both local and
// contiguous: ceil(log2 n) rounds; in round k every PE sends the blocks
// whose rotated index has bit k set to the PE k ahead, through that PE's
// scratch slot for this PE. Blocks larger than the slot allows are moved a
// column of chunks at a time, each column ending with a barrier (so every
// slot was read before it is written again).
void bruck(Runtime& r, const char* routine, const PeSet& s, const std::byte* in, std::byte* out, std::size_t bytes) {
  const std::size_t n = static_cast<std::size_t>(s.size);
  const std::size_t me = static_cast<std::size_t>(s.me);
  const std::size_t half = (n + 1) / 2;
  const std::size_t chunk = std::max<std::size_t>(1, r.slot_bytes / half);
  std::vector<std::byte> rotated(n * std::min(chunk, std::max<std::size_t>(bytes, 1)));
  std::byte* pack = r.accumulator;  // registered: the source of the puts
  for (std::size_t off = 0; off < bytes; off += chunk) {
    const std::size_t cl = std::min(chunk, bytes - off);
    for (std::size_t i = 0; i < n; ++i) std::memcpy(&rotated[i * cl], in + ((me + i) % n) * bytes + off, cl);
    for (std::size_t k = 1; k < n; k <<= 1) {
      const int to = s.world(static_cast<int>((me + k) % n));
      const int from = s.world(static_cast<int>((me + n - k) % n));
      std::size_t count = 0;
      for (std::size_t i = 0; i < n; ++i) {
        if ((i & k) != 0) std::memcpy(pack + (count++) * cl, &rotated[i * cl], cl);
      }
      std::byte* slot_mine = r.scratch + static_cast<std::size_t>(r.me) * r.slot_bytes;
      r.put(routine, slot_mine, pack, count * cl, to, true);
      r.signal(to);
      r.wait_signal(from);
      const std::byte* slot_from = r.scratch + static_cast<std::size_t>(from) * r.slot_bytes;
      std::size_t j = 0;
      for (std::size_t i = 0; i < n; ++i) {
        if ((i & k) != 0) std::memcpy(&rotated[i * cl], slot_from + (j++) * cl, cl);
      }
      r.quiet(routine);  // `pack` is rewritten next round
    }
    for (std::size_t i = 0; i < n; ++i) std::memcpy(out + ((me + n - i) % n) * bytes + off, &rotated[i * cl], cl);
    barrier(r, s);
  }
  if (bytes == 0) barrier(r, s);
}

}  // namespace

void alltoall(Runtime& r, const char* routine, const PeSet& s, void* dest, const void* src, std::size_t bytes) {
  const std::size_t all = bytes * static_cast<std::size_t>(s.size);
  const auto* in = static_cast<const std::byte*>(src);
  auto* out = static_cast<std::byte*>(dest);
  if (out < in + all && in < out + all) {
    // Overlapping buffers: the spec forbids it, but never scramble the data.
    std::vector<std::byte> copy(in, in + all);
    bruck(r, routine, s, copy.data(), out, bytes);
    return;
  }
  bruck(r, routine, s, in, out, bytes);
}

void alltoalls(Runtime& r, const char* routine, const PeSet& s, void* dest, const void* src, std::ptrdiff_t dst,
               std::ptrdiff_t sst, std::size_t elem_bytes, std::size_t nelems) {
  // Gather the strided source into blocks, exchange, scatter with dst: the
  // strides only matter locally.
  const std::size_t n = static_cast<std::size_t>(s.size);
  const std::size_t block = elem_bytes * nelems;
  std::vector<std::byte> packed(n * block), received(n * block);
  const auto* from = static_cast<const std::byte*>(src);
  auto* to = static_cast<std::byte*>(dest);
  const auto eb = static_cast<std::ptrdiff_t>(elem_bytes);
  for (std::size_t p = 0; p < n; ++p) {
    for (std::size_t e = 0; e < nelems; ++e) {
      const auto idx = static_cast<std::ptrdiff_t>(p * nelems + e);
      std::memcpy(&packed[(p * nelems + e) * elem_bytes], from + idx * sst * eb, elem_bytes);
    }
  }
  bruck(r, routine, s, packed.data(), received.data(), block);
  for (std::size_t p = 0; p < n; ++p) {
    for (std::size_t e = 0; e < nelems; ++e) {
      const auto idx = static_cast<std::ptrdiff_t>(p * nelems + e);
      std::memcpy(to + idx * dst * eb, &received[(p * nelems + e) * elem_bytes], elem_bytes);
    }
  }
}

void reduce(Runtime& r, const char* routine, const PeSet& s, void* dest, const void* src, std::size_t nelems,
            std::size_t elem_bytes, Combine combine) {
  const std::size_t chunk = r.slot_bytes / elem_bytes;
  auto* d = static_cast<std::byte*>(dest);
  const auto* in = static_cast<const std::byte*>(src);
  const int rel = s.me;
  const bool dest_symmetric = r.is_symmetric(dest, nelems * elem_bytes);
  for (std::size_t first = 0; first < nelems; first += chunk) {
    const std::size_t n = std::min(chunk, nelems - first);
    const std::size_t bytes = n * elem_bytes;
    std::memcpy(r.accumulator, in + first * elem_bytes, bytes);
    for_children(rel, s.size, [&](int child) {
      const int wpe = s.world(child);
      r.wait_signal(wpe);
      combine(r.accumulator, r.scratch + static_cast<std::size_t>(wpe) * r.slot_bytes, n);
    });
    if (rel != 0) {
      const int parent = s.world(tree_parent(rel));
      r.put(routine, r.scratch + static_cast<std::size_t>(r.me) * r.slot_bytes, r.accumulator, bytes, parent, true);
      r.signal(parent);
      // The result comes back into the accumulator (dest need not be
      // symmetric for internal callers), then to dest.
      r.wait_signal(parent);
    }
    // A non-root with a symmetric dest got the result from its parent
    // straight into dest.
    if (rel == 0 || !dest_symmetric) std::memcpy(d + first * elem_bytes, r.accumulator, bytes);
    for_children(rel, s.size, [&](int child) {
      const int wpe = s.world(child);
      if (dest_symmetric) {
        r.put(routine, d + first * elem_bytes, d + first * elem_bytes, bytes, wpe, true);
      } else {
        r.put(routine, r.accumulator, d + first * elem_bytes, bytes, wpe, true);
      }
      r.signal(wpe);
    });
  }
  // The accumulator and dest are sources of puts still in flight.
  r.quiet(routine);
}

}  // namespace rma::shmem
