// The C datatype API: argument checks, handle management, and calls into the
// C++ constructors. Every function returns an RMA_ERR_* code and writes its
// outputs only on success; the reason for an error is kept for
// rma::api::last_error_message().
#include <climits>
#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "datatype/constructors.hpp"
#include "datatype/datatype.hpp"
#include "datatype/errors.hpp"
#include "rma/rma_datatype.h"

namespace rma::api {
namespace {
thread_local std::string t_last_error;

int fail(const Status& s) {
  t_last_error = s.message();
  return error_code(s);
}
int succeed() {
  t_last_error.clear();
  return RMA_SUCCESS;
}

bool valid_handle(rma_Datatype t) { return t != nullptr && t->magic == rma_datatype_s::kMagic; }

template <typename F>
int guarded(F&& f) noexcept {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return fail(Status(StatusCode::kResourceExhausted, "out of memory"));
  } catch (const std::exception& e) {
    return fail(internal_error(std::string("unexpected exception: ") + e.what()));
  } catch (...) {
    return fail(internal_error("unexpected exception"));
  }
}

Status check_count(int count, const char* what = "count") {
  if (count < 0) return count_error(std::string(what) + " " + std::to_string(count) + " is negative");
  return Status();
}

Status check_array(const void* p, int count, const char* name) {
  if (p == nullptr && count > 0) {
    return arg_error(std::string(name) + " is null but count is " + std::to_string(count));
  }
  return Status();
}

// Stores a new derived type in *newtype.
int publish(Result<TypeLayout> layout, rma_Datatype* newtype, const rma_datatype_s* element,
            TypeEnvelope envelope) {
  if (!layout.ok()) return fail(layout.status());
  auto* t = new rma_datatype_s;
  t->layout = std::move(layout).value();
  t->element = element;
  t->envelope = std::move(envelope);
  *newtype = t;
  return succeed();
}

template <typename T>
std::vector<std::int64_t> widen(const T* a, int n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) v[static_cast<std::size_t>(k)] = static_cast<std::int64_t>(a[k]);
  return v;
}

// Envelope arguments (MPI 4.x 5.1.13 lists what each combiner records).
std::vector<int> ints_of(int count, const int* a, const int* b) {
  std::vector<int> v{count};
  for (int k = 0; k < count; ++k) v.push_back(a[k]);
  if (b != nullptr) {
    for (int k = 0; k < count; ++k) v.push_back(b[k]);
  }
  return v;
}
std::vector<int> ints_of2(int count, int blocklength, const int* d) {
  std::vector<int> v{count, blocklength};
  for (int k = 0; k < count; ++k) v.push_back(d[k]);
  return v;
}
std::vector<rma_Aint> aints_of(int count, const rma_Aint* a) { return std::vector<rma_Aint>(a, a + count); }
std::vector<int> subarray_ints(int ndims, const int* sizes, const int* subsizes, const int* starts, int order) {
  std::vector<int> v{ndims};
  for (const int* a : {sizes, subsizes, starts}) {
    for (int k = 0; k < ndims; ++k) v.push_back(a[k]);
  }
  v.push_back(order);
  return v;
}
TypeEnvelope make_envelope(int combiner, std::vector<int> ints, std::vector<rma_Aint> aints,
                           const std::vector<rma_Datatype>& types) {
  TypeEnvelope e;
  e.combiner = combiner;
  e.ints = std::move(ints);
  e.aints = std::move(aints);
  for (rma_Datatype t : types) {
    // Predefined types are static (never freed): no copy, no ownership.
    if (t->predefined) e.types.emplace_back(std::shared_ptr<const rma_datatype_s>(), t);
    else e.types.push_back(std::make_shared<const rma_datatype_s>(*t));
  }
  return e;
}

// Common checks: newtype pointer and old type.
Result<const TypeLayout*> prelude(rma_Datatype oldtype, rma_Datatype* newtype) {
  if (newtype == nullptr) return arg_error("newtype is null");
  return layout_of(oldtype, "oldtype");
}

}  // namespace

Result<const TypeLayout*> layout_of(rma_Datatype type, const char* what) {
  if (type == nullptr) return type_error(std::string(what) + " is RMA_DATATYPE_NULL");
  if (!valid_handle(type)) {
    return type_error(std::string(what) + " is not a datatype (freed or corrupt handle)");
  }
  return &type->layout;
}

