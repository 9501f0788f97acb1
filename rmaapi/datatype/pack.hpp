// Pack / unpack `count` elements of a type to / from a contiguous buffer, in
// typemap order (as MPI_Pack / MPI_Unpack with the "native" representation).
// Used by accumulate (get -> compute -> put) and by the differential test.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "datatype/layout.hpp"
#include "rma/sdk/status.hpp"

namespace rma::api {

// The lowest address a buffer described relative to RMA_BOTTOM may touch:
// the first page is never mapped, so a null buffer whose type reaches below
// it is a null pointer, not absolute addresses from rma_get_address.
inline constexpr std::int64_t kLowestBottomAddress = 4096;

// Checks a buffer argument of `count` x `type` at `buf` ("origin_addr").
// A null `buf` is RMA_BOTTOM (MPI 4.x 5.1.12): the type's displacements are
// then absolute addresses, and it is accepted when the bytes it moves lie at
// or above kLowestBottomAddress; otherwise RMA_ERR_BUFFER naming `what`.
Status check_buffer(const void* buf, const TypeLayout& type, std::int64_t count, const char* what);

// buf + offset as an address: buffers may be RMA_BOTTOM (null) with absolute
// offsets, where pointer arithmetic on the null pointer would be undefined.
inline std::byte* byte_at(const void* buf, std::int64_t offset) noexcept {
  return reinterpret_cast<std::byte*>(reinterpret_cast<std::uintptr_t>(buf) +
                                      static_cast<std::uintptr_t>(offset));
}

// Copies the data of `count` elements at `inbuf` (RMA_BOTTOM allowed, see
// check_buffer) into `out` (which must hold
// count * size bytes). Returns the bytes written.
Result<std::int64_t> pack(const void* inbuf, std::int64_t count, const TypeLayout& type,
                          std::span<std::byte> out);
// Copies count * size bytes from `in` into the data of `count` elements at
// `outbuf`. Returns the bytes read.
Result<std::int64_t> unpack(std::span<const std::byte> in, void* outbuf, std::int64_t count,
                            const TypeLayout& type);

}  // namespace rma::api
