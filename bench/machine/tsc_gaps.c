// How much of a CPU this machine takes away from a program that never
// sleeps: a loop that reads the time-stamp counter back to back and counts
// the gaps between two reads longer than a threshold. On a quiet host the
// loop loses nothing; in a guest, time the hypervisor gives to others shows
// up as gaps no interrupt in the guest accounts for. A latency average over
// a busy loop (perftest's t_avg, ucx_perftest's overall average) includes
// these gaps; its median does not.
//
//   rma_tsc_gaps [SECONDS (default 0.03)] [THRESHOLD_NS (default 1000)]
//   taskset -c 1 rma_tsc_gaps 0.03 1000     # the CPU a benchmark's client uses
//
// Prints the counter's rate, the gaps above the threshold, and the share of
// the run they took.
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

static double seconds_between(const struct timespec* a, const struct timespec* b) {
  return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

// A positive finite number from `text`, or exits naming `what`.
static double parse_positive(const char* text, const char* what, double max) {
  char* end = NULL;
  errno = 0;
  const double v = strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !(v > 0) || v > max) {
    fprintf(stderr, "rma_tsc_gaps: %s must be a number above 0 and at most %g, not '%s'\n", what, max, text);
    exit(2);
  }
  return v;
}

static const char kUsage[] = "usage: rma_tsc_gaps [SECONDS (default 0.03)] [THRESHOLD_NS (default 1000)]\n";

int main(int argc, char** argv) {
  if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
    fputs(kUsage, stdout);
    return 0;
  }
  if (argc > 3) {
    fprintf(stderr, "rma_tsc_gaps: too many arguments (%d; at most 2)\n%s", argc - 1, kUsage);
    return 2;
  }
  const double secs = argc > 1 ? parse_positive(argv[1], "SECONDS", 3600) : 0.03;
  const double threshold_ns = argc > 2 ? parse_positive(argv[2], "THRESHOLD_NS", 1e9) : 1000;

  // The counter's rate, against the monotonic clock over 20 ms.
  struct timespec c0, c1;
  clock_gettime(CLOCK_MONOTONIC, &c0);
  const uint64_t k0 = __rdtsc();
  do clock_gettime(CLOCK_MONOTONIC, &c1); while (seconds_between(&c0, &c1) < 0.02);
  const double ticks_per_ns = (double)(__rdtsc() - k0) / (seconds_between(&c0, &c1) * 1e9);
  const uint64_t threshold = (uint64_t)(threshold_ns * ticks_per_ns);

  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  const uint64_t t0 = __rdtsc();
  uint64_t prev = t0, reads = 0, gaps = 0, lost = 0, longest = 0;
  for (;;) {
    const uint64_t t = __rdtsc();
    const uint64_t d = t - prev;
    if (d > threshold) {
      ++gaps;
      lost += d;
      if (d > longest) longest = d;
    }
    prev = t;
    // The clock is read every 1024 counter reads: its own cost would be a gap.
    if ((++reads & 1023) == 0) {
      clock_gettime(CLOCK_MONOTONIC, &b);
      if (seconds_between(&a, &b) >= secs) break;
    }
  }
  const double run_ticks = (double)(prev - t0);
  printf("counter %.3f GHz; %.1f ms; %llu gaps over %.0f ns (longest %.1f us), %.2f %% of the run\n", ticks_per_ns,
         seconds_between(&a, &b) * 1e3, (unsigned long long)gaps, threshold_ns, (double)longest / ticks_per_ns / 1e3,
         run_ticks > 0 ? 100.0 * (double)lost / run_ticks : 0.0);
  return 0;
}