Result<const TypeLayout*> committed_layout(rma_Datatype type, const char* what) {
  RMA_ASSIGN_OR_RETURN(const TypeLayout* l, layout_of(type, what));
  if (!type->committed) {
    return type_error(std::string(what) + " is not committed: call rma_type_commit first");
  }
  return l;
}

const std::string& last_error_message() noexcept { return t_last_error; }
void set_last_error_message(std::string message) noexcept {
  try {
    t_last_error = std::move(message);
  } catch (...) {
    t_last_error.clear();
  }
}

}  // namespace rma::api

using namespace rma::api;  // NOLINT

extern "C" {

int rma_type_contiguous(int count, rma_Datatype oldtype, rma_Datatype* newtype) {
  return guarded([&] {
    auto old = prelude(oldtype, newtype);
    if (!old.ok()) return fail(old.status());
    if (auto s = check_count(count); !s.ok()) return fail(s);
    return publish(make_contiguous(count, **old), newtype, element_of(oldtype),
                   make_envelope(RMA_COMBINER_CONTIGUOUS, {count}, {}, {oldtype}));
  });
}

int rma_type_vector(int count, int blocklength, int stride, rma_Datatype oldtype,
                    rma_Datatype* newtype) {
  return guarded([&] {
    auto old = prelude(oldtype, newtype);
    if (!old.ok()) return fail(old.status());
    if (auto s = check_count(count); !s.ok()) return fail(s);
    return publish(make_vector(count, blocklength, stride, **old), newtype, element_of(oldtype),
                   make_envelope(RMA_COMBINER_VECTOR, {count, blocklength, stride}, {}, {oldtype}));
  });
}

int rma_type_create_hvector(int count, int blocklength, rma_Aint stride, rma_Datatype oldtype,
                            rma_Datatype* newtype) {
  return guarded([&] {
    auto old = prelude(oldtype, newtype);
    if (!old.ok()) return fail(old.status());
    if (auto s = check_count(count); !s.ok()) return fail(s);
    return publish(make_hvector(count, blocklength, stride, **old), newtype, element_of(oldtype),
                   make_envelope(RMA_COMBINER_HVECTOR, {count, blocklength}, {stride}, {oldtype}));
  });
}

int rma_type_indexed(int count, const int array_of_blocklengths[],
                     const int array_of_displacements[], rma_Datatype oldtype,
                     rma_Datatype* newtype) {
  return guarded([&] {
    auto old = prelude(oldtype, newtype);
    if (!old.ok()) return fail(old.status());
    if (auto s = check_count(count); !s.ok()) return fail(s);
    if (auto s = check_array(array_of_blocklengths, count, "array_of_blocklengths"); !s.ok()) return fail(s);
    if (auto s = check_array(array_of_displacements, count, "array_of_displacements"); !s.ok()) return fail(s);
    auto b = widen(array_of_blocklengths, count);
    auto d = widen(array_of_displacements, count);
    return publish(make_indexed(b, d, **old), newtype, element_of(oldtype),
                   make_envelope(RMA_COMBINER_INDEXED, ints_of(count, array_of_blocklengths, array_of_displacements), {}, {oldtype}));
  });
}

int rma_type_create_hindexed(int count, const int array_of_blocklengths[],
                             const rma_Aint array_of_displacements[], rma_Datatype oldtype,
                             rma_Datatype* newtype) {
  return guarded([&] {
    auto old = prelude(oldtype, newtype);
    if (!old.ok()) return fail(old.status());
    if (auto s = check_count(count); !s.ok()) return fail(s);
    if (auto s = check_array(array_of_blocklengths, count, "array_of_blocklengths"); !s.ok()) return fail(s);
    if (auto s = check_array(array_of_displacements, count, "array_of_displacements"); !s.ok()) return fail(s);
    auto b = widen(array_of_blocklengths, count);
    auto d = widen(array_of_displacements, count);
    return publish(make_hindexed(b, d, **old), newtype, element_of(oldtype),
                   make_envelope(RMA_COMBINER_HINDEXED, ints_of(count, array_of_blocklengths, nullptr), aints_of(count, array_of_displacements), {oldtype}));
  });
}

int rma_type_create_indexed_block(int count, int blocklength, const int array_of_displacements[],
                                  rma_Datatype oldtype, rma_Datatype* newtype) {
  return guarded([&] {
    auto old = prelude(oldtype, newtype);
    if (!old.ok()) return fail(old.status());
    if (auto s = check_count(count); !s.ok()) return fail(s);
    if (auto s = check_array(array_of_displacements, count, "array_of_displacements"); !s.ok()) return fail(s);
    std::vector<std::int64_t> b(static_cast<std::size_t>(count), blocklength);
    auto d = widen(array_of_displacements, count);
    return publish(make_indexed(b, d, **old), newtype, element_of(oldtype),
                   make_envelope(RMA_COMBINER_INDEXED_BLOCK, ints_of2(count, blocklength, array_of_displacements), {}, {oldtype}));
  });
}

int rma_type_create_hindexed_block(int count, int blocklength,
                                   const rma_Aint array_of_displacements[], rma_Datatype oldtype,
                                   rma_Datatype* newtype) {
  return guarded([&] {
    auto old = prelude(oldtype, newtype);
    if (!old.ok()) return fail(old.status());
    if (auto s = check_count(count); !s.ok()) return fail(s);
    if (auto s = check_array(array_of_displacements, count, "array_of_displacements"); !s.ok()) return fail(s);
    std::vector<std::int64_t> b(static_cast<std::size_t>(count), blocklength);
    auto d = widen(array_of_displacements, count);
    return publish(make_hindexed(b, d, **old), newtype, element_of(oldtype),
                   make_envelope(RMA_COMBINER_HINDEXED_BLOCK, std::vector<int>{count, blocklength}, aints_of(count, array_of_displacements), {oldtype}));
  });
}

int rma_type_create_struct(int count, const int array_of_blocklengths[],
                           const rma_Aint array_of_displacements[],
                           const rma_Datatype array_of_types[], rma_Datatype* newtype) {
  return guarded([&] {
    if (newtype == nullptr) return fail(arg_error("newtype is null"));
    if (auto s = check_count(count); !s.ok()) return fail(s);
    if (auto s = check_array(array_of_blocklengths, count, "array_of_blocklengths"); !s.ok()) return fail(s);
    if (auto s = check_array(array_of_displacements, count, "array_of_displacements"); !s.ok()) return fail(s);
    if (auto s = check_array(array_of_types, count, "array_of_types"); !s.ok()) return fail(s);
    std::vector<const TypeLayout*> types(static_cast<std::size_t>(count));
    for (int k = 0; k < count; ++k) {
      auto l = layout_of(array_of_types[k], ("array_of_types[" + std::to_string(k) + "]").c_str());
      if (!l.ok()) return fail(l.status());
      types[static_cast<std::size_t>(k)] = *l;
    }
    auto b = widen(array_of_blocklengths, count);
    auto d = widen(array_of_displacements, count);
    const rma_datatype_s* element = count > 0 ? element_of(array_of_types[0]) : nullptr;
    for (int k = 1; k < count; ++k) {
      if (element_of(array_of_types[k]) != element) element = nullptr;
    }
    return publish(make_struct(b, d, types), newtype, element,
                   make_envelope(RMA_COMBINER_STRUCT, ints_of(count, array_of_blocklengths, nullptr),
                                 aints_of(count, array_of_displacements),
                                 std::vector<rma_Datatype>(array_of_types, array_of_types + count)));
  });
}

int rma_type_create_subarray(int ndims, const int array_of_sizes[], const int array_of_subsizes[],
                             const int array_of_starts[], int order, rma_Datatype oldtype,
                             rma_Datatype* newtype) {
  return guarded([&] {
    auto old = prelude(oldtype, newtype);
    if (!old.ok()) return fail(old.status());
    if (ndims <= 0) return fail(arg_error("ndims " + std::to_string(ndims) + " is not positive"));
    if (auto s = check_array(array_of_sizes, ndims, "array_of_sizes"); !s.ok()) return fail(s);
    if (auto s = check_array(array_of_subsizes, ndims, "array_of_subsizes"); !s.ok()) return fail(s);
    if (auto s = check_array(array_of_starts, ndims, "array_of_starts"); !s.ok()) return fail(s);
    if (order != RMA_ORDER_C && order != RMA_ORDER_FORTRAN) {
      return fail(arg_error("order " + std::to_string(order) +
                            " is neither RMA_ORDER_C nor RMA_ORDER_FORTRAN"));
    }
    auto sz = widen(array_of_sizes, ndims);
    auto sub = widen(array_of_subsizes, ndims);
    auto st = widen(array_of_starts, ndims);
    return publish(make_subarray(sz, sub, st,
                                 order == RMA_ORDER_C ? ArrayOrder::kC : ArrayOrder::kFortran,
                                 **old),
                   newtype, element_of(oldtype),
                   make_envelope(RMA_COMBINER_SUBARRAY, subarray_ints(ndims, array_of_sizes, array_of_subsizes,
                                                                      array_of_starts, order),
                                 {}, {oldtype}));
  });
}

int rma_type_create_resized(rma_Datatype oldtype, rma_Aint lb, rma_Aint extent,
                            rma_Datatype* newtype) {
  return guarded([&] {
    auto old = prelude(oldtype, newtype);
    if (!old.ok()) return fail(old.status());
    return publish(make_resized(**old, lb, extent), newtype, element_of(oldtype),
                   make_envelope(RMA_COMBINER_RESIZED, {}, {lb, extent}, {oldtype}));
  });
}

int rma_type_dup(rma_Datatype oldtype, rma_Datatype* newtype) {
  return guarded([&] {
    auto old = prelude(oldtype, newtype);
    if (!old.ok()) return fail(old.status());
    auto* t = new rma_datatype_s;
    t->layout = **old;
    t->element = element_of(oldtype);
    t->committed = oldtype->committed;  // MPI: the duplicate has the same committed state
    t->envelope = make_envelope(RMA_COMBINER_DUP, {}, {}, {oldtype});
    *newtype = t;
    return succeed();
  });
}

int rma_type_commit(rma_Datatype* datatype) {
  return guarded([&] {
    if (datatype == nullptr) return fail(arg_error("datatype pointer is null"));
    auto l = layout_of(*datatype, "datatype");
    if (!l.ok()) return fail(l.status());
    (*datatype)->committed = true;
    return succeed();
  });
}

int rma_type_free(rma_Datatype* datatype) {
  return guarded([&] {
    if (datatype == nullptr) return fail(arg_error("datatype pointer is null"));
    auto l = layout_of(*datatype, "datatype");
    if (!l.ok()) return fail(l.status());
    if ((*datatype)->predefined) {
      return fail(type_error(std::string("cannot free the predefined type ") + (*datatype)->name));
    }
    (*datatype)->magic = 0;
    delete *datatype;
    *datatype = RMA_DATATYPE_NULL;
    return succeed();
  });
}

int rma_type_size(rma_Datatype datatype, int* size) {
  return guarded([&] {
    auto l = layout_of(datatype, "datatype");
    if (!l.ok()) return fail(l.status());
    if (size == nullptr) return fail(arg_error("size is null"));
    *size = (*l)->size > INT_MAX ? RMA_UNDEFINED : static_cast<int>((*l)->size);
    return succeed();
  });
}

int rma_type_size_x(rma_Datatype datatype, rma_Count* size) {
  return guarded([&] {
    auto l = layout_of(datatype, "datatype");
    if (!l.ok()) return fail(l.status());
    if (size == nullptr) return fail(arg_error("size is null"));
    *size = (*l)->size;
    return succeed();
  });
}

int rma_type_get_extent(rma_Datatype datatype, rma_Aint* lb, rma_Aint* extent) {
  return guarded([&] {
    auto l = layout_of(datatype, "datatype");
    if (!l.ok()) return fail(l.status());
    if (lb == nullptr || extent == nullptr) return fail(arg_error("lb or extent is null"));
    *lb = (*l)->lb;
    *extent = (*l)->extent();
    return succeed();
  });
}

int rma_type_get_true_extent(rma_Datatype datatype, rma_Aint* true_lb, rma_Aint* true_extent) {
  return guarded([&] {
    auto l = layout_of(datatype, "datatype");
    if (!l.ok()) return fail(l.status());
    if (true_lb == nullptr || true_extent == nullptr) {
      return fail(arg_error("true_lb or true_extent is null"));
    }
    *true_lb = (*l)->true_lb;
    *true_extent = (*l)->true_extent();
    return succeed();
  });
}

}  // extern "C"
