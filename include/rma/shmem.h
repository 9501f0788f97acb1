/* OpenSHMEM 1.5 for librma: <shmem.h> (installed as <rma/shmem.h>, with a
 * <shmem.h> and <pshmem.h> at the include root that include it).
 *
 * Every routine exists under its shmem_ name and its pshmem_ name (the
 * profiling interface: the shmem_ names are weak aliases of the pshmem_
 * ones, so a tool may define shmem_X and call pshmem_X). The typed families
 * are generated from the type tables below (SHMEM_X_*): each table lists
 * (C type, name used in routine names) as the specification's tables do.
 * C11 programs get the type-generic names (shmem_put, shmem_atomic_add, ...)
 * through _Generic; C++ programs get them as overloads.
 */
#ifndef RMA_SHMEM_H
#define RMA_SHMEM_H

#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
#include <complex>
#endif

/* ------------------------------------------------------------------ constants */
#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 5
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define SHMEM_MAX_NAME_LEN 256
#define _SHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN
#define SHMEM_VENDOR_STRING "librma OpenSHMEM"
#define _SHMEM_VENDOR_STRING SHMEM_VENDOR_STRING

#define SHMEM_THREAD_SINGLE 0
#define SHMEM_THREAD_FUNNELED 1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE 3

#define SHMEM_CMP_EQ 1
#define SHMEM_CMP_NE 2
#define SHMEM_CMP_GT 3
#define SHMEM_CMP_GE 4
#define SHMEM_CMP_LT 5
#define SHMEM_CMP_LE 6
#define _SHMEM_CMP_EQ SHMEM_CMP_EQ
#define _SHMEM_CMP_NE SHMEM_CMP_NE
#define _SHMEM_CMP_GT SHMEM_CMP_GT
#define _SHMEM_CMP_GE SHMEM_CMP_GE
#define _SHMEM_CMP_LT SHMEM_CMP_LT
#define _SHMEM_CMP_LE SHMEM_CMP_LE

#define SHMEM_SIGNAL_SET 0
#define SHMEM_SIGNAL_ADD 1

#define SHMEM_CTX_PRIVATE (1L << 0)
#define SHMEM_CTX_SERIALIZED (1L << 1)
#define SHMEM_CTX_NOSTORE (1L << 2)

#define SHMEM_MALLOC_ATOMICS_REMOTE (1L << 0)
#define SHMEM_MALLOC_SIGNAL_REMOTE (1L << 1)

#define SHMEM_TEAM_NUM_CONTEXTS (1L << 0)

/* pSync / pWrk of the deprecated active-set collectives. librma's
 * collectives keep their own symmetric state, so pSync is only checked to be
 * symmetric; the sizes are what portable programs allocate. */
#define SHMEM_SYNC_VALUE 0L
#define SHMEM_BCAST_SYNC_SIZE 64
#define SHMEM_REDUCE_SYNC_SIZE 64
#define SHMEM_BARRIER_SYNC_SIZE 64
#define SHMEM_COLLECT_SYNC_SIZE 64
#define SHMEM_ALLTOALL_SYNC_SIZE 64
#define SHMEM_ALLTOALLS_SYNC_SIZE 64
#define SHMEM_SYNC_SIZE 64
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 1
#define _SHMEM_SYNC_VALUE SHMEM_SYNC_VALUE
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_ALLTOALL_SYNC_SIZE SHMEM_ALLTOALL_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE

/* ------------------------------------------------------------------ handles */
typedef struct shmem_team_s* shmem_team_t;
typedef struct shmem_ctx_s* shmem_ctx_t;
typedef struct {
  int num_contexts;
} shmem_team_config_t;

#define SHMEM_TEAM_INVALID ((shmem_team_t)0)
#define SHMEM_CTX_INVALID ((shmem_ctx_t)0)

/* ------------------------------------------------------------------ type tables */
/* (C type, name) of the standard RMA types (spec table "Standard RMA Types"). */
#define SHMEM_X_RMA_TYPES(X)                                                                  \
  X(float, float) X(double, double) X(long double, longdouble) X(char, char)                  \
  X(signed char, schar) X(short, short) X(int, int) X(long, long) X(long long, longlong)      \
  X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint)                     \
  X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int8_t, int8) X(int16_t, int16)  \
  X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16)                   \
  X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff)
/* The distinct C types among them: the type-generic selections (int64_t is
 * long on this ABI, and a selection may not name one type twice). */
