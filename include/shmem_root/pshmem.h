/* <pshmem.h>: the profiling names (pshmem_*), declared by <rma/shmem.h>. */
#include "rma/shmem.h"
