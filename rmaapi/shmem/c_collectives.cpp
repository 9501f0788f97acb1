// Collectives on teams (typed and mem forms) and on the deprecated active
// sets (32/64-bit forms), and the reductions (shmem_TYPE_OP_reduce on
// teams, shmem_TYPE_OP_to_all on active sets). The algorithms are in
// collectives.cpp.
#include <complex>

#include "shmem/api.hpp"
#include "shmem/collectives.hpp"

namespace rma::shmem {
namespace {

// What every collective checks first: dest and source symmetric.
void check_buffers(Runtime& r, const char* routine, const void* dest, std::size_t dest_bytes, const void* src,
                   std::size_t src_bytes) {
  if (dest_bytes != 0 && !r.is_symmetric(dest, dest_bytes)) {
    r.fail(routine, -1, "dest (" + std::to_string(dest_bytes) + " bytes) is not symmetric");
  }
  if (src_bytes != 0 && !r.is_symmetric(src, src_bytes)) {
    r.fail(routine, -1, "source (" + std::to_string(src_bytes) + " bytes) is not symmetric");
  }
}

PeSet team_or_fail(Runtime& r, const char* routine, shmem_team_t team) {
  const shmem_team_s* t = r.team(routine, team);
  return team_set(*t);
}

}  // namespace

int api_broadcast(const char* routine, const PeSet* set, shmem_team_t team, void* dest, const void* src,
                  std::size_t nelems, std::size_t elem, int root, bool root_gets_copy) {
  Runtime& r = rt(routine);
  Lock lock(r);
  const PeSet s = set != nullptr ? *set : team_or_fail(r, routine, team);
  const std::size_t bytes = byte_count(r, routine, nelems, elem);
  check_buffers(r, routine, dest, bytes, src, bytes);
  broadcast(r, routine, s, dest, src, bytes, root, root_gets_copy);
  return 0;
}

int api_fcollect(const char* routine, const PeSet* set, shmem_team_t team, void* dest, const void* src,
                 std::size_t nelems, std::size_t elem) {
  Runtime& r = rt(routine);
  Lock lock(r);
  const PeSet s = set != nullptr ? *set : team_or_fail(r, routine, team);
  const std::size_t bytes = byte_count(r, routine, nelems, elem);
  check_buffers(r, routine, dest, bytes * static_cast<std::size_t>(s.size), src, bytes);
  fcollect(r, routine, s, dest, src, bytes);
  return 0;
}

int api_collect(const char* routine, const PeSet* set, shmem_team_t team, void* dest, const void* src,
                std::size_t nelems, std::size_t elem) {
  Runtime& r = rt(routine);
  Lock lock(r);
  const PeSet s = set != nullptr ? *set : team_or_fail(r, routine, team);
  const std::size_t bytes = byte_count(r, routine, nelems, elem);
  check_buffers(r, routine, dest, 0, src, bytes);
  if (!r.is_symmetric(dest, 1)) r.fail(routine, -1, "dest is not symmetric");
  collect(r, routine, s, dest, src, bytes);
  return 0;
}

int api_alltoall(const char* routine, const PeSet* set, shmem_team_t team, void* dest, const void* src,
                 std::size_t nelems, std::size_t elem) {
  Runtime& r = rt(routine);
  Lock lock(r);
  const PeSet s = set != nullptr ? *set : team_or_fail(r, routine, team);
  const std::size_t bytes = byte_count(r, routine, nelems, elem);
  const std::size_t all = byte_count(r, routine, bytes, static_cast<std::size_t>(s.size));
  check_buffers(r, routine, dest, all, src, all);
  alltoall(r, routine, s, dest, src, bytes);
  return 0;
}

int api_alltoalls(const char* routine, const PeSet* set, shmem_team_t team, void* dest, const void* src,
                  std::ptrdiff_t dst, std::ptrdiff_t sst, std::size_t nelems, std::size_t elem) {
  Runtime& r = rt(routine);
  Lock lock(r);
  const PeSet s = set != nullptr ? *set : team_or_fail(r, routine, team);
  if (dst < 1 || sst < 1) {
    r.fail(routine, -1, "strides dst " + std::to_string(dst) + " and sst " + std::to_string(sst) + " must be >= 1");
  }
  alltoalls(r, routine, s, dest, src, dst, sst, elem, nelems);
  return 0;
}

template <typename T, typename Op>
void combine(void* acc, const void* in, std::size_t n) {
  T* a = static_cast<T*>(acc);
  const T* b = static_cast<const T*>(in);
  for (std::size_t i = 0; i < n; ++i) a[i] = Op::apply(a[i], b[i]);
}
struct OpAnd { template <typename T> static T apply(T a, T b) { return static_cast<T>(a & b); } };
struct OpOr { template <typename T> static T apply(T a, T b) { return static_cast<T>(a | b); } };
struct OpXor { template <typename T> static T apply(T a, T b) { return static_cast<T>(a ^ b); } };
struct OpMax { template <typename T> static T apply(T a, T b) { return a < b ? b : a; } };
struct OpMin { template <typename T> static T apply(T a, T b) { return b < a ? b : a; } };
struct OpSum { template <typename T> static T apply(T a, T b) { return static_cast<T>(a + b); } };
struct OpProd { template <typename T> static T apply(T a, T b) { return static_cast<T>(a * b); } };

template <typename T, typename Op>
int api_reduce(const char* routine, const PeSet* set, shmem_team_t team, T* dest, const T* src, std::size_t n) {
  Runtime& r = rt(routine);
  Lock lock(r);
  const PeSet s = set != nullptr ? *set : team_or_fail(r, routine, team);
  const std::size_t bytes = byte_count(r, routine, n, sizeof(T));
  check_buffers(r, routine, dest, bytes, src, bytes);
  if (n != 0) reduce(r, routine, s, dest, src, n, sizeof(T), combine<T, Op>);
  return 0;
}

}  // namespace rma::shmem

