// Point-to-point synchronization (wait_until / test families and their
// _vector forms, the deprecated wait), signal_wait_until, ordering (fence,
// quiet), barriers and sync, and the distributed locks.
#include <climits>
#include <cstdint>

#include "shmem/api.hpp"
#include "shmem/collectives.hpp"

namespace rma::shmem {
namespace {

template <typename T>
bool satisfied(int cmp, T value, T wanted) {
  switch (cmp) {
    case SHMEM_CMP_EQ: return value == wanted;
    case SHMEM_CMP_NE: return value != wanted;
    case SHMEM_CMP_GT: return value > wanted;
    case SHMEM_CMP_GE: return value >= wanted;
    case SHMEM_CMP_LT: return value < wanted;
    case SHMEM_CMP_LE: return value <= wanted;
    default: return false;
  }
}

template <typename T>
T load(const T* ivar) {
  return __atomic_load_n(ivar, __ATOMIC_ACQUIRE);
}

// Checks the comparison and the symmetric addresses of the ivars that take part.
template <typename T>
Runtime& check(const char* routine, const T* ivars, std::size_t nelems, const int* status, int cmp) {
  Runtime& r = rt(routine);
  if (cmp < SHMEM_CMP_EQ || cmp > SHMEM_CMP_LE) {
    r.fail(routine, -1, "cmp " + std::to_string(cmp) + " is not one of SHMEM_CMP_EQ/NE/GT/GE/LT/LE");
  }
  if (nelems != 0 && ivars == nullptr) r.fail(routine, -1, "ivars is NULL");
  for (std::size_t i = 0; i < nelems; ++i) {
    if (status != nullptr && status[i] != 0) continue;
    if (!r.is_symmetric(ivars + i, sizeof(T))) {
      r.fail(routine, -1, "ivars[" + std::to_string(i) + "] is not a symmetric address (shmem_malloc'ed or global)");
    }
  }
  return r;
}

// One scan: how many of the included elements are satisfied; `first` the
// index of the first satisfied one; indices filled when given.
template <typename T>
std::size_t scan(const T* ivars, std::size_t nelems, const int* status, int cmp, T value, const T* values,
                 std::size_t* indices, std::size_t& included, std::size_t& first) {
  std::size_t hits = 0;
  included = 0;
  first = SIZE_MAX;
  for (std::size_t i = 0; i < nelems; ++i) {
    if (status != nullptr && status[i] != 0) continue;
    ++included;
    if (satisfied(cmp, load(ivars + i), values != nullptr ? values[i] : value)) {
      if (first == SIZE_MAX) first = i;
      if (indices != nullptr) indices[hits] = i;
      ++hits;
    }
  }
  return hits;
}

enum class Mode { kAll, kAny, kSome };

// wait_until_{all,any,some}[_vector] and test_*: wait (or look once) until the
// mode's condition holds; returns the mode's result.
template <typename T>
std::size_t wait_test(const char* routine, bool wait, Mode mode, T* ivars, std::size_t nelems, std::size_t* indices,
                      const int* status, int cmp, T value, const T* values) {
  Runtime& r = check(routine, ivars, nelems, status, cmp);
  for (std::uint32_t turns = 0;;) {
    std::size_t included = 0, first = SIZE_MAX;
    const std::size_t hits = scan(ivars, nelems, status, cmp, value, values, indices, included, first);
    if (hits != 0) r.sync_with_nic();
    switch (mode) {
      case Mode::kAll:
        if (hits == included) return 1;
        if (!wait) return 0;
        break;
      case Mode::kAny:
        if (included == 0) return SIZE_MAX;
        if (hits != 0) return first;
        if (!wait) return SIZE_MAX;
        break;
      case Mode::kSome:
        if (included == 0) return 0;
        if (hits != 0 || !wait) return hits;
        break;
    }
    // The write that ends the wait arrives through this PE's NIC (or a
    // peer's stores): progress it while waiting (a software NIC's
    // background thread does too).
    r.wait_turn(turns);
  }
}

}  // namespace
}  // namespace rma::shmem

using rma::shmem::Mode;
using rma::shmem::wait_test;

