/* One PE of the OpenSHMEM conformance tests, written from the OpenSHMEM 1.5
 * specification in C11 (so the type-generic names are the _Generic ones):
 *   rmarun -n N shmem_ranks <scenario>
 * Scenarios: rma, amo, wait, signal, lock, teams, ctx, coll, heap, all (every
 * one of those in turn), and the bad-input ones (pe_range, nonsymmetric,
 * misaligned, destroyed_team, before_init, heap_exhausted) that must end
 * the job with a message naming the routine. A failed check prints the PE,
 * the scenario, the line and what differed, then calls shmem_global_exit(1). */
#include <complex.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <shmem.h>

static const char* scenario = "?";
static int me, npes;

static void fail(int line, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "shmem_ranks %s: PE %d of %d, line %d: %s\n", scenario, me, npes, line, msg);
  fflush(stderr);
  shmem_global_exit(1);
}
#define CHECK(cond, ...)                       \
  do {                                         \
    if (!(cond)) fail(__LINE__, __VA_ARGS__);  \
  } while (0)
#define CHECK_EQ_LL(a, b)                                                                            \
  do {                                                                                               \
    long long va_ = (long long)(a), vb_ = (long long)(b);                                            \
    if (va_ != vb_) fail(__LINE__, "%s == %s: %lld != %lld", #a, #b, va_, vb_);                      \
  } while (0)

/* Global and static variables are symmetric too (data and bss). */
long global_data[16] = {1, 2, 3};
static long static_bss[64];
static int static_int_target;

/* ------------------------------------------------------------------ rma */
static void test_rma(void) {
  const int right = (me + 1) % npes, left = (me + npes - 1) % npes;
  /* Typed put/get through the generic names, every size class. */
  int* ints = shmem_malloc(64 * sizeof(int));
  double* dbl = shmem_malloc(64 * sizeof(double));
  char* bytes = shmem_malloc(1 << 20);
  CHECK(ints && dbl && bytes, "shmem_malloc returned NULL");
  int src_i[64];
  double src_d[64];
  for (int i = 0; i < 64; ++i) {
    src_i[i] = me * 1000 + i;
    src_d[i] = me + i / 8.0;
  }
  shmem_put(ints, src_i, 64, right);
  shmem_put(dbl, src_d, 64, right);
  /* 1 MiB: past the inline and bounce sizes, through the registration cache. */
  char* big = malloc(1 << 20);
  for (int i = 0; i < (1 << 20); ++i) big[i] = (char)(i * 7 + me);
  shmem_putmem(bytes, big, 1 << 20, right);
  shmem_barrier_all();
  for (int i = 0; i < 64; ++i) {
    CHECK_EQ_LL(ints[i], left * 1000 + i);
    CHECK(dbl[i] == left + i / 8.0, "dbl[%d] = %g", i, dbl[i]);
  }
  for (int i = 0; i < (1 << 20); ++i) CHECK(bytes[i] == (char)(i * 7 + left), "bytes[%d]", i);
  /* Get them back from the right neighbour: what I put there. */
  int got_i[64];
  shmem_get(got_i, ints, 64, right);
  for (int i = 0; i < 64; ++i) CHECK_EQ_LL(got_i[i], me * 1000 + i);
  memset(big, 0, 1 << 20);
  shmem_getmem(big, bytes, 1 << 20, right);
  for (int i = 0; i < (1 << 20); ++i) CHECK(big[i] == (char)(i * 7 + me), "got big[%d]", i);

  /* Sized forms. */
  uint16_t s16[4] = {1, 2, 3, (uint16_t)me};
  uint64_t* w = shmem_calloc(8, sizeof(uint64_t));
  shmem_put16(w, s16, 4, right);
  __int128 v128 = ((__int128)me << 64) | 77;
  shmem_put128(w + 2, &v128, 1, right);
  shmem_put8((char*)(w + 4), "abcdefg", 8, right);
  shmem_put32(w + 5, &src_i[1], 1, right);
  shmem_put64(w + 6, &src_d[3], 1, right);
  shmem_barrier_all();
  uint16_t back16[4];
  memcpy(back16, w, 8);
  CHECK(back16[3] == left && back16[0] == 1, "put16");
  __int128 b128;
  memcpy(&b128, w + 2, 16);
  CHECK(b128 == (((__int128)left << 64) | 77), "put128");
  CHECK(strcmp((char*)(w + 4), "abcdefg") == 0, "put8");
  __int128 g128 = 0;
  shmem_get128(&g128, w + 2, 1, me);
  CHECK(g128 == b128, "get128 from myself");

  /* p/g, to a global and a static variable (symmetric without malloc). */
  shmem_p(&static_int_target, me + 5, right);
  shmem_long_p(&static_bss[me % 64], (long)me * 3, right);
  shmem_barrier_all();
  CHECK_EQ_LL(static_int_target, left + 5);
  CHECK_EQ_LL(static_bss[left % 64], left * 3L);
  CHECK_EQ_LL(shmem_g(&static_int_target, right), me + 5);
  CHECK_EQ_LL(shmem_g(&global_data[1], left), 2);

  /* nbi + quiet (after everyone read global_data[1] above). */
  shmem_barrier_all();
  long nbi_src[16];
  for (int i = 0; i < 16; ++i) nbi_src[i] = me * 100 + i;
  shmem_put_nbi(global_data, nbi_src, 16, right);
  shmem_quiet();
  shmem_barrier_all();
  for (int i = 0; i < 16; ++i) CHECK_EQ_LL(global_data[i], left * 100 + i);
  long nbi_got[16];
  shmem_get_nbi(nbi_got, global_data, 16, left);
  shmem_quiet();
  for (int i = 0; i < 16; ++i) CHECK_EQ_LL(nbi_got[i], ((left + npes - 1) % npes) * 100 + i);

  /* iput / iget: every other element of the target, every third of the source. */
  long strided[30];
  for (int i = 0; i < 30; ++i) strided[i] = me * 1000 + i;
  shmem_barrier_all();
  memset(static_bss, 0, sizeof static_bss);
  shmem_barrier_all();
  shmem_iput(static_bss, strided, 2, 3, 10, right);
  shmem_barrier_all();
  for (int i = 0; i < 10; ++i) {
    CHECK_EQ_LL(static_bss[2 * i], left * 1000 + 3 * i);
    CHECK_EQ_LL(static_bss[2 * i + 1], 0);
  }
  long gathered[5] = {0};
  shmem_iget(gathered, static_bss, 1, 4, 5, right);
  for (int i = 0; i < 5; ++i) CHECK_EQ_LL(gathered[i], me * 1000 + 6 * i);

  /* ctx forms with the default context. */
  shmem_ctx_int_put(SHMEM_CTX_DEFAULT, ints, src_i, 2, left);
  shmem_put(SHMEM_CTX_DEFAULT, ints + 2, src_i + 2, 2, left);
  shmem_ctx_quiet(SHMEM_CTX_DEFAULT);
  shmem_barrier_all();
  CHECK_EQ_LL(ints[0], right * 1000);
  CHECK_EQ_LL(ints[3], right * 1000 + 3);
  shmem_barrier_all();
  free(big);
  shmem_free(w);
  shmem_free(bytes);
  shmem_free(dbl);
  shmem_free(ints);
}

/* ------------------------------------------------------------------ amo */
static void test_amo(void) {
  enum { kRounds = 200 };
  long* counter = shmem_calloc(8, sizeof(long));
  int* small = shmem_calloc(8, sizeof(int)); /* two ints share each 8-byte word */
  unsigned long* bits = shmem_calloc(2, sizeof(unsigned long));
  long* cas_word = shmem_calloc(1, sizeof(long));
  double* fp = shmem_calloc(1, sizeof(double));
  shmem_barrier_all();
  /* Every PE hits PE 0's words at once: the totals must be exact. */
  long seen_max = -1;
  for (int i = 0; i < kRounds; ++i) {
    long old = shmem_atomic_fetch_inc(&counter[0], 0);
    CHECK(old >= 0 && old < (long)kRounds * npes, "fetch_inc returned %ld", old);
    if (old > seen_max) seen_max = old;
    shmem_atomic_add(&counter[1], 2L, 0);
    shmem_atomic_inc(&small[1], 0);                 /* upper half of word 0 */
    shmem_int_atomic_fetch_add(&small[0], -1, 0);   /* lower half, same word */
    shmem_atomic_fetch_xor(&bits[0], 1UL << (me % 64), 0);
    shmem_atomic_or(&bits[1], 1UL << (me % 64), 0);
  }
  /* One winner of a compare-and-swap from 0. */
  long was = shmem_atomic_compare_swap(cas_word, 0L, (long)me + 1, 0);
  shmem_barrier_all();
  long winners_local = was == 0 ? 1 : 0;
  static long winners;
  winners = 0;
  shmem_barrier_all();
  shmem_atomic_add(&winners, winners_local, 0);
  shmem_barrier_all();
  if (me == 0) {
    CHECK_EQ_LL(counter[0], (long)kRounds * npes);
    CHECK_EQ_LL(counter[1], 2L * kRounds * npes);
    CHECK_EQ_LL(small[1], kRounds * npes);
    CHECK_EQ_LL(small[0], -kRounds * npes);
    CHECK_EQ_LL(winners, 1);
    CHECK(*cas_word >= 1 && *cas_word <= npes, "CAS word %ld", *cas_word);
    unsigned long expect_or = 0, expect_xor = 0;
    for (int p = 0; p < npes; ++p) {
      expect_or |= 1UL << (p % 64);
      if (kRounds % 2) expect_xor ^= 1UL << (p % 64);
    }
    CHECK(bits[1] == expect_or, "or: %lx", bits[1]);
    CHECK(bits[0] == expect_xor, "xor: %lx", bits[0]);
  }
  /* fetch / set / swap, extended types, nbi fetching forms. */
  shmem_barrier_all();
  if (me == 0) shmem_atomic_set(fp, 1.5, npes - 1);
  shmem_barrier_all();
  CHECK(shmem_atomic_fetch(fp, npes - 1) == 1.5, "double fetch");
  shmem_barrier_all();
  if (me == 1 % npes) {
    double old = shmem_atomic_swap(fp, 2.5, npes - 1);
    CHECK(old == 1.5, "double swap returned %g", old);
  }
  shmem_barrier_all();
  CHECK(shmem_double_atomic_fetch(fp, npes - 1) == 2.5, "after swap");
  long fetched = -1;
  shmem_atomic_fetch_nbi(&fetched, &counter[0], 0);
  shmem_quiet();
  CHECK_EQ_LL(fetched, (long)kRounds * npes);
  unsigned int ui = 0;
  shmem_barrier_all();
  shmem_uint_atomic_fetch_add_nbi(&ui, (unsigned int*)&small[2], 3u, 0);
  shmem_quiet();
  CHECK(ui % 3 == 0, "fetch_add_nbi returned %u", ui);
  /* The deprecated names. */
  shmem_barrier_all();
  long before = shmem_long_finc(&counter[2], 0);
  CHECK(before >= 0 && before < npes, "long_finc %ld", before);
  shmem_barrier_all();
  CHECK_EQ_LL(shmem_long_fetch(&counter[2], 0), npes);
  shmem_barrier_all();
  shmem_free(fp);
  shmem_free(cas_word);
  shmem_free(bits);
  shmem_free(small);
  shmem_free(counter);
}

/* ------------------------------------------------------------------ wait */
static long token;
static int flags[8];
static void test_wait(void) {
  /* A token travels around the ring: each PE waits for it (the write lands
   * while it waits; the writer never waits for the target to poll). */
  token = -1;
  shmem_barrier_all();
  if (me == 0) shmem_p(&token, 0L, 0); /* PE 0 holds value 0 first */
  for (int lap = 0; lap < 3; ++lap) {
    shmem_wait_until(&token, SHMEM_CMP_EQ, (long)(lap * npes + me));
    if (lap < 2 || me != npes - 1) shmem_p(&token, (long)(lap * npes + me + 1), (me + 1) % npes);
  }
  shmem_barrier_all();
  /* any / some / all over a flag array filled by the others. */
  memset(flags, 0, sizeof flags);
  shmem_barrier_all();
  if (npes > 1) {
    /* PE p sets flags[p % 8] on every other PE. */
    for (int t = 0; t < npes; ++t)
      if (t != me) shmem_int_p(&flags[me % 8], me + 1, t);
    int status[8] = {0};
    for (int i = 0; i < 8; ++i) status[i] = (i >= npes || i == me % 8 || (npes > 8)) ? 1 : 0;
    size_t idx = shmem_wait_until_any(flags, 8, status, SHMEM_CMP_NE, 0);
    CHECK(idx < 8 && status[idx] == 0 && flags[idx] == (int)idx + 1, "wait_until_any returned %zu", idx);
    shmem_wait_until_all(flags, 8, status, SHMEM_CMP_GT, 0);
    size_t indices[8];
    size_t n = shmem_test_some(flags, 8, indices, status, SHMEM_CMP_GE, 1);
    CHECK((int)n == (npes > 8 ? 0 : npes - 1), "test_some found %zu", n);
    int want[8];
    for (int i = 0; i < 8; ++i) want[i] = i + 1;
    shmem_wait_until_all_vector(flags, 8, status, SHMEM_CMP_EQ, want);
    CHECK(shmem_test_all_vector(flags, 8, status, SHMEM_CMP_EQ, want) == 1, "test_all_vector");
    size_t some = shmem_wait_until_some_vector(flags, 8, indices, status, SHMEM_CMP_EQ, want);
    CHECK(some >= 1, "wait_until_some_vector %zu", some);
    CHECK(shmem_test(&flags[me % 8], SHMEM_CMP_EQ, 0) == 1, "own flag untouched");
    CHECK(shmem_test_any(flags, 8, status, SHMEM_CMP_LT, 0) == SIZE_MAX, "test_any with no match");
  }
  shmem_barrier_all();
}

/* ------------------------------------------------------------------ signal */
static void test_signal(void) {
  enum { kBytes = 256 * 1024, kRounds = 20 };
  char* data = shmem_malloc(kBytes);
  uint64_t* sig = shmem_calloc(2, sizeof(uint64_t));
  char* src = malloc(kBytes);
  const int right = (me + 1) % npes, left = (me + npes - 1) % npes;
  shmem_barrier_all();
  for (int round = 1; round <= kRounds; ++round) {
    memset(src, (char)(round + me), kBytes);
    /* The signal must never be seen before the data it follows. */
    if (round % 2)
      shmem_putmem_signal(data, src, kBytes, &sig[0], (uint64_t)round, SHMEM_SIGNAL_SET, right);
    else
      shmem_putmem_signal_nbi(data, src, kBytes, &sig[0], 1, SHMEM_SIGNAL_ADD, right);
    uint64_t v = shmem_signal_wait_until(&sig[0], SHMEM_CMP_GE, (uint64_t)round);
    CHECK(v == (uint64_t)round, "signal %" PRIu64 " in round %d", v, round);
    for (int i = 0; i < kBytes; i += 4093) CHECK(data[i] == (char)(round + left), "round %d byte %d", round, i);
    CHECK(data[kBytes - 1] == (char)(round + left), "round %d last byte", round);
    CHECK(shmem_signal_fetch(&sig[0]) == (uint64_t)round, "signal_fetch");
    shmem_quiet();
    shmem_barrier_all(); /* data is rewritten next round */
  }
  long typed[4] = {me, me, me, me};
  static long typed_dest[4];
  shmem_put_signal(typed_dest, typed, 4, &sig[1], 9, SHMEM_SIGNAL_SET, right);
  shmem_signal_wait_until(&sig[1], SHMEM_CMP_EQ, 9);
  CHECK_EQ_LL(typed_dest[3], left);
  shmem_barrier_all();
  free(src);
  shmem_free(sig);
  shmem_free(data);
}

/* ------------------------------------------------------------------ lock */
static long lock_word;
static long unprotected;
static void test_lock(void) {
  enum { kRounds = 30 };
  shmem_barrier_all();
  for (int i = 0; i < kRounds; ++i) {
    shmem_set_lock(&lock_word);
    /* A plain read-modify-write of PE 0's counter: exact only under the lock. */
    long v = shmem_g(&unprotected, 0);
    shmem_p(&unprotected, v + 1, 0);
    shmem_clear_lock(&lock_word);
  }
  shmem_barrier_all();
  if (me == 0) CHECK_EQ_LL(unprotected, (long)kRounds * npes);
  if (npes > 1 && me == 0) {
    shmem_set_lock(&lock_word);
    shmem_barrier_all();
    shmem_barrier_all();
    shmem_clear_lock(&lock_word);
  } else if (npes > 1) {
    shmem_barrier_all();
    CHECK(shmem_test_lock(&lock_word) == 1, "test_lock got a held lock");
    shmem_barrier_all();
  }
  shmem_barrier_all();
  if (me == npes - 1) {
    while (shmem_test_lock(&lock_word) != 0) {
    }
    shmem_clear_lock(&lock_word);
  }
  shmem_barrier_all();
}

/* ------------------------------------------------------------------ teams */
static void test_teams(void) {
  CHECK_EQ_LL(shmem_team_my_pe(SHMEM_TEAM_WORLD), me);
  CHECK_EQ_LL(shmem_team_n_pes(SHMEM_TEAM_WORLD), npes);
  /* The shared team is the PEs of this PE's host: every PE of the job when
   * nothing says otherwise (one machine, one user), those with the same
   * RMA_HOST_ID when the job simulates hosts (tests/api_mp/host_per_rank.sh).
   * Every PE learns the others' host from the environment, and shmem_ptr
   * gives a load/store pointer into the heap of exactly those PEs (never
   * into another PE's globals). */
  static long host_hash[64];
  static long my_hash;
  CHECK(npes <= 64, "teams supports at most 64 PEs");
  const char* host_id = getenv("RMA_HOST_ID");
  my_hash = 5381;
  for (const char* c = host_id != NULL ? host_id : ""; *c != '\0'; ++c) my_hash = my_hash * 33 + *c;
  shmem_barrier_all();
  shmem_long_fcollect(SHMEM_TEAM_WORLD, host_hash, &my_hash, 1);
  int first = -1, count = 0, my_index = -1;
  for (int p = 0; p < npes; ++p) {
    if (host_hash[p] != my_hash) continue;
    if (first < 0) first = p;
    if (p == me) my_index = count;
    ++count;
  }
  CHECK_EQ_LL(shmem_team_n_pes(SHMEM_TEAM_SHARED), count);
  CHECK_EQ_LL(shmem_team_my_pe(SHMEM_TEAM_SHARED), my_index);
  CHECK_EQ_LL(shmem_team_translate_pe(SHMEM_TEAM_SHARED, 0, SHMEM_TEAM_WORLD), first);
  long* cell = shmem_calloc(2, sizeof(long));
  const int right = (me + 1) % npes;
  const int same_host = host_hash[right] == my_hash;
  long* theirs = shmem_ptr(cell, right);
  CHECK((theirs != NULL) == same_host, "shmem_ptr to PE %d's heap is %p, but it is %son this PE's host", right,
        (void*)theirs, same_host ? "" : "not ");
  if (theirs != NULL) *theirs = 500 + me; /* a plain store into the right neighbour's heap */
  CHECK(shmem_ptr(&static_bss[0], right) == (npes == 1 ? (void*)&static_bss[0] : NULL), "shmem_ptr to a global");
  if (same_host) {
    CHECK(shmem_team_ptr(SHMEM_TEAM_SHARED, cell, shmem_team_translate_pe(SHMEM_TEAM_WORLD, right, SHMEM_TEAM_SHARED)) ==
              theirs,
          "team_ptr");
  }
  /* The shared team's own next member is always reachable by load/store. */
  const int tn = shmem_team_n_pes(SHMEM_TEAM_SHARED), tme = shmem_team_my_pe(SHMEM_TEAM_SHARED);
  long* mate = shmem_team_ptr(SHMEM_TEAM_SHARED, cell, (tme + 1) % tn);
  CHECK(mate != NULL, "team_ptr to the next PE of SHMEM_TEAM_SHARED is NULL");
  mate[1] = 700 + me;
  shmem_barrier_all();
  const int left = (me + npes - 1) % npes;
  if (host_hash[left] == my_hash) CHECK_EQ_LL(cell[0], 500 + left);
  CHECK_EQ_LL(cell[1], 700 + shmem_team_translate_pe(SHMEM_TEAM_SHARED, (tme + tn - 1) % tn, SHMEM_TEAM_WORLD));
  shmem_free(cell);
  /* Even PEs. */
  shmem_team_t evens = SHMEM_TEAM_INVALID;
  shmem_team_config_t conf = {.num_contexts = 2};
  CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, &conf, SHMEM_TEAM_NUM_CONTEXTS, &evens) == 0,
        "split_strided");
  if (me % 2 == 0) {
    CHECK(evens != SHMEM_TEAM_INVALID, "even PE without the team");
    CHECK_EQ_LL(shmem_team_my_pe(evens), me / 2);
    CHECK_EQ_LL(shmem_team_n_pes(evens), (npes + 1) / 2);
    CHECK_EQ_LL(shmem_team_translate_pe(evens, shmem_team_n_pes(evens) - 1, SHMEM_TEAM_WORLD),
                2 * ((npes + 1) / 2 - 1));
    CHECK_EQ_LL(shmem_team_translate_pe(SHMEM_TEAM_WORLD, me, evens), me / 2);
    shmem_team_config_t got;
    CHECK(shmem_team_get_config(evens, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 && got.num_contexts == 2, "get_config");
    /* Team collectives and a team context (PE numbers relative to the team). */
    static long team_sum;
    static long team_src;
    team_src = me;
    shmem_team_sync(evens);
    CHECK(shmem_long_sum_reduce(evens, &team_sum, &team_src, 1) == 0, "sum_reduce on evens");
    long expect = 0;
    for (int p = 0; p < npes; p += 2) expect += p;
    CHECK_EQ_LL(team_sum, expect);
    shmem_ctx_t ctx;
    CHECK(shmem_team_create_ctx(evens, 0, &ctx) == 0, "team_create_ctx");
    shmem_team_t back;
    CHECK(shmem_ctx_get_team(ctx, &back) == 0 && back == evens, "ctx_get_team");
    static int ctx_target;
    ctx_target = -1;
    shmem_team_sync(evens);
    const int tn = shmem_team_n_pes(evens);
    shmem_ctx_int_p(ctx, &ctx_target, me, (shmem_team_my_pe(evens) + 1) % tn); /* team PE number */
    shmem_ctx_quiet(ctx);
    shmem_team_sync(evens);
    const int from = (shmem_team_my_pe(evens) + tn - 1) % tn;
    CHECK_EQ_LL(ctx_target, shmem_team_translate_pe(evens, from, SHMEM_TEAM_WORLD));
    shmem_ctx_destroy(ctx);
    CHECK(shmem_team_ptr(evens, &ctx_target, shmem_team_my_pe(evens)) == &ctx_target, "team_ptr to myself");
    shmem_team_destroy(evens);
  } else {
    CHECK(evens == SHMEM_TEAM_INVALID, "odd PE got the even team");
    CHECK_EQ_LL(shmem_team_translate_pe(SHMEM_TEAM_WORLD, me, SHMEM_TEAM_INVALID), -1);
  }
  shmem_barrier_all();
  /* 2-D split: rows of 2. */
  shmem_team_t xt, yt;
  CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &xt, NULL, 0, &yt) == 0, "split_2d");
  CHECK_EQ_LL(shmem_team_my_pe(xt), me % 2);
  CHECK_EQ_LL(shmem_team_my_pe(yt), me / 2);
  CHECK_EQ_LL(shmem_team_n_pes(yt), (npes - me % 2 + 1) / 2);
  CHECK_EQ_LL(shmem_team_translate_pe(xt, 0, SHMEM_TEAM_WORLD), me - me % 2);
  static int row_data[2], col_sum;
  static int col_src;
  col_src = me;
  shmem_int_fcollect(xt, row_data, &col_src, 1);
  CHECK_EQ_LL(row_data[0], me - me % 2);
  if (shmem_team_n_pes(xt) == 2) CHECK_EQ_LL(row_data[1], me - me % 2 + 1);
  shmem_int_sum_reduce(yt, &col_sum, &col_src, 1);
  int expect_col = 0;
  for (int p = me % 2; p < npes; p += 2) expect_col += p;
  CHECK_EQ_LL(col_sum, expect_col);
  shmem_team_destroy(xt);
  shmem_team_destroy(yt);
  shmem_barrier_all();
}

