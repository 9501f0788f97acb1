// How the C functions of the communicator, group and request chapters run:
// exceptions become error classes, and errors go to the error handler of
// the communicator the call is on (RMA_COMM_WORLD's when it has none), as
// MPI 4.x 9.3 says. (Window calls use their window's handler:
// window/c_call.hpp.)
#pragma once

#include <exception>
#include <new>
#include <string>

#include "comm/comm.hpp"
#include "datatype/datatype.hpp"
#include "datatype/errors.hpp"
#include "rma/rma.h"
#include "window/context.hpp"
#include "window/thread_level.hpp"

namespace rma::api {

bool predefined_errhandler(rma_Errhandler eh) noexcept;
bool valid_errhandler(rma_Errhandler eh) noexcept;
void retain_errhandler(rma_Errhandler eh) noexcept;
void release_errhandler(rma_Errhandler eh) noexcept;

// Renders the error ("<call> on rank R: <CLASS>: <detail>"), records it for
// rma_last_error_message and applies the handler of `comm` (nullptr:
// RMA_COMM_WORLD's; before rma_init: fatal). Returns the code when the
// handler returns.
int raise_comm(rma_comm_s* comm, const char* call, const Status& s);

// The two halves of raising an error, shared with the window calls
// (window/c_call.cpp): the rendered message, recorded for
// rma_last_error_message; then the handler `eh` applied to `code` (RETURN
// gives it back, a communicator handler gets `comm`, a window handler
// `win`, the fatal ones print the message and end the job).
std::string record_error(const char* call, const Status& s);
int apply_errhandler(rma_Errhandler eh, rma_Comm comm, rma_Win win, int code, const std::string& msg);

Status not_initialized_error();

template <typename F>
Status guarded_status(F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return class_error(RMA_ERR_NO_MEM, "out of memory");
  } catch (const std::exception& e) {
    return class_error(RMA_ERR_INTERN, std::string("unexpected exception: ") + e.what());
  } catch (...) {
    return class_error(RMA_ERR_INTERN, "unexpected exception");
  }
}

// f(Context&, rma_comm_s&) on the calling rank's communicator behind
// `comm`; an invalid handle is reported to RMA_COMM_WORLD's handler.
template <typename F>
int comm_call(rma_Comm comm, const char* call, F&& f) {
  rma_comm_s* resolved = nullptr;
  Status s;
  {
    // RMA_THREAD_MULTIPLE: one call of this rank at a time; the handler
    // runs outside the lock.
    ApiCallLock serialized;
    s = guarded_status([&]() -> Status {
      Context* ctx = current_context();
      if (ctx == nullptr) return not_initialized_error();
      RMA_ASSIGN_OR_RETURN(resolved, resolve_comm(*ctx, comm));
      return f(*ctx, *resolved);
    });
  }
  if (s.ok()) [[likely]] return RMA_SUCCESS;
  return raise_comm(resolved, call, s);
}

// f() for calls on no communicator: RMA_COMM_WORLD's handler reports.
template <typename F>
int world_call(const char* call, F&& f) {
  Status s;
  {
    ApiCallLock serialized;
    s = guarded_status(f);
  }
  if (s.ok()) [[likely]] return RMA_SUCCESS;
  return raise_comm(nullptr, call, s);
}

}  // namespace rma::api
