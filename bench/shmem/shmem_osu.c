/* OSU-style OpenSHMEM micro-benchmarks between PE 0 and PE 1, written
 * against the OpenSHMEM 1.5 API only, so the same source builds with
 * librma's oshcc and with Open MPI's (bench/shmem/run_vs_oshmem.sh runs
 * both):
 *   put_lat / get_lat   shmem_putmem + shmem_quiet / shmem_getmem, 8 B..1 MiB
 *   put_bw / get_bw     a window of 64 _nbi transfers, then shmem_quiet
 *   amo_lat             shmem_long_atomic_fetch_add
 *   amo_rate            shmem_long_atomic_add, a window of 64, then quiet
 *   barrier             shmem_barrier_all over every PE
 * Output: one line per measurement, "<test> <size> <value> <unit>".
 * With -DSHMEM_OSU_ENGINE_BASELINE (librma's build only) it also measures
 * the engine's own 8-byte RDMA WRITE post + poll on the same connection
 * (engine_baseline.cpp), the reference of the "SHMEM adds at most 10%"
 * target. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef SHMEM_OSU_ENGINE_BASELINE
double shmem_osu_engine_put_lat_us(int iterations);
#endif

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

enum { kMaxSize = 1 << 20, kWindow = 64 };

static int iterations_for(size_t size, int base) {
  if (size >= 65536) return base / 10 > 20 ? base / 10 : 20;
  return base;
}

int main(int argc, char** argv) {
  int base = argc > 1 ? atoi(argv[1]) : 2000;
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  if (n < 2) {
    if (me == 0) fprintf(stderr, "shmem_osu: needs 2 PEs or more\n");
    shmem_finalize();
    return 1;
  }
  char* buf = shmem_malloc(kMaxSize);
  char* local = malloc(kMaxSize);
  long* counter = shmem_calloc(1, sizeof(long));
  memset(buf, 1, kMaxSize);
  memset(local, 2, kMaxSize);
  shmem_barrier_all();
  /* Warm-up: connections, caches and the peer's progress loop settle before
   * anything is timed (the first timed loop was otherwise 5-100x slower). */
  if (me == 0) {
    for (int i = 0; i < 2000; ++i) {
      shmem_putmem(buf, local, 8, 1);
      shmem_quiet();
      shmem_getmem(local, buf, 8, 1);
    }
  }
  shmem_barrier_all();
#ifdef SHMEM_OSU_ENGINE_BASELINE
  /* Interleaved with the SHMEM put latency at 8 B, three times each, so both
   * see the same machine load. */
  for (int rep = 0; rep < 3; ++rep) {
    shmem_barrier_all();
    if (me == 0) {
      printf("engine_put_lat 8 %.3f us\n", shmem_osu_engine_put_lat_us(base));
      double t0 = now_us();
      for (int i = 0; i < base; ++i) {
        shmem_putmem(buf, local, 8, 1);
        shmem_quiet();
      }
      printf("shmem_put_lat 8 %.3f us\n", (now_us() - t0) / base);
    }
  }
  shmem_barrier_all();
#endif

  for (size_t size = 8; size <= kMaxSize; size *= 2) {
    const int iters = iterations_for(size, base);
    /* put latency */
    shmem_barrier_all();
    if (me == 0) {
      for (int i = 0; i < 10; ++i) {
        shmem_putmem(buf, local, size, 1);
        shmem_quiet();
      }
      double t0 = now_us();
      for (int i = 0; i < iters; ++i) {
        shmem_putmem(buf, local, size, 1);
        shmem_quiet();
      }
      printf("put_lat %zu %.3f us\n", size, (now_us() - t0) / iters);
    }
    shmem_barrier_all();
    /* get latency */
    if (me == 0) {
      double t0 = now_us();
      for (int i = 0; i < iters; ++i) shmem_getmem(local, buf, size, 1);
      printf("get_lat %zu %.3f us\n", size, (now_us() - t0) / iters);
    }
    shmem_barrier_all();
    /* put bandwidth */
    if (me == 0) {
      const int rounds = iters / kWindow > 2 ? iters / kWindow : 2;
      double t0 = now_us();
      for (int r = 0; r < rounds; ++r) {
        for (int w = 0; w < kWindow; ++w) shmem_putmem_nbi(buf, local, size, 1);
        shmem_quiet();
      }
      const double secs = (now_us() - t0) / 1e6;
      printf("put_bw %zu %.2f MB/s\n", size, (double)size * kWindow * rounds / secs / 1e6);
    }
    shmem_barrier_all();
    /* get bandwidth */
    if (me == 0) {
      const int rounds = iters / kWindow > 2 ? iters / kWindow : 2;
      double t0 = now_us();
      for (int r = 0; r < rounds; ++r) {
        for (int w = 0; w < kWindow; ++w) shmem_getmem_nbi(local, buf, size, 1);
        shmem_quiet();
      }
      const double secs = (now_us() - t0) / 1e6;
      printf("get_bw %zu %.2f MB/s\n", size, (double)size * kWindow * rounds / secs / 1e6);
    }
    fflush(stdout);
  }
  shmem_barrier_all();
  if (me == 0) {
    double t0 = now_us();
    for (int i = 0; i < base; ++i) (void)shmem_long_atomic_fetch_add(counter, 1, 1);
    printf("amo_lat 8 %.3f us\n", (now_us() - t0) / base);
    const int rounds = base / kWindow > 2 ? base / kWindow : 2;
    t0 = now_us();
    for (int r = 0; r < rounds; ++r) {
      for (int w = 0; w < kWindow; ++w) shmem_long_atomic_add(counter, 1, 1);
      shmem_quiet();
    }
    printf("amo_rate 8 %.3f Mops/s\n", (double)kWindow * rounds / (now_us() - t0));
  }
  shmem_barrier_all();
  {
    for (int i = 0; i < 10; ++i) shmem_barrier_all();
    double t0 = now_us();
    for (int i = 0; i < base / 2; ++i) shmem_barrier_all();
    if (me == 0) printf("barrier %d %.3f us\n", n, (now_us() - t0) / (base / 2));
  }
  fflush(stdout);
  shmem_free(counter);
  shmem_free(buf);
  free(local);
  shmem_finalize();
  return 0;
}
