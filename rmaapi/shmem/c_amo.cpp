// Atomic memory operations for the standard, extended and bitwise AMO types
// (and the deprecated names), each with its ctx form and the _nbi fetching
// forms. All run on the NIC's 8-byte atomics (Runtime::amo).
#include "shmem/api.hpp"

using rma::shmem::AmoOp;
using rma::shmem::api_amo;

namespace {
// The _nbi fetching forms complete before they return: their result is
// delivered to `fetch` at once, which the spec allows (completion by the
// next quiet is the latest it may happen).
template <typename T>
void amo_nbi(const char* routine, shmem_ctx_t ctx, AmoOp op, T* fetch, const T* dest, T operand, T compare, int pe) {
  const T old = api_amo<T>(routine, ctx, op, dest, operand, compare, pe, true);
  std::memcpy(fetch, &old, sizeof(T));
}
}  // namespace

#define SHMEM_DEFINE_AMO_EXTENDED(T, N)                                                                          \
  SHMEM_DEFINE(T, N##_atomic_fetch, (const T* source, int pe)) {                                               \
    return api_amo<T>("shmem_" #N "_atomic_fetch", SHMEM_CTX_DEFAULT, AmoOp::kFetch, source, static_cast<T>(0), static_cast<T>(0), pe, true); \
  }                                                                                                              \
  SHMEM_DEFINE(T, ctx_##N##_atomic_fetch, (shmem_ctx_t ctx, const T* source, int pe)) {                        \
    return api_amo<T>("shmem_ctx_" #N "_atomic_fetch", ctx, AmoOp::kFetch, source, static_cast<T>(0), static_cast<T>(0), pe, true);        \
  }                                                                                                              \
  SHMEM_DEFINE(void, N##_atomic_set, (T * dest, T value, int pe)) {                                              \
    api_amo<T>("shmem_" #N "_atomic_set", SHMEM_CTX_DEFAULT, AmoOp::kSet, dest, value, static_cast<T>(0), pe, false);          \
  }                                                                                                              \
  SHMEM_DEFINE(void, ctx_##N##_atomic_set, (shmem_ctx_t ctx, T * dest, T value, int pe)) {                       \
    api_amo<T>("shmem_ctx_" #N "_atomic_set", ctx, AmoOp::kSet, dest, value, static_cast<T>(0), pe, false);                    \
  }                                                                                                              \
  SHMEM_DEFINE(T, N##_atomic_swap, (T * dest, T value, int pe)) {                                                \
    return api_amo<T>("shmem_" #N "_atomic_swap", SHMEM_CTX_DEFAULT, AmoOp::kSwap, dest, value, static_cast<T>(0), pe, true);  \
  }                                                                                                              \
  SHMEM_DEFINE(T, ctx_##N##_atomic_swap, (shmem_ctx_t ctx, T * dest, T value, int pe)) {                         \
    return api_amo<T>("shmem_ctx_" #N "_atomic_swap", ctx, AmoOp::kSwap, dest, value, static_cast<T>(0), pe, true);            \
  }                                                                                                              \
  SHMEM_DEFINE(void, N##_atomic_fetch_nbi, (T * fetch, const T* source, int pe)) {                               \
    amo_nbi<T>("shmem_" #N "_atomic_fetch_nbi", SHMEM_CTX_DEFAULT, AmoOp::kFetch, fetch, source, static_cast<T>(0), static_cast<T>(0), pe);  \
  }                                                                                                              \
  SHMEM_DEFINE(void, ctx_##N##_atomic_fetch_nbi, (shmem_ctx_t ctx, T * fetch, const T* source, int pe)) {        \
    amo_nbi<T>("shmem_ctx_" #N "_atomic_fetch_nbi", ctx, AmoOp::kFetch, fetch, source, static_cast<T>(0), static_cast<T>(0), pe);            \
  }                                                                                                              \
  SHMEM_DEFINE(void, N##_atomic_swap_nbi, (T * fetch, T * dest, T value, int pe)) {                              \
    amo_nbi<T>("shmem_" #N "_atomic_swap_nbi", SHMEM_CTX_DEFAULT, AmoOp::kSwap, fetch, dest, value, static_cast<T>(0), pe);    \
  }                                                                                                              \
  SHMEM_DEFINE(void, ctx_##N##_atomic_swap_nbi, (shmem_ctx_t ctx, T * fetch, T * dest, T value, int pe)) {       \
    amo_nbi<T>("shmem_ctx_" #N "_atomic_swap_nbi", ctx, AmoOp::kSwap, fetch, dest, value, static_cast<T>(0), pe);              \
  }

#define SHMEM_DEFINE_AMO_STANDARD(T, N)                                                                          \
  SHMEM_DEFINE_AMO_EXTENDED(T, N)                                                                                \
  SHMEM_DEFINE(T, N##_atomic_compare_swap, (T * dest, T cond, T value, int pe)) {                                \
    return api_amo<T>("shmem_" #N "_atomic_compare_swap", SHMEM_CTX_DEFAULT, AmoOp::kCswap, dest, value, cond,   \
                      pe, true);                                                                                 \
  }                                                                                                              \
  SHMEM_DEFINE(T, ctx_##N##_atomic_compare_swap, (shmem_ctx_t ctx, T * dest, T cond, T value, int pe)) {         \
    return api_amo<T>("shmem_ctx_" #N "_atomic_compare_swap", ctx, AmoOp::kCswap, dest, value, cond, pe, true);  \
  }                                                                                                              \
  SHMEM_DEFINE(T, N##_atomic_fetch_inc, (T * dest, int pe)) {                                                    \
    return api_amo<T>("shmem_" #N "_atomic_fetch_inc", SHMEM_CTX_DEFAULT, AmoOp::kAdd, dest, static_cast<T>(1), static_cast<T>(0), pe, true); \
  }                                                                                                              \
  SHMEM_DEFINE(T, ctx_##N##_atomic_fetch_inc, (shmem_ctx_t ctx, T * dest, int pe)) {                             \
    return api_amo<T>("shmem_ctx_" #N "_atomic_fetch_inc", ctx, AmoOp::kAdd, dest, static_cast<T>(1), static_cast<T>(0), pe, true);         \
  }                                                                                                              \
  SHMEM_DEFINE(void, N##_atomic_inc, (T * dest, int pe)) {                                                       \
    api_amo<T>("shmem_" #N "_atomic_inc", SHMEM_CTX_DEFAULT, AmoOp::kAdd, dest, static_cast<T>(1), static_cast<T>(0), pe, false);           \
  }                                                                                                              \
  SHMEM_DEFINE(void, ctx_##N##_atomic_inc, (shmem_ctx_t ctx, T * dest, int pe)) {                                \
    api_amo<T>("shmem_ctx_" #N "_atomic_inc", ctx, AmoOp::kAdd, dest, static_cast<T>(1), static_cast<T>(0), pe, false);                     \
  }                                                                                                              \
  SHMEM_DEFINE(T, N##_atomic_fetch_add, (T * dest, T value, int pe)) {                                           \
    return api_amo<T>("shmem_" #N "_atomic_fetch_add", SHMEM_CTX_DEFAULT, AmoOp::kAdd, dest, value, static_cast<T>(0), pe, true); \
  }                                                                                                              \
  SHMEM_DEFINE(T, ctx_##N##_atomic_fetch_add, (shmem_ctx_t ctx, T * dest, T value, int pe)) {                    \
    return api_amo<T>("shmem_ctx_" #N "_atomic_fetch_add", ctx, AmoOp::kAdd, dest, value, static_cast<T>(0), pe, true);        \
  }                                                                                                              \
  SHMEM_DEFINE(void, N##_atomic_add, (T * dest, T value, int pe)) {                                              \
    api_amo<T>("shmem_" #N "_atomic_add", SHMEM_CTX_DEFAULT, AmoOp::kAdd, dest, value, static_cast<T>(0), pe, false);          \
  }                                                                                                              \
  SHMEM_DEFINE(void, ctx_##N##_atomic_add, (shmem_ctx_t ctx, T * dest, T value, int pe)) {                       \
    api_amo<T>("shmem_ctx_" #N "_atomic_add", ctx, AmoOp::kAdd, dest, value, static_cast<T>(0), pe, false);                    \
  }                                                                                                              \
  SHMEM_DEFINE(void, N##_atomic_compare_swap_nbi, (T * fetch, T * dest, T cond, T value, int pe)) {              \
    amo_nbi<T>("shmem_" #N "_atomic_compare_swap_nbi", SHMEM_CTX_DEFAULT, AmoOp::kCswap, fetch, dest, value,     \
               cond, pe);                                                                                        \
  }                                                                                                              \
  SHMEM_DEFINE(void, ctx_##N##_atomic_compare_swap_nbi,                                                          \
               (shmem_ctx_t ctx, T * fetch, T * dest, T cond, T value, int pe)) {                                \
    amo_nbi<T>("shmem_ctx_" #N "_atomic_compare_swap_nbi", ctx, AmoOp::kCswap, fetch, dest, value, cond, pe);    \
  }                                                                                                              \
  SHMEM_DEFINE(void, N##_atomic_fetch_inc_nbi, (T * fetch, T * dest, int pe)) {                                  \
    amo_nbi<T>("shmem_" #N "_atomic_fetch_inc_nbi", SHMEM_CTX_DEFAULT, AmoOp::kAdd, fetch, dest, static_cast<T>(1), static_cast<T>(0), pe); \
  }                                                                                                              \
  SHMEM_DEFINE(void, ctx_##N##_atomic_fetch_inc_nbi, (shmem_ctx_t ctx, T * fetch, T * dest, int pe)) {           \
    amo_nbi<T>("shmem_ctx_" #N "_atomic_fetch_inc_nbi", ctx, AmoOp::kAdd, fetch, dest, static_cast<T>(1), static_cast<T>(0), pe);           \
  }                                                                                                              \
  SHMEM_DEFINE(void, N##_atomic_fetch_add_nbi, (T * fetch, T * dest, T value, int pe)) {                         \
    amo_nbi<T>("shmem_" #N "_atomic_fetch_add_nbi", SHMEM_CTX_DEFAULT, AmoOp::kAdd, fetch, dest, value, static_cast<T>(0), pe); \
  }                                                                                                              \
  SHMEM_DEFINE(void, ctx_##N##_atomic_fetch_add_nbi, (shmem_ctx_t ctx, T * fetch, T * dest, T value, int pe)) {  \
    amo_nbi<T>("shmem_ctx_" #N "_atomic_fetch_add_nbi", ctx, AmoOp::kAdd, fetch, dest, value, static_cast<T>(0), pe);          \
  }

#define SHMEM_DEFINE_AMO_BITWISE_OP(T, N, OP, KIND)                                                              \
  SHMEM_DEFINE(T, N##_atomic_fetch_##OP, (T * dest, T value, int pe)) {                                          \
    return api_amo<T>("shmem_" #N "_atomic_fetch_" #OP, SHMEM_CTX_DEFAULT, KIND, dest, value, static_cast<T>(0), pe, true);    \
  }                                                                                                              \
  SHMEM_DEFINE(T, ctx_##N##_atomic_fetch_##OP, (shmem_ctx_t ctx, T * dest, T value, int pe)) {                   \
    return api_amo<T>("shmem_ctx_" #N "_atomic_fetch_" #OP, ctx, KIND, dest, value, static_cast<T>(0), pe, true);              \
  }                                                                                                              \
  SHMEM_DEFINE(void, N##_atomic_##OP, (T * dest, T value, int pe)) {                                             \
    api_amo<T>("shmem_" #N "_atomic_" #OP, SHMEM_CTX_DEFAULT, KIND, dest, value, static_cast<T>(0), pe, false);                \
  }                                                                                                              \
  SHMEM_DEFINE(void, ctx_##N##_atomic_##OP, (shmem_ctx_t ctx, T * dest, T value, int pe)) {                      \
    api_amo<T>("shmem_ctx_" #N "_atomic_" #OP, ctx, KIND, dest, value, static_cast<T>(0), pe, false);                          \
  }                                                                                                              \
  SHMEM_DEFINE(void, N##_atomic_fetch_##OP##_nbi, (T * fetch, T * dest, T value, int pe)) {                      \
    amo_nbi<T>("shmem_" #N "_atomic_fetch_" #OP "_nbi", SHMEM_CTX_DEFAULT, KIND, fetch, dest, value, static_cast<T>(0), pe);   \
  }                                                                                                              \
  SHMEM_DEFINE(void, ctx_##N##_atomic_fetch_##OP##_nbi, (shmem_ctx_t ctx, T * fetch, T * dest, T value, int pe)) { \
    amo_nbi<T>("shmem_ctx_" #N "_atomic_fetch_" #OP "_nbi", ctx, KIND, fetch, dest, value, static_cast<T>(0), pe);             \
  }
#define SHMEM_DEFINE_AMO_BITWISE(T, N)                    \
  SHMEM_DEFINE_AMO_BITWISE_OP(T, N, and, AmoOp::kAnd)     \
  SHMEM_DEFINE_AMO_BITWISE_OP(T, N, or, AmoOp::kOr)       \
  SHMEM_DEFINE_AMO_BITWISE_OP(T, N, xor, AmoOp::kXor)

SHMEM_X_AMO_STANDARD(SHMEM_DEFINE_AMO_STANDARD)
SHMEM_X_AMO_EXTENDED_ONLY(SHMEM_DEFINE_AMO_EXTENDED)
SHMEM_X_AMO_BITWISE(SHMEM_DEFINE_AMO_BITWISE)

// Deprecated names (OpenSHMEM 1.3): the same operations.
#define SHMEM_DEFINE_AMO_DEPRECATED(T, N)                                                                   \
  SHMEM_DEFINE(T, N##_fadd, (T * dest, T value, int pe)) {                                                 \
    return api_amo<T>("shmem_" #N "_fadd", SHMEM_CTX_DEFAULT, AmoOp::kAdd, dest, value, static_cast<T>(0), pe, true);    \
  }                                                                                                         \
  SHMEM_DEFINE(T, N##_finc, (T * dest, int pe)) {                                                          \
    return api_amo<T>("shmem_" #N "_finc", SHMEM_CTX_DEFAULT, AmoOp::kAdd, dest, static_cast<T>(1), static_cast<T>(0), pe, true);     \
  }                                                                                                         \
  SHMEM_DEFINE(void, N##_add, (T * dest, T value, int pe)) {                                               \
    api_amo<T>("shmem_" #N "_add", SHMEM_CTX_DEFAULT, AmoOp::kAdd, dest, value, static_cast<T>(0), pe, false);           \
  }                                                                                                         \
  SHMEM_DEFINE(void, N##_inc, (T * dest, int pe)) {                                                        \
    api_amo<T>("shmem_" #N "_inc", SHMEM_CTX_DEFAULT, AmoOp::kAdd, dest, static_cast<T>(1), static_cast<T>(0), pe, false);            \
  }                                                                                                         \
  SHMEM_DEFINE(T, N##_cswap, (T * dest, T cond, T value, int pe)) {                                        \
    return api_amo<T>("shmem_" #N "_cswap", SHMEM_CTX_DEFAULT, AmoOp::kCswap, dest, value, cond, pe, true); \
  }                                                                                                         \
  SHMEM_DEFINE(T, N##_swap, (T * dest, T value, int pe)) {                                                 \
    return api_amo<T>("shmem_" #N "_swap", SHMEM_CTX_DEFAULT, AmoOp::kSwap, dest, value, static_cast<T>(0), pe, true);   \
  }                                                                                                         \
  SHMEM_DEFINE(T, N##_fetch, (const T* source, int pe)) {                                                  \
    return api_amo<T>("shmem_" #N "_fetch", SHMEM_CTX_DEFAULT, AmoOp::kFetch, source, static_cast<T>(0), static_cast<T>(0), pe, true); \
  }                                                                                                         \
  SHMEM_DEFINE(void, N##_set, (T * dest, T value, int pe)) {                                               \
    api_amo<T>("shmem_" #N "_set", SHMEM_CTX_DEFAULT, AmoOp::kSet, dest, value, static_cast<T>(0), pe, false);           \
  }
SHMEM_DEFINE_AMO_DEPRECATED(int, int)
SHMEM_DEFINE_AMO_DEPRECATED(long, long)
SHMEM_DEFINE_AMO_DEPRECATED(long long, longlong)
#define SHMEM_DEFINE_AMO_DEPRECATED_FP(T, N)                                                                \
  SHMEM_DEFINE(T, N##_swap, (T * dest, T value, int pe)) {                                                 \
    return api_amo<T>("shmem_" #N "_swap", SHMEM_CTX_DEFAULT, AmoOp::kSwap, dest, value, static_cast<T>(0), pe, true);   \
  }                                                                                                         \
  SHMEM_DEFINE(T, N##_fetch, (const T* source, int pe)) {                                                  \
    return api_amo<T>("shmem_" #N "_fetch", SHMEM_CTX_DEFAULT, AmoOp::kFetch, source, static_cast<T>(0), static_cast<T>(0), pe, true); \
  }                                                                                                         \
  SHMEM_DEFINE(void, N##_set, (T * dest, T value, int pe)) {                                               \
    api_amo<T>("shmem_" #N "_set", SHMEM_CTX_DEFAULT, AmoOp::kSet, dest, value, static_cast<T>(0), pe, false);           \
  }
SHMEM_DEFINE_AMO_DEPRECATED_FP(float, float)
SHMEM_DEFINE_AMO_DEPRECATED_FP(double, double)
