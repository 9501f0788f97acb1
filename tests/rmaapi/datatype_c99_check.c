/* Compiled as C99: the datatype header is usable from C. */
#include <stddef.h>

#include "rma/rma_datatype.h"

int rma_c99_datatype_check(void);

int rma_c99_datatype_check(void) {
  rma_Datatype vec = RMA_DATATYPE_NULL, st = RMA_DATATYPE_NULL;
  int rc = rma_type_vector(3, 2, 4, RMA_INT, &vec);
  if (rc != RMA_SUCCESS) return rc;
  int blens[2] = {1, 1};
  rma_Aint disps[2] = {0, 8};
  rma_Datatype types[2] = {RMA_DOUBLE, RMA_CHAR};
  rc = rma_type_create_struct(2, blens, disps, types, &st);
  if (rc != RMA_SUCCESS) return rc;
  rc = rma_type_commit(&vec);
  if (rc != RMA_SUCCESS) return rc;
  int size = 0;
  rma_Aint lb = -1, extent = 0;
  rma_type_size(vec, &size);
  rma_type_get_extent(st, &lb, &extent);
  if (size != 24 || lb != 0 || extent != 16) return -1;
  char text[RMA_MAX_ERROR_STRING];
  int len = 0;
  if (rma_error_string(RMA_ERR_TYPE, text, &len) != RMA_SUCCESS || len <= 0) return -2;
  rma_type_free(&st);
  rma_type_free(&vec);
  return vec == RMA_DATATYPE_NULL && st == RMA_DATATYPE_NULL ? RMA_SUCCESS : -3;
}