#define SHMEM_X_RMA_GENERIC(X)                                                           \
  X(float, float) X(double, double) X(long double, longdouble) X(char, char)             \
  X(signed char, schar) X(short, short) X(int, int) X(long, long) X(long long, longlong) \
  X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint)                \
  X(unsigned long, ulong) X(unsigned long long, ulonglong)
/* Sized RMA routines: (bits, an unsigned type of that size or a struct). */
#define SHMEM_X_SIZES(X) X(8) X(16) X(32) X(64) X(128)

/* Standard AMO types (fetch, set, compare_swap, swap, inc, add...). */
#define SHMEM_X_AMO_STANDARD(X)                                                               \
  X(int, int) X(long, long) X(long long, longlong) X(unsigned int, uint) X(unsigned long, ulong) \
  X(unsigned long long, ulonglong) X(int32_t, int32) X(int64_t, int64) X(uint32_t, uint32)    \
  X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff)
#define SHMEM_X_AMO_STANDARD_GENERIC(X)                                                       \
  X(int, int) X(long, long) X(long long, longlong) X(unsigned int, uint) X(unsigned long, ulong) \
  X(unsigned long long, ulonglong)
/* Extended AMO types (fetch, set, swap): the standard ones plus float and double. */
#define SHMEM_X_AMO_EXTENDED_ONLY(X) X(float, float) X(double, double)
/* Bitwise AMO types (and, or, xor). */
#define SHMEM_X_AMO_BITWISE(X)                                                                \
  X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)             \
  X(int32_t, int32) X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64)
#define SHMEM_X_AMO_BITWISE_GENERIC(X) \
  X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)

/* Point-to-point synchronization types (wait_until, test). */
#define SHMEM_X_P2P_TYPES(X)                                                                 \
  X(short, short) X(int, int) X(long, long) X(long long, longlong) X(unsigned short, ushort) \
  X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)             \
  X(int32_t, int32) X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size) \
  X(ptrdiff_t, ptrdiff)
#define SHMEM_X_P2P_GENERIC(X)                                                               \
  X(short, short) X(int, int) X(long, long) X(long long, longlong) X(unsigned short, ushort) \
  X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)

/* Reduction types: bitwise (and, or, xor), ordered (max, min), arithmetic
 * (sum, prod: the ordered ones plus complex). */
#define SHMEM_X_REDUCE_BITWISE(X)                                                             \
  X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong) \
  X(unsigned long long, ulonglong) X(int8_t, int8) X(int16_t, int16) X(int32_t, int32)        \
  X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32)                \
  X(uint64_t, uint64) X(size_t, size)
#define SHMEM_X_REDUCE_BITWISE_GENERIC(X)                                                     \
  X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong) \
  X(unsigned long long, ulonglong)
#define SHMEM_X_REDUCE_ORDERED(X)                                                             \
  X(char, char) X(signed char, schar) X(short, short) X(int, int) X(long, long)               \
  X(long long, longlong) X(ptrdiff_t, ptrdiff) X(unsigned char, uchar) X(unsigned short, ushort) \
  X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)             \
  X(int8_t, int8) X(int16_t, int16) X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8)    \
  X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size) X(float, float) \
  X(double, double) X(long double, longdouble)
#define SHMEM_X_REDUCE_ORDERED_GENERIC(X)                                                     \
  X(char, char) X(signed char, schar) X(short, short) X(int, int) X(long, long)               \
  X(long long, longlong) X(unsigned char, uchar) X(unsigned short, ushort)                    \
  X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)             \
  X(float, float) X(double, double) X(long double, longdouble)
#ifdef __cplusplus
/* std::complex<T> has the layout of C's T _Complex. */
#define SHMEM_X_REDUCE_COMPLEX(X) X(std::complex<double>, complexd) X(std::complex<float>, complexf)
#else
#define SHMEM_X_REDUCE_COMPLEX(X) X(double _Complex, complexd) X(float _Complex, complexf)
#endif
/* The deprecated active-set reductions (shmem_TYPE_OP_to_all). */
#define SHMEM_X_TO_ALL_BITWISE(X) X(short, short) X(int, int) X(long, long) X(long long, longlong)
#define SHMEM_X_TO_ALL_ORDERED(X)                                                     \
  X(short, short) X(int, int) X(long, long) X(long long, longlong) X(float, float)   \
  X(double, double) X(long double, longdouble)

