// Reduction operations of accumulate: which op MPI defines on which
// predefined type (MPI 4.x 6.9.2, 12.3.4), and applying one element-wise to
// packed arrays.
#pragma once

#include <cstddef>
#include <cstdint>

#include "datatype/datatype.hpp"

namespace rma::api {

// Values are those of the RMA_* op handles in <rma/rma.h>.
enum class OpKind : std::uint8_t {
  kMax = 1, kMin, kSum, kProd, kLand, kBand, kLor, kBor, kLxor, kBxor,
  kMaxloc, kMinloc, kReplace, kNoOp,
};
constexpr int kOpCount = 14;

const char* op_name(OpKind op) noexcept;  // "RMA_SUM"

// MPI's type classes for reductions.
enum class TypeClass : std::uint8_t {
  kCInteger, kFloating, kComplex, kLogical, kByte, kPair, kNone /* char, wchar */
};
TypeClass type_class(const rma_datatype_s* element) noexcept;
const char* type_class_name(TypeClass c) noexcept;  // "C integer"

// True when MPI defines `op` on the predefined type `element`.
bool op_defined(OpKind op, const rma_datatype_s* element) noexcept;

// The element is an 8-byte integer: SUM can be a NIC fetch-add.
bool is_int64_like(const rma_datatype_s* element) noexcept;

// target[i] = target[i] op origin[i] for n elements of `element`, both
// packed and aligned for the element. REPLACE copies; NO_OP does nothing.
// Precondition: op_defined(op, element).
void apply_op(OpKind op, const rma_datatype_s* element, void* target, const void* origin,
              std::size_t n) noexcept;

}  // namespace rma::api
