// Datatype constructors on TypeLayouts (MPI 4.x 5.1.2, 5.1.3, 5.1.7).
//
// Each validates its arguments (negative counts, bad orders, 64-bit overflow
// of size, bounds or displacements) and returns the normalised layout. The
// bounds follow MPI as MPICH implements it: zero-size results have lb = ub
// = 0; a struct of more than one distinct type pads its extent to the largest
// alignment of its members (MPI's epsilon); nothing else adds padding.
#pragma once

#include <cstdint>
#include <span>

#include "datatype/layout.hpp"
#include "rma/sdk/status.hpp"

namespace rma::api {

enum class ArrayOrder : std::uint8_t { kC, kFortran };

Result<TypeLayout> make_contiguous(std::int64_t count, const TypeLayout& old);
// stride in elements of `old` (vector) or in bytes (hvector).
Result<TypeLayout> make_vector(std::int64_t count, std::int64_t blocklength, std::int64_t stride,
                               const TypeLayout& old);
Result<TypeLayout> make_hvector(std::int64_t count, std::int64_t blocklength,
                                std::int64_t stride_bytes, const TypeLayout& old);
// displacements in elements of `old` (indexed) or in bytes (hindexed).
Result<TypeLayout> make_indexed(std::span<const std::int64_t> blocklengths,
                                std::span<const std::int64_t> displacements,
                                const TypeLayout& old);
Result<TypeLayout> make_hindexed(std::span<const std::int64_t> blocklengths,
                                 std::span<const std::int64_t> displacements_bytes,
                                 const TypeLayout& old);
// Members are identified by address: the same TypeLayout object twice is the
// same type (no padding when every member is the same type, as in MPICH).
Result<TypeLayout> make_struct(std::span<const std::int64_t> blocklengths,
                               std::span<const std::int64_t> displacements_bytes,
                               std::span<const TypeLayout* const> types);
Result<TypeLayout> make_subarray(std::span<const std::int64_t> sizes,
                                 std::span<const std::int64_t> subsizes,
                                 std::span<const std::int64_t> starts, ArrayOrder order,
                                 const TypeLayout& old);
Result<TypeLayout> make_resized(const TypeLayout& old, std::int64_t lb, std::int64_t extent);

// Layout of a predefined type of `size` bytes and `alignment`, data one run.
TypeLayout make_basic(std::int64_t size, std::int64_t alignment, std::uint64_t identity);
// Layout of a C struct { A a; B b; } pair type (MPI_DOUBLE_INT and friends).
TypeLayout make_pair(std::int64_t size_a, std::int64_t align_a, std::int64_t size_b,
                     std::int64_t align_b, std::uint64_t identity);

}  // namespace rma::api