/* The reduction operations by kind. */
#define SHMEM_X_OPS_BITWISE(X) X(and) X(or) X(xor)
#define SHMEM_X_OPS_ORDERED(X) X(max) X(min)
#define SHMEM_X_OPS_ARITH(X) X(sum) X(prod)

/* Declares shmem_NAME and pshmem_NAME. */
#define SHMEM_DECLARE(ret, name, args) \
  ret shmem_##name args;               \
  ret pshmem_##name args;

/* ------------------------------------------------------------------ declarations */
/* librma is built with hidden visibility: what this header declares is
 * its exported interface. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#ifdef __cplusplus
extern "C" {
#endif

extern shmem_team_t SHMEM_TEAM_WORLD;
extern shmem_team_t SHMEM_TEAM_SHARED;
extern shmem_ctx_t SHMEM_CTX_DEFAULT;

/* Setup, exit and query */
SHMEM_DECLARE(void, init, (void))
SHMEM_DECLARE(void, finalize, (void))
SHMEM_DECLARE(int, init_thread, (int requested, int* provided))
SHMEM_DECLARE(void, query_thread, (int* provided))
SHMEM_DECLARE(void, global_exit, (int status))
SHMEM_DECLARE(int, my_pe, (void))
SHMEM_DECLARE(int, n_pes, (void))
SHMEM_DECLARE(int, pe_accessible, (int pe))
SHMEM_DECLARE(int, addr_accessible, (const void* addr, int pe))
SHMEM_DECLARE(void*, ptr, (const void* dest, int pe))
SHMEM_DECLARE(void*, team_ptr, (shmem_team_t team, const void* dest, int pe))
SHMEM_DECLARE(void, info_get_version, (int* major, int* minor))
SHMEM_DECLARE(void, info_get_name, (char* name))
SHMEM_DECLARE(void, pcontrol, (const int level, ...))
/* Deprecated setup names */
void start_pes(int npes);
void pstart_pes(int npes);
int _my_pe(void);
int p_my_pe(void);
int _num_pes(void);
int p_num_pes(void);

/* Symmetric heap */
SHMEM_DECLARE(void*, malloc, (size_t size))
SHMEM_DECLARE(void*, malloc_with_hints, (size_t size, long hints))
SHMEM_DECLARE(void*, calloc, (size_t count, size_t size))
SHMEM_DECLARE(void*, align, (size_t alignment, size_t size))
SHMEM_DECLARE(void*, realloc, (void* ptr, size_t size))
SHMEM_DECLARE(void, free, (void* ptr))
void* shmalloc(size_t size);
void* shmemalign(size_t alignment, size_t size);
void* shrealloc(void* ptr, size_t size);
void shfree(void* ptr);

/* Teams */
SHMEM_DECLARE(int, team_my_pe, (shmem_team_t team))
SHMEM_DECLARE(int, team_n_pes, (shmem_team_t team))
SHMEM_DECLARE(int, team_get_config, (shmem_team_t team, long config_mask, shmem_team_config_t* config))
SHMEM_DECLARE(int, team_translate_pe, (shmem_team_t src_team, int src_pe, shmem_team_t dest_team))
SHMEM_DECLARE(int, team_split_strided,
              (shmem_team_t parent_team, int start, int stride, int size, const shmem_team_config_t* config,
               long config_mask, shmem_team_t* new_team))
SHMEM_DECLARE(int, team_split_2d,
              (shmem_team_t parent_team, int xrange, const shmem_team_config_t* xaxis_config, long xaxis_mask,
               shmem_team_t* xaxis_team, const shmem_team_config_t* yaxis_config, long yaxis_mask,
               shmem_team_t* yaxis_team))
SHMEM_DECLARE(void, team_destroy, (shmem_team_t team))
SHMEM_DECLARE(int, team_sync, (shmem_team_t team))

/* Contexts */
SHMEM_DECLARE(int, ctx_create, (long options, shmem_ctx_t* ctx))
SHMEM_DECLARE(int, team_create_ctx, (shmem_team_t team, long options, shmem_ctx_t* ctx))
SHMEM_DECLARE(void, ctx_destroy, (shmem_ctx_t ctx))
SHMEM_DECLARE(int, ctx_get_team, (shmem_ctx_t ctx, shmem_team_t* team))

