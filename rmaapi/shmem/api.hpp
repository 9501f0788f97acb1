// Shared pieces of the C API's translation units: the definition macro
// (pshmem_NAME is the routine, shmem_NAME a weak alias of it, so a profiling
// tool can define shmem_NAME and still reach pshmem_NAME) and the helpers
// every typed family expands to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "shmem/runtime.hpp"

#define SHMEM_DEFINE(ret, name, args)                                               \
  extern "C" ret shmem_##name args __attribute__((weak, alias("pshmem_" #name))); \
  extern "C" ret pshmem_##name args

namespace rma::shmem {

// nelems * elem_bytes, or fail() naming the routine when it overflows.
inline std::size_t byte_count(Runtime& r, const char* routine, std::size_t nelems, std::size_t elem_bytes) {
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(nelems, elem_bytes, &bytes)) [[unlikely]] {
    r.fail(routine, -1, "nelems " + std::to_string(nelems) + " x " + std::to_string(elem_bytes) + " bytes overflows");
  }
  return bytes;
}

void api_put(const char* routine, shmem_ctx_t ctx, void* dest, const void* src, std::size_t nelems,
             std::size_t elem_bytes, int pe, bool nbi);
void api_get(const char* routine, shmem_ctx_t ctx, void* dest, const void* src, std::size_t nelems,
             std::size_t elem_bytes, int pe, bool nbi);
void api_iput(const char* routine, shmem_ctx_t ctx, void* dest, const void* src, std::ptrdiff_t dst,
              std::ptrdiff_t sst, std::size_t nelems, std::size_t elem_bytes, int pe);
void api_iget(const char* routine, shmem_ctx_t ctx, void* dest, const void* src, std::ptrdiff_t dst,
              std::ptrdiff_t sst, std::size_t nelems, std::size_t elem_bytes, int pe);
void api_put_signal(const char* routine, shmem_ctx_t ctx, void* dest, const void* src, std::size_t nelems,
                    std::size_t elem_bytes, std::uint64_t* sig_addr, std::uint64_t signal, int sig_op, int pe,
                    bool nbi);

// An AMO on a T (4 or 8 bytes); returns the old value.
template <typename T>
T api_amo(const char* routine, shmem_ctx_t ctx, AmoOp op, const T* dest, T operand, T compare, int pe,
          bool fetch) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8);
  Runtime& r = rt(routine);
  Channel* ch = r.channel_of(routine, ctx);
  Lock lock(r, ch);
  const int wpe = r.world_pe(routine, ctx, pe);
  std::uint64_t o = 0, c = 0;
  std::memcpy(&o, &operand, sizeof(T));
  std::memcpy(&c, &compare, sizeof(T));
  const std::uint64_t old = r.amo(routine, op, const_cast<T*>(dest), sizeof(T), o, c, wpe, fetch, ch);
  T out;
  std::memcpy(&out, &old, sizeof(T));
  return out;
}

}  // namespace rma::shmem
