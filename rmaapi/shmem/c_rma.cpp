// RMA: typed, sized and untyped put/get (blocking and _nbi), p/g, iput/iget
// and the signaling puts, for every type of SHMEM_X_RMA_TYPES, each with its
// ctx form.
#include <cinttypes>

#include "shmem/api.hpp"

namespace rma::shmem {

void api_put(const char* routine, shmem_ctx_t ctx, void* dest, const void* src, std::size_t nelems,
             std::size_t elem_bytes, int pe, bool nbi) {
  Runtime& r = rt(routine);
  Channel* ch = r.channel_of(routine, ctx);
  Lock lock(r, ch);
  const int wpe = r.world_pe(routine, ctx, pe);
  r.put(routine, dest, src, byte_count(r, routine, nelems, elem_bytes), wpe, nbi, ch);
}

void api_get(const char* routine, shmem_ctx_t ctx, void* dest, const void* src, std::size_t nelems,
             std::size_t elem_bytes, int pe, bool nbi) {
  Runtime& r = rt(routine);
  Channel* ch = r.channel_of(routine, ctx);
  Lock lock(r, ch);
  const int wpe = r.world_pe(routine, ctx, pe);
  r.get(routine, dest, src, byte_count(r, routine, nelems, elem_bytes), wpe, nbi, ch);
}

void api_iput(const char* routine, shmem_ctx_t ctx, void* dest, const void* src, std::ptrdiff_t dst,
              std::ptrdiff_t sst, std::size_t nelems, std::size_t elem_bytes, int pe) {
  Runtime& r = rt(routine);
  Channel* ch = r.channel_of(routine, ctx);
  Lock lock(r, ch);
  const int wpe = r.world_pe(routine, ctx, pe);
  auto* d = static_cast<std::byte*>(dest);
  const auto* s = static_cast<const std::byte*>(src);
  const auto eb = static_cast<std::ptrdiff_t>(elem_bytes);
  // Elements are at most 16 bytes: each put is inline, so the source is
  // free as soon as it is posted.
  for (std::size_t i = 0; i < nelems; ++i) {
    const auto k = static_cast<std::ptrdiff_t>(i);
    r.put(routine, d + k * dst * eb, s + k * sst * eb, elem_bytes, wpe, true, ch);
  }
}

void api_iget(const char* routine, shmem_ctx_t ctx, void* dest, const void* src, std::ptrdiff_t dst,
              std::ptrdiff_t sst, std::size_t nelems, std::size_t elem_bytes, int pe) {
  Runtime& r = rt(routine);
  Channel* ch = r.channel_of(routine, ctx);
  Lock lock(r, ch);
  const int wpe = r.world_pe(routine, ctx, pe);
  auto* d = static_cast<std::byte*>(dest);
  const auto* s = static_cast<const std::byte*>(src);
  const auto eb = static_cast<std::ptrdiff_t>(elem_bytes);
  for (std::size_t i = 0; i < nelems; ++i) {
    const auto k = static_cast<std::ptrdiff_t>(i);
    r.get(routine, d + k * dst * eb, s + k * sst * eb, elem_bytes, wpe, true, ch);
  }
  if (nelems != 0) {
    endpoint::Endpoint& ep = (ch != nullptr ? *ch : r.main()).eps->endpoint(wpe);
    const StatusCode rc = ep.flush();
    if (rc != StatusCode::kOk || ep.broken()) r.quiet(routine, ch);
  }
}

void api_put_signal(const char* routine, shmem_ctx_t ctx, void* dest, const void* src, std::size_t nelems,
                    std::size_t elem_bytes, std::uint64_t* sig_addr, std::uint64_t signal, int sig_op, int pe,
                    bool nbi) {
  Runtime& r = rt(routine);
  Channel* ch = r.channel_of(routine, ctx);
  Lock lock(r, ch);
  const int wpe = r.world_pe(routine, ctx, pe);
  if (sig_op != SHMEM_SIGNAL_SET && sig_op != SHMEM_SIGNAL_ADD) {
    r.fail(routine, wpe, "sig_op " + std::to_string(sig_op) + " is neither SHMEM_SIGNAL_SET nor SHMEM_SIGNAL_ADD");
  }
  if ((reinterpret_cast<std::uintptr_t>(sig_addr) & 7) != 0) {
    r.fail(routine, wpe, "sig_addr is not aligned to 8 bytes");
  }
  const std::size_t bytes = byte_count(r, routine, nelems, elem_bytes);
  // The data, then the signal, on the one RC connection to the target: the
  // target executes them in order, so the signal is never seen before its
  // data. On the direct path the data is in place when put returns and the
  // signal is a release store or a CPU atomic after it; when only one of
  // the two is direct, the endpoint is completed in between.
  r.put(routine, dest, src, bytes, wpe, nbi, ch);
  if (sig_op == SHMEM_SIGNAL_SET) {
    r.put_flag(routine, sig_addr, signal, wpe, ch);
  } else {
    if (r.direct(sig_addr, 8, wpe) != nullptr && r.direct(dest, bytes, wpe) == nullptr) {
      r.fence(routine, ch);  // the data went through the endpoint: it lands first
    }
    r.amo(routine, AmoOp::kAdd, sig_addr, 8, signal, 0, wpe, false, ch);
  }
}

}  // namespace rma::shmem

