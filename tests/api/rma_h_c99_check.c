/* <rma/rma.h> compiles as C99 and its handles and constants are usable. */
#include <rma/rma.h>

int rma_h_c99_check(void);
int rma_h_c99_check(void) {
  rma_Win win = RMA_WIN_NULL;
  rma_Op ops[] = {RMA_SUM, RMA_PROD, RMA_MAX, RMA_MIN, RMA_LAND, RMA_LOR, RMA_LXOR, RMA_BAND,
                  RMA_BOR, RMA_BXOR, RMA_MAXLOC, RMA_MINLOC, RMA_REPLACE, RMA_NO_OP};
  rma_Status st;
  st.RMA_ERROR = RMA_SUCCESS;
  (void)win;
  (void)ops;
  return st.RMA_ERROR + (int)sizeof(rma_Request) + RMA_LOCK_SHARED;
}
