// rma_type_get_envelope and rma_type_get_contents (MPI 4.x 5.1.13): the
// constructor and arguments recorded with each derived type (c_api.cpp).
#include <string>

#include "datatype/datatype.hpp"
#include "datatype/errors.hpp"
#include "rma/rma_datatype.h"

namespace rma::api {
namespace {

int fail_with(const Status& s) {
  set_last_error_message(s.message());
  return error_code(s);
}

}  // namespace
}  // namespace rma::api

using namespace rma::api;  // NOLINT

extern "C" {

int rma_type_get_envelope(rma_Datatype datatype, int* num_integers, int* num_addresses, int* num_datatypes,
                          int* combiner) {
  auto l = layout_of(datatype, "datatype");
  if (!l.ok()) return fail_with(l.status());
  if (num_integers == nullptr || num_addresses == nullptr || num_datatypes == nullptr || combiner == nullptr) {
    return fail_with(arg_error("num_integers, num_addresses, num_datatypes or combiner is null"));
  }
  const TypeEnvelope& e = datatype->envelope;
  *combiner = datatype->predefined ? RMA_COMBINER_NAMED : e.combiner;
  *num_integers = datatype->predefined ? 0 : static_cast<int>(e.ints.size());
  *num_addresses = datatype->predefined ? 0 : static_cast<int>(e.aints.size());
  *num_datatypes = datatype->predefined ? 0 : static_cast<int>(e.types.size());
  set_last_error_message("");
  return RMA_SUCCESS;
}

int rma_type_get_contents(rma_Datatype datatype, int max_integers, int max_addresses, int max_datatypes,
                          int array_of_integers[], rma_Aint array_of_addresses[],
                          rma_Datatype array_of_datatypes[]) {
  auto l = layout_of(datatype, "datatype");
  if (!l.ok()) return fail_with(l.status());
  if (datatype->predefined || datatype->envelope.combiner == RMA_COMBINER_NAMED) {
    return fail_with(type_error(std::string(datatype->name != nullptr ? datatype->name : "the type") +
                                " is predefined (RMA_COMBINER_NAMED): it has no contents"));
  }
  const TypeEnvelope& e = datatype->envelope;
  if (max_integers < static_cast<int>(e.ints.size()) || max_addresses < static_cast<int>(e.aints.size()) ||
      max_datatypes < static_cast<int>(e.types.size())) {
    return fail_with(arg_error("the arrays are too small: the type needs " + std::to_string(e.ints.size()) +
                               " integers, " + std::to_string(e.aints.size()) + " addresses and " +
                               std::to_string(e.types.size()) + " datatypes (rma_type_get_envelope)"));
  }
  if ((array_of_integers == nullptr && !e.ints.empty()) || (array_of_addresses == nullptr && !e.aints.empty()) ||
      (array_of_datatypes == nullptr && !e.types.empty())) {
    return fail_with(arg_error("an output array is null"));
  }
  for (std::size_t i = 0; i < e.ints.size(); ++i) array_of_integers[i] = e.ints[i];
  for (std::size_t i = 0; i < e.aints.size(); ++i) array_of_addresses[i] = e.aints[i];
  for (std::size_t i = 0; i < e.types.size(); ++i) {
    const rma_datatype_s* t = e.types[i].get();
    // Predefined types are returned as themselves; derived ones as a new
    // handle with the constituent's layout, state and envelope.
    array_of_datatypes[i] = t->predefined ? const_cast<rma_datatype_s*>(t) : new rma_datatype_s(*t);
  }
  set_last_error_message("");
  return RMA_SUCCESS;
}

}  // extern "C"
