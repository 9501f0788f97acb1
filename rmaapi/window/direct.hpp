// The load/store path: communication with a peer whose window memory and
// metadata this rank maps (PeerWindow::direct and direct_meta,
// window/window_memory.hpp) is memcpy and CPU atomics on the mapping,
// complete when the call returns, as in Open MPI's osc sm. The callers run
// every check of the NIC path first (arguments, epoch, bounds, types);
// only the data movement differs, so both paths accept and refuse the same
// calls.
//
// Coherence with the NIC path, for jobs whose other ranks reach the same
// words through the network rail: the software NIC (softroce) and the shm
// provider execute remote atomics as seq_cst CPU atomics on the target's
// memory, so a CPU atomic here and a NIC atomic from another host on one
// word are atomic with respect to each other, and a lock word, accumulate
// lock or PSCW counter may be changed by both. (A hardware NIC's atomics are
// coherent with CPU atomics only when it says so, IBV_ATOMIC_GLOB; the
// endpoint manager's shm rail makes the same assumption.)
//
// Ordering: a store here reaches every process's view once it leaves this
// CPU's store buffer; flush, unlock, fence, complete and win_sync issue a
// full fence, which is what MPI's completion needs on a load/store path.
#pragma once

#include <atomic>
#include <cstdint>

#include "datatype/layout.hpp"
#include "rma/sdk/provider.hpp"
#include "rma/sdk/status.hpp"
#include "window/direct_copy.hpp"
#include "window/window.hpp"

namespace rma::api::direct {

// A full memory fence. ThreadSanitizer does not model fences (GCC warns),
// so under it a locked read-modify-write, which is one on every CPU it runs on.
inline void fence() noexcept {
#if defined(__SANITIZE_THREAD__)
  static std::atomic<std::uint32_t> word{0};
  word.fetch_add(0, std::memory_order_seq_cst);
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

// The NIC's two 8-byte atomics as CPU atomics on a mapped word: the old value.
inline std::uint64_t atomic(std::uint64_t* word, Opcode op, std::uint64_t compare_add, std::uint64_t swap) noexcept {
  if (op == Opcode::kAtomicFetchAdd) return __atomic_fetch_add(word, compare_add, __ATOMIC_SEQ_CST);
  std::uint64_t seen = compare_add;
  __atomic_compare_exchange_n(word, &seen, swap, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return seen;
}

// Copies `ocount` x `ol` at `origin` (local) to (to_target) or from the
// peer's range `tcount` x `tl` whose displacement 0 is `target_base` in
// the peer's address space, which the caller checked lies inside the
// peer's window. Any datatypes: the transfer planner pairs the blocks.
Status copy(const PeerWindow& p, const void* origin, std::int64_t ocount, const TypeLayout& ol,
            std::uint64_t target_base, std::int64_t tcount, const TypeLayout& tl, bool to_target);

}  // namespace rma::api::direct
