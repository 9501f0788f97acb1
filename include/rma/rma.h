/* librma's MPI-shaped one-sided API: the C interface.
 *
 * MPI 4.x chapter 12 (one-sided communication) with MPI's names lower-cased
 * under rma_ and MPI's arguments in MPI's order, so an MPI RMA program ports
 * by renaming: MPI_Win_allocate(size, disp_unit, info, comm, &base, &win) is
 * rma_win_allocate(size, disp_unit, info, comm, &base, &win). Return codes
 * are MPI's error classes (<rma/rma_errors.h>); errors also go to the
 * window's error handler (RMA_ERRORS_ARE_FATAL by default). Datatypes are in
 * <rma/rma_datatype.h>, included here.
 *
 * What differs from MPI:
 *  - communicators and groups as far as windows need them (dup, split,
 *    split_type, create_group, free, compare; the group calls); the only
 *    collectives are rma_barrier and the allgather the calls above use;
 *  - windows act on the info hints no_locks (lock calls then fail with
 *    RMA_ERR_RMA_SYNC), accumulate_ordering, accumulate_ops, same_size,
 *    same_disp_unit and alloc_shared_noncontig; other keys are kept and
 *    ignored, as MPI says;
 *  - a context (one per process, or one per thread rank in tests) is
 *    driven by one thread at a time (MPI_THREAD_FUNNELED).
 * Usable from C99 and C++. */
#ifndef RMA_RMA_H
#define RMA_RMA_H

#include <stdint.h>

#include "rma/rma_datatype.h"
#include "rma/rma_errors.h"

/* librma is built with hidden visibility: what this header declares is
 * its exported interface. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- handles ---- */
typedef struct rma_comm_s* rma_Comm;
typedef struct rma_group_s* rma_Group;
typedef struct rma_win_s* rma_Win;
typedef struct rma_request_s* rma_Request;
typedef struct rma_errhandler_s* rma_Errhandler;
typedef struct rma_info_s* rma_Info;
typedef struct rma_op_s* rma_Op;

extern struct rma_comm_s rma_comm_world_, rma_comm_self_;
#define RMA_COMM_WORLD (&rma_comm_world_)
#define RMA_COMM_SELF (&rma_comm_self_)
#define RMA_COMM_NULL ((rma_Comm)0)
#define RMA_GROUP_NULL ((rma_Group)0)
#define RMA_WIN_NULL ((rma_Win)0)
#define RMA_REQUEST_NULL ((rma_Request)0)
#define RMA_ERRHANDLER_NULL ((rma_Errhandler)0)
#define RMA_INFO_NULL ((rma_Info)0)
#define RMA_OP_NULL ((rma_Op)0)

/* Reduction operations (MPI 4.x 6.9.2) plus REPLACE and NO_OP (12.3.4). */
#define RMA_MAX ((rma_Op)(intptr_t)1)
#define RMA_MIN ((rma_Op)(intptr_t)2)
#define RMA_SUM ((rma_Op)(intptr_t)3)
#define RMA_PROD ((rma_Op)(intptr_t)4)
#define RMA_LAND ((rma_Op)(intptr_t)5)
#define RMA_BAND ((rma_Op)(intptr_t)6)
#define RMA_LOR ((rma_Op)(intptr_t)7)
#define RMA_BOR ((rma_Op)(intptr_t)8)
#define RMA_LXOR ((rma_Op)(intptr_t)9)
#define RMA_BXOR ((rma_Op)(intptr_t)10)
#define RMA_MAXLOC ((rma_Op)(intptr_t)11)
#define RMA_MINLOC ((rma_Op)(intptr_t)12)
#define RMA_REPLACE ((rma_Op)(intptr_t)13)
#define RMA_NO_OP ((rma_Op)(intptr_t)14)

/* Predefined error handlers. */
#define RMA_ERRORS_ARE_FATAL ((rma_Errhandler)(intptr_t)1)
#define RMA_ERRORS_RETURN ((rma_Errhandler)(intptr_t)2)
#define RMA_ERRORS_ABORT ((rma_Errhandler)(intptr_t)3)

