/* The type-generic names of <shmem.h>: C11 _Generic selections in C, and
 * overloads in C++. Included by <rma/shmem.h>; not meant to be included on
 * its own. The generated names come from the type tables of shmem.h.
 *
 * In C, a name that takes an optional leading context (shmem_put(dest, ...)
 * or shmem_put(ctx, dest, ...)) selects on the type of its first argument:
 * shmem_ctx_t picks the ctx routine (selected then on the second argument),
 * a pointer picks the plain one. An unsupported type selects
 * shmem_generic_unsupported_type, which takes no arguments: the call does
 * not compile. */
#ifndef RMA_SHMEM_GENERIC_H
#define RMA_SHMEM_GENERIC_H

#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L

#define SHMEM_GEN_ARG0(a, ...) a
#define SHMEM_GEN_ARG1(a, b, ...) b
#define SHMEM_GEN_FIRST(...) SHMEM_GEN_ARG0(__VA_ARGS__, 0)
#define SHMEM_GEN_SECOND(...) SHMEM_GEN_ARG1(__VA_ARGS__, 0, 0)

/* An association "T*: shmem_[ctx_]N_SUFFIX," for each row of a table. */
#define SHMEM_GEN_ASSOC(T, N, SUFFIX) T*: shmem_##N##_##SUFFIX,
#define SHMEM_GEN_ASSOC_CTX(T, N, SUFFIX) T*: shmem_ctx_##N##_##SUFFIX,
#define SHMEM_GEN_ASSOC_CONST(T, N, SUFFIX) T*: shmem_##N##_##SUFFIX, const T*: shmem_##N##_##SUFFIX,
#define SHMEM_GEN_ASSOC_CONST_CTX(T, N, SUFFIX) T*: shmem_ctx_##N##_##SUFFIX, const T*: shmem_ctx_##N##_##SUFFIX,

/* The table walkers take an extra argument (the suffix), so each table gets
 * a two-argument wrapper per suffix below. */
#define SHMEM_GEN_SELECT(TABLE, ASSOC, ASSOC_CTX, SUFFIX, ...)                                          \
  _Generic((SHMEM_GEN_FIRST(__VA_ARGS__)),                                                              \
      shmem_ctx_t: _Generic((SHMEM_GEN_SECOND(__VA_ARGS__)),                                            \
          TABLE(ASSOC_CTX, SUFFIX) default: shmem_generic_unsupported_type),                            \
      TABLE(ASSOC, SUFFIX) default: shmem_generic_unsupported_type)(__VA_ARGS__)
#define SHMEM_GEN_SELECT_NOCTX(TABLE, ASSOC, SUFFIX, ...) \
  _Generic((SHMEM_GEN_FIRST(__VA_ARGS__)), TABLE(ASSOC, SUFFIX) default: shmem_generic_unsupported_type)(__VA_ARGS__)
/* Selection on the second argument (team collectives: (team, dest, ...)). */
#define SHMEM_GEN_SELECT_SECOND(TABLE, ASSOC, SUFFIX, ...) \
  _Generic((SHMEM_GEN_SECOND(__VA_ARGS__)), TABLE(ASSOC, SUFFIX) default: shmem_generic_unsupported_type)(__VA_ARGS__)

/* Table walkers with a suffix argument. */
#define SHMEM_GEN_RMA(A, S)                                                                                   \
  A(float, float, S) A(double, double, S) A(long double, longdouble, S) A(char, char, S)                     \
  A(signed char, schar, S) A(short, short, S) A(int, int, S) A(long, long, S) A(long long, longlong, S)      \
  A(unsigned char, uchar, S) A(unsigned short, ushort, S) A(unsigned int, uint, S)                           \
  A(unsigned long, ulong, S) A(unsigned long long, ulonglong, S)
#define SHMEM_GEN_AMO_STD(A, S)                                                                        \
  A(int, int, S) A(long, long, S) A(long long, longlong, S) A(unsigned int, uint, S)                   \
  A(unsigned long, ulong, S) A(unsigned long long, ulonglong, S)
