// The object behind an rma_Datatype handle, and handle validation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "datatype/layout.hpp"
#include "rma/rma_datatype.h"
#include "rma/sdk/status.hpp"

struct rma_datatype_s;

namespace rma::api {
// How a derived type was made (rma_type_get_envelope / get_contents, MPI
// 4.x 5.1.13): the constructor and its arguments, the types as snapshots
// (a type built from one stays describable after the program frees it).
struct TypeEnvelope {
  int combiner = RMA_COMBINER_NAMED;
  std::vector<int> ints;
  std::vector<rma_Aint> aints;
  std::vector<std::shared_ptr<const rma_datatype_s>> types;
};
}  // namespace rma::api

struct rma_datatype_s {
  static constexpr std::uint32_t kMagic = 0x52544450;  // "RTDP"
  std::uint32_t magic = kMagic;
  bool predefined = false;
  bool committed = false;
  const char* name = nullptr;  // predefined types: "RMA_INT"
  rma::api::TypeLayout layout;
  // Derived types: the one predefined type all their data is made of, or
  // nullptr when they mix several (accumulate needs one; MPI 4.x 12.3.4).
  const rma_datatype_s* element = nullptr;
  rma::api::TypeEnvelope envelope;
};

namespace rma::api {

// The predefined type a type's data is made of (itself when predefined), or
// nullptr when it mixes predefined types.
inline const rma_datatype_s* element_of(const rma_datatype_s* t) noexcept {
  return t == nullptr ? nullptr : (t->predefined ? t : t->element);
}

// The layout of a valid handle (committed or not), or RMA_ERR_TYPE.
Result<const TypeLayout*> layout_of(rma_Datatype type, const char* what);
// The layout of a committed type, as communication requires; RMA_ERR_TYPE
// when null, invalid or not committed.
Result<const TypeLayout*> committed_layout(rma_Datatype type, const char* what);

}  // namespace rma::api

namespace rma::api {
// The message of the last error a C datatype call returned on this thread
// ("" after a successful call): the C API has only codes, this says why.
const std::string& last_error_message() noexcept;
// The window layer records its errors here too, so one message serves both.
void set_last_error_message(std::string message) noexcept;
}  // namespace rma::api