/* Status of a completed request (the fields MPI defines). */
typedef struct rma_Status {
  int RMA_SOURCE;
  int RMA_TAG;
  int RMA_ERROR;
} rma_Status;
#define RMA_STATUS_IGNORE ((rma_Status*)0)
#define RMA_STATUSES_IGNORE ((rma_Status*)0)

#define RMA_PROC_NULL (-1)
#define RMA_UNDEFINED_RANK (-32766)
/* A buffer argument at address 0: the datatype's displacements are absolute
 * addresses (rma_get_address). Accepted in every call that takes a buffer
 * when the data lies above the first page; see <rma/rma_datatype.h>. */
#define RMA_BOTTOM ((void*)0)

/* Lock types and assertions (MPI 4.x 12.5). Assertions are accepted and
 * checked for validity; they are hints only. */
#define RMA_LOCK_EXCLUSIVE 234
#define RMA_LOCK_SHARED 235
#define RMA_MODE_NOCHECK 1024
#define RMA_MODE_NOSTORE 2048
#define RMA_MODE_NOPUT 4096
#define RMA_MODE_NOPRECEDE 8192
#define RMA_MODE_NOSUCCEED 16384

/* Window attributes (rma_win_get_attr). As in MPI, attribute_val receives
 * a pointer: RMA_WIN_BASE the base address itself (void*), RMA_WIN_SIZE a
 * pointer to an rma_Aint, RMA_WIN_DISP_UNIT, RMA_WIN_CREATE_FLAVOR and
 * RMA_WIN_MODEL a pointer to an int. */
#define RMA_WIN_BASE 1
#define RMA_WIN_SIZE 2
#define RMA_WIN_DISP_UNIT 3
#define RMA_WIN_CREATE_FLAVOR 4
#define RMA_WIN_MODEL 5
#define RMA_WIN_FLAVOR_CREATE 1
#define RMA_WIN_FLAVOR_ALLOCATE 2
#define RMA_WIN_FLAVOR_DYNAMIC 3
#define RMA_WIN_FLAVOR_SHARED 4
#define RMA_WIN_SEPARATE 1
#define RMA_WIN_UNIFIED 2

/* ---- processes ---- */
/* Starts librma in this process: picks the bootstrap (rmarun, PMIx or a
 * singleton; see <rma/bootstrap.hpp>) and the provider (RMA_PROVIDER),
 * connects every rank. Collective. argc/argv may be null. */
int rma_init(int* argc, char*** argv);
/* Thread support levels (MPI 4.x 11.6), in increasing order. */
#define RMA_THREAD_SINGLE 0
#define RMA_THREAD_FUNNELED 1
#define RMA_THREAD_SERIALIZED 2
#define RMA_THREAD_MULTIPLE 3
/* rma_init with a thread level: every level is provided (*provided =
 * required). Under RMA_THREAD_MULTIPLE any thread may call librma at any
 * time, on one window or on several; rma_init gives RMA_THREAD_SINGLE. */
int rma_init_thread(int* argc, char*** argv, int required, int* provided);
int rma_query_thread(int* provided);
/* Collective: waits for every rank, then releases everything. Windows still
 * alive are freed (and reported at log level warn). */
int rma_finalize(void);
int rma_initialized(int* flag);
int rma_finalized(int* flag);
/* Ends the job: every rank stops; errorcode becomes the exit status. */
int rma_abort(rma_Comm comm, int errorcode);
/* ---- communicators (MPI 4.x chapter 7, as far as windows need them) ----
 * Any communicator carries windows; a window's ranks are its
 * communicator's. Handles of freed communicators are recognised
 * (RMA_ERR_COMM). Errors of calls on a communicator go to its handler. */
