// AMOs on the direct path (runtime.hpp, "The direct path"): the CPU's own
// atomic instruction on the mapped word, of the AMO's width. Every one is
// seq_cst, as the NIC path's atomics are at the target. A 4-byte AMO here and
// the NIC path's compare-and-swap loop on the 8-byte word around it (from a
// PE of another host) are both locked instructions on one cache line, so
// neither loses the other's update.
#pragma once

#include <cstdint>
#include <type_traits>

#include "shmem/runtime.hpp"

namespace rma::shmem {

// The old value (zero-extended); `op` as Runtime::amo.
template <typename U>
std::uint64_t cpu_amo(AmoOp op, U* word, U operand, U compare) noexcept {
  static_assert(std::is_unsigned_v<U> && (sizeof(U) == 4 || sizeof(U) == 8));
  switch (op) {
    case AmoOp::kFetch: return __atomic_load_n(word, __ATOMIC_SEQ_CST);
    case AmoOp::kSet: __atomic_store_n(word, operand, __ATOMIC_SEQ_CST); return 0;
    case AmoOp::kSwap: return __atomic_exchange_n(word, operand, __ATOMIC_SEQ_CST);
    case AmoOp::kCswap: {
      U seen = compare;
      __atomic_compare_exchange_n(word, &seen, operand, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
      return seen;
    }
    case AmoOp::kAdd: return __atomic_fetch_add(word, operand, __ATOMIC_SEQ_CST);
    case AmoOp::kAnd: return __atomic_fetch_and(word, operand, __ATOMIC_SEQ_CST);
    case AmoOp::kOr: return __atomic_fetch_or(word, operand, __ATOMIC_SEQ_CST);
    case AmoOp::kXor: return __atomic_fetch_xor(word, operand, __ATOMIC_SEQ_CST);
  }
  return 0;
}

// A full memory fence (quiet, fence). ThreadSanitizer does not model
// fences, so under it a locked read-modify-write, which is one.
inline void full_fence() noexcept {
#if defined(__SANITIZE_THREAD__)
  static std::uint32_t word = 0;
  (void)__atomic_fetch_add(&word, 0, __ATOMIC_SEQ_CST);
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

}  // namespace rma::shmem