#define SHMEM_GEN_AMO_EXT(A, S) SHMEM_GEN_AMO_STD(A, S) A(float, float, S) A(double, double, S)
#define SHMEM_GEN_AMO_BIT(A, S) A(unsigned int, uint, S) A(unsigned long, ulong, S) A(unsigned long long, ulonglong, S)
#define SHMEM_GEN_P2P(A, S)                                                                                    \
  A(short, short, S) A(int, int, S) A(long, long, S) A(long long, longlong, S) A(unsigned short, ushort, S)  \
  A(unsigned int, uint, S) A(unsigned long, ulong, S) A(unsigned long long, ulonglong, S)
#define SHMEM_GEN_RED_BIT(A, S)                                                                           \
  A(unsigned char, uchar, S) A(unsigned short, ushort, S) A(unsigned int, uint, S)                        \
  A(unsigned long, ulong, S) A(unsigned long long, ulonglong, S)
#define SHMEM_GEN_RED_ORD(A, S)                                                                                \
  A(char, char, S) A(signed char, schar, S) A(short, short, S) A(int, int, S) A(long, long, S)               \
  A(long long, longlong, S) A(unsigned char, uchar, S) A(unsigned short, ushort, S) A(unsigned int, uint, S) \
  A(unsigned long, ulong, S) A(unsigned long long, ulonglong, S) A(float, float, S) A(double, double, S)     \
  A(long double, longdouble, S)
#define SHMEM_GEN_RED_ARITH(A, S) \
  SHMEM_GEN_RED_ORD(A, S) A(double _Complex, complexd, S) A(float _Complex, complexf, S)

/* RMA */
#define shmem_put(...) SHMEM_GEN_SELECT(SHMEM_GEN_RMA, SHMEM_GEN_ASSOC, SHMEM_GEN_ASSOC_CTX, put, __VA_ARGS__)
#define shmem_get(...) SHMEM_GEN_SELECT(SHMEM_GEN_RMA, SHMEM_GEN_ASSOC, SHMEM_GEN_ASSOC_CTX, get, __VA_ARGS__)
#define shmem_put_nbi(...) SHMEM_GEN_SELECT(SHMEM_GEN_RMA, SHMEM_GEN_ASSOC, SHMEM_GEN_ASSOC_CTX, put_nbi, __VA_ARGS__)
#define shmem_get_nbi(...) SHMEM_GEN_SELECT(SHMEM_GEN_RMA, SHMEM_GEN_ASSOC, SHMEM_GEN_ASSOC_CTX, get_nbi, __VA_ARGS__)
#define shmem_p(...) SHMEM_GEN_SELECT(SHMEM_GEN_RMA, SHMEM_GEN_ASSOC, SHMEM_GEN_ASSOC_CTX, p, __VA_ARGS__)
#define shmem_g(...) \
  SHMEM_GEN_SELECT(SHMEM_GEN_RMA, SHMEM_GEN_ASSOC_CONST, SHMEM_GEN_ASSOC_CONST_CTX, g, __VA_ARGS__)
#define shmem_iput(...) SHMEM_GEN_SELECT(SHMEM_GEN_RMA, SHMEM_GEN_ASSOC, SHMEM_GEN_ASSOC_CTX, iput, __VA_ARGS__)
#define shmem_iget(...) SHMEM_GEN_SELECT(SHMEM_GEN_RMA, SHMEM_GEN_ASSOC, SHMEM_GEN_ASSOC_CTX, iget, __VA_ARGS__)
#define shmem_put_signal(...) \
  SHMEM_GEN_SELECT(SHMEM_GEN_RMA, SHMEM_GEN_ASSOC, SHMEM_GEN_ASSOC_CTX, put_signal, __VA_ARGS__)
#define shmem_put_signal_nbi(...) \
  SHMEM_GEN_SELECT(SHMEM_GEN_RMA, SHMEM_GEN_ASSOC, SHMEM_GEN_ASSOC_CTX, put_signal_nbi, __VA_ARGS__)

/* AMOs */
#define SHMEM_GEN_AMO(TABLE, SUFFIX, ...) \
  SHMEM_GEN_SELECT(TABLE, SHMEM_GEN_ASSOC, SHMEM_GEN_ASSOC_CTX, SUFFIX, __VA_ARGS__)
