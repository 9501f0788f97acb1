/* Error codes of librma's MPI-shaped C API (<rma/rma_datatype.h> and the
 * window calls built on it). The values and their meanings follow MPI's
 * error classes; RMA_SUCCESS is 0. Usable from C99 and C++. */
#ifndef RMA_RMA_ERRORS_H
#define RMA_RMA_ERRORS_H

/* librma is built with hidden visibility: what this header declares is
 * its exported interface. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define RMA_SUCCESS 0           /* no error */
#define RMA_ERR_BUFFER 1        /* invalid buffer pointer */
#define RMA_ERR_COUNT 2         /* invalid count argument */
#define RMA_ERR_TYPE 3          /* invalid datatype argument */
#define RMA_ERR_COMM 5          /* invalid communicator */
#define RMA_ERR_RANK 6          /* invalid rank */
#define RMA_ERR_GROUP 8         /* invalid group */
#define RMA_ERR_OP 9            /* invalid reduction operation, or one not defined for the type */
#define RMA_ERR_ARG 12          /* invalid argument of some other kind */
#define RMA_ERR_UNKNOWN 13      /* unknown error */
#define RMA_ERR_OTHER 15        /* known error not in this list (transport failure, timeout) */
#define RMA_ERR_INTERN 16       /* internal error (a bug in librma) */
#define RMA_ERR_IN_STATUS 17    /* a multiple-completion call: see each request's status */
#define RMA_ERR_PENDING 18      /* (in a status) the request neither failed nor completed */
#define RMA_ERR_REQUEST 19      /* invalid request handle */
#define RMA_ERR_INFO 28         /* invalid info argument */
#define RMA_ERR_INFO_KEY 29     /* info key too long or empty */
#define RMA_ERR_INFO_VALUE 30   /* info value too long, or not one the key allows */
#define RMA_ERR_INFO_NOKEY 31   /* info key not present */
#define RMA_ERR_NO_MEM 34       /* out of memory */
#define RMA_ERR_WIN 45          /* invalid window */
#define RMA_ERR_BASE 46         /* invalid base address */
#define RMA_ERR_LOCKTYPE 47     /* invalid lock type */
#define RMA_ERR_KEYVAL 48       /* invalid attribute key */
#define RMA_ERR_RMA_CONFLICT 49 /* conflicting accesses to a window */
#define RMA_ERR_RMA_SYNC 50     /* wrong synchronization of RMA calls */
#define RMA_ERR_SIZE 51         /* invalid size */
#define RMA_ERR_DISP 52         /* invalid displacement unit */
#define RMA_ERR_ASSERT 53       /* invalid assertion */
#define RMA_ERR_RMA_RANGE 55    /* target memory is outside the window */
#define RMA_ERR_RMA_ATTACH 56   /* memory cannot be attached (or detached) */
#define RMA_ERR_RMA_SHARED 57   /* memory cannot be shared (ranks on other hosts, a segment that cannot be mapped) */
#define RMA_ERR_RMA_FLAVOR 58   /* the window's flavor does not allow the call */
#define RMA_ERR_LASTCODE 0x3fffffff /* last error code (MPI_ERR_LASTCODE) */

#define RMA_MAX_ERROR_STRING 256

/* Writes the text of `code` to `str` (at least RMA_MAX_ERROR_STRING bytes)
 * and its length to *len. Returns RMA_SUCCESS, or RMA_ERR_ARG when a pointer
 * is null or the code is unknown (str then says so). */
int rma_error_string(int code, char* str, int* len);

#ifdef __cplusplus
}
#endif

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif /* RMA_RMA_ERRORS_H */