#define RMA_IDENT 0     /* rma_comm_compare / rma_group_compare results */
#define RMA_CONGRUENT 1
#define RMA_SIMILAR 2
#define RMA_UNEQUAL 3
#define RMA_COMM_TYPE_SHARED 1 /* rma_comm_split_type: the ranks of one host */
#define RMA_MAX_OBJECT_NAME 128
int rma_comm_rank(rma_Comm comm, int* rank);
int rma_comm_size(rma_Comm comm, int* size);
/* Collective over comm. */
int rma_barrier(rma_Comm comm);
/* Collective. The new communicator has comm's ranks, order and error handler. */
int rma_comm_dup(rma_Comm comm, rma_Comm* newcomm);
/* Collective. color >= 0 or RMA_UNDEFINED (newcomm is then RMA_COMM_NULL);
 * ranks ordered by key, then by rank in comm. */
int rma_comm_split(rma_Comm comm, int color, int key, rma_Comm* newcomm);
/* Collective. split_type RMA_COMM_TYPE_SHARED (the same on every rank) or
 * RMA_UNDEFINED; a host is what the transport plan calls one (kernel boot
 * id, pid and network namespace, or RMA_HOST_ID): the ranks that can make a
 * window of rma_win_allocate_shared together. info may be
 * RMA_INFO_NULL (no hints are read). */
int rma_comm_split_type(rma_Comm comm, int split_type, int key, rma_Info info, rma_Comm* newcomm);
/* Collective over the members of group (a subset of comm's ranks that
 * includes the caller), which all pass the same group and tag. */
int rma_comm_create_group(rma_Comm comm, rma_Group group, int tag, rma_Comm* newcomm);
/* Frees a communicator made by the calls above (windows made on it stay
 * valid) and sets *comm to RMA_COMM_NULL. Local. */
int rma_comm_free(rma_Comm* comm);
int rma_comm_compare(rma_Comm comm1, rma_Comm comm2, int* result);
int rma_comm_set_name(rma_Comm comm, const char* comm_name);
/* comm_name holds RMA_MAX_OBJECT_NAME bytes. */
int rma_comm_get_name(rma_Comm comm, char* comm_name, int* resultlen);

/* ---- groups (MPI 4.x 7.3) ----
 * Groups name processes by their rank in RMA_COMM_WORLD; rma_comm_group
 * and rma_win_get_group give a communicator's or window's ranks in order. */
int rma_comm_group(rma_Comm comm, rma_Group* group);
int rma_group_size(rma_Group group, int* size);
int rma_group_rank(rma_Group group, int* rank); /* RMA_UNDEFINED_RANK if not a member */
int rma_group_incl(rma_Group group, int n, const int ranks[], rma_Group* newgroup);
int rma_group_excl(rma_Group group, int n, const int ranks[], rma_Group* newgroup);
/* ranges[i] = {first, last, stride}. */
int rma_group_range_incl(rma_Group group, int n, int ranges[][3], rma_Group* newgroup);
/* ranks2[i] = the rank in group2 of ranks1[i] in group1, or RMA_UNDEFINED_RANK. */
int rma_group_translate_ranks(rma_Group group1, int n, const int ranks1[], rma_Group group2,
                              int ranks2[]);
int rma_group_union(rma_Group group1, rma_Group group2, rma_Group* newgroup);
int rma_group_intersection(rma_Group group1, rma_Group group2, rma_Group* newgroup);
int rma_group_compare(rma_Group group1, rma_Group group2, int* result);
int rma_group_free(rma_Group* group);

/* ---- info objects (MPI 4.x chapter 10) ----
 * Keys are at most RMA_MAX_INFO_KEY characters, values RMA_MAX_INFO_VAL
 * (not counting the terminating 0). Keys keep their insertion order. */
#define RMA_MAX_INFO_KEY 255
#define RMA_MAX_INFO_VAL 1024
int rma_info_create(rma_Info* info);
int rma_info_set(rma_Info info, const char* key, const char* value);
int rma_info_delete(rma_Info info, const char* key); /* RMA_ERR_INFO_NOKEY if absent */
/* On entry *buflen is the size of value; if the key is present (*flag = 1),
 * value receives at most *buflen - 1 characters and a 0, and *buflen the
 * value's full length + 1. value may be null when *buflen is 0. */
int rma_info_get_string(rma_Info info, const char* key, int* buflen, char* value, int* flag);
/* MPI 3 forms (deprecated in MPI 4.x, kept for porting): value holds
 * valuelen + 1 bytes. */