#define shmem_atomic_fetch(...) \
  SHMEM_GEN_SELECT(SHMEM_GEN_AMO_EXT, SHMEM_GEN_ASSOC_CONST, SHMEM_GEN_ASSOC_CONST_CTX, atomic_fetch, __VA_ARGS__)
#define shmem_atomic_set(...) SHMEM_GEN_AMO(SHMEM_GEN_AMO_EXT, atomic_set, __VA_ARGS__)
#define shmem_atomic_swap(...) SHMEM_GEN_AMO(SHMEM_GEN_AMO_EXT, atomic_swap, __VA_ARGS__)
#define shmem_atomic_fetch_nbi(...) SHMEM_GEN_AMO(SHMEM_GEN_AMO_EXT, atomic_fetch_nbi, __VA_ARGS__)
#define shmem_atomic_swap_nbi(...) SHMEM_GEN_AMO(SHMEM_GEN_AMO_EXT, atomic_swap_nbi, __VA_ARGS__)
#define shmem_atomic_compare_swap(...) SHMEM_GEN_AMO(SHMEM_GEN_AMO_STD, atomic_compare_swap, __VA_ARGS__)
#define shmem_atomic_fetch_inc(...) SHMEM_GEN_AMO(SHMEM_GEN_AMO_STD, atomic_fetch_inc, __VA_ARGS__)
#define shmem_atomic_inc(...) SHMEM_GEN_AMO(SHMEM_GEN_AMO_STD, atomic_inc, __VA_ARGS__)
#define shmem_atomic_fetch_add(...) SHMEM_GEN_AMO(SHMEM_GEN_AMO_STD, atomic_fetch_add, __VA_ARGS__)
#define shmem_atomic_add(...) SHMEM_GEN_AMO(SHMEM_GEN_AMO_STD, atomic_add, __VA_ARGS__)
#define shmem_atomic_compare_swap_nbi(...) SHMEM_GEN_AMO(SHMEM_GEN_AMO_STD, atomic_compare_swap_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_inc_nbi(...) SHMEM_GEN_AMO(SHMEM_GEN_AMO_STD, atomic_fetch_inc_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_add_nbi(...) SHMEM_GEN_AMO(SHMEM_GEN_AMO_STD, atomic_fetch_add_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_and(...) SHMEM_GEN_AMO(SHMEM_GEN_AMO_BIT, atomic_fetch_and, __VA_ARGS__)
#define shmem_atomic_fetch_or(...) SHMEM_GEN_AMO(SHMEM_GEN_AMO_BIT, atomic_fetch_or, __VA_ARGS__)
#define shmem_atomic_fetch_xor(...) SHMEM_GEN_AMO(SHMEM_GEN_AMO_BIT, atomic_fetch_xor, __VA_ARGS__)
#define shmem_atomic_and(...) SHMEM_GEN_AMO(SHMEM_GEN_AMO_BIT, atomic_and, __VA_ARGS__)
#define shmem_atomic_or(...) SHMEM_GEN_AMO(SHMEM_GEN_AMO_BIT, atomic_or, __VA_ARGS__)
#define shmem_atomic_xor(...) SHMEM_GEN_AMO(SHMEM_GEN_AMO_BIT, atomic_xor, __VA_ARGS__)
#define shmem_atomic_fetch_and_nbi(...) SHMEM_GEN_AMO(SHMEM_GEN_AMO_BIT, atomic_fetch_and_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_or_nbi(...) SHMEM_GEN_AMO(SHMEM_GEN_AMO_BIT, atomic_fetch_or_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_xor_nbi(...) SHMEM_GEN_AMO(SHMEM_GEN_AMO_BIT, atomic_fetch_xor_nbi, __VA_ARGS__)

