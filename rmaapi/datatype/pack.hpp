// Pack / unpack `count` elements of a type to / from a contiguous buffer, in
// typemap order (as MPI_Pack / MPI_Unpack with the "native" representation).
// Used by accumulate (get -> compute -> put) and by the differential test.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "datatype/layout.hpp"
#include "rma/status.hpp"

namespace rma::api {

// Copies the data of `count` elements at `inbuf` into `out` (which must hold
// count * size bytes). Returns the bytes written.
Result<std::int64_t> pack(const void* inbuf, std::int64_t count, const TypeLayout& type,
                          std::span<std::byte> out);
// Copies count * size bytes from `in` into the data of `count` elements at
// `outbuf`. Returns the bytes read.
Result<std::int64_t> unpack(std::span<const std::byte> in, void* outbuf, std::int64_t count,
                            const TypeLayout& type);

}  // namespace rma::api