int rma_info_get(rma_Info info, const char* key, int valuelen, char* value, int* flag);
int rma_info_get_valuelen(rma_Info info, const char* key, int* valuelen, int* flag);
int rma_info_get_nkeys(rma_Info info, int* nkeys);
/* key holds RMA_MAX_INFO_KEY + 1 bytes; 0 <= n < nkeys. */
int rma_info_get_nthkey(rma_Info info, int n, char* key);
int rma_info_dup(rma_Info info, rma_Info* newinfo);
int rma_info_free(rma_Info* info);

/* ---- windows (12.2) ---- */
int rma_win_create(void* base, rma_Aint size, int disp_unit, rma_Info info, rma_Comm comm,
                   rma_Win* win);
/* baseptr is a void** passed as void*, as in MPI. */
int rma_win_allocate(rma_Aint size, int disp_unit, rma_Info info, rma_Comm comm, void* baseptr,
                     rma_Win* win);
int rma_win_create_dynamic(rma_Info info, rma_Comm comm, rma_Win* win);
/* MPI 4.x 12.2.3: every rank of comm allocates size bytes that every rank
 * of comm can load from and store to (rma_win_shared_query gives the
 * address of any rank's part in the calling process). Every rank of comm
 * must be on this host (RMA_ERR_RMA_SHARED names those that are not).
 * The ranks' memory is contiguous in rank order (rank i's first byte
 * follows rank i-1's last) unless info has alloc_shared_noncontig=true;
 * size 0 is allowed (baseptr is then NULL). The memory is one POSIX
 * shared segment, unlinked once every rank mapped it. The model is
 * RMA_WIN_UNIFIED; every communication and synchronization call works on
 * the window too. baseptr is a void** passed as void*, as in MPI. */
int rma_win_allocate_shared(rma_Aint size, int disp_unit, rma_Info info, rma_Comm comm, void* baseptr,
                            rma_Win* win);
/* The size, disp_unit and local address (a void** passed as void*) of
 * rank's memory in a window from rma_win_allocate_shared; RMA_PROC_NULL
 * names the lowest rank whose size is > 0 (size 0 and NULL when none).
 * RMA_ERR_RMA_FLAVOR for any other window. */
int rma_win_shared_query(rma_Win win, int rank, rma_Aint* size, int* disp_unit, void* baseptr);
int rma_win_attach(rma_Win win, void* base, rma_Aint size);
int rma_win_detach(rma_Win win, const void* base);
int rma_win_free(rma_Win* win);
/* Predefined keys (above) and keys from rma_win_create_keyval (flag = 0
 * when the window has no value for one). */
int rma_win_get_attr(rma_Win win, int win_keyval, void* attribute_val, int* flag);
/* ---- window attribute caching and names (MPI 4.x 7.7.3, 7.8) ----
 * Delete callbacks run at rma_win_delete_attr, when a value is replaced,
 * and at rma_win_free (a callback returning an error stops the free).
 * Windows are never duplicated, so copy callbacks are kept, not called. */
typedef int rma_Win_copy_attr_function(rma_Win oldwin, int win_keyval, void* extra_state,
                                       void* attribute_val_in, void* attribute_val_out, int* flag);
typedef int rma_Win_delete_attr_function(rma_Win win, int win_keyval, void* attribute_val,
                                         void* extra_state);
#define RMA_WIN_NULL_COPY_FN ((rma_Win_copy_attr_function*)0)
#define RMA_WIN_NULL_DELETE_FN ((rma_Win_delete_attr_function*)0)
#define RMA_KEYVAL_INVALID (-1)
int rma_win_create_keyval(rma_Win_copy_attr_function* win_copy_attr_fn,
                          rma_Win_delete_attr_function* win_delete_attr_fn, int* win_keyval,
                          void* extra_state);