using rma::shmem::PeSet;
using rma::shmem::rt;

namespace {
PeSet active(const char* routine, int start, int log_stride, int size) {
  return rma::shmem::active_set(rt(routine), routine, start, log_stride, size);
}
}  // namespace

#define SHMEM_DEFINE_COLL_TYPE(T, N)                                                                              \
  SHMEM_DEFINE(int, N##_broadcast, (shmem_team_t team, T * dest, const T* source, size_t nelems, int PE_root)) {  \
    return rma::shmem::api_broadcast("shmem_" #N "_broadcast", nullptr, team, dest, source, nelems, sizeof(T),    \
                                     PE_root, true);                                                              \
  }                                                                                                               \
  SHMEM_DEFINE(int, N##_collect, (shmem_team_t team, T * dest, const T* source, size_t nelems)) {                 \
    return rma::shmem::api_collect("shmem_" #N "_collect", nullptr, team, dest, source, nelems, sizeof(T));       \
  }                                                                                                               \
  SHMEM_DEFINE(int, N##_fcollect, (shmem_team_t team, T * dest, const T* source, size_t nelems)) {                \
    return rma::shmem::api_fcollect("shmem_" #N "_fcollect", nullptr, team, dest, source, nelems, sizeof(T));     \
  }                                                                                                               \
  SHMEM_DEFINE(int, N##_alltoall, (shmem_team_t team, T * dest, const T* source, size_t nelems)) {                \
    return rma::shmem::api_alltoall("shmem_" #N "_alltoall", nullptr, team, dest, source, nelems, sizeof(T));     \
  }                                                                                                               \
  SHMEM_DEFINE(int, N##_alltoalls,                                                                                \
               (shmem_team_t team, T * dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems)) {     \
    return rma::shmem::api_alltoalls("shmem_" #N "_alltoalls", nullptr, team, dest, source, dst, sst, nelems,     \
                                     sizeof(T));                                                                  \
  }
SHMEM_X_RMA_TYPES(SHMEM_DEFINE_COLL_TYPE)

SHMEM_DEFINE(int, broadcastmem, (shmem_team_t team, void* dest, const void* source, size_t nelems, int PE_root)) {
  return rma::shmem::api_broadcast("shmem_broadcastmem", nullptr, team, dest, source, nelems, 1, PE_root, true);
}
SHMEM_DEFINE(int, collectmem, (shmem_team_t team, void* dest, const void* source, size_t nelems)) {
  return rma::shmem::api_collect("shmem_collectmem", nullptr, team, dest, source, nelems, 1);
}
SHMEM_DEFINE(int, fcollectmem, (shmem_team_t team, void* dest, const void* source, size_t nelems)) {
  return rma::shmem::api_fcollect("shmem_fcollectmem", nullptr, team, dest, source, nelems, 1);
}
SHMEM_DEFINE(int, alltoallmem, (shmem_team_t team, void* dest, const void* source, size_t nelems)) {
  return rma::shmem::api_alltoall("shmem_alltoallmem", nullptr, team, dest, source, nelems, 1);
}
SHMEM_DEFINE(int, alltoallsmem,
             (shmem_team_t team, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems)) {
  return rma::shmem::api_alltoalls("shmem_alltoallsmem", nullptr, team, dest, source, dst, sst, nelems, 1);
}

// The deprecated active-set forms: the root's dest is not written by
// broadcast32/64 (OpenSHMEM 1.4 semantics).
#define SHMEM_DEFINE_ACTIVE_SET(B)                                                                               \
  SHMEM_DEFINE(void, broadcast##B,                                                                               \
               (void* dest, const void* source, size_t nelems, int PE_root, int PE_start, int logPE_stride,      \
                int PE_size, long* pSync)) {                                                                     \
    (void)pSync;                                                                                                 \
    const PeSet s = active("shmem_broadcast" #B, PE_start, logPE_stride, PE_size);                               \
    rma::shmem::api_broadcast("shmem_broadcast" #B, &s, nullptr, dest, source, nelems, B / 8, PE_root, false);   \
  }                                                                                                              \
  SHMEM_DEFINE(void, collect##B,                                                                                 \
               (void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride, int PE_size,      \
                long* pSync)) {                                                                                  \
    (void)pSync;                                                                                                 \
    const PeSet s = active("shmem_collect" #B, PE_start, logPE_stride, PE_size);                                 \
    rma::shmem::api_collect("shmem_collect" #B, &s, nullptr, dest, source, nelems, B / 8);                       \
  }                                                                                                              \
  SHMEM_DEFINE(void, fcollect##B,                                                                                \
               (void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride, int PE_size,      \
                long* pSync)) {                                                                                  \
    (void)pSync;                                                                                                 \
    const PeSet s = active("shmem_fcollect" #B, PE_start, logPE_stride, PE_size);                                \
    rma::shmem::api_fcollect("shmem_fcollect" #B, &s, nullptr, dest, source, nelems, B / 8);                     \
  }                                                                                                              \
  SHMEM_DEFINE(void, alltoall##B,                                                                                \
               (void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride, int PE_size,      \
                long* pSync)) {                                                                                  \
    (void)pSync;                                                                                                 \
    const PeSet s = active("shmem_alltoall" #B, PE_start, logPE_stride, PE_size);                                \
    rma::shmem::api_alltoall("shmem_alltoall" #B, &s, nullptr, dest, source, nelems, B / 8);                     \
  }                                                                                                              \
  SHMEM_DEFINE(void, alltoalls##B,                                                                               \
               (void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int PE_start,       \
                int logPE_stride, int PE_size, long* pSync)) {                                                   \
    (void)pSync;                                                                                                 \
    const PeSet s = active("shmem_alltoalls" #B, PE_start, logPE_stride, PE_size);                               \
    rma::shmem::api_alltoalls("shmem_alltoalls" #B, &s, nullptr, dest, source, dst, sst, nelems, B / 8);         \
  }
SHMEM_DEFINE_ACTIVE_SET(32)
SHMEM_DEFINE_ACTIVE_SET(64)

// Reductions. OPSTRUCT names the element-wise operation.
#define SHMEM_DEFINE_REDUCE(T, N, OP, OPSTRUCT)                                                                  \
  SHMEM_DEFINE(int, N##_##OP##_reduce, (shmem_team_t team, T * dest, const T* source, size_t nreduce)) {         \
    return rma::shmem::api_reduce<T, rma::shmem::OPSTRUCT>("shmem_" #N "_" #OP "_reduce", nullptr, team, dest,   \
                                                           source, nreduce);                                     \
  }
#define SHMEM_DEFINE_REDUCE_BITWISE(T, N)                                                                        \
  SHMEM_DEFINE_REDUCE(T, N, and, OpAnd) SHMEM_DEFINE_REDUCE(T, N, or, OpOr) SHMEM_DEFINE_REDUCE(T, N, xor, OpXor)
#define SHMEM_DEFINE_REDUCE_ORDERED(T, N) SHMEM_DEFINE_REDUCE(T, N, max, OpMax) SHMEM_DEFINE_REDUCE(T, N, min, OpMin)
#define SHMEM_DEFINE_REDUCE_ARITH(T, N) SHMEM_DEFINE_REDUCE(T, N, sum, OpSum) SHMEM_DEFINE_REDUCE(T, N, prod, OpProd)
SHMEM_X_REDUCE_BITWISE(SHMEM_DEFINE_REDUCE_BITWISE)
SHMEM_X_REDUCE_ORDERED(SHMEM_DEFINE_REDUCE_ORDERED)
SHMEM_X_REDUCE_ORDERED(SHMEM_DEFINE_REDUCE_ARITH)
SHMEM_X_REDUCE_COMPLEX(SHMEM_DEFINE_REDUCE_ARITH)

#define SHMEM_DEFINE_TO_ALL(T, N, OP, OPSTRUCT)                                                                  \
  SHMEM_DEFINE(void, N##_##OP##_to_all,                                                                          \
               (T * dest, const T* source, int nreduce, int PE_start, int logPE_stride, int PE_size, T* pWrk,    \
                long* pSync)) {                                                                                  \
    (void)pWrk;                                                                                                  \
    (void)pSync;                                                                                                 \
    const PeSet s = active("shmem_" #N "_" #OP "_to_all", PE_start, logPE_stride, PE_size);                      \
    if (nreduce < 0) {                                                                                           \
      rt("shmem_" #N "_" #OP "_to_all")                                                                          \
          .fail("shmem_" #N "_" #OP "_to_all", -1, "nreduce " + std::to_string(nreduce) + " is negative");      \
    }                                                                                                            \
    rma::shmem::api_reduce<T, rma::shmem::OPSTRUCT>("shmem_" #N "_" #OP "_to_all", &s, nullptr, dest, source,    \
                                                    static_cast<size_t>(nreduce));                               \
  }
#define SHMEM_DEFINE_TO_ALL_BITWISE(T, N)                                                                        \
  SHMEM_DEFINE_TO_ALL(T, N, and, OpAnd) SHMEM_DEFINE_TO_ALL(T, N, or, OpOr) SHMEM_DEFINE_TO_ALL(T, N, xor, OpXor)
#define SHMEM_DEFINE_TO_ALL_ORDERED(T, N) SHMEM_DEFINE_TO_ALL(T, N, max, OpMax) SHMEM_DEFINE_TO_ALL(T, N, min, OpMin)
#define SHMEM_DEFINE_TO_ALL_ARITH(T, N) SHMEM_DEFINE_TO_ALL(T, N, sum, OpSum) SHMEM_DEFINE_TO_ALL(T, N, prod, OpProd)
SHMEM_X_TO_ALL_BITWISE(SHMEM_DEFINE_TO_ALL_BITWISE)
SHMEM_X_TO_ALL_ORDERED(SHMEM_DEFINE_TO_ALL_ORDERED)
SHMEM_X_TO_ALL_ORDERED(SHMEM_DEFINE_TO_ALL_ARITH)
SHMEM_X_REDUCE_COMPLEX(SHMEM_DEFINE_TO_ALL_ARITH)
