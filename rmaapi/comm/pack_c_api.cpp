// rma_pack, rma_unpack, rma_pack_size (MPI 4.x 5.2, "native" data
// representation: the packed form is the typemap's bytes in order) and the
// large-count queries rma_type_get_extent_x / rma_type_get_true_extent_x.
// Pack and unpack take a communicator, as in MPI: their errors go to its
// error handler.
#include <climits>
#include <span>
#include <string>

#include "comm/c_call.hpp"
#include "datatype/datatype.hpp"
#include "datatype/pack.hpp"

namespace rma::api {
namespace {

Status check_position(const int* position, int size, const char* size_name) {
  if (position == nullptr) return arg_error("position is null");
  if (*position < 0 || *position > size) {
    return arg_error("*position " + std::to_string(*position) + " is not in [0, " + std::string(size_name) + " = " +
                     std::to_string(size) + "]");
  }
  return {};
}

}  // namespace
}  // namespace rma::api

using namespace rma::api;  // NOLINT
using rma::Status;

extern "C" {

int rma_pack_size(int incount, rma_Datatype datatype, rma_Comm comm, int* size) {
  return comm_call(comm, "rma_pack_size", [&](Context&, rma_comm_s&) -> Status {
    if (incount < 0) return count_error("incount " + std::to_string(incount) + " is negative");
    RMA_ASSIGN_OR_RETURN(const TypeLayout* l, committed_layout(datatype, "datatype"));
    if (size == nullptr) return arg_error("size is null");
    std::int64_t bytes = 0;
    if (__builtin_mul_overflow(l->size, static_cast<std::int64_t>(incount), &bytes) || bytes > INT_MAX) {
      return count_error("incount " + std::to_string(incount) + " x the type size does not fit an int");
    }
    *size = static_cast<int>(bytes);
    return {};
  });
}

int rma_pack(const void* inbuf, int incount, rma_Datatype datatype, void* outbuf, int outsize, int* position,
             rma_Comm comm) {
  return comm_call(comm, "rma_pack", [&](Context&, rma_comm_s&) -> Status {
    if (incount < 0) return count_error("incount " + std::to_string(incount) + " is negative");
    if (outsize < 0) return arg_error("outsize " + std::to_string(outsize) + " is negative");
    RMA_ASSIGN_OR_RETURN(const TypeLayout* l, committed_layout(datatype, "datatype"));
    RMA_RETURN_IF_ERROR(check_position(position, outsize, "outsize"));
    if (outbuf == nullptr && outsize > 0) return buffer_error("outbuf is null");
    auto* out = static_cast<std::byte*>(outbuf);
    const std::span<std::byte> room(out == nullptr ? nullptr : out + *position,
                                    static_cast<std::size_t>(outsize - *position));
    RMA_ASSIGN_OR_RETURN(std::int64_t bytes, pack(inbuf, incount, *l, room));
    *position += static_cast<int>(bytes);
    return {};
  });
}

int rma_unpack(const void* inbuf, int insize, int* position, void* outbuf, int outcount, rma_Datatype datatype,
               rma_Comm comm) {
  return comm_call(comm, "rma_unpack", [&](Context&, rma_comm_s&) -> Status {
    if (outcount < 0) return count_error("outcount " + std::to_string(outcount) + " is negative");
    if (insize < 0) return arg_error("insize " + std::to_string(insize) + " is negative");
    RMA_ASSIGN_OR_RETURN(const TypeLayout* l, committed_layout(datatype, "datatype"));
    RMA_RETURN_IF_ERROR(check_position(position, insize, "insize"));
    if (inbuf == nullptr && insize > 0) return buffer_error("inbuf is null");
    const auto* in = static_cast<const std::byte*>(inbuf);
    const std::span<const std::byte> avail(in == nullptr ? nullptr : in + *position,
                                           static_cast<std::size_t>(insize - *position));
    RMA_ASSIGN_OR_RETURN(std::int64_t bytes, unpack(avail, outbuf, outcount, *l));
    *position += static_cast<int>(bytes);
    return {};
  });
}

int rma_type_get_extent_x(rma_Datatype datatype, rma_Count* lb, rma_Count* extent) {
  return world_call("rma_type_get_extent_x", [&]() -> Status {
    RMA_ASSIGN_OR_RETURN(const TypeLayout* l, layout_of(datatype, "datatype"));
    if (lb == nullptr || extent == nullptr) return arg_error("lb or extent is null");
    *lb = l->lb;
    *extent = l->extent();
    return {};
  });
}

int rma_type_get_true_extent_x(rma_Datatype datatype, rma_Count* true_lb, rma_Count* true_extent) {
  return world_call("rma_type_get_true_extent_x", [&]() -> Status {
    RMA_ASSIGN_OR_RETURN(const TypeLayout* l, layout_of(datatype, "datatype"));
    if (true_lb == nullptr || true_extent == nullptr) return arg_error("true_lb or true_extent is null");
    *true_lb = l->true_lb;
    *true_extent = l->true_extent();
    return {};
  });
}

}  // extern "C"
