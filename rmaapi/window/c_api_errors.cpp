// The C functions of <rma/rma.h> for error handling (MPI 4.x 9.3, 9.4):
// window error handlers, error classes and rma_last_error_message.
// rma_comm_set_errhandler, rma_comm_get_errhandler: comm/comm_c_api.cpp.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>

#include "window/c_call.hpp"

using namespace rma::api;  // NOLINT
using rma::Result;
using rma::Status;
using rma::StatusCode;

extern "C" {

int rma_win_create_errhandler(rma_Win_errhandler_function* function, rma_Errhandler* errhandler) {
  return run_window_call(nullptr, "rma_win_create_errhandler", [&]() -> Status {
    if (function == nullptr) return arg_error("function is null");
    if (errhandler == nullptr) return arg_error("errhandler is null");
    auto* eh = new rma_errhandler_s;
    eh->fn = function;
    *errhandler = eh;
    return {};
  });
}

int rma_win_set_errhandler(rma_Win win, rma_Errhandler errhandler) {
  return win_call(win, "rma_win_set_errhandler", [&]() -> Status {
    if (!valid_errhandler(errhandler)) return arg_error("errhandler is not an error handler");
    if (!predefined_errhandler(errhandler) && errhandler->fn == nullptr) {
      return arg_error("errhandler was made by rma_comm_create_errhandler; windows take one from "
                       "rma_win_create_errhandler");
    }
    if (!predefined_errhandler(errhandler)) errhandler->refs.fetch_add(1, std::memory_order_relaxed);
    release_errhandler(win->errhandler);
    win->errhandler = errhandler;
    return {};
  });
}

int rma_win_get_errhandler(rma_Win win, rma_Errhandler* errhandler) {
  return win_call(win, "rma_win_get_errhandler", [&]() -> Status {
    if (errhandler == nullptr) return arg_error("errhandler is null");
    if (!predefined_errhandler(win->errhandler)) win->errhandler->refs.fetch_add(1, std::memory_order_relaxed);
    *errhandler = win->errhandler;
    return {};
  });
}

int rma_win_call_errhandler(rma_Win win, int errorcode) {
  if (!live_window(win)) return run_window_call(nullptr, "rma_win_call_errhandler", [] { return class_error(RMA_ERR_WIN, "win is not a window"); });
  return raise_window_error(win, "rma_win_call_errhandler",
               class_error(errorcode, "raised by the program with error code " + std::to_string(errorcode)));
}

int rma_errhandler_free(rma_Errhandler* errhandler) {
  return run_window_call(nullptr, "rma_errhandler_free", [&]() -> Status {
    if (errhandler == nullptr || !valid_errhandler(*errhandler)) return arg_error("errhandler is not an error handler");
    release_errhandler(*errhandler);
    *errhandler = RMA_ERRHANDLER_NULL;
    return {};
  });
}

// rma_comm_set_errhandler, rma_comm_get_errhandler: comm/comm_c_api.cpp.

int rma_error_class(int errorcode, int* errorclass) {
  return run_window_call(nullptr, "rma_error_class", [&]() -> Status {
    if (errorclass == nullptr) return arg_error("errorclass is null");
    if (error_class_name(errorcode) == nullptr) return arg_error("error code " + std::to_string(errorcode) + " is unknown");
    *errorclass = errorcode;
    return {};
  });
}

int rma_last_error_message(char* str, int* len) {
  if (str == nullptr || len == nullptr) return RMA_ERR_ARG;
  const std::string& m = last_error_message();
  const std::size_t n = std::min<std::size_t>(m.size(), RMA_MAX_ERROR_STRING - 1);
  std::memcpy(str, m.data(), n);
  str[n] = '\0';
  *len = static_cast<int>(n);
  return RMA_SUCCESS;
}

}  // extern "C"