/* ------------------------------------------------------------------ ctx (threads) */
enum { kThreads = 4, kPerThread = 50 };
static long thread_slots[kThreads * kPerThread];
static long thread_counter;
static void* ctx_thread(void* arg) {
  const int t = (int)(intptr_t)arg;
  shmem_ctx_t ctx;
  if (shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) != 0) ctx = SHMEM_CTX_DEFAULT;
  const int right = (me + 1) % npes;
  for (int i = 0; i < kPerThread; ++i) {
    shmem_ctx_long_p(ctx, &thread_slots[t * kPerThread + i], (long)me * 100000 + t * 1000 + i, right);
    shmem_ctx_long_atomic_inc(ctx, &thread_counter, 0);
    shmem_long_atomic_fetch_add(&thread_counter, 0, 0); /* the default context from a thread too */
  }
  shmem_ctx_quiet(ctx);
  if (ctx != SHMEM_CTX_DEFAULT) shmem_ctx_destroy(ctx);
  return NULL;
}
static void test_ctx(void) {
  int provided = -1;
  shmem_query_thread(&provided);
  CHECK(provided == SHMEM_THREAD_MULTIPLE, "query_thread gave %d", provided);
  pthread_t th[kThreads];
  for (int t = 0; t < kThreads; ++t) pthread_create(&th[t], NULL, ctx_thread, (void*)(intptr_t)t);
  for (int t = 0; t < kThreads; ++t) pthread_join(th[t], NULL);
  shmem_barrier_all();
  const int left = (me + npes - 1) % npes;
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kPerThread; ++i)
      CHECK_EQ_LL(thread_slots[t * kPerThread + i], (long)left * 100000 + t * 1000 + i);
  if (me == 0) CHECK_EQ_LL(thread_counter, (long)npes * kThreads * kPerThread);
  shmem_barrier_all();
}

