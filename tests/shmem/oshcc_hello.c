/* The packaging test's OpenSHMEM program: built with the installed oshcc
 * (and, as C++, with oshc++) and started by the installed oshrun. Includes
 * <shmem.h> as programs written for other OpenSHMEM libraries do. */
#include <shmem.h>
#include <stdio.h>

static long neighbour;

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  long* heap = (long*)shmem_malloc(sizeof(long));
  *heap = 0;
  shmem_barrier_all();
  shmem_long_p(&neighbour, 100 + me, (me + 1) % n);
  shmem_long_atomic_add(heap, me + 1, 0);
  shmem_barrier_all();
  int ok = neighbour == 100 + (me + n - 1) % n;
  if (me == 0) ok = ok && *heap == (long)n * (n + 1) / 2;
  printf("PE %d of %d: %s\n", me, n, ok ? "hello ok" : "WRONG");
  shmem_free(heap);
  shmem_finalize();
  return ok ? 0 : 1;
}
