/* Our port of the OSU micro-benchmarks' one-sided latency and bandwidth
 * loops, written for librma from the description of what each measures
 * (not copied). One source, two builds: against librma (<rma/rma.h>) and,
 * with -DOSU_WITH_MPI, against an MPI library (mpicc), so both run exactly
 * the same loop.
 *
 *   osu_one_sided <test> [max_bytes] [iterations]
 *   test: put_latency | get_latency | put_bw | put_rate | acc_latency | fop_latency | cas_latency
 *   iterations: per size up to 8 KiB (default 2000; a tenth above, and a
 *   tenth of either as warm-up). At 20 ns an operation, 2000 of them are
 *   40 us of clock, where one timer tick can move the mean by half.
 *
 * Two ranks. Rank 0 is the origin, rank 1 the target. Every test uses a
 * window from win_allocate and a passive-target epoch (lock shared on rank
 * 1, as OSU's default "-s lock"... for latency: one operation then a flush,
 * repeated; for bandwidth: a window of 64 puts then a flush, repeated).
 * Latency is the mean time of one operation + flush in microseconds;
 * bandwidth is MB/s (10^6 bytes); put_rate is the put_bw loop at 8 bytes in
 * millions of puts per second. Sizes are powers of 4 from 1 byte.
 * fop and cas use one 8-byte integer (SUM / compare-and-swap), acc an
 * int SUM on size/4 ints (sizes from 4 bytes). */
#define _POSIX_C_SOURCE 200112L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef OSU_WITH_MPI
#include <mpi.h>
#define X_Comm MPI_Comm
#define X_Win MPI_Win
#define X_Aint MPI_Aint
#define X_COMM_WORLD MPI_COMM_WORLD
#define X_INFO_NULL MPI_INFO_NULL
#define X_CHAR MPI_CHAR
#define X_INT MPI_INT
#define X_LONG_LONG MPI_LONG_LONG
#define X_SUM MPI_SUM
#define X_LOCK_SHARED MPI_LOCK_SHARED
#define x_init MPI_Init
#define x_finalize MPI_Finalize
#define x_comm_rank MPI_Comm_rank
#define x_comm_size MPI_Comm_size
#define x_barrier MPI_Barrier
#define x_win_allocate MPI_Win_allocate
#define x_win_free MPI_Win_free
#define x_win_lock MPI_Win_lock
#define x_win_unlock MPI_Win_unlock
#define x_win_flush MPI_Win_flush
#define x_put MPI_Put
#define x_get MPI_Get
#define x_accumulate MPI_Accumulate
#define x_fetch_and_op MPI_Fetch_and_op
#define x_compare_and_swap MPI_Compare_and_swap
#define LIBRARY "mpi"
#else
#include "rma/rma.h"
#define X_Comm rma_Comm
#define X_Win rma_Win
#define X_Aint rma_Aint
#define X_COMM_WORLD RMA_COMM_WORLD
#define X_INFO_NULL RMA_INFO_NULL
#define X_CHAR RMA_CHAR
#define X_INT RMA_INT
#define X_LONG_LONG RMA_LONG_LONG
#define X_SUM RMA_SUM
#define X_LOCK_SHARED RMA_LOCK_SHARED
#define x_init rma_init
#define x_finalize rma_finalize
#define x_comm_rank rma_comm_rank
#define x_comm_size rma_comm_size
#define x_barrier rma_barrier
#define x_win_allocate rma_win_allocate
#define x_win_free rma_win_free
#define x_win_lock rma_win_lock
#define x_win_unlock rma_win_unlock
#define x_win_flush rma_win_flush
#define x_put rma_put
#define x_get rma_get
#define x_accumulate rma_accumulate
#define x_fetch_and_op rma_fetch_and_op
#define x_compare_and_swap rma_compare_and_swap
#define LIBRARY "librma"
#endif

#define WINDOW 64 /* puts in flight per flush in put_bw */

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

