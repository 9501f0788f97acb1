// rma_type_create_darray (MPI 4.x 5.1.4): the part of a block / cyclic
// distributed global array that process `rank` of a `psizes` grid
// (row-major, whatever `order` says) owns, in the global array's element
// order, with lb 0 and the whole global array as extent.
//
// Built from the other constructors: per dimension, from the fastest
// varying one outwards, the owned indices become (displacement, run) lists
// of an hindexed type over the type of the inner dimensions, which is first
// resized to one full row of them; the result is resized to the array.
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "datatype/datatype.hpp"
#include "datatype/errors.hpp"
#include "rma/rma_datatype.h"

namespace rma::api {
namespace {

int fail_with(const Status& s) {
  set_last_error_message(s.message());
  return error_code(s);
}

// The indices of one dimension that grid coordinate `coord` of `procs` owns.
Result<std::vector<std::int64_t>> owned(int dim, int gsize, int distrib, int darg, int procs, int coord) {
  std::vector<std::int64_t> idx;
  const std::string d = "dimension " + std::to_string(dim) + ": ";
  if (distrib == RMA_DISTRIBUTE_NONE) {
    if (procs != 1) return arg_error(d + "RMA_DISTRIBUTE_NONE needs psizes = 1, not " + std::to_string(procs));
    for (int i = 0; i < gsize; ++i) idx.push_back(i);
    return idx;
  }
  if (distrib == RMA_DISTRIBUTE_BLOCK) {
    const std::int64_t b = darg == RMA_DISTRIBUTE_DFLT_DARG ? (static_cast<std::int64_t>(gsize) + procs - 1) / procs : darg;
    if (b <= 0) return arg_error(d + "block size " + std::to_string(b) + " is not positive");
    if (b * procs < gsize) {
      return arg_error(d + "block size " + std::to_string(b) + " x " + std::to_string(procs) +
                       " processes does not cover " + std::to_string(gsize) + " elements");
    }
    for (std::int64_t i = coord * b; i < std::min<std::int64_t>(gsize, (coord + 1) * b); ++i) idx.push_back(i);
    return idx;
  }
  if (distrib == RMA_DISTRIBUTE_CYCLIC) {
    const std::int64_t b = darg == RMA_DISTRIBUTE_DFLT_DARG ? 1 : darg;
    if (b <= 0) return arg_error(d + "cyclic block size " + std::to_string(b) + " is not positive");
    for (std::int64_t start = coord * b; start < gsize; start += b * procs) {
      for (std::int64_t i = start; i < std::min<std::int64_t>(gsize, start + b); ++i) idx.push_back(i);
    }
    return idx;
  }
  return arg_error(d + "distrib " + std::to_string(distrib) +
                   " is not RMA_DISTRIBUTE_BLOCK, RMA_DISTRIBUTE_CYCLIC or RMA_DISTRIBUTE_NONE");
}

}  // namespace
}  // namespace rma::api

using namespace rma::api;  // NOLINT