using rma::shmem::api_get;
using rma::shmem::api_iget;
using rma::shmem::api_iput;
using rma::shmem::api_put;
using rma::shmem::api_put_signal;

#define SHMEM_DEFINE_RMA(T, N)                                                                                     \
  SHMEM_DEFINE(void, N##_put, (T * dest, const T* source, size_t nelems, int pe)) {                                \
    api_put("shmem_" #N "_put", SHMEM_CTX_DEFAULT, dest, source, nelems, sizeof(T), pe, false);                    \
  }                                                                                                                \
  SHMEM_DEFINE(void, ctx_##N##_put, (shmem_ctx_t ctx, T * dest, const T* source, size_t nelems, int pe)) {         \
    api_put("shmem_ctx_" #N "_put", ctx, dest, source, nelems, sizeof(T), pe, false);                              \
  }                                                                                                                \
  SHMEM_DEFINE(void, N##_get, (T * dest, const T* source, size_t nelems, int pe)) {                                \
    api_get("shmem_" #N "_get", SHMEM_CTX_DEFAULT, dest, source, nelems, sizeof(T), pe, false);                    \
  }                                                                                                                \
  SHMEM_DEFINE(void, ctx_##N##_get, (shmem_ctx_t ctx, T * dest, const T* source, size_t nelems, int pe)) {         \
    api_get("shmem_ctx_" #N "_get", ctx, dest, source, nelems, sizeof(T), pe, false);                              \
  }                                                                                                                \
  SHMEM_DEFINE(void, N##_put_nbi, (T * dest, const T* source, size_t nelems, int pe)) {                            \
    api_put("shmem_" #N "_put_nbi", SHMEM_CTX_DEFAULT, dest, source, nelems, sizeof(T), pe, true);                 \
  }                                                                                                                \
  SHMEM_DEFINE(void, ctx_##N##_put_nbi, (shmem_ctx_t ctx, T * dest, const T* source, size_t nelems, int pe)) {     \
    api_put("shmem_ctx_" #N "_put_nbi", ctx, dest, source, nelems, sizeof(T), pe, true);                           \
  }                                                                                                                \
  SHMEM_DEFINE(void, N##_get_nbi, (T * dest, const T* source, size_t nelems, int pe)) {                            \
    api_get("shmem_" #N "_get_nbi", SHMEM_CTX_DEFAULT, dest, source, nelems, sizeof(T), pe, true);                 \
  }                                                                                                                \
  SHMEM_DEFINE(void, ctx_##N##_get_nbi, (shmem_ctx_t ctx, T * dest, const T* source, size_t nelems, int pe)) {     \
    api_get("shmem_ctx_" #N "_get_nbi", ctx, dest, source, nelems, sizeof(T), pe, true);                           \
  }                                                                                                                \
  SHMEM_DEFINE(void, N##_p, (T * dest, T value, int pe)) {                                                         \
    api_put("shmem_" #N "_p", SHMEM_CTX_DEFAULT, dest, &value, 1, sizeof(T), pe, false);                           \
  }                                                                                                                \
  SHMEM_DEFINE(void, ctx_##N##_p, (shmem_ctx_t ctx, T * dest, T value, int pe)) {                                  \
    api_put("shmem_ctx_" #N "_p", ctx, dest, &value, 1, sizeof(T), pe, false);                                     \
  }                                                                                                                \
  SHMEM_DEFINE(T, N##_g, (const T* source, int pe)) {                                                              \
    T value;                                                                                                       \
    api_get("shmem_" #N "_g", SHMEM_CTX_DEFAULT, &value, source, 1, sizeof(T), pe, false);                         \
    return value;                                                                                                  \
  }                                                                                                                \
  SHMEM_DEFINE(T, ctx_##N##_g, (shmem_ctx_t ctx, const T* source, int pe)) {                                       \
    T value;                                                                                                       \
    api_get("shmem_ctx_" #N "_g", ctx, &value, source, 1, sizeof(T), pe, false);                                   \
    return value;                                                                                                  \
  }                                                                                                                \
  SHMEM_DEFINE(void, N##_iput, (T * dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)) { \
    api_iput("shmem_" #N "_iput", SHMEM_CTX_DEFAULT, dest, source, dst, sst, nelems, sizeof(T), pe);               \
  }                                                                                                                \
  SHMEM_DEFINE(void, ctx_##N##_iput,                                                                               \
               (shmem_ctx_t ctx, T * dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)) { \
    api_iput("shmem_ctx_" #N "_iput", ctx, dest, source, dst, sst, nelems, sizeof(T), pe);                         \
  }                                                                                                                \
  SHMEM_DEFINE(void, N##_iget, (T * dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)) { \
    api_iget("shmem_" #N "_iget", SHMEM_CTX_DEFAULT, dest, source, dst, sst, nelems, sizeof(T), pe);               \
  }                                                                                                                \
  SHMEM_DEFINE(void, ctx_##N##_iget,                                                                               \
               (shmem_ctx_t ctx, T * dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)) { \
    api_iget("shmem_ctx_" #N "_iget", ctx, dest, source, dst, sst, nelems, sizeof(T), pe);                         \
  }                                                                                                                \
  SHMEM_DEFINE(void, N##_put_signal,                                                                               \
               (T * dest, const T* source, size_t nelems, uint64_t* sig_addr, uint64_t signal, int sig_op, int pe)) { \
    api_put_signal("shmem_" #N "_put_signal", SHMEM_CTX_DEFAULT, dest, source, nelems, sizeof(T), sig_addr, signal, \
                   sig_op, pe, false);                                                                             \
  }                                                                                                                \
  SHMEM_DEFINE(void, ctx_##N##_put_signal,                                                                         \
               (shmem_ctx_t ctx, T * dest, const T* source, size_t nelems, uint64_t* sig_addr, uint64_t signal,    \
                int sig_op, int pe)) {                                                                             \
    api_put_signal("shmem_ctx_" #N "_put_signal", ctx, dest, source, nelems, sizeof(T), sig_addr, signal, sig_op,  \
                   pe, false);                                                                                     \
  }                                                                                                                \
  SHMEM_DEFINE(void, N##_put_signal_nbi,                                                                           \
               (T * dest, const T* source, size_t nelems, uint64_t* sig_addr, uint64_t signal, int sig_op, int pe)) { \
    api_put_signal("shmem_" #N "_put_signal_nbi", SHMEM_CTX_DEFAULT, dest, source, nelems, sizeof(T), sig_addr,    \
                   signal, sig_op, pe, true);                                                                      \
  }                                                                                                                \
  SHMEM_DEFINE(void, ctx_##N##_put_signal_nbi,                                                                     \
               (shmem_ctx_t ctx, T * dest, const T* source, size_t nelems, uint64_t* sig_addr, uint64_t signal,    \
                int sig_op, int pe)) {                                                                             \
    api_put_signal("shmem_ctx_" #N "_put_signal_nbi", ctx, dest, source, nelems, sizeof(T), sig_addr, signal,      \
                   sig_op, pe, true);                                                                              \
  }
SHMEM_X_RMA_TYPES(SHMEM_DEFINE_RMA)

// Sized (put8 .. put128: elements of 1 to 16 bytes) and untyped (putmem:
// bytes) forms: the same bodies over void*, with the element size from the
// name.
#define SHMEM_DEFINE_RMA_SIZED(N, SIZE)                                                                            \
  SHMEM_DEFINE(void, put##N, (void* dest, const void* source, size_t nelems, int pe)) {                            \
    api_put("shmem_put" #N, SHMEM_CTX_DEFAULT, dest, source, nelems, SIZE, pe, false);                             \
  }                                                                                                                \
  SHMEM_DEFINE(void, ctx_put##N, (shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe)) {       \
    api_put("shmem_ctx_put" #N, ctx, dest, source, nelems, SIZE, pe, false);                                       \
  }                                                                                                                \
  SHMEM_DEFINE(void, get##N, (void* dest, const void* source, size_t nelems, int pe)) {                            \
    api_get("shmem_get" #N, SHMEM_CTX_DEFAULT, dest, source, nelems, SIZE, pe, false);                             \
  }                                                                                                                \
  SHMEM_DEFINE(void, ctx_get##N, (shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe)) {       \
    api_get("shmem_ctx_get" #N, ctx, dest, source, nelems, SIZE, pe, false);                                       \
  }                                                                                                                \
  SHMEM_DEFINE(void, put##N##_nbi, (void* dest, const void* source, size_t nelems, int pe)) {                      \
    api_put("shmem_put" #N "_nbi", SHMEM_CTX_DEFAULT, dest, source, nelems, SIZE, pe, true);                       \
  }                                                                                                                \
  SHMEM_DEFINE(void, ctx_put##N##_nbi, (shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe)) { \
    api_put("shmem_ctx_put" #N "_nbi", ctx, dest, source, nelems, SIZE, pe, true);                                 \
  }                                                                                                                \
  SHMEM_DEFINE(void, get##N##_nbi, (void* dest, const void* source, size_t nelems, int pe)) {                      \
    api_get("shmem_get" #N "_nbi", SHMEM_CTX_DEFAULT, dest, source, nelems, SIZE, pe, true);                       \
  }                                                                                                                \
  SHMEM_DEFINE(void, ctx_get##N##_nbi, (shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe)) { \
    api_get("shmem_ctx_get" #N "_nbi", ctx, dest, source, nelems, SIZE, pe, true);                                 \
  }                                                                                                                \
  SHMEM_DEFINE(void, iput##N,                                                                                      \
               (void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)) {            \
    api_iput("shmem_iput" #N, SHMEM_CTX_DEFAULT, dest, source, dst, sst, nelems, SIZE, pe);                        \
  }                                                                                                                \
  SHMEM_DEFINE(void, ctx_iput##N,                                                                                  \
               (shmem_ctx_t ctx, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,     \
                int pe)) {                                                                                         \
    api_iput("shmem_ctx_iput" #N, ctx, dest, source, dst, sst, nelems, SIZE, pe);                                  \
  }                                                                                                                \
  SHMEM_DEFINE(void, iget##N,                                                                                      \
               (void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)) {            \
    api_iget("shmem_iget" #N, SHMEM_CTX_DEFAULT, dest, source, dst, sst, nelems, SIZE, pe);                        \
  }                                                                                                                \
  SHMEM_DEFINE(void, ctx_iget##N,                                                                                  \
               (shmem_ctx_t ctx, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,     \
                int pe)) {                                                                                         \
    api_iget("shmem_ctx_iget" #N, ctx, dest, source, dst, sst, nelems, SIZE, pe);                                  \
  }                                                                                                                \
  SHMEM_DEFINE(void, put##N##_signal,                                                                              \
               (void* dest, const void* source, size_t nelems, uint64_t* sig_addr, uint64_t signal, int sig_op,   \
                int pe)) {                                                                                         \
    api_put_signal("shmem_put" #N "_signal", SHMEM_CTX_DEFAULT, dest, source, nelems, SIZE, sig_addr, signal,      \
                   sig_op, pe, false);                                                                             \
  }                                                                                                                \
  SHMEM_DEFINE(void, ctx_put##N##_signal,                                                                          \
               (shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, uint64_t* sig_addr,                \
                uint64_t signal, int sig_op, int pe)) {                                                            \
    api_put_signal("shmem_ctx_put" #N "_signal", ctx, dest, source, nelems, SIZE, sig_addr, signal, sig_op, pe,    \
                   false);                                                                                         \
  }                                                                                                                \
  SHMEM_DEFINE(void, put##N##_signal_nbi,                                                                          \
               (void* dest, const void* source, size_t nelems, uint64_t* sig_addr, uint64_t signal, int sig_op,   \
                int pe)) {                                                                                         \
    api_put_signal("shmem_put" #N "_signal_nbi", SHMEM_CTX_DEFAULT, dest, source, nelems, SIZE, sig_addr, signal,  \
                   sig_op, pe, true);                                                                              \
  }                                                                                                                \
  SHMEM_DEFINE(void, ctx_put##N##_signal_nbi,                                                                      \
               (shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, uint64_t* sig_addr,                \
                uint64_t signal, int sig_op, int pe)) {                                                            \
    api_put_signal("shmem_ctx_put" #N "_signal_nbi", ctx, dest, source, nelems, SIZE, sig_addr, signal, sig_op,    \
                   pe, true);                                                                                      \
  }
SHMEM_DEFINE_RMA_SIZED(8, 1)
SHMEM_DEFINE_RMA_SIZED(16, 2)
SHMEM_DEFINE_RMA_SIZED(32, 4)
SHMEM_DEFINE_RMA_SIZED(64, 8)
SHMEM_DEFINE_RMA_SIZED(128, 16)
SHMEM_DEFINE_RMA_SIZED(mem, 1)

SHMEM_DEFINE(uint64_t, signal_fetch, (const uint64_t* sig_addr)) {
  (void)rma::shmem::rt("shmem_signal_fetch");
  return __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE);
}