#define CHECK(call)                                                        \
  do {                                                                     \
    int rc_ = (call);                                                      \
    if (rc_ != 0) {                                                        \
      fprintf(stderr, "osu_one_sided: %s failed with %d\n", #call, rc_); \
      exit(1);                                                             \
    }                                                                      \
  } while (0)

static int g_iterations = 2000;  /* per size up to 8 KiB; argv[3] */
static int iterations(size_t size) { return size > 8192 ? g_iterations / 10 : g_iterations; }
static int warmup(size_t size) { return iterations(size) / 10; }
static int is_window_test(const char* test) { return strcmp(test, "put_bw") == 0 || strcmp(test, "put_rate") == 0; }

/* One measurement: mean microseconds per iteration on rank 0. */
static double run(const char* test, size_t size, char* origin, char* result, X_Win win, int rank) {
  const int iters = iterations(size), skip = warmup(size);
  double t0 = 0.0;
  long long one = 1, compare = 0, fetched = 0;
  if (rank == 0) {
    CHECK(x_win_lock(X_LOCK_SHARED, 1, 0, win));
    for (int i = 0; i < iters + skip; ++i) {
      if (i == skip) t0 = now_us();
      if (strcmp(test, "put_latency") == 0) {
        CHECK(x_put(origin, (int)size, X_CHAR, 1, 0, (int)size, X_CHAR, win));
      } else if (strcmp(test, "get_latency") == 0) {
        CHECK(x_get(result, (int)size, X_CHAR, 1, 0, (int)size, X_CHAR, win));
      } else if (strcmp(test, "put_bw") == 0 || strcmp(test, "put_rate") == 0) {
        for (int w = 0; w < WINDOW; ++w) {
          CHECK(x_put(origin + (size_t)w * size, (int)size, X_CHAR, 1, (X_Aint)((size_t)w * size), (int)size, X_CHAR, win));
        }
      } else if (strcmp(test, "acc_latency") == 0) {
        CHECK(x_accumulate(origin, (int)(size / sizeof(int)), X_INT, 1, 0, (int)(size / sizeof(int)), X_INT, X_SUM, win));
      } else if (strcmp(test, "fop_latency") == 0) {
        CHECK(x_fetch_and_op(&one, &fetched, X_LONG_LONG, 1, 0, X_SUM, win));
      } else if (strcmp(test, "cas_latency") == 0) {
        CHECK(x_compare_and_swap(&one, &compare, &fetched, X_LONG_LONG, 1, 0, win));
      }
      CHECK(x_win_flush(1, win));
    }
    const double t = now_us() - t0;
    CHECK(x_win_unlock(1, win));
    return t / iters;
  }
  return 0.0;
}

int main(int argc, char** argv) {
  CHECK(x_init(&argc, &argv));
  int rank = 0, size = 0;
  CHECK(x_comm_rank(X_COMM_WORLD, &rank));
  CHECK(x_comm_size(X_COMM_WORLD, &size));
  const char* test = argc > 1 ? argv[1] : "";
  const size_t max_bytes = argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : (size_t)1 << 20;
  const long iters_arg = argc > 3 ? strtol(argv[3], NULL, 10) : 2000;
  const int sized = strcmp(test, "put_latency") == 0 || strcmp(test, "get_latency") == 0 ||
                    strcmp(test, "put_bw") == 0 || strcmp(test, "acc_latency") == 0;
  const int rate = strcmp(test, "put_rate") == 0;
  if (size != 2 || (!sized && !rate && strcmp(test, "fop_latency") != 0 && strcmp(test, "cas_latency") != 0) ||
      iters_arg < 10 || iters_arg > 100000000) {
    if (rank == 0) {
      fprintf(stderr,
              "usage: (2 ranks) %s put_latency|get_latency|put_bw|put_rate|acc_latency|fop_latency|cas_latency "
              "[max_bytes] [iterations: 10..100000000, default 2000]\n",
              argv[0]);
    }
    x_finalize();
    return 2;
  }
  g_iterations = (int)iters_arg;
  const size_t win_bytes = sized ? max_bytes * (is_window_test(test) ? WINDOW : 1) : rate ? 8 * WINDOW : 8;
  char* base = NULL;
  X_Win win;
  CHECK(x_win_allocate((X_Aint)win_bytes, 1, X_INFO_NULL, X_COMM_WORLD, &base, &win));
  memset(base, 0, win_bytes);
  /* Page-aligned, as OSU allocates its buffers: where a malloc'd buffer
   * lands modulo 4 KiB differs between two builds of this file (each heap
   * is laid out by its own libraries), and a copy whose destination lies
   * just past its source modulo 4 KiB runs several times slower on these
   * CPUs (rmaapi/window/direct_copy.hpp), so malloc measured where each
   * build's heap happened to put the buffer. */
  char* origin = NULL;
  char* result = NULL;
  const long page = sysconf(_SC_PAGESIZE);
  if (posix_memalign((void**)&origin, (size_t)page, win_bytes) != 0 ||
      posix_memalign((void**)&result, (size_t)page, win_bytes) != 0) {
    fprintf(stderr, "osu_one_sided: cannot allocate 2 x %zu bytes\n", win_bytes);
    exit(1);
  }
  memset(origin, 1, win_bytes);
  CHECK(x_barrier(X_COMM_WORLD));
  if (rank == 0) {
    printf("# %s %s\n# %-10s %s\n", LIBRARY, test, "bytes",
           rate ? "M puts/s" : strcmp(test, "put_bw") == 0 ? "MB/s" : "latency (us)");
  }
  const int is_acc = strcmp(test, "acc_latency") == 0;
  for (size_t s = sized ? (is_acc ? 4 : 1) : 8; s <= (sized ? max_bytes : 8); s *= 4) {
    CHECK(x_barrier(X_COMM_WORLD));
    const double us = run(test, s, origin, result, win, rank);
    CHECK(x_barrier(X_COMM_WORLD));
    if (rank == 0) {
      if (rate) {
        printf("%-12zu %.2f\n", s, (double)WINDOW / us);  /* puts/us = M puts/s */
      } else if (strcmp(test, "put_bw") == 0) {
        printf("%-12zu %.2f\n", s, (double)s * WINDOW / us);  /* bytes/us = MB/s */
      } else {
        printf("%-12zu %.3f\n", s, us);
      }
      fflush(stdout);
    }
  }
  CHECK(x_win_free(&win));
  free(origin);
  free(result);
  CHECK(x_finalize());
  return 0;
}
