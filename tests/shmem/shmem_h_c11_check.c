/* Compile check of <shmem.h> in strict C11 with -Wall -Wextra -Wpedantic
 * -Werror: the declarations and the _Generic selections (with and without a
 * leading context) as a program uses them. Built, not run. */
#include <shmem.h>
static long x[4];
static int y;
int shmem_h_c11_check(void);
int shmem_h_c11_check(void) {
  shmem_init();
  long v[4] = {0};
#ifdef SHMEM_CHECK_C99
  shmem_long_put(x, v, 4, 0);
  shmem_ctx_long_put(SHMEM_CTX_DEFAULT, x, v, 4, 0);
  shmem_int_p(&y, 3, 0);
  int g = shmem_int_g(&y, 0);
  long f = shmem_long_atomic_fetch_add(x, 1L, 0);
  shmem_int_wait_until(&y, SHMEM_CMP_GE, 0);
  shmem_long_sum_reduce(SHMEM_TEAM_WORLD, x, v, 4);
#else
  shmem_put(x, v, 4, 0);
  shmem_put(SHMEM_CTX_DEFAULT, x, v, 4, 0);
  shmem_p(&y, 3, 0);
  int g = shmem_g(&y, 0);
  long f = shmem_atomic_fetch_add(x, 1L, 0);
  shmem_atomic_inc(SHMEM_CTX_DEFAULT, &x[1], 0);
  shmem_wait_until(&y, SHMEM_CMP_GE, 0);
  shmem_sum_reduce(SHMEM_TEAM_WORLD, x, v, 4);
  shmem_broadcast(SHMEM_TEAM_WORLD, x, v, 4, 0);
#endif
  (void)g; (void)f;
  shmem_finalize();
  return 0;
}