extern "C" {

int rma_type_create_darray(int size, int rank, int ndims, const int array_of_gsizes[], const int array_of_distribs[],
                           const int array_of_dargs[], const int array_of_psizes[], int order, rma_Datatype oldtype,
                           rma_Datatype* newtype) {
  auto old = layout_of(oldtype, "oldtype");
  if (!old.ok()) return fail_with(old.status());
  if (newtype == nullptr) return fail_with(arg_error("newtype is null"));
  if (ndims <= 0) return fail_with(arg_error("ndims " + std::to_string(ndims) + " is not positive"));
  if (array_of_gsizes == nullptr || array_of_distribs == nullptr || array_of_dargs == nullptr ||
      array_of_psizes == nullptr) {
    return fail_with(arg_error("an array argument is null"));
  }
  if (order != RMA_ORDER_C && order != RMA_ORDER_FORTRAN) {
    return fail_with(arg_error("order " + std::to_string(order) + " is neither RMA_ORDER_C nor RMA_ORDER_FORTRAN"));
  }
  std::int64_t procs = 1;
  for (int i = 0; i < ndims; ++i) {
    if (array_of_gsizes[i] <= 0 || array_of_psizes[i] <= 0) {
      return fail_with(arg_error("gsizes[" + std::to_string(i) + "] and psizes[" + std::to_string(i) +
                                 "] must be positive"));
    }
    procs *= array_of_psizes[i];
    if (procs > INT_MAX) return fail_with(arg_error("the process grid is larger than INT_MAX"));
  }
  if (procs != size) {
    return fail_with(arg_error("the process grid has " + std::to_string(procs) + " processes but size is " +
                               std::to_string(size)));
  }
  if (rank < 0 || rank >= size) {
    return fail_with(class_error(RMA_ERR_RANK, "rank " + std::to_string(rank) + " is not in [0, " +
                                                   std::to_string(size) + ")"));
  }
  // Grid coordinates, row-major (MPI 4.x 5.1.4).
  std::vector<int> coord(static_cast<std::size_t>(ndims));
  for (int i = ndims - 1, r = rank; i >= 0; --i) {
    coord[static_cast<std::size_t>(i)] = r % array_of_psizes[i];
    r /= array_of_psizes[i];
  }
  std::vector<std::vector<std::int64_t>> idx(static_cast<std::size_t>(ndims));
  for (int i = 0; i < ndims; ++i) {
    auto o = owned(i, array_of_gsizes[i], array_of_distribs[i], array_of_dargs[i], array_of_psizes[i],
                   coord[static_cast<std::size_t>(i)]);
    if (!o.ok()) return fail_with(o.status());
    idx[static_cast<std::size_t>(i)] = std::move(o).value();
  }
  const std::int64_t ext = (*old)->extent();
  // Dimensions from the fastest varying outwards.
  std::vector<int> dims;
  for (int k = 0; k < ndims; ++k) dims.push_back(order == RMA_ORDER_C ? ndims - 1 - k : k);
  rma_Datatype inner = oldtype;
  std::int64_t row = ext;  // bytes of one index step in the current dimension
  std::vector<rma_Datatype> made;
  auto cleanup = [&] {
    for (rma_Datatype& t : made) rma_type_free(&t);
  };
  for (int d : dims) {
    const auto& ix = idx[static_cast<std::size_t>(d)];
    std::vector<int> bl;
    std::vector<rma_Aint> disp;
    for (std::size_t k = 0; k < ix.size();) {
      std::size_t e = k + 1;
      while (e < ix.size() && ix[e] == ix[e - 1] + 1) ++e;
      bl.push_back(static_cast<int>(e - k));
      disp.push_back(static_cast<rma_Aint>(ix[k] * row));
      k = e;
    }
    rma_Datatype h = RMA_DATATYPE_NULL;
    int rc = rma_type_create_hindexed(static_cast<int>(bl.size()), bl.data(), disp.data(), inner, &h);
    if (rc != RMA_SUCCESS) {
      cleanup();
      return rc;
    }
    made.push_back(h);
    std::int64_t next = 0;
    if (__builtin_mul_overflow(row, static_cast<std::int64_t>(array_of_gsizes[d]), &next)) {
      cleanup();
      return fail_with(arg_error("the global array's size overflows 64 bits"));
    }
    rma_Datatype r = RMA_DATATYPE_NULL;
    rc = rma_type_create_resized(h, 0, static_cast<rma_Aint>(next), &r);  // one full row of this dimension
    if (rc != RMA_SUCCESS) {
      cleanup();
      return rc;
    }
    made.push_back(r);
    inner = r;
    row = next;
  }
  rma_Datatype result = RMA_DATATYPE_NULL;
  const int rc = rma_type_dup(inner, &result);
  cleanup();
  if (rc != RMA_SUCCESS) return rc;
  result->committed = false;
  // The envelope MPI defines for darray.
  TypeEnvelope& e = result->envelope;
  e = TypeEnvelope{};
  e.combiner = RMA_COMBINER_DARRAY;
  e.ints = {size, rank, ndims};
  for (const int* a : {array_of_gsizes, array_of_distribs, array_of_dargs, array_of_psizes}) {
    for (int i = 0; i < ndims; ++i) e.ints.push_back(a[i]);
  }
  e.ints.push_back(order);
  if (oldtype->predefined) e.types.emplace_back(std::shared_ptr<const rma_datatype_s>(), oldtype);
  else e.types.push_back(std::make_shared<const rma_datatype_s>(*oldtype));
  *newtype = result;
  set_last_error_message("");
  return RMA_SUCCESS;
}

}  // extern "C"