/* Point-to-point synchronization */
#define SHMEM_GEN_P2P_SEL(SUFFIX, ...) SHMEM_GEN_SELECT_NOCTX(SHMEM_GEN_P2P, SHMEM_GEN_ASSOC, SUFFIX, __VA_ARGS__)
#define shmem_wait_until(...) SHMEM_GEN_P2P_SEL(wait_until, __VA_ARGS__)
#define shmem_wait_until_all(...) SHMEM_GEN_P2P_SEL(wait_until_all, __VA_ARGS__)
#define shmem_wait_until_any(...) SHMEM_GEN_P2P_SEL(wait_until_any, __VA_ARGS__)
#define shmem_wait_until_some(...) SHMEM_GEN_P2P_SEL(wait_until_some, __VA_ARGS__)
#define shmem_wait_until_all_vector(...) SHMEM_GEN_P2P_SEL(wait_until_all_vector, __VA_ARGS__)
#define shmem_wait_until_any_vector(...) SHMEM_GEN_P2P_SEL(wait_until_any_vector, __VA_ARGS__)
#define shmem_wait_until_some_vector(...) SHMEM_GEN_P2P_SEL(wait_until_some_vector, __VA_ARGS__)
#define shmem_test(...) SHMEM_GEN_P2P_SEL(test, __VA_ARGS__)
#define shmem_test_all(...) SHMEM_GEN_P2P_SEL(test_all, __VA_ARGS__)
#define shmem_test_any(...) SHMEM_GEN_P2P_SEL(test_any, __VA_ARGS__)
#define shmem_test_some(...) SHMEM_GEN_P2P_SEL(test_some, __VA_ARGS__)
#define shmem_test_all_vector(...) SHMEM_GEN_P2P_SEL(test_all_vector, __VA_ARGS__)
#define shmem_test_any_vector(...) SHMEM_GEN_P2P_SEL(test_any_vector, __VA_ARGS__)
#define shmem_test_some_vector(...) SHMEM_GEN_P2P_SEL(test_some_vector, __VA_ARGS__)

/* Team collectives: (team, dest, ...) selects on dest. */
#define shmem_broadcast(...) SHMEM_GEN_SELECT_SECOND(SHMEM_GEN_RMA, SHMEM_GEN_ASSOC, broadcast, __VA_ARGS__)
#define shmem_collect(...) SHMEM_GEN_SELECT_SECOND(SHMEM_GEN_RMA, SHMEM_GEN_ASSOC, collect, __VA_ARGS__)
#define shmem_fcollect(...) SHMEM_GEN_SELECT_SECOND(SHMEM_GEN_RMA, SHMEM_GEN_ASSOC, fcollect, __VA_ARGS__)
#define shmem_alltoall(...) SHMEM_GEN_SELECT_SECOND(SHMEM_GEN_RMA, SHMEM_GEN_ASSOC, alltoall, __VA_ARGS__)
#define shmem_alltoalls(...) SHMEM_GEN_SELECT_SECOND(SHMEM_GEN_RMA, SHMEM_GEN_ASSOC, alltoalls, __VA_ARGS__)
#define shmem_and_reduce(...) SHMEM_GEN_SELECT_SECOND(SHMEM_GEN_RED_BIT, SHMEM_GEN_ASSOC, and_reduce, __VA_ARGS__)
#define shmem_or_reduce(...) SHMEM_GEN_SELECT_SECOND(SHMEM_GEN_RED_BIT, SHMEM_GEN_ASSOC, or_reduce, __VA_ARGS__)
#define shmem_xor_reduce(...) SHMEM_GEN_SELECT_SECOND(SHMEM_GEN_RED_BIT, SHMEM_GEN_ASSOC, xor_reduce, __VA_ARGS__)
#define shmem_max_reduce(...) SHMEM_GEN_SELECT_SECOND(SHMEM_GEN_RED_ORD, SHMEM_GEN_ASSOC, max_reduce, __VA_ARGS__)
#define shmem_min_reduce(...) SHMEM_GEN_SELECT_SECOND(SHMEM_GEN_RED_ORD, SHMEM_GEN_ASSOC, min_reduce, __VA_ARGS__)
#define shmem_sum_reduce(...) SHMEM_GEN_SELECT_SECOND(SHMEM_GEN_RED_ARITH, SHMEM_GEN_ASSOC, sum_reduce, __VA_ARGS__)
#define shmem_prod_reduce(...) SHMEM_GEN_SELECT_SECOND(SHMEM_GEN_RED_ARITH, SHMEM_GEN_ASSOC, prod_reduce, __VA_ARGS__)