/* Typed RMA (and the typed signaling puts and team collectives) */
#define SHMEM_DECLARE_RMA_TYPE(T, N)                                                                     \
  SHMEM_DECLARE(void, N##_put, (T * dest, const T* source, size_t nelems, int pe))                       \
  SHMEM_DECLARE(void, ctx_##N##_put, (shmem_ctx_t ctx, T * dest, const T* source, size_t nelems, int pe)) \
  SHMEM_DECLARE(void, N##_get, (T * dest, const T* source, size_t nelems, int pe))                       \
  SHMEM_DECLARE(void, ctx_##N##_get, (shmem_ctx_t ctx, T * dest, const T* source, size_t nelems, int pe)) \
  SHMEM_DECLARE(void, N##_put_nbi, (T * dest, const T* source, size_t nelems, int pe))                   \
  SHMEM_DECLARE(void, ctx_##N##_put_nbi, (shmem_ctx_t ctx, T * dest, const T* source, size_t nelems, int pe)) \
  SHMEM_DECLARE(void, N##_get_nbi, (T * dest, const T* source, size_t nelems, int pe))                   \
  SHMEM_DECLARE(void, ctx_##N##_get_nbi, (shmem_ctx_t ctx, T * dest, const T* source, size_t nelems, int pe)) \
  SHMEM_DECLARE(void, N##_p, (T * dest, T value, int pe))                                                \
  SHMEM_DECLARE(void, ctx_##N##_p, (shmem_ctx_t ctx, T * dest, T value, int pe))                         \
  SHMEM_DECLARE(T, N##_g, (const T* source, int pe))                                                     \
  SHMEM_DECLARE(T, ctx_##N##_g, (shmem_ctx_t ctx, const T* source, int pe))                              \
  SHMEM_DECLARE(void, N##_iput, (T * dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)) \
  SHMEM_DECLARE(void, ctx_##N##_iput,                                                                    \
                (shmem_ctx_t ctx, T * dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)) \
  SHMEM_DECLARE(void, N##_iget, (T * dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)) \
  SHMEM_DECLARE(void, ctx_##N##_iget,                                                                    \
                (shmem_ctx_t ctx, T * dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)) \
  SHMEM_DECLARE(void, N##_put_signal,                                                                    \
                (T * dest, const T* source, size_t nelems, uint64_t* sig_addr, uint64_t signal, int sig_op, int pe)) \
  SHMEM_DECLARE(void, ctx_##N##_put_signal,                                                              \
                (shmem_ctx_t ctx, T * dest, const T* source, size_t nelems, uint64_t* sig_addr, uint64_t signal, \
                 int sig_op, int pe))                                                                    \
  SHMEM_DECLARE(void, N##_put_signal_nbi,                                                                \
                (T * dest, const T* source, size_t nelems, uint64_t* sig_addr, uint64_t signal, int sig_op, int pe)) \
  SHMEM_DECLARE(void, ctx_##N##_put_signal_nbi,                                                          \
                (shmem_ctx_t ctx, T * dest, const T* source, size_t nelems, uint64_t* sig_addr, uint64_t signal, \
                 int sig_op, int pe))                                                                    \
  SHMEM_DECLARE(int, N##_broadcast, (shmem_team_t team, T * dest, const T* source, size_t nelems, int PE_root)) \
  SHMEM_DECLARE(int, N##_collect, (shmem_team_t team, T * dest, const T* source, size_t nelems))        \
  SHMEM_DECLARE(int, N##_fcollect, (shmem_team_t team, T * dest, const T* source, size_t nelems))       \
  SHMEM_DECLARE(int, N##_alltoall, (shmem_team_t team, T * dest, const T* source, size_t nelems))       \
  SHMEM_DECLARE(int, N##_alltoalls,                                                                      \
                (shmem_team_t team, T * dest, const T* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems))
SHMEM_X_RMA_TYPES(SHMEM_DECLARE_RMA_TYPE)

/* Sized and untyped RMA */
#define SHMEM_DECLARE_RMA_SIZE(B)                                                                        \
  SHMEM_DECLARE(void, put##B, (void* dest, const void* source, size_t nelems, int pe))                   \
  SHMEM_DECLARE(void, ctx_put##B, (shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe)) \
  SHMEM_DECLARE(void, get##B, (void* dest, const void* source, size_t nelems, int pe))                   \
  SHMEM_DECLARE(void, ctx_get##B, (shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe)) \
  SHMEM_DECLARE(void, put##B##_nbi, (void* dest, const void* source, size_t nelems, int pe))             \
  SHMEM_DECLARE(void, ctx_put##B##_nbi, (shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe)) \
  SHMEM_DECLARE(void, get##B##_nbi, (void* dest, const void* source, size_t nelems, int pe))             \
  SHMEM_DECLARE(void, ctx_get##B##_nbi, (shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, int pe)) \
  SHMEM_DECLARE(void, iput##B, (void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)) \
  SHMEM_DECLARE(void, ctx_iput##B,                                                                       \
                (shmem_ctx_t ctx, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)) \
  SHMEM_DECLARE(void, iget##B, (void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)) \
  SHMEM_DECLARE(void, ctx_iget##B,                                                                       \
                (shmem_ctx_t ctx, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)) \
  SHMEM_DECLARE(void, put##B##_signal,                                                                   \
                (void* dest, const void* source, size_t nelems, uint64_t* sig_addr, uint64_t signal, int sig_op, int pe)) \
  SHMEM_DECLARE(void, ctx_put##B##_signal,                                                               \
                (shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, uint64_t* sig_addr, uint64_t signal, \
                 int sig_op, int pe))                                                                    \
  SHMEM_DECLARE(void, put##B##_signal_nbi,                                                               \
                (void* dest, const void* source, size_t nelems, uint64_t* sig_addr, uint64_t signal, int sig_op, int pe)) \
  SHMEM_DECLARE(void, ctx_put##B##_signal_nbi,                                                           \
                (shmem_ctx_t ctx, void* dest, const void* source, size_t nelems, uint64_t* sig_addr, uint64_t signal, \
                 int sig_op, int pe))
SHMEM_X_SIZES(SHMEM_DECLARE_RMA_SIZE)
SHMEM_DECLARE_RMA_SIZE(mem)
SHMEM_DECLARE(int, broadcastmem, (shmem_team_t team, void* dest, const void* source, size_t nelems, int PE_root))
SHMEM_DECLARE(int, collectmem, (shmem_team_t team, void* dest, const void* source, size_t nelems))
SHMEM_DECLARE(int, fcollectmem, (shmem_team_t team, void* dest, const void* source, size_t nelems))
SHMEM_DECLARE(int, alltoallmem, (shmem_team_t team, void* dest, const void* source, size_t nelems))
SHMEM_DECLARE(int, alltoallsmem,
              (shmem_team_t team, void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems))

/* Signaling */
SHMEM_DECLARE(uint64_t, signal_fetch, (const uint64_t* sig_addr))
SHMEM_DECLARE(uint64_t, signal_wait_until, (uint64_t * sig_addr, int cmp, uint64_t cmp_value))

/* Atomic memory operations */
#define SHMEM_DECLARE_AMO_EXTENDED(T, N)                                                         \
  SHMEM_DECLARE(T, N##_atomic_fetch, (const T* source, int pe))                                  \
  SHMEM_DECLARE(T, ctx_##N##_atomic_fetch, (shmem_ctx_t ctx, const T* source, int pe))           \
  SHMEM_DECLARE(void, N##_atomic_set, (T * dest, T value, int pe))                               \
  SHMEM_DECLARE(void, ctx_##N##_atomic_set, (shmem_ctx_t ctx, T * dest, T value, int pe))        \
  SHMEM_DECLARE(T, N##_atomic_swap, (T * dest, T value, int pe))                                 \
  SHMEM_DECLARE(T, ctx_##N##_atomic_swap, (shmem_ctx_t ctx, T * dest, T value, int pe))          \
  SHMEM_DECLARE(void, N##_atomic_fetch_nbi, (T * fetch, const T* source, int pe))                \
  SHMEM_DECLARE(void, ctx_##N##_atomic_fetch_nbi, (shmem_ctx_t ctx, T * fetch, const T* source, int pe)) \
  SHMEM_DECLARE(void, N##_atomic_swap_nbi, (T * fetch, T * dest, T value, int pe))               \
  SHMEM_DECLARE(void, ctx_##N##_atomic_swap_nbi, (shmem_ctx_t ctx, T * fetch, T * dest, T value, int pe))
#define SHMEM_DECLARE_AMO_STANDARD(T, N)                                                         \
  SHMEM_DECLARE_AMO_EXTENDED(T, N)                                                               \
  SHMEM_DECLARE(T, N##_atomic_compare_swap, (T * dest, T cond, T value, int pe))                 \
  SHMEM_DECLARE(T, ctx_##N##_atomic_compare_swap, (shmem_ctx_t ctx, T * dest, T cond, T value, int pe)) \
  SHMEM_DECLARE(T, N##_atomic_fetch_inc, (T * dest, int pe))                                     \
  SHMEM_DECLARE(T, ctx_##N##_atomic_fetch_inc, (shmem_ctx_t ctx, T * dest, int pe))              \
  SHMEM_DECLARE(void, N##_atomic_inc, (T * dest, int pe))                                        \
  SHMEM_DECLARE(void, ctx_##N##_atomic_inc, (shmem_ctx_t ctx, T * dest, int pe))                 \
  SHMEM_DECLARE(T, N##_atomic_fetch_add, (T * dest, T value, int pe))                            \
  SHMEM_DECLARE(T, ctx_##N##_atomic_fetch_add, (shmem_ctx_t ctx, T * dest, T value, int pe))     \
  SHMEM_DECLARE(void, N##_atomic_add, (T * dest, T value, int pe))                               \
  SHMEM_DECLARE(void, ctx_##N##_atomic_add, (shmem_ctx_t ctx, T * dest, T value, int pe))        \
  SHMEM_DECLARE(void, N##_atomic_compare_swap_nbi, (T * fetch, T * dest, T cond, T value, int pe)) \
  SHMEM_DECLARE(void, ctx_##N##_atomic_compare_swap_nbi,                                         \
                (shmem_ctx_t ctx, T * fetch, T * dest, T cond, T value, int pe))                 \
  SHMEM_DECLARE(void, N##_atomic_fetch_inc_nbi, (T * fetch, T * dest, int pe))                   \
  SHMEM_DECLARE(void, ctx_##N##_atomic_fetch_inc_nbi, (shmem_ctx_t ctx, T * fetch, T * dest, int pe)) \
  SHMEM_DECLARE(void, N##_atomic_fetch_add_nbi, (T * fetch, T * dest, T value, int pe))          \
  SHMEM_DECLARE(void, ctx_##N##_atomic_fetch_add_nbi, (shmem_ctx_t ctx, T * fetch, T * dest, T value, int pe))
#define SHMEM_DECLARE_AMO_BITWISE_OP(T, N, OP)                                                   \
  SHMEM_DECLARE(T, N##_atomic_fetch_##OP, (T * dest, T value, int pe))                           \
  SHMEM_DECLARE(T, ctx_##N##_atomic_fetch_##OP, (shmem_ctx_t ctx, T * dest, T value, int pe))    \
  SHMEM_DECLARE(void, N##_atomic_##OP, (T * dest, T value, int pe))                              \
  SHMEM_DECLARE(void, ctx_##N##_atomic_##OP, (shmem_ctx_t ctx, T * dest, T value, int pe))       \
  SHMEM_DECLARE(void, N##_atomic_fetch_##OP##_nbi, (T * fetch, T * dest, T value, int pe))       \
  SHMEM_DECLARE(void, ctx_##N##_atomic_fetch_##OP##_nbi, (shmem_ctx_t ctx, T * fetch, T * dest, T value, int pe))
#define SHMEM_DECLARE_AMO_BITWISE(T, N) \
  SHMEM_DECLARE_AMO_BITWISE_OP(T, N, and) SHMEM_DECLARE_AMO_BITWISE_OP(T, N, or) SHMEM_DECLARE_AMO_BITWISE_OP(T, N, xor)
SHMEM_X_AMO_STANDARD(SHMEM_DECLARE_AMO_STANDARD)
SHMEM_X_AMO_EXTENDED_ONLY(SHMEM_DECLARE_AMO_EXTENDED)
SHMEM_X_AMO_BITWISE(SHMEM_DECLARE_AMO_BITWISE)
/* Deprecated AMO names */
#define SHMEM_DECLARE_AMO_DEPRECATED(T, N)                          \
  SHMEM_DECLARE(T, N##_fadd, (T * dest, T value, int pe))           \
  SHMEM_DECLARE(T, N##_finc, (T * dest, int pe))                    \
  SHMEM_DECLARE(void, N##_add, (T * dest, T value, int pe))         \
  SHMEM_DECLARE(void, N##_inc, (T * dest, int pe))                  \
  SHMEM_DECLARE(T, N##_cswap, (T * dest, T cond, T value, int pe))  \
  SHMEM_DECLARE(T, N##_swap, (T * dest, T value, int pe))           \
  SHMEM_DECLARE(T, N##_fetch, (const T* source, int pe))            \
  SHMEM_DECLARE(void, N##_set, (T * dest, T value, int pe))
SHMEM_DECLARE_AMO_DEPRECATED(int, int)
SHMEM_DECLARE_AMO_DEPRECATED(long, long)
SHMEM_DECLARE_AMO_DEPRECATED(long long, longlong)
SHMEM_DECLARE(float, float_swap, (float* dest, float value, int pe))
SHMEM_DECLARE(double, double_swap, (double* dest, double value, int pe))
SHMEM_DECLARE(float, float_fetch, (const float* source, int pe))
SHMEM_DECLARE(double, double_fetch, (const double* source, int pe))
SHMEM_DECLARE(void, float_set, (float* dest, float value, int pe))
SHMEM_DECLARE(void, double_set, (double* dest, double value, int pe))

/* Point-to-point synchronization */
#define SHMEM_DECLARE_P2P(T, N)                                                                                \
  SHMEM_DECLARE(void, N##_wait_until, (T * ivar, int cmp, T cmp_value))                                        \
  SHMEM_DECLARE(void, N##_wait_until_all, (T * ivars, size_t nelems, const int* status, int cmp, T cmp_value)) \
  SHMEM_DECLARE(size_t, N##_wait_until_any, (T * ivars, size_t nelems, const int* status, int cmp, T cmp_value)) \
  SHMEM_DECLARE(size_t, N##_wait_until_some,                                                                   \
                (T * ivars, size_t nelems, size_t* indices, const int* status, int cmp, T cmp_value))          \
  SHMEM_DECLARE(void, N##_wait_until_all_vector,                                                               \
                (T * ivars, size_t nelems, const int* status, int cmp, const T* cmp_values))                   \
  SHMEM_DECLARE(size_t, N##_wait_until_any_vector,                                                             \
                (T * ivars, size_t nelems, const int* status, int cmp, const T* cmp_values))                   \
  SHMEM_DECLARE(size_t, N##_wait_until_some_vector,                                                            \
                (T * ivars, size_t nelems, size_t* indices, const int* status, int cmp, const T* cmp_values))  \
  SHMEM_DECLARE(int, N##_test, (T * ivar, int cmp, T cmp_value))                                               \
  SHMEM_DECLARE(int, N##_test_all, (T * ivars, size_t nelems, const int* status, int cmp, T cmp_value))        \
  SHMEM_DECLARE(size_t, N##_test_any, (T * ivars, size_t nelems, const int* status, int cmp, T cmp_value))     \
  SHMEM_DECLARE(size_t, N##_test_some,                                                                         \
                (T * ivars, size_t nelems, size_t* indices, const int* status, int cmp, T cmp_value))          \
  SHMEM_DECLARE(int, N##_test_all_vector, (T * ivars, size_t nelems, const int* status, int cmp, const T* cmp_values)) \
  SHMEM_DECLARE(size_t, N##_test_any_vector,                                                                   \
                (T * ivars, size_t nelems, const int* status, int cmp, const T* cmp_values))                   \
  SHMEM_DECLARE(size_t, N##_test_some_vector,                                                                  \
                (T * ivars, size_t nelems, size_t* indices, const int* status, int cmp, const T* cmp_values))
SHMEM_X_P2P_TYPES(SHMEM_DECLARE_P2P)
/* Deprecated: wait while *ivar == cmp_value */
SHMEM_DECLARE(void, wait, (long* ivar, long cmp_value))
SHMEM_DECLARE(void, short_wait, (short* ivar, short cmp_value))
SHMEM_DECLARE(void, int_wait, (int* ivar, int cmp_value))
SHMEM_DECLARE(void, long_wait, (long* ivar, long cmp_value))
SHMEM_DECLARE(void, longlong_wait, (long long* ivar, long long cmp_value))

/* Memory ordering */
SHMEM_DECLARE(void, fence, (void))
SHMEM_DECLARE(void, ctx_fence, (shmem_ctx_t ctx))
SHMEM_DECLARE(void, quiet, (void))
SHMEM_DECLARE(void, ctx_quiet, (shmem_ctx_t ctx))

/* Synchronization and the deprecated active-set collectives */
SHMEM_DECLARE(void, barrier_all, (void))
SHMEM_DECLARE(void, sync_all, (void))
SHMEM_DECLARE(void, barrier, (int PE_start, int logPE_stride, int PE_size, long* pSync))
SHMEM_DECLARE(void, sync, (int PE_start, int logPE_stride, int PE_size, long* pSync))
#define SHMEM_DECLARE_ACTIVE_SET_SIZE(B)                                                                  \
  SHMEM_DECLARE(void, broadcast##B,                                                                      \
                (void* dest, const void* source, size_t nelems, int PE_root, int PE_start, int logPE_stride, \
                 int PE_size, long* pSync))                                                              \
  SHMEM_DECLARE(void, collect##B,                                                                        \
                (void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride, int PE_size, \
                 long* pSync))                                                                           \
  SHMEM_DECLARE(void, fcollect##B,                                                                       \
                (void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride, int PE_size, \
                 long* pSync))                                                                           \
  SHMEM_DECLARE(void, alltoall##B,                                                                       \
                (void* dest, const void* source, size_t nelems, int PE_start, int logPE_stride, int PE_size, \
                 long* pSync))                                                                           \
  SHMEM_DECLARE(void, alltoalls##B,                                                                      \
                (void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int PE_start,  \
                 int logPE_stride, int PE_size, long* pSync))
SHMEM_DECLARE_ACTIVE_SET_SIZE(32)
SHMEM_DECLARE_ACTIVE_SET_SIZE(64)

/* Reductions on teams: shmem_TYPE_OP_reduce */
#define SHMEM_DECLARE_REDUCE(T, N, OP) \
  SHMEM_DECLARE(int, N##_##OP##_reduce, (shmem_team_t team, T * dest, const T* source, size_t nreduce))
#define SHMEM_DECLARE_REDUCE_BITWISE(T, N) \
  SHMEM_DECLARE_REDUCE(T, N, and) SHMEM_DECLARE_REDUCE(T, N, or) SHMEM_DECLARE_REDUCE(T, N, xor)
#define SHMEM_DECLARE_REDUCE_ORDERED(T, N) SHMEM_DECLARE_REDUCE(T, N, max) SHMEM_DECLARE_REDUCE(T, N, min)
#define SHMEM_DECLARE_REDUCE_ARITH(T, N) SHMEM_DECLARE_REDUCE(T, N, sum) SHMEM_DECLARE_REDUCE(T, N, prod)
SHMEM_X_REDUCE_BITWISE(SHMEM_DECLARE_REDUCE_BITWISE)
SHMEM_X_REDUCE_ORDERED(SHMEM_DECLARE_REDUCE_ORDERED)
SHMEM_X_REDUCE_ORDERED(SHMEM_DECLARE_REDUCE_ARITH)
SHMEM_X_REDUCE_COMPLEX(SHMEM_DECLARE_REDUCE_ARITH)
/* Deprecated active-set reductions: shmem_TYPE_OP_to_all */
#define SHMEM_DECLARE_TO_ALL(T, N, OP)                                                                   \
  SHMEM_DECLARE(void, N##_##OP##_to_all,                                                                 \
                (T * dest, const T* source, int nreduce, int PE_start, int logPE_stride, int PE_size, T* pWrk, \
                 long* pSync))
#define SHMEM_DECLARE_TO_ALL_BITWISE(T, N) \
  SHMEM_DECLARE_TO_ALL(T, N, and) SHMEM_DECLARE_TO_ALL(T, N, or) SHMEM_DECLARE_TO_ALL(T, N, xor)
#define SHMEM_DECLARE_TO_ALL_ORDERED(T, N) SHMEM_DECLARE_TO_ALL(T, N, max) SHMEM_DECLARE_TO_ALL(T, N, min)
#define SHMEM_DECLARE_TO_ALL_ARITH(T, N) SHMEM_DECLARE_TO_ALL(T, N, sum) SHMEM_DECLARE_TO_ALL(T, N, prod)
SHMEM_X_TO_ALL_BITWISE(SHMEM_DECLARE_TO_ALL_BITWISE)
SHMEM_X_TO_ALL_ORDERED(SHMEM_DECLARE_TO_ALL_ORDERED)
SHMEM_X_TO_ALL_ORDERED(SHMEM_DECLARE_TO_ALL_ARITH)
SHMEM_X_REDUCE_COMPLEX(SHMEM_DECLARE_TO_ALL_ARITH)

/* Distributed locks */
SHMEM_DECLARE(void, set_lock, (long* lock))
SHMEM_DECLARE(void, clear_lock, (long* lock))
SHMEM_DECLARE(int, test_lock, (long* lock))

/* Never defined: what a type-generic name selects for an unsupported type,
 * so the call fails to compile. */
void shmem_generic_unsupported_type(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#include "rma/shmem_generic.h"

#endif /* RMA_SHMEM_H */