#define SHMEM_DEFINE_P2P(T, N)                                                                                     \
  SHMEM_DEFINE(void, N##_wait_until, (T * ivar, int cmp, T cmp_value)) {                                           \
    wait_test<T>("shmem_" #N "_wait_until", true, Mode::kAll, ivar, 1, nullptr, nullptr, cmp, cmp_value, nullptr);  \
  }                                                                                                                \
  SHMEM_DEFINE(void, N##_wait_until_all, (T * ivars, size_t nelems, const int* status, int cmp, T cmp_value)) {    \
    wait_test<T>("shmem_" #N "_wait_until_all", true, Mode::kAll, ivars, nelems, nullptr, status, cmp, cmp_value,  \
                 nullptr);                                                                                         \
  }                                                                                                                \
  SHMEM_DEFINE(size_t, N##_wait_until_any, (T * ivars, size_t nelems, const int* status, int cmp, T cmp_value)) {  \
    return wait_test<T>("shmem_" #N "_wait_until_any", true, Mode::kAny, ivars, nelems, nullptr, status, cmp,      \
                        cmp_value, nullptr);                                                                       \
  }                                                                                                                \
  SHMEM_DEFINE(size_t, N##_wait_until_some,                                                                        \
               (T * ivars, size_t nelems, size_t* indices, const int* status, int cmp, T cmp_value)) {             \
    return wait_test<T>("shmem_" #N "_wait_until_some", true, Mode::kSome, ivars, nelems, indices, status, cmp,    \
                        cmp_value, nullptr);                                                                       \
  }                                                                                                                \
  SHMEM_DEFINE(void, N##_wait_until_all_vector,                                                                    \
               (T * ivars, size_t nelems, const int* status, int cmp, const T* cmp_values)) {                      \
    wait_test<T>("shmem_" #N "_wait_until_all_vector", true, Mode::kAll, ivars, nelems, nullptr, status, cmp, static_cast<T>(0), \
                 cmp_values);                                                                                      \
  }                                                                                                                \
  SHMEM_DEFINE(size_t, N##_wait_until_any_vector,                                                                  \
               (T * ivars, size_t nelems, const int* status, int cmp, const T* cmp_values)) {                      \
    return wait_test<T>("shmem_" #N "_wait_until_any_vector", true, Mode::kAny, ivars, nelems, nullptr, status,    \
                        cmp, static_cast<T>(0), cmp_values);                                                                     \
  }                                                                                                                \
  SHMEM_DEFINE(size_t, N##_wait_until_some_vector,                                                                 \
               (T * ivars, size_t nelems, size_t* indices, const int* status, int cmp, const T* cmp_values)) {     \
    return wait_test<T>("shmem_" #N "_wait_until_some_vector", true, Mode::kSome, ivars, nelems, indices, status,  \
                        cmp, static_cast<T>(0), cmp_values);                                                                     \
  }                                                                                                                \
  SHMEM_DEFINE(int, N##_test, (T * ivar, int cmp, T cmp_value)) {                                                  \
    return static_cast<int>(                                                                                       \
        wait_test<T>("shmem_" #N "_test", false, Mode::kAll, ivar, 1, nullptr, nullptr, cmp, cmp_value, nullptr)); \
  }                                                                                                                \
  SHMEM_DEFINE(int, N##_test_all, (T * ivars, size_t nelems, const int* status, int cmp, T cmp_value)) {           \
    return static_cast<int>(wait_test<T>("shmem_" #N "_test_all", false, Mode::kAll, ivars, nelems, nullptr,       \
                                         status, cmp, cmp_value, nullptr));                                        \
  }                                                                                                                \
  SHMEM_DEFINE(size_t, N##_test_any, (T * ivars, size_t nelems, const int* status, int cmp, T cmp_value)) {        \
    return wait_test<T>("shmem_" #N "_test_any", false, Mode::kAny, ivars, nelems, nullptr, status, cmp,           \
                        cmp_value, nullptr);                                                                       \
  }                                                                                                                \
  SHMEM_DEFINE(size_t, N##_test_some,                                                                              \
               (T * ivars, size_t nelems, size_t* indices, const int* status, int cmp, T cmp_value)) {             \
    return wait_test<T>("shmem_" #N "_test_some", false, Mode::kSome, ivars, nelems, indices, status, cmp,         \
                        cmp_value, nullptr);                                                                       \
  }                                                                                                                \
  SHMEM_DEFINE(int, N##_test_all_vector,                                                                           \
               (T * ivars, size_t nelems, const int* status, int cmp, const T* cmp_values)) {                      \
    return static_cast<int>(wait_test<T>("shmem_" #N "_test_all_vector", false, Mode::kAll, ivars, nelems,         \
                                         nullptr, status, cmp, static_cast<T>(0), cmp_values));                                  \
  }                                                                                                                \
  SHMEM_DEFINE(size_t, N##_test_any_vector,                                                                        \
               (T * ivars, size_t nelems, const int* status, int cmp, const T* cmp_values)) {                      \
    return wait_test<T>("shmem_" #N "_test_any_vector", false, Mode::kAny, ivars, nelems, nullptr, status, cmp,    \
                        static_cast<T>(0), cmp_values);                                                                          \
  }                                                                                                                \
  SHMEM_DEFINE(size_t, N##_test_some_vector,                                                                       \
               (T * ivars, size_t nelems, size_t* indices, const int* status, int cmp, const T* cmp_values)) {     \
    return wait_test<T>("shmem_" #N "_test_some_vector", false, Mode::kSome, ivars, nelems, indices, status, cmp,  \
                        static_cast<T>(0), cmp_values);                                                                          \
  }
SHMEM_X_P2P_TYPES(SHMEM_DEFINE_P2P)

#define SHMEM_DEFINE_WAIT(T, N)                                                                               \
  SHMEM_DEFINE(void, N##_wait, (T * ivar, T cmp_value)) {                                                    \
    wait_test<T>("shmem_" #N "_wait", true, Mode::kAll, ivar, 1, nullptr, nullptr, SHMEM_CMP_NE, cmp_value,   \
                 nullptr);                                                                                    \
  }
SHMEM_DEFINE_WAIT(short, short)
SHMEM_DEFINE_WAIT(int, int)
SHMEM_DEFINE_WAIT(long, long)
SHMEM_DEFINE_WAIT(long long, longlong)
SHMEM_DEFINE(void, wait, (long* ivar, long cmp_value)) {
  wait_test<long>("shmem_wait", true, Mode::kAll, ivar, 1, nullptr, nullptr, SHMEM_CMP_NE, cmp_value, nullptr);
}

SHMEM_DEFINE(uint64_t, signal_wait_until, (uint64_t * sig_addr, int cmp, uint64_t cmp_value)) {
  wait_test<std::uint64_t>("shmem_signal_wait_until", true, Mode::kAll, sig_addr, 1, nullptr, nullptr, cmp, cmp_value,
                           nullptr);
  return __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE);
}

// ------------------------------------------------------------------ ordering
// Every operation to one PE travels on one reliable-connected QP, which the
// target executes in order: puts, AMOs and signals to a PE are delivered in
// the order they were issued, which is what fence guarantees. With the
// direct path (runtime.hpp) a fence also orders the CPU's stores and what
// the endpoints still hold for the PEs it reaches directly (Runtime::fence).
SHMEM_DEFINE(void, fence, (void)) {
  rma::shmem::Runtime& r = rma::shmem::rt("shmem_fence");
  rma::shmem::Lock lock(r);
  r.fence("shmem_fence");
}
SHMEM_DEFINE(void, ctx_fence, (shmem_ctx_t ctx)) {
  rma::shmem::Runtime& r = rma::shmem::rt("shmem_ctx_fence");
  rma::shmem::Channel* ch = r.channel_of("shmem_ctx_fence", ctx);
  rma::shmem::Lock lock(r, ch);
  r.fence("shmem_ctx_fence", ch);
}
SHMEM_DEFINE(void, quiet, (void)) {
  rma::shmem::Runtime& r = rma::shmem::rt("shmem_quiet");
  rma::shmem::Lock lock(r);
  r.quiet("shmem_quiet");
}
// A private context with its own connections completes only its own
// operations; a context on the shared connections completes everything
// issued on them (a superset of what the context issued).
SHMEM_DEFINE(void, ctx_quiet, (shmem_ctx_t ctx)) {
  rma::shmem::Runtime& r = rma::shmem::rt("shmem_ctx_quiet");
  rma::shmem::Channel* ch = r.channel_of("shmem_ctx_quiet", ctx);
  rma::shmem::Lock lock(r, ch);
  r.quiet("shmem_ctx_quiet", ch);
}

// ------------------------------------------------------------------ barriers
SHMEM_DEFINE(void, barrier_all, (void)) {
  rma::shmem::Runtime& r = rma::shmem::rt("shmem_barrier_all");
  rma::shmem::Lock lock(r);
  r.quiet("shmem_barrier_all");
  rma::shmem::barrier(r, rma::shmem::team_set(*r.world));
}
SHMEM_DEFINE(void, sync_all, (void)) {
  rma::shmem::Runtime& r = rma::shmem::rt("shmem_sync_all");
  rma::shmem::Lock lock(r);
  rma::shmem::barrier(r, rma::shmem::team_set(*r.world));
}
SHMEM_DEFINE(void, barrier, (int PE_start, int logPE_stride, int PE_size, long* pSync)) {
  rma::shmem::Runtime& r = rma::shmem::rt("shmem_barrier");
  rma::shmem::Lock lock(r);
  (void)pSync;
  const rma::shmem::PeSet s = rma::shmem::active_set(r, "shmem_barrier", PE_start, logPE_stride, PE_size);
  r.quiet("shmem_barrier");
  rma::shmem::barrier(r, s);
}
SHMEM_DEFINE(void, sync, (int PE_start, int logPE_stride, int PE_size, long* pSync)) {
  rma::shmem::Runtime& r = rma::shmem::rt("shmem_sync");
  rma::shmem::Lock lock(r);
  (void)pSync;
  rma::shmem::barrier(r, rma::shmem::active_set(r, "shmem_sync", PE_start, logPE_stride, PE_size));
}
SHMEM_DEFINE(int, team_sync, (shmem_team_t team)) {
  rma::shmem::Runtime& r = rma::shmem::rt("shmem_team_sync");
  rma::shmem::Lock lock(r);
  rma::shmem::barrier(r, rma::shmem::team_set(*r.team("shmem_team_sync", team)));
  return 0;
}

// ------------------------------------------------------------------ locks
// The lock word on PE 0 holds 0 (free) or holder + 1, changed only by
// compare-and-swap on the NIC; every PE's copy other than PE 0's is unused.
namespace {
constexpr const char* kSetLock = "shmem_set_lock";
long lock_cas(const char* routine, long* lock, long expected, long desired) {
  return rma::shmem::api_amo<long>(routine, SHMEM_CTX_DEFAULT, rma::shmem::AmoOp::kCswap, lock, desired, expected, 0,
                                   true);
}
}  // namespace

SHMEM_DEFINE(void, set_lock, (long* lock)) {
  rma::shmem::Runtime& r = rma::shmem::rt(kSetLock);
  const long mine = r.me + 1;
  for (std::uint32_t turns = 0;;) {
    const long holder = lock_cas(kSetLock, lock, 0, mine);
    if (holder == 0) break;
    if (holder == mine) r.fail(kSetLock, 0, "this PE already holds the lock (OpenSHMEM locks are not recursive)");
    r.wait_turn(turns);
  }
}
SHMEM_DEFINE(int, test_lock, (long* lock)) {
  rma::shmem::Runtime& r = rma::shmem::rt("shmem_test_lock");
  return lock_cas("shmem_test_lock", lock, 0, r.me + 1) == 0 ? 0 : 1;
}
SHMEM_DEFINE(void, clear_lock, (long* lock)) {
  rma::shmem::Runtime& r = rma::shmem::rt("shmem_clear_lock");
  {
    // Everything written under the lock is delivered before it is released.
    rma::shmem::Lock guard(r);
    r.quiet("shmem_clear_lock");
  }
  const long holder = lock_cas("shmem_clear_lock", lock, r.me + 1, 0);
  if (holder != r.me + 1) {
    r.fail("shmem_clear_lock", 0,
           holder == 0 ? std::string("the lock is not held")
                       : "the lock is held by PE " + std::to_string(holder - 1) + ", not by this PE");
  }
}
