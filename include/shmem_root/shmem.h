/* <shmem.h>: librma's OpenSHMEM 1.5 interface, <rma/shmem.h>. */
#include "rma/shmem.h"
