// Collectives over a set of PEs (a team, or a deprecated active set): every
// one is a tree or dissemination pattern of depth log2(size) built from puts
// and the runtime's pairwise signals (Runtime::signal / wait_signal):
//  - barrier / sync: dissemination, ceil(log2 n) rounds;
//  - broadcast: binomial tree from the root, data put straight into each
//    child's dest, forwarded by the child;
//  - fcollect / collect: binomial gather towards team PE 0 (a subtree's
//    blocks are contiguous in dest, so a child sends one put), then a
//    broadcast of the whole dest; collect first learns every PE's size with
//    a sum reduction;
//  - reductions: binomial reduce into the root's accumulator (children put
//    into their own slot of the parent's scratch), then a broadcast of the
//    result, in chunks of the scratch slot size;
//  - alltoall(s): Bruck's algorithm, ceil(log2 n) rounds through the
//    scratch slots, a column of chunks at a time for large blocks
//    (alltoalls packs and unpacks its strides locally).
// Callers hold the runtime's lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "shmem/runtime.hpp"

namespace rma::shmem {

struct PeSet {
  int start = 0, stride = 1, size = 1;
  int me = 0;  // this PE's index in the set
  int world(int i) const noexcept { return start + i * stride; }
};

PeSet team_set(const shmem_team_s& t);
// The active set (PE_start, 2^logPE_stride, PE_size), or fail() naming routine.
PeSet active_set(Runtime& r, const char* routine, int pe_start, int log_stride, int pe_size);

void barrier(Runtime& r, const PeSet& s);  // without the quiet: sync
void broadcast(Runtime& r, const char* routine, const PeSet& s, void* dest, const void* src, std::size_t bytes,
               int root, bool root_gets_copy);
void fcollect(Runtime& r, const char* routine, const PeSet& s, void* dest, const void* src, std::size_t bytes);
void collect(Runtime& r, const char* routine, const PeSet& s, void* dest, const void* src, std::size_t bytes);
void alltoall(Runtime& r, const char* routine, const PeSet& s, void* dest, const void* src, std::size_t bytes);
void alltoalls(Runtime& r, const char* routine, const PeSet& s, void* dest, const void* src, std::ptrdiff_t dst,
               std::ptrdiff_t sst, std::size_t elem_bytes, std::size_t nelems);

// Element-wise combine: acc[i] = acc[i] op in[i] for n elements.
using Combine = void (*)(void* acc, const void* in, std::size_t n);
void reduce(Runtime& r, const char* routine, const PeSet& s, void* dest, const void* src, std::size_t nelems,
            std::size_t elem_bytes, Combine combine);

}  // namespace rma::shmem