int rma_win_free_keyval(int* win_keyval);
int rma_win_set_attr(rma_Win win, int win_keyval, void* attribute_val);
int rma_win_delete_attr(rma_Win win, int win_keyval);
int rma_win_set_name(rma_Win win, const char* win_name);
/* win_name holds RMA_MAX_OBJECT_NAME bytes; "" until set. */
int rma_win_get_name(rma_Win win, char* win_name, int* resultlen);
int rma_win_get_group(rma_Win win, rma_Group* group);
/* Window hints (see info objects above). set_info is collective over the
 * window's communicator: every rank must give the same no_locks,
 * accumulate_ordering and accumulate_ops (RMA_ERR_INFO_VALUE naming the
 * rank that differs, and nothing changes anywhere). get_info returns a new
 * info object with the hints in use; free it. */
int rma_win_set_info(rma_Win win, rma_Info info);
int rma_win_get_info(rma_Win win, rma_Info* info_used);

/* ---- communication (12.3) ---- */
int rma_put(const void* origin_addr, int origin_count, rma_Datatype origin_datatype,
            int target_rank, rma_Aint target_disp, int target_count,
            rma_Datatype target_datatype, rma_Win win);
int rma_get(void* origin_addr, int origin_count, rma_Datatype origin_datatype, int target_rank,
            rma_Aint target_disp, int target_count, rma_Datatype target_datatype, rma_Win win);
int rma_accumulate(const void* origin_addr, int origin_count, rma_Datatype origin_datatype,
                   int target_rank, rma_Aint target_disp, int target_count,
                   rma_Datatype target_datatype, rma_Op op, rma_Win win);
int rma_get_accumulate(const void* origin_addr, int origin_count, rma_Datatype origin_datatype,
                       void* result_addr, int result_count, rma_Datatype result_datatype,
                       int target_rank, rma_Aint target_disp, int target_count,
                       rma_Datatype target_datatype, rma_Op op, rma_Win win);
int rma_fetch_and_op(const void* origin_addr, void* result_addr, rma_Datatype datatype,
                     int target_rank, rma_Aint target_disp, rma_Op op, rma_Win win);
int rma_compare_and_swap(const void* origin_addr, const void* compare_addr, void* result_addr,
                         rma_Datatype datatype, int target_rank, rma_Aint target_disp,
                         rma_Win win);
int rma_rput(const void* origin_addr, int origin_count, rma_Datatype origin_datatype,
             int target_rank, rma_Aint target_disp, int target_count,
             rma_Datatype target_datatype, rma_Win win, rma_Request* request);
int rma_rget(void* origin_addr, int origin_count, rma_Datatype origin_datatype, int target_rank,
             rma_Aint target_disp, int target_count, rma_Datatype target_datatype, rma_Win win,
             rma_Request* request);
int rma_raccumulate(const void* origin_addr, int origin_count, rma_Datatype origin_datatype,
                    int target_rank, rma_Aint target_disp, int target_count,
                    rma_Datatype target_datatype, rma_Op op, rma_Win win, rma_Request* request);
int rma_rget_accumulate(const void* origin_addr, int origin_count, rma_Datatype origin_datatype,
                        void* result_addr, int result_count, rma_Datatype result_datatype,
                        int target_rank, rma_Aint target_disp, int target_count,
                        rma_Datatype target_datatype, rma_Op op, rma_Win win,
                        rma_Request* request);

/* ---- requests (MPI 4.x 3.7) ----
 * A request completes when its operation completed at the target. A null
 * request (RMA_REQUEST_NULL) is skipped; when every request is null, the
 * "any"/"some" calls give RMA_UNDEFINED. The multiple-completion calls
 * return RMA_ERR_IN_STATUS when one request failed; each status's RMA_ERROR
 * then says RMA_SUCCESS, the request's error, or RMA_ERR_PENDING. */
int rma_wait(rma_Request* request, rma_Status* status);
int rma_test(rma_Request* request, int* flag, rma_Status* status);
/* The operation continues; the handle is gone (*request = RMA_REQUEST_NULL). */
int rma_request_free(rma_Request* request);
int rma_waitall(int count, rma_Request requests[], rma_Status statuses[]);
int rma_testall(int count, rma_Request requests[], int* flag, rma_Status statuses[]);
int rma_waitany(int count, rma_Request requests[], int* index, rma_Status* status);
int rma_testany(int count, rma_Request requests[], int* index, int* flag, rma_Status* status);
int rma_waitsome(int incount, rma_Request requests[], int* outcount, int indices[],
                 rma_Status statuses[]);
