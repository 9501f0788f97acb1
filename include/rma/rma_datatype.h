/* librma's MPI-shaped datatypes: the C API.
 *
 * Names, argument order and semantics follow MPI 4.x chapter 5 (derived
 * datatypes), lower-cased under rma_: MPI_Type_vector(count, blocklength,
 * stride, oldtype, &newtype) is rma_type_vector(count, blocklength, stride,
 * oldtype, &newtype). Every call returns RMA_SUCCESS or an MPI-like error
 * class from <rma/rma_errors.h> and changes no output on error. Types must be
 * committed (rma_type_commit) before they describe communication buffers.
 * Usable from C99 and C++. */
#ifndef RMA_RMA_DATATYPE_H
#define RMA_RMA_DATATYPE_H

#include <stdint.h>

#include "rma/rma_errors.h"

/* librma is built with hidden visibility: what this header declares is
 * its exported interface. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rma_datatype_s* rma_Datatype;
typedef intptr_t rma_Aint;   /* address-sized integer (MPI_Aint) */
typedef int64_t rma_Count;   /* large count (MPI_Count) */
typedef int64_t rma_Offset;  /* file offset (MPI_Offset) */

#define RMA_DATATYPE_NULL ((rma_Datatype)0)
#define RMA_UNDEFINED (-32766) /* rma_type_size when the size does not fit an int */
#define RMA_ORDER_C 56
#define RMA_ORDER_FORTRAN 57

/* Predefined datatypes: statically allocated, always committed, never freed. */
extern struct rma_datatype_s rma_dt_char_, rma_dt_signed_char_, rma_dt_unsigned_char_,
    rma_dt_byte_, rma_dt_short_, rma_dt_unsigned_short_, rma_dt_int_, rma_dt_unsigned_,
    rma_dt_long_, rma_dt_unsigned_long_, rma_dt_long_long_, rma_dt_unsigned_long_long_,
    rma_dt_float_, rma_dt_double_, rma_dt_long_double_, rma_dt_int8_t_, rma_dt_int16_t_,
    rma_dt_int32_t_, rma_dt_int64_t_, rma_dt_uint8_t_, rma_dt_uint16_t_, rma_dt_uint32_t_,
    rma_dt_uint64_t_, rma_dt_c_bool_, rma_dt_c_float_complex_, rma_dt_c_double_complex_,
    rma_dt_c_long_double_complex_, rma_dt_wchar_, rma_dt_aint_, rma_dt_offset_,
    rma_dt_float_int_, rma_dt_double_int_, rma_dt_long_int_, rma_dt_2int_, rma_dt_short_int_,
    rma_dt_long_double_int_;

#define RMA_CHAR (&rma_dt_char_)
#define RMA_SIGNED_CHAR (&rma_dt_signed_char_)
#define RMA_UNSIGNED_CHAR (&rma_dt_unsigned_char_)
#define RMA_BYTE (&rma_dt_byte_)
#define RMA_SHORT (&rma_dt_short_)
#define RMA_UNSIGNED_SHORT (&rma_dt_unsigned_short_)
#define RMA_INT (&rma_dt_int_)
#define RMA_UNSIGNED (&rma_dt_unsigned_)
#define RMA_LONG (&rma_dt_long_)
#define RMA_UNSIGNED_LONG (&rma_dt_unsigned_long_)
#define RMA_LONG_LONG (&rma_dt_long_long_)
#define RMA_LONG_LONG_INT (&rma_dt_long_long_)
#define RMA_UNSIGNED_LONG_LONG (&rma_dt_unsigned_long_long_)
#define RMA_FLOAT (&rma_dt_float_)
#define RMA_DOUBLE (&rma_dt_double_)
#define RMA_LONG_DOUBLE (&rma_dt_long_double_)
#define RMA_INT8_T (&rma_dt_int8_t_)
#define RMA_INT16_T (&rma_dt_int16_t_)
#define RMA_INT32_T (&rma_dt_int32_t_)
#define RMA_INT64_T (&rma_dt_int64_t_)
#define RMA_UINT8_T (&rma_dt_uint8_t_)
#define RMA_UINT16_T (&rma_dt_uint16_t_)
#define RMA_UINT32_T (&rma_dt_uint32_t_)
#define RMA_UINT64_T (&rma_dt_uint64_t_)
#define RMA_C_BOOL (&rma_dt_c_bool_)
#define RMA_C_FLOAT_COMPLEX (&rma_dt_c_float_complex_)
#define RMA_C_COMPLEX (&rma_dt_c_float_complex_)
#define RMA_C_DOUBLE_COMPLEX (&rma_dt_c_double_complex_)
#define RMA_C_LONG_DOUBLE_COMPLEX (&rma_dt_c_long_double_complex_)
#define RMA_WCHAR (&rma_dt_wchar_)
#define RMA_AINT (&rma_dt_aint_)
#define RMA_OFFSET (&rma_dt_offset_)
/* Pair types for MINLOC/MAXLOC, laid out as the C structs MPI defines:
 * struct { float v; int i; } and so on. */
#define RMA_FLOAT_INT (&rma_dt_float_int_)
#define RMA_DOUBLE_INT (&rma_dt_double_int_)
#define RMA_LONG_INT (&rma_dt_long_int_)
#define RMA_2INT (&rma_dt_2int_)
#define RMA_SHORT_INT (&rma_dt_short_int_)
#define RMA_LONG_DOUBLE_INT (&rma_dt_long_double_int_)