/* ------------------------------------------------------------------ coll */
static long pSync[SHMEM_REDUCE_SYNC_SIZE];
static long pWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + 64];
static void test_coll(void) {
  enum { kN = 5000 }; /* more than one scratch chunk of doubles at 8 PEs */
  long* src = shmem_malloc(kN * sizeof(long));
  long* dst = shmem_malloc((size_t)npes * kN * sizeof(long));
  double* dsrc = shmem_malloc(kN * sizeof(double));
  double* ddst = shmem_malloc(kN * sizeof(double));
  for (int i = 0; i < kN; ++i) {
    src[i] = me * 10 + i;
    dsrc[i] = (double)((me * 7 + i) % 13);
  }
  /* broadcast from the last PE, team form: the root's dest is written too. */
  shmem_barrier_all();
  CHECK(shmem_broadcast(SHMEM_TEAM_WORLD, dst, src, kN, npes - 1) == 0, "broadcast");
  for (int i = 0; i < kN; i += 97) CHECK_EQ_LL(dst[i], (npes - 1) * 10 + i);
  shmem_barrier_all();
  /* fcollect */
  shmem_fcollect(SHMEM_TEAM_WORLD, dst, src, 3);
  for (int p = 0; p < npes; ++p)
    for (int i = 0; i < 3; ++i) CHECK_EQ_LL(dst[p * 3 + i], p * 10 + i);
  shmem_barrier_all();
  /* collect: PE p contributes p + 1 elements. */
  shmem_collect(SHMEM_TEAM_WORLD, dst, src, (size_t)me + 1);
  int k = 0;
  for (int p = 0; p < npes; ++p)
    for (int i = 0; i <= p; ++i) CHECK_EQ_LL(dst[k++], p * 10 + i);
  shmem_barrier_all();
  /* alltoall: block j of PE p goes to PE j's block p. */
  for (int j = 0; j < npes; ++j)
    for (int i = 0; i < 2; ++i) dst[j * 2 + i] = me * 1000 + j * 10 + i;
  long* a2a = shmem_malloc((size_t)npes * 2 * sizeof(long));
  shmem_barrier_all();
  shmem_alltoall(SHMEM_TEAM_WORLD, a2a, dst, 2);
  for (int p = 0; p < npes; ++p)
    for (int i = 0; i < 2; ++i) CHECK_EQ_LL(a2a[p * 2 + i], p * 1000 + me * 10 + i);
  shmem_barrier_all();
  long* a2as = shmem_calloc((size_t)npes * 4, sizeof(long));
  shmem_alltoalls(SHMEM_TEAM_WORLD, a2as, dst, 2, 1, 1); /* 1 element per PE, dest stride 2 */
  /* Source element for PE i is dst[i] (sst 1) = me*1000 + (i/2)*10 + i%2; it
   * lands at index 2*me (dst 2) of PE i. */
  for (int p = 0; p < npes; ++p) {
    CHECK_EQ_LL(a2as[2 * p], p * 1000 + (me / 2) * 10 + me % 2);
    CHECK_EQ_LL(a2as[2 * p + 1], 0);
  }
  shmem_barrier_all();
  /* Blocks larger than a scratch slot share: several chunk columns. */
  {
    enum { kBlock = 40000 };
    unsigned char* a_src = shmem_malloc((size_t)npes * kBlock);
    unsigned char* a_dst = shmem_malloc((size_t)npes * kBlock);
    for (int p = 0; p < npes; ++p)
      for (int i = 0; i < kBlock; ++i) a_src[(size_t)p * kBlock + i] = (unsigned char)(p * 7 + me * 3 + i);
    shmem_alltoallmem(SHMEM_TEAM_WORLD, a_dst, a_src, kBlock);
    for (int p = 0; p < npes; ++p)
      for (int i = 0; i < kBlock; i += 97)
        CHECK(a_dst[(size_t)p * kBlock + i] == (unsigned char)(me * 7 + p * 3 + i), "alltoallmem block %d byte %d", p, i);
    shmem_free(a_dst);
    shmem_free(a_src);
  }
  /* Reductions: sum and max over kN elements, in place and not. */
  shmem_long_sum_reduce(SHMEM_TEAM_WORLD, dst, src, kN);
  for (int i = 0; i < kN; i += 41) CHECK_EQ_LL(dst[i], 10L * npes * (npes - 1) / 2 + (long)npes * i);
  shmem_double_max_reduce(SHMEM_TEAM_WORLD, ddst, dsrc, kN);
  for (int i = 0; i < kN; i += 37) {
    double m = 0;
    for (int p = 0; p < npes; ++p) m = (double)((p * 7 + i) % 13) > m ? (double)((p * 7 + i) % 13) : m;
    CHECK(ddst[i] == m, "max[%d] = %g, want %g", i, ddst[i], m);
  }
  shmem_double_sum_reduce(SHMEM_TEAM_WORLD, dsrc, dsrc, kN); /* in place */
  for (int i = 0; i < kN; i += 53) {
    double s = 0;
    for (int p = 0; p < npes; ++p) s += (double)((p * 7 + i) % 13);
    CHECK(dsrc[i] == s, "in-place sum[%d] = %g, want %g", i, dsrc[i], s);
  }
  static unsigned int bits_src, bits_and, bits_or, bits_xor;
  bits_src = 1u << (me % 32) | 0x80000000u;
  shmem_and_reduce(SHMEM_TEAM_WORLD, &bits_and, &bits_src, 1);
  shmem_or_reduce(SHMEM_TEAM_WORLD, &bits_or, &bits_src, 1);
  shmem_uint_xor_reduce(SHMEM_TEAM_WORLD, &bits_xor, &bits_src, 1);
  unsigned int e_and = 0xffffffffu, e_or = 0, e_xor = 0;
  for (int p = 0; p < npes; ++p) {
    unsigned int b = 1u << (p % 32) | 0x80000000u;
    e_and &= b;
    e_or |= b;
    e_xor ^= b;
  }
  CHECK(bits_and == e_and && bits_or == e_or && bits_xor == e_xor, "bitwise reductions");
  static double _Complex zsrc, zsum, zprod;
  zsrc = (double)me + 1.0 * _Complex_I;
  shmem_complexd_sum_reduce(SHMEM_TEAM_WORLD, &zsum, &zsrc, 1);
  shmem_complexd_prod_reduce(SHMEM_TEAM_WORLD, &zprod, &zsrc, 1);
  double _Complex e_prod = 1;
  for (int p = 0; p < npes; ++p) e_prod *= (double)p + 1.0 * _Complex_I;
  CHECK(__real__ zsum == npes * (npes - 1) / 2.0 && __imag__ zsum == npes, "complex sum");
  CHECK(__real__ zprod == __real__ e_prod && __imag__ zprod == __imag__ e_prod, "complex prod");
  static short s_min, s_src;
  s_src = (short)(100 - me);
  shmem_min_reduce(SHMEM_TEAM_WORLD, &s_min, &s_src, 1);
  CHECK_EQ_LL(s_min, 100 - (npes - 1));
  /* Deprecated active sets: the odd PEs (stride 2), and all PEs. */
  for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; ++i) pSync[i] = SHMEM_SYNC_VALUE;
  shmem_barrier_all();
  static int to_all_src[4], to_all_dst[4];
  for (int i = 0; i < 4; ++i) to_all_src[i] = me + i;
  if (npes > 1 && me % 2 == 1) {
    const int odd = npes / 2;
    shmem_int_sum_to_all(to_all_dst, to_all_src, 4, 1, 1, odd, (int*)pWrk, pSync);
    int e = 0;
    for (int p = 1; p < npes; p += 2) e += p;
    CHECK_EQ_LL(to_all_dst[2], e + 2 * odd);
    shmem_barrier(1, 1, odd, pSync);
  }
  shmem_barrier_all();
  static long b64[4];
  static long b64_src[4];
  for (int i = 0; i < 4; ++i) {
    b64[i] = -1;
    b64_src[i] = me * 4 + i;
  }
  shmem_barrier_all();
  shmem_broadcast64(b64, b64_src, 4, 0, 0, 0, npes, pSync);
  if (me == 0)
    CHECK_EQ_LL(b64[0], -1); /* 1.4 semantics: the root's dest is untouched */
  else
    CHECK_EQ_LL(b64[3], 3);
  shmem_barrier_all();
  shmem_fcollect64(dst, b64_src, 4, 0, 0, npes, pSync);
  for (int p = 0; p < npes; ++p) CHECK_EQ_LL(dst[p * 4 + 1], p * 4 + 1);
  shmem_sync_all();
  shmem_free(a2as);
  shmem_free(a2a);
  shmem_free(ddst);
  shmem_free(dsrc);
  shmem_free(dst);
  shmem_free(src);
}