int rma_testsome(int incount, rma_Request requests[], int* outcount, int indices[],
                 rma_Status statuses[]);

/* ---- synchronization (12.5) ---- */
int rma_win_fence(int assert_, rma_Win win);
int rma_win_start(rma_Group group, int assert_, rma_Win win);
int rma_win_complete(rma_Win win);
int rma_win_post(rma_Group group, int assert_, rma_Win win);
int rma_win_wait(rma_Win win);
int rma_win_test(rma_Win win, int* flag);
int rma_win_lock(int lock_type, int rank, int assert_, rma_Win win);
int rma_win_lock_all(int assert_, rma_Win win);
int rma_win_unlock(int rank, rma_Win win);
int rma_win_unlock_all(rma_Win win);
int rma_win_flush(int rank, rma_Win win);
int rma_win_flush_all(rma_Win win);
int rma_win_flush_local(int rank, rma_Win win);
int rma_win_flush_local_all(rma_Win win);
int rma_win_sync(rma_Win win);

/* ---- packing (MPI 4.x 5.2; "native" representation) ----
 * Errors go to comm's error handler. inbuf/outbuf may be RMA_BOTTOM. */
int rma_pack(const void* inbuf, int incount, rma_Datatype datatype, void* outbuf, int outsize,
             int* position, rma_Comm comm);
int rma_unpack(const void* inbuf, int insize, int* position, void* outbuf, int outcount,
               rma_Datatype datatype, rma_Comm comm);
int rma_pack_size(int incount, rma_Datatype datatype, rma_Comm comm, int* size);
/* Large-count queries (errors to RMA_COMM_WORLD's handler; rma_type_size_x
 * is in <rma/rma_datatype.h>). */
int rma_type_get_extent_x(rma_Datatype datatype, rma_Count* lb, rma_Count* extent);
int rma_type_get_true_extent_x(rma_Datatype datatype, rma_Count* true_lb, rma_Count* true_extent);

/* ---- error handling (9.3) ---- */
/* void handler(rma_Win* win, int* error_code, ...) as MPI_Win_errhandler_function. */
typedef void rma_Win_errhandler_function(rma_Win* win, int* error_code, ...);
int rma_win_create_errhandler(rma_Win_errhandler_function* function, rma_Errhandler* errhandler);
int rma_win_set_errhandler(rma_Win win, rma_Errhandler errhandler);
int rma_win_get_errhandler(rma_Win win, rma_Errhandler* errhandler);
int rma_win_call_errhandler(rma_Win win, int errorcode);
int rma_errhandler_free(rma_Errhandler* errhandler);
/* Calls on a communicator use its handler; calls tied to neither a window
 * nor a communicator (rma_wait, groups, info, datatypes) use RMA_COMM_WORLD's. */
int rma_comm_set_errhandler(rma_Comm comm, rma_Errhandler errhandler);
int rma_comm_get_errhandler(rma_Comm comm, rma_Errhandler* errhandler);
/* void handler(rma_Comm* comm, int* error_code, ...) as MPI_Comm_errhandler_function. */
typedef void rma_Comm_errhandler_function(rma_Comm* comm, int* error_code, ...);
int rma_comm_create_errhandler(rma_Comm_errhandler_function* function, rma_Errhandler* errhandler);
int rma_comm_call_errhandler(rma_Comm comm, int errorcode);
int rma_error_class(int errorcode, int* errorclass);
/* librma extension: the message of the most recent error on this thread
 * ("rma_put on rank 0: RMA_ERR_RMA_RANGE: rma_put to rank 1: target range
 * [60, 68) ... is outside the window of rank 1, which is 64 bytes"). Window
 * calls leave it alone when they succeed, so check return codes first.
 * Writes at most RMA_MAX_ERROR_STRING bytes including the terminating 0. */
int rma_last_error_message(char* str, int* len);

#ifdef __cplusplus
}
#endif

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif /* RMA_RMA_H */