/* ---- constructors (MPI 4.x 5.1.2-5.1.3, 5.1.7) ---- */
int rma_type_contiguous(int count, rma_Datatype oldtype, rma_Datatype* newtype);
int rma_type_vector(int count, int blocklength, int stride, rma_Datatype oldtype,
                    rma_Datatype* newtype);
int rma_type_create_hvector(int count, int blocklength, rma_Aint stride, rma_Datatype oldtype,
                            rma_Datatype* newtype);
int rma_type_indexed(int count, const int array_of_blocklengths[],
                     const int array_of_displacements[], rma_Datatype oldtype,
                     rma_Datatype* newtype);
int rma_type_create_hindexed(int count, const int array_of_blocklengths[],
                             const rma_Aint array_of_displacements[], rma_Datatype oldtype,
                             rma_Datatype* newtype);
int rma_type_create_indexed_block(int count, int blocklength, const int array_of_displacements[],
                                  rma_Datatype oldtype, rma_Datatype* newtype);
int rma_type_create_hindexed_block(int count, int blocklength,
                                   const rma_Aint array_of_displacements[], rma_Datatype oldtype,
                                   rma_Datatype* newtype);
int rma_type_create_struct(int count, const int array_of_blocklengths[],
                           const rma_Aint array_of_displacements[],
                           const rma_Datatype array_of_types[], rma_Datatype* newtype);
int rma_type_create_subarray(int ndims, const int array_of_sizes[], const int array_of_subsizes[],
                             const int array_of_starts[], int order, rma_Datatype oldtype,
                             rma_Datatype* newtype);
int rma_type_create_resized(rma_Datatype oldtype, rma_Aint lb, rma_Aint extent,
                            rma_Datatype* newtype);
/* The part of a distributed global array that process `rank` of a `size`
 * process grid (psizes, row-major) owns (MPI 4.x 5.1.4); lb 0, extent the
 * whole array. distribs: RMA_DISTRIBUTE_BLOCK, _CYCLIC or _NONE; dargs:
 * block sizes or RMA_DISTRIBUTE_DFLT_DARG. */
#define RMA_DISTRIBUTE_BLOCK 121
#define RMA_DISTRIBUTE_CYCLIC 122
#define RMA_DISTRIBUTE_NONE 123
#define RMA_DISTRIBUTE_DFLT_DARG (-49767)
int rma_type_create_darray(int size, int rank, int ndims, const int array_of_gsizes[],
                           const int array_of_distribs[], const int array_of_dargs[],
                           const int array_of_psizes[], int order, rma_Datatype oldtype,
                           rma_Datatype* newtype);
int rma_type_dup(rma_Datatype oldtype, rma_Datatype* newtype);

/* ---- life cycle ---- */
int rma_type_commit(rma_Datatype* datatype);
/* Frees a derived type and sets *datatype to RMA_DATATYPE_NULL. Types built
 * from it stay valid. Freeing a predefined type is RMA_ERR_TYPE. */
int rma_type_free(rma_Datatype* datatype);

/* ---- queries (MPI 4.x 5.1.5) ---- */
int rma_type_size(rma_Datatype datatype, int* size); /* RMA_UNDEFINED if > INT_MAX */
int rma_type_size_x(rma_Datatype datatype, rma_Count* size);
int rma_type_get_extent(rma_Datatype datatype, rma_Aint* lb, rma_Aint* extent);
int rma_type_get_true_extent(rma_Datatype datatype, rma_Aint* true_lb, rma_Aint* true_extent);

/* ---- decoding (MPI 4.x 5.1.13) ----
 * rma_type_get_envelope says how a type was made (RMA_COMBINER_NAMED for
 * predefined types) and how many arguments rma_type_get_contents returns.
 * Derived types get_contents returns are new handles: free them. */
#define RMA_COMBINER_NAMED 1
#define RMA_COMBINER_DUP 2
#define RMA_COMBINER_CONTIGUOUS 3
#define RMA_COMBINER_VECTOR 4
#define RMA_COMBINER_HVECTOR 5
#define RMA_COMBINER_INDEXED 6
#define RMA_COMBINER_HINDEXED 7
#define RMA_COMBINER_INDEXED_BLOCK 8
#define RMA_COMBINER_HINDEXED_BLOCK 9
#define RMA_COMBINER_STRUCT 10
#define RMA_COMBINER_SUBARRAY 11
#define RMA_COMBINER_DARRAY 12
#define RMA_COMBINER_RESIZED 13
int rma_type_get_envelope(rma_Datatype datatype, int* num_integers, int* num_addresses,
                          int* num_datatypes, int* combiner);
int rma_type_get_contents(rma_Datatype datatype, int max_integers, int max_addresses,
                          int max_datatypes, int array_of_integers[],
                          rma_Aint array_of_addresses[], rma_Datatype array_of_datatypes[]);

/* ---- addresses (MPI 4.x 5.1.5) ----
 * rma_get_address gives the absolute address of location. A type built from
 * such addresses describes a buffer at RMA_BOTTOM (a null buffer argument,
 * <rma/rma.h>) in every call that takes a buffer; its data must then lie
 * above the first page (4096), or the call fails with RMA_ERR_BUFFER.
 * rma_aint_add / rma_aint_diff add and subtract addresses (wrapping). */
int rma_get_address(const void* location, rma_Aint* address);
rma_Aint rma_aint_add(rma_Aint base, rma_Aint disp);
rma_Aint rma_aint_diff(rma_Aint addr1, rma_Aint addr2);

#ifdef __cplusplus
}
#endif

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif /* RMA_RMA_DATATYPE_H */