/* ------------------------------------------------------------------ heap */
static void test_heap(void) {
  /* Identical layout: every PE's addresses relative to the first block agree. */
  char* base = shmem_malloc(100);
  void* ptrs[6];
  ptrs[0] = shmem_malloc(1000);
  ptrs[1] = shmem_align(4096, 10);
  ptrs[2] = shmem_calloc(100, 8);
  ptrs[3] = shmem_malloc_with_hints(64, SHMEM_MALLOC_ATOMICS_REMOTE);
  ptrs[4] = shmem_realloc(ptrs[0], 50000);
  ptrs[5] = shmem_realloc(ptrs[3], 8);
  CHECK(((uintptr_t)ptrs[1] & 4095) == 0, "shmem_align(4096)");
  /* Alignment: malloc's 16 bytes for any block; an explicit shmem_align is
   * honoured at every size; large blocks sit 2064 bytes past a page (see
   * placement() in rmaapi/shmem/c_setup.cpp). */
  for (int i = 0; i < 6; ++i) CHECK(((uintptr_t)ptrs[i] & 15) == 0, "block %d is %p: not 16-byte aligned", i, ptrs[i]);
  char* big = shmem_malloc(8192);
  char* big_aligned = shmem_align(64, 8192);
  CHECK(((uintptr_t)big & 4095) == 2064, "shmem_malloc(8192) = %p: not 2064 bytes past a page", (void*)big);
  CHECK(((uintptr_t)big_aligned & 63) == 0, "shmem_align(64, 8192) = %p: not 64-byte aligned", (void*)big_aligned);
  shmem_free(big_aligned);
  shmem_free(big);
  for (int i = 0; i < 100; ++i) CHECK(((long*)ptrs[2])[i % 100] == 0, "calloc not zeroed");
  static long offsets[6], all_offsets[6 * 64];
  for (int i = 0; i < 6; ++i) offsets[i] = ptrs[i] ? (long)((char*)ptrs[i] - base) : -1;
  if (npes <= 64) {
    shmem_fcollect64(all_offsets, offsets, 6, 0, 0, npes, pSync);
    for (int p = 0; p < npes; ++p)
      for (int i = 0; i < 6; ++i) CHECK_EQ_LL(all_offsets[p * 6 + i], offsets[i]);
  }
  CHECK(shmem_malloc(0) == NULL, "malloc(0)");
  CHECK(shmem_addr_accessible(ptrs[2], (me + 1) % npes) == 1, "addr_accessible heap");
  int on_stack = 0;
  CHECK(shmem_addr_accessible(&on_stack, 0) == 0, "addr_accessible stack");
  CHECK(shmem_addr_accessible(&static_bss[3], 0) == 1, "addr_accessible static");
  CHECK(shmem_pe_accessible(npes) == 0 && shmem_pe_accessible(npes - 1) == 1, "pe_accessible");
  CHECK(shmem_ptr(ptrs[2], me) == ptrs[2], "shmem_ptr to myself");
  /* Exhaustion, asked to return NULL (RMA_SHMEM_HEAP_EXHAUSTED=null, set in
   * main for this scenario): NULL on every PE, and the heap still works
   * afterwards. By default it ends the job: bad_input.heap_exhausted. */
  void* huge = shmem_malloc((size_t)1 << 40);
  CHECK(huge == NULL, "a 1 TiB block was allocated");
  shmem_free(ptrs[5]);
  shmem_free(ptrs[4]);
  shmem_free(ptrs[2]);
  shmem_free(ptrs[1]);
  shmem_free(base);
  shmem_free(NULL);
  void* again = shmem_malloc(1000);
  CHECK(again != NULL, "malloc after free");
  shmem_free(again);
  /* Deprecated names. */
  long* old = shmalloc(64);
  CHECK(old != NULL && _my_pe() == me && _num_pes() == npes, "deprecated names");
  shfree(old);
}

