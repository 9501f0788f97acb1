// The C++ face of <shmem.h>: the overloads the specification lists for the
// type-generic names (put/get/p/g/iput, AMOs with and without a context,
// wait_until/test, team collectives and reductions, std::complex included).
//   rmarun -n N shmem_cxx
#include <shmem.h>

#include <complex>
#include <cstdio>
#include <cstdlib>

namespace {
int me = -1;
void check(bool ok, int line, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "shmem_cxx: PE %d, line %d: %s\n", me, line, what);
    shmem_global_exit(1);
  }
}
#define CHECK(cond) check((cond), __LINE__, #cond)

long target[8];
// A 4-byte AMO target: 4-byte AMOs work on the aligned 8-byte word holding
// it (the NIC's atomics are 8 bytes wide), so the word's other half must be
// addressable memory of this program (rmaapi/README.md, Atomics).
alignas(8) unsigned int bits[2];
int flag;
double dsrc[3], ddst[3];
std::complex<float> zsrc, zsum;
}  // namespace

int main() {
  shmem_init();
  me = shmem_my_pe();
  const int n = shmem_n_pes(), right = (me + 1) % n, left = (me + n - 1) % n;
  long src[8];
  for (int i = 0; i < 8; ++i) src[i] = me * 10 + i;
  shmem_put(target, src, 8, right);
  shmem_barrier_all();
  CHECK(target[7] == left * 10 + 7);
  long got[8] = {};
  shmem_get(got, target, 8, right);
  CHECK(got[3] == me * 10 + 3);
  shmem_p(&target[0], 99L, right);
  shmem_barrier_all();
  CHECK(shmem_g(&target[0], me) == 99);
  shmem_barrier_all();
  shmem_put(SHMEM_CTX_DEFAULT, target, src, 2, left);
  shmem_ctx_quiet(SHMEM_CTX_DEFAULT);
  shmem_barrier_all();
  CHECK(target[1] == right * 10 + 1);
  shmem_barrier_all();
  // AMOs through the overloads, with and without a context.
  target[4] = 0;
  bits[0] = 0;
  shmem_barrier_all();
  shmem_atomic_add(&target[4], 2L, 0);
  (void)shmem_atomic_fetch_inc(SHMEM_CTX_DEFAULT, &target[4], 0);
  shmem_atomic_or(&bits[0], 1u << (me % 32), 0);
  shmem_barrier_all();
  if (me == 0) {
    CHECK(shmem_atomic_fetch(&target[4], 0) == 3L * n);
    unsigned int want = 0;
    for (int p = 0; p < n; ++p) want |= 1u << (p % 32);
    CHECK(bits[0] == want);
  }
  // wait_until: the left neighbour's write wakes this PE.
  flag = 0;
  shmem_barrier_all();
  shmem_p(&flag, me + 1, right);
  shmem_wait_until(&flag, SHMEM_CMP_EQ, left + 1);
  CHECK(shmem_test(&flag, SHMEM_CMP_NE, 0) == 1);
  // Team collectives and reductions.
  for (int i = 0; i < 3; ++i) dsrc[i] = me + i;
  shmem_barrier_all();
  shmem_sum_reduce(SHMEM_TEAM_WORLD, ddst, dsrc, 3);
  CHECK(ddst[2] == n * (n - 1) / 2.0 + 2.0 * n);
  zsrc = std::complex<float>(1.0f, static_cast<float>(me));
  shmem_sum_reduce(SHMEM_TEAM_WORLD, &zsum, &zsrc, 1);
  CHECK(zsum.real() == static_cast<float>(n) && zsum.imag() == static_cast<float>(n * (n - 1) / 2));
  shmem_broadcast(SHMEM_TEAM_WORLD, dsrc, ddst, 3, 0);
  CHECK(dsrc[0] == ddst[0]);
  shmem_barrier_all();
  if (me == 0) std::printf("shmem_cxx: %d PEs ok\n", n);
  shmem_finalize();
  return 0;
}
