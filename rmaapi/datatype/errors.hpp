// MPI-like error classes of the C API, carried in rma::Status.
//
// The C++ layer reports errors as rma::Status with a message; the C API turns
// them into RMA_ERR_* codes. The class is chosen where the error is found and
// recorded as a fixed prefix of the message ("invalid rank: ..."), so nothing
// is lost in between.
#pragma once

#include <string>
#include <string_view>

#include "rma/sdk/status.hpp"

namespace rma::api {

Status type_error(std::string message);   // RMA_ERR_TYPE: "invalid datatype: ..."
Status count_error(std::string message);  // RMA_ERR_COUNT: "invalid count: ..."
Status arg_error(std::string message);    // RMA_ERR_ARG: "invalid argument: ..."
Status buffer_error(std::string message); // RMA_ERR_BUFFER: "invalid buffer: ..."
// Any class of <rma/rma_errors.h>, with that class's prefix.
Status class_error(int error_class, std::string message);

// The RMA_ERR_* code for a status (RMA_SUCCESS when ok).
int error_code(const Status& status) noexcept;
// The message without its class prefix.
std::string_view error_detail(const Status& status) noexcept;
// "RMA_ERR_RMA_RANGE", or nullptr for an unknown code.
const char* error_class_name(int code) noexcept;

}  // namespace rma::api