/* ------------------------------------------------------------------ pie */
/* A position-independent executable: each PE's static variables sit at a
 * different address (with address-space randomization on), yet a static
 * variable is a valid target. */
static long pie_target[4];
static void test_pie(void) {
  static long addrs[64], mine;
  mine = (long)(intptr_t)&pie_target[0];
  if (npes <= 64) shmem_fcollect64(addrs, &mine, 1, 0, 0, npes, pSync);
  int differ = 0;
  for (int p = 1; p < npes && p < 64; ++p) differ |= addrs[p] != addrs[0];
  FILE* f = fopen("/proc/sys/kernel/randomize_va_space", "r");
  int aslr = 1;
  if (f != NULL) {
    if (fscanf(f, "%d", &aslr) != 1) aslr = 1;
    fclose(f);
  }
  if (npes > 1 && aslr != 0) CHECK(differ, "every PE has the static variable at %#lx: not a PIE with ASLR?", addrs[0]);
  const long v = 1000 + me;
  shmem_long_put(&pie_target[1], &v, 1, (me + 1) % npes);
  shmem_long_atomic_add(&pie_target[2], 1, 0);
  shmem_barrier_all();
  CHECK_EQ_LL(pie_target[1], 1000 + (me + npes - 1) % npes);
  if (me == 0) CHECK_EQ_LL(pie_target[2], npes);
  if (me == 0) printf("shmem_ranks pie: static variable addresses %s across PEs\n", differ ? "differ" : "agree");
}

