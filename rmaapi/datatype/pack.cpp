#include "datatype/pack.hpp"

#include <cstring>
#include <string>

#include "datatype/block_cursor.hpp"
#include "datatype/errors.hpp"

namespace rma::api {
namespace {
Result<std::int64_t> bytes_for(std::int64_t count, const TypeLayout& type, std::size_t have,
                               const void* buf, const char* what) {
  if (count < 0) return count_error("count " + std::to_string(count) + " is negative");
  std::int64_t bytes = 0;
  if (__builtin_mul_overflow(count, type.size, &bytes)) {
    return count_error("count " + std::to_string(count) + " times the type size overflows");
  }
  if (static_cast<std::uint64_t>(bytes) > have) {
    return buffer_error(std::string(what) + " holds " + std::to_string(have) + " bytes, " +
                        std::to_string(bytes) + " needed");
  }
  if (bytes > 0) RMA_RETURN_IF_ERROR(check_buffer(buf, type, count, "buffer"));
  return bytes;
}
}  // namespace

Status check_buffer(const void* buf, const TypeLayout& type, std::int64_t count, const char* what) {
  if (buf != nullptr || count <= 0 || type.size == 0) return {};
  const Footprint fp = footprint(type, count);
  if (fp.lo >= kLowestBottomAddress) return {};
  return buffer_error(std::string(what) + " is null (RMA_BOTTOM) but its datatype's data starts at " +
                      std::to_string(fp.lo) +
                      ", inside the first page: with RMA_BOTTOM the displacements must be absolute "
                      "addresses (rma_get_address)");
}

Result<std::int64_t> pack(const void* inbuf, std::int64_t count, const TypeLayout& type,
                          std::span<std::byte> out) {
  RMA_ASSIGN_OR_RETURN(std::int64_t bytes, bytes_for(count, type, out.size(), inbuf, "pack buffer"));
  BlockCursor cur(type, count);
  std::byte* dst = out.data();
  Block b;
  while (cur.next(b)) {
    std::memcpy(dst, byte_at(inbuf, b.offset), static_cast<std::size_t>(b.length));
    dst += b.length;
  }
  return bytes;
}

Result<std::int64_t> unpack(std::span<const std::byte> in, void* outbuf, std::int64_t count,
                            const TypeLayout& type) {
  RMA_ASSIGN_OR_RETURN(std::int64_t bytes, bytes_for(count, type, in.size(), outbuf, "unpack input"));
  BlockCursor cur(type, count);
  const std::byte* src = in.data();
  Block b;
  while (cur.next(b)) {
    std::memcpy(byte_at(outbuf, b.offset), src, static_cast<std::size_t>(b.length));
    src += b.length;
  }
  return bytes;
}

}  // namespace rma::api
