// How the C functions of the window chapters run (window/c_api_*.cpp,
// attributes.cpp): under the API lock (RMA_THREAD_MULTIPLE), exceptions
// turned into error classes, and errors raised outside the lock through the
// window's error handler (RMA_COMM_WORLD's when the call has no live
// window), as MPI 4.x 9.3 says. Communicator, group and request calls:
// comm/c_call.hpp.
#pragma once

#include <utility>

#include "comm/c_call.hpp"
#include "datatype/errors.hpp"
#include "rma/rma.h"
#include "window/context.hpp"
#include "window/thread_level.hpp"
#include "window/window.hpp"

namespace rma::api {

bool live_window(rma_win_s* w) noexcept;
// A live window of the calling thread's context: the data-path shortcuts'
// only handle check (check_window gives the messages).
bool owned_window(rma_win_s* w) noexcept;

// Runs a data-path shortcut (true: the call is done): without the API lock
// when the calling thread's context owns `win` below RMA_THREAD_MULTIPLE
// (then one thread at a time calls librma), under it otherwise. False sends
// the caller down its checked path, which takes the lock itself, so that
// its error handler runs outside it.
template <typename Fast>
bool run_fast(rma_win_s* win, Fast&& fast) noexcept {
  Context* c = current_context();
  if (win != nullptr && win->magic == rma_win_s::kMagic && win->ctx == c &&
      c->thread_level() != RMA_THREAD_MULTIPLE) [[likely]] {
    return fast();
  }
  ApiCallLock serialized;
  return owned_window(win) && fast();
}

// Renders the error ("<call> on rank R: <CLASS>: <detail>"), records it for
// rma_last_error_message and applies the handler. Runs outside any try
// block: a custom handler may throw (the C++ API's rma::Error) or not
// return. `freed_handler` (rma_win_free) is the handler of a window that no
// longer exists: it is applied with RMA_WIN_NULL, and `win` is never read.
int raise_window_error(rma_win_s* win, const char* call, const Status& s,
                       rma_Errhandler freed_handler = nullptr);

// f() under the API lock, then its error, if any, raised outside it: a
// handler may call librma or not return.
template <typename F>
int run_window_call(rma_win_s* win, const char* call, F&& f) {
  Status s;
  {
    ApiCallLock serialized;
    s = guarded_status(std::forward<F>(f));
  }
  if (s.ok()) [[likely]] return RMA_SUCCESS;
  return raise_window_error(win, call, s);
}

// The calling thread's context, or the "not initialized" error.
Result<Context*> context();

// Window-taking calls: the window is checked first; its handler reports.
template <typename F>
int win_call(rma_Win win, const char* call, F&& f) {
  return run_window_call(win, call, [&]() -> Status {
    if (current_context() == nullptr) return not_initialized_error();
    RMA_RETURN_IF_ERROR(check_window(win));
    return f();
  });
}

Status check_request_ptr(rma_Request* request);
// MPI 4.x 12.3.5: request-based operations only in passive-target epochs.
Status check_passive_epoch(rma_win_s* win, const char* call, int target);

// A request-based operation: f(&request) posts it; the request is handed
// out only when that succeeds.
template <typename F>
int request_op(rma_Win win, const char* call, rma_Request* request, int target, F&& f) {
  return win_call(win, call, [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_request_ptr(request));
    RMA_RETURN_IF_ERROR(check_passive_epoch(win, call, target));
    rma_request_s* r = win->ctx->new_request();
    r->target = target;
    Status s = f(&r->req);
    if (!s.ok()) {
      win->ctx->release_request(r);
      return s;
    }
    *request = r;
    return s;
  });
}

}  // namespace rma::api