#elif defined(__cplusplus)

/* C++ overloads: one per row of the tables whose C types are distinct. */
#define SHMEM_CXX_RMA(T, N)                                                                                     \
  inline void shmem_put(T* d, const T* s, size_t n, int pe) { shmem_##N##_put(d, s, n, pe); }                  \
  inline void shmem_put(shmem_ctx_t c, T* d, const T* s, size_t n, int pe) { shmem_ctx_##N##_put(c, d, s, n, pe); } \
  inline void shmem_get(T* d, const T* s, size_t n, int pe) { shmem_##N##_get(d, s, n, pe); }                  \
  inline void shmem_get(shmem_ctx_t c, T* d, const T* s, size_t n, int pe) { shmem_ctx_##N##_get(c, d, s, n, pe); } \
  inline void shmem_put_nbi(T* d, const T* s, size_t n, int pe) { shmem_##N##_put_nbi(d, s, n, pe); }          \
  inline void shmem_put_nbi(shmem_ctx_t c, T* d, const T* s, size_t n, int pe) {                              \
    shmem_ctx_##N##_put_nbi(c, d, s, n, pe);                                                                    \
  }                                                                                                             \
  inline void shmem_get_nbi(T* d, const T* s, size_t n, int pe) { shmem_##N##_get_nbi(d, s, n, pe); }          \
  inline void shmem_get_nbi(shmem_ctx_t c, T* d, const T* s, size_t n, int pe) {                              \
    shmem_ctx_##N##_get_nbi(c, d, s, n, pe);                                                                    \
  }                                                                                                             \
  inline void shmem_p(T* d, T v, int pe) { shmem_##N##_p(d, v, pe); }                                          \
  inline void shmem_p(shmem_ctx_t c, T* d, T v, int pe) { shmem_ctx_##N##_p(c, d, v, pe); }                    \
  inline T shmem_g(const T* s, int pe) { return shmem_##N##_g(s, pe); }                                        \
  inline T shmem_g(shmem_ctx_t c, const T* s, int pe) { return shmem_ctx_##N##_g(c, s, pe); }                  \
  inline void shmem_iput(T* d, const T* s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) {                  \
    shmem_##N##_iput(d, s, dst, sst, n, pe);                                                                    \
  }                                                                                                             \
  inline void shmem_iput(shmem_ctx_t c, T* d, const T* s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) {   \
    shmem_ctx_##N##_iput(c, d, s, dst, sst, n, pe);                                                             \
  }                                                                                                             \
  inline void shmem_iget(T* d, const T* s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) {                  \
    shmem_##N##_iget(d, s, dst, sst, n, pe);                                                                    \
  }                                                                                                             \
  inline void shmem_iget(shmem_ctx_t c, T* d, const T* s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) {   \
    shmem_ctx_##N##_iget(c, d, s, dst, sst, n, pe);                                                             \
  }                                                                                                             \
  inline void shmem_put_signal(T* d, const T* s, size_t n, uint64_t* sig, uint64_t v, int op, int pe) {        \
    shmem_##N##_put_signal(d, s, n, sig, v, op, pe);                                                            \
  }                                                                                                             \
  inline void shmem_put_signal(shmem_ctx_t c, T* d, const T* s, size_t n, uint64_t* sig, uint64_t v, int op,  \
                               int pe) {                                                                        \
    shmem_ctx_##N##_put_signal(c, d, s, n, sig, v, op, pe);                                                     \
  }                                                                                                             \
  inline void shmem_put_signal_nbi(T* d, const T* s, size_t n, uint64_t* sig, uint64_t v, int op, int pe) {    \
    shmem_##N##_put_signal_nbi(d, s, n, sig, v, op, pe);                                                        \
  }                                                                                                             \
  inline void shmem_put_signal_nbi(shmem_ctx_t c, T* d, const T* s, size_t n, uint64_t* sig, uint64_t v,      \
                                   int op, int pe) {                                                            \
    shmem_ctx_##N##_put_signal_nbi(c, d, s, n, sig, v, op, pe);                                                 \
  }                                                                                                             \
  inline int shmem_broadcast(shmem_team_t t, T* d, const T* s, size_t n, int root) {                           \
    return shmem_##N##_broadcast(t, d, s, n, root);                                                             \
  }                                                                                                             \
  inline int shmem_collect(shmem_team_t t, T* d, const T* s, size_t n) { return shmem_##N##_collect(t, d, s, n); } \
  inline int shmem_fcollect(shmem_team_t t, T* d, const T* s, size_t n) {                                      \
    return shmem_##N##_fcollect(t, d, s, n);                                                                    \
  }                                                                                                             \
  inline int shmem_alltoall(shmem_team_t t, T* d, const T* s, size_t n) {                                      \
    return shmem_##N##_alltoall(t, d, s, n);                                                                    \
  }                                                                                                             \
  inline int shmem_alltoalls(shmem_team_t t, T* d, const T* s, ptrdiff_t dst, ptrdiff_t sst, size_t n) {       \
    return shmem_##N##_alltoalls(t, d, s, dst, sst, n);                                                         \
  }
SHMEM_X_RMA_GENERIC(SHMEM_CXX_RMA)

#define SHMEM_CXX_AMO_EXT(T, N)                                                                                 \
  inline T shmem_atomic_fetch(const T* s, int pe) { return shmem_##N##_atomic_fetch(s, pe); }                  \
  inline T shmem_atomic_fetch(shmem_ctx_t c, const T* s, int pe) { return shmem_ctx_##N##_atomic_fetch(c, s, pe); } \
  inline void shmem_atomic_set(T* d, T v, int pe) { shmem_##N##_atomic_set(d, v, pe); }                        \
  inline void shmem_atomic_set(shmem_ctx_t c, T* d, T v, int pe) { shmem_ctx_##N##_atomic_set(c, d, v, pe); }  \
  inline T shmem_atomic_swap(T* d, T v, int pe) { return shmem_##N##_atomic_swap(d, v, pe); }                  \
  inline T shmem_atomic_swap(shmem_ctx_t c, T* d, T v, int pe) { return shmem_ctx_##N##_atomic_swap(c, d, v, pe); } \
  inline void shmem_atomic_fetch_nbi(T* f, const T* s, int pe) { shmem_##N##_atomic_fetch_nbi(f, s, pe); }     \
  inline void shmem_atomic_fetch_nbi(shmem_ctx_t c, T* f, const T* s, int pe) {                                \
    shmem_ctx_##N##_atomic_fetch_nbi(c, f, s, pe);                                                              \
  }                                                                                                             \
  inline void shmem_atomic_swap_nbi(T* f, T* d, T v, int pe) { shmem_##N##_atomic_swap_nbi(f, d, v, pe); }     \
  inline void shmem_atomic_swap_nbi(shmem_ctx_t c, T* f, T* d, T v, int pe) {                                  \
    shmem_ctx_##N##_atomic_swap_nbi(c, f, d, v, pe);                                                            \
  }
#define SHMEM_CXX_AMO_STD(T, N)                                                                                 \
  SHMEM_CXX_AMO_EXT(T, N)                                                                                       \
  inline T shmem_atomic_compare_swap(T* d, T cond, T v, int pe) { return shmem_##N##_atomic_compare_swap(d, cond, v, pe); } \
  inline T shmem_atomic_compare_swap(shmem_ctx_t c, T* d, T cond, T v, int pe) {                               \
    return shmem_ctx_##N##_atomic_compare_swap(c, d, cond, v, pe);                                              \
  }                                                                                                             \
  inline T shmem_atomic_fetch_inc(T* d, int pe) { return shmem_##N##_atomic_fetch_inc(d, pe); }                \
  inline T shmem_atomic_fetch_inc(shmem_ctx_t c, T* d, int pe) { return shmem_ctx_##N##_atomic_fetch_inc(c, d, pe); } \
  inline void shmem_atomic_inc(T* d, int pe) { shmem_##N##_atomic_inc(d, pe); }                                \
  inline void shmem_atomic_inc(shmem_ctx_t c, T* d, int pe) { shmem_ctx_##N##_atomic_inc(c, d, pe); }          \
  inline T shmem_atomic_fetch_add(T* d, T v, int pe) { return shmem_##N##_atomic_fetch_add(d, v, pe); }        \
  inline T shmem_atomic_fetch_add(shmem_ctx_t c, T* d, T v, int pe) {                                          \
    return shmem_ctx_##N##_atomic_fetch_add(c, d, v, pe);                                                       \
  }                                                                                                             \
  inline void shmem_atomic_add(T* d, T v, int pe) { shmem_##N##_atomic_add(d, v, pe); }                        \
  inline void shmem_atomic_add(shmem_ctx_t c, T* d, T v, int pe) { shmem_ctx_##N##_atomic_add(c, d, v, pe); }  \
  inline void shmem_atomic_compare_swap_nbi(T* f, T* d, T cond, T v, int pe) {                                 \
    shmem_##N##_atomic_compare_swap_nbi(f, d, cond, v, pe);                                                     \
  }                                                                                                             \
  inline void shmem_atomic_fetch_inc_nbi(T* f, T* d, int pe) { shmem_##N##_atomic_fetch_inc_nbi(f, d, pe); }   \
  inline void shmem_atomic_fetch_add_nbi(T* f, T* d, T v, int pe) { shmem_##N##_atomic_fetch_add_nbi(f, d, v, pe); }
#define SHMEM_CXX_AMO_BIT(T, N)                                                                                 \
  inline T shmem_atomic_fetch_and(T* d, T v, int pe) { return shmem_##N##_atomic_fetch_and(d, v, pe); }        \
  inline T shmem_atomic_fetch_or(T* d, T v, int pe) { return shmem_##N##_atomic_fetch_or(d, v, pe); }          \
  inline T shmem_atomic_fetch_xor(T* d, T v, int pe) { return shmem_##N##_atomic_fetch_xor(d, v, pe); }        \
  inline void shmem_atomic_and(T* d, T v, int pe) { shmem_##N##_atomic_and(d, v, pe); }                        \
  inline void shmem_atomic_or(T* d, T v, int pe) { shmem_##N##_atomic_or(d, v, pe); }                          \
  inline void shmem_atomic_xor(T* d, T v, int pe) { shmem_##N##_atomic_xor(d, v, pe); }                        \
  inline T shmem_atomic_fetch_and(shmem_ctx_t c, T* d, T v, int pe) { return shmem_ctx_##N##_atomic_fetch_and(c, d, v, pe); } \
  inline T shmem_atomic_fetch_or(shmem_ctx_t c, T* d, T v, int pe) { return shmem_ctx_##N##_atomic_fetch_or(c, d, v, pe); } \
  inline T shmem_atomic_fetch_xor(shmem_ctx_t c, T* d, T v, int pe) { return shmem_ctx_##N##_atomic_fetch_xor(c, d, v, pe); } \
  inline void shmem_atomic_and(shmem_ctx_t c, T* d, T v, int pe) { shmem_ctx_##N##_atomic_and(c, d, v, pe); }  \
  inline void shmem_atomic_or(shmem_ctx_t c, T* d, T v, int pe) { shmem_ctx_##N##_atomic_or(c, d, v, pe); }    \
  inline void shmem_atomic_xor(shmem_ctx_t c, T* d, T v, int pe) { shmem_ctx_##N##_atomic_xor(c, d, v, pe); }
SHMEM_X_AMO_STANDARD_GENERIC(SHMEM_CXX_AMO_STD)
SHMEM_X_AMO_EXTENDED_ONLY(SHMEM_CXX_AMO_EXT)
SHMEM_X_AMO_BITWISE_GENERIC(SHMEM_CXX_AMO_BIT)

#define SHMEM_CXX_P2P(T, N)                                                                                     \
  inline void shmem_wait_until(T* v, int cmp, T x) { shmem_##N##_wait_until(v, cmp, x); }                      \
  inline void shmem_wait_until_all(T* v, size_t n, const int* st, int cmp, T x) {                              \
    shmem_##N##_wait_until_all(v, n, st, cmp, x);                                                               \
  }                                                                                                             \
  inline size_t shmem_wait_until_any(T* v, size_t n, const int* st, int cmp, T x) {                            \
    return shmem_##N##_wait_until_any(v, n, st, cmp, x);                                                        \
  }                                                                                                             \
  inline size_t shmem_wait_until_some(T* v, size_t n, size_t* idx, const int* st, int cmp, T x) {              \
    return shmem_##N##_wait_until_some(v, n, idx, st, cmp, x);                                                  \
  }                                                                                                             \
  inline void shmem_wait_until_all_vector(T* v, size_t n, const int* st, int cmp, const T* x) {                \
    shmem_##N##_wait_until_all_vector(v, n, st, cmp, x);                                                        \
  }                                                                                                             \
  inline size_t shmem_wait_until_any_vector(T* v, size_t n, const int* st, int cmp, const T* x) {              \
    return shmem_##N##_wait_until_any_vector(v, n, st, cmp, x);                                                 \
  }                                                                                                             \
  inline size_t shmem_wait_until_some_vector(T* v, size_t n, size_t* idx, const int* st, int cmp, const T* x) {\
    return shmem_##N##_wait_until_some_vector(v, n, idx, st, cmp, x);                                           \
  }                                                                                                             \
  inline int shmem_test(T* v, int cmp, T x) { return shmem_##N##_test(v, cmp, x); }                            \
  inline int shmem_test_all(T* v, size_t n, const int* st, int cmp, T x) { return shmem_##N##_test_all(v, n, st, cmp, x); } \
  inline size_t shmem_test_any(T* v, size_t n, const int* st, int cmp, T x) {                                  \
    return shmem_##N##_test_any(v, n, st, cmp, x);                                                              \
  }                                                                                                             \
  inline size_t shmem_test_some(T* v, size_t n, size_t* idx, const int* st, int cmp, T x) {                    \
    return shmem_##N##_test_some(v, n, idx, st, cmp, x);                                                        \
  }                                                                                                             \
  inline int shmem_test_all_vector(T* v, size_t n, const int* st, int cmp, const T* x) {                       \
    return shmem_##N##_test_all_vector(v, n, st, cmp, x);                                                       \
  }                                                                                                             \
  inline size_t shmem_test_any_vector(T* v, size_t n, const int* st, int cmp, const T* x) {                    \
    return shmem_##N##_test_any_vector(v, n, st, cmp, x);                                                       \
  }                                                                                                             \
  inline size_t shmem_test_some_vector(T* v, size_t n, size_t* idx, const int* st, int cmp, const T* x) {      \
    return shmem_##N##_test_some_vector(v, n, idx, st, cmp, x);                                                 \
  }
SHMEM_X_P2P_GENERIC(SHMEM_CXX_P2P)

#define SHMEM_CXX_REDUCE(T, N, OP) \
  inline int shmem_##OP##_reduce(shmem_team_t t, T* d, const T* s, size_t n) { return shmem_##N##_##OP##_reduce(t, d, s, n); }
#define SHMEM_CXX_REDUCE_BIT(T, N) SHMEM_CXX_REDUCE(T, N, and) SHMEM_CXX_REDUCE(T, N, or) SHMEM_CXX_REDUCE(T, N, xor)
#define SHMEM_CXX_REDUCE_ORD(T, N) SHMEM_CXX_REDUCE(T, N, max) SHMEM_CXX_REDUCE(T, N, min)
#define SHMEM_CXX_REDUCE_ARITH(T, N) SHMEM_CXX_REDUCE(T, N, sum) SHMEM_CXX_REDUCE(T, N, prod)
SHMEM_X_REDUCE_BITWISE_GENERIC(SHMEM_CXX_REDUCE_BIT)
SHMEM_X_REDUCE_ORDERED_GENERIC(SHMEM_CXX_REDUCE_ORD)
SHMEM_X_REDUCE_ORDERED_GENERIC(SHMEM_CXX_REDUCE_ARITH)
SHMEM_X_REDUCE_COMPLEX(SHMEM_CXX_REDUCE_ARITH)

#endif /* C11 / C++ */

#endif /* RMA_SHMEM_GENERIC_H */
