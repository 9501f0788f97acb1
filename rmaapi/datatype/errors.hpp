// MPI-like error classes for the datatype layer, carried in rma::Status.
//
// The C++ layer reports errors as rma::Status with a message; the C API turns
// them into RMA_ERR_* codes. The class is chosen where the error is found and
// recorded as a fixed prefix of the message, so nothing is lost in between.
#pragma once

#include <string>

#include "rma/status.hpp"

namespace rma::api {

Status type_error(std::string message);   // RMA_ERR_TYPE: "invalid datatype: ..."
Status count_error(std::string message);  // RMA_ERR_COUNT: "invalid count: ..."
Status arg_error(std::string message);    // RMA_ERR_ARG: "invalid argument: ..."
Status buffer_error(std::string message); // RMA_ERR_BUFFER: "invalid buffer: ..."

// The RMA_ERR_* code for a status (RMA_SUCCESS when ok).
int error_code(const Status& status) noexcept;

}  // namespace rma::api