/* ------------------------------------------------------------------ bad input */
static void bad_input(const char* which) {
  static long target[4];
  if (strcmp(which, "pe_range") == 0) {
    shmem_long_p(target, 1, npes); /* one past the last PE */
  } else if (strcmp(which, "nonsymmetric") == 0) {
    long local[4];
    shmem_long_put(local, target, 4, 0);
  } else if (strcmp(which, "misaligned") == 0) {
    shmem_long_atomic_add((long*)((char*)target + 4), 1, 0);
  } else if (strcmp(which, "destroyed_team") == 0) {
    shmem_team_t t;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &t);
    shmem_team_destroy(t);
    (void)shmem_team_n_pes(t);
  } else if (strcmp(which, "heap_exhausted") == 0) {
    /* Run with a small SHMEM_SYMMETRIC_SIZE: the allocation ends the job
     * with a message naming the routine, the PE and the sizes. */
    void* p = shmem_malloc(64 << 20);
    if (p == NULL) fprintf(stderr, "shmem_ranks: shmem_malloc returned NULL instead of ending the job\n");
  }
  fprintf(stderr, "shmem_ranks: the bad call %s returned\n", which);
}

int main(int argc, char** argv) {
  scenario = argc > 1 ? argv[1] : "all";
  if (strcmp(scenario, "before_init") == 0) {
    shmem_long_p(&global_data[0], 1, 0);
    return 0;
  }
  if (strcmp(scenario, "heap") == 0 || strcmp(scenario, "all") == 0) setenv("RMA_SHMEM_HEAP_EXHAUSTED", "null", 1);
  if (strcmp(scenario, "ctx") == 0 || strcmp(scenario, "all") == 0) {
    int provided = -1;
    if (shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) != 0) return 2;
  } else {
    shmem_init();
  }
  me = shmem_my_pe();
  npes = shmem_n_pes();
  int major = 0, minor = 0;
  shmem_info_get_version(&major, &minor);
  CHECK(major == 1 && minor == 5, "version %d.%d", major, minor);
  char name[SHMEM_MAX_NAME_LEN];
  shmem_info_get_name(name);
  CHECK(strlen(name) > 0, "empty name");
  const int all = strcmp(scenario, "all") == 0;
  int ran = 0;
#define RUN(s, fn)                                  \
  if (all || strcmp(scenario, s) == 0) {            \
    scenario = s;                                   \
    fn();                                           \
    ran = 1;                                        \
  }
  RUN("rma", test_rma)
  RUN("amo", test_amo)
  RUN("wait", test_wait)
  RUN("signal", test_signal)
  RUN("lock", test_lock)
  RUN("teams", test_teams)
  RUN("ctx", test_ctx)
  RUN("coll", test_coll)
  RUN("heap", test_heap)
  if (strcmp(scenario, "pie") == 0) { /* only in the PIE build, not in "all" */
    test_pie();
    ran = 1;
  }
  if (!ran) {
    bad_input(scenario);
    shmem_finalize();
    return 1;
  }
  if (me == 0) printf("shmem_ranks %s: %d PEs ok\n", all ? "all" : scenario, npes);
  shmem_finalize();
  return 0;
}
