// The window chapters' call machinery (window/c_call.hpp).
#include "window/c_call.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "rma/sdk/log.hpp"

namespace rma::api {

bool live_window(rma_win_s* w) noexcept { return w != nullptr && w->magic == rma_win_s::kMagic; }
bool owned_window(rma_win_s* w) noexcept {
  return live_window(w) && w->ctx != nullptr && w->ctx == current_context();
}

int raise_window_error(rma_win_s* win, const char* call, const Status& s, rma_Errhandler freed_handler) {
  const std::string msg = record_error(call, s);
  Context* ctx = current_context();
  rma_Errhandler eh = RMA_ERRORS_ARE_FATAL;
  if (freed_handler != nullptr) {
    eh = freed_handler;
    win = RMA_WIN_NULL;
  } else if (live_window(win)) {
    eh = win->errhandler;
  } else if (ctx != nullptr) {
    eh = ctx->comm_errhandler;
  }
  return apply_errhandler(eh, RMA_COMM_WORLD, win, error_code(s), msg);
}

Result<Context*> context() {
  Context* c = current_context();
  if (c == nullptr) return not_initialized_error();
  return c;
}

Status check_request_ptr(rma_Request* request) {
  if (request == nullptr) return class_error(RMA_ERR_REQUEST, "request is null");
  return {};
}

// MPI 4.x 12.3.5: request-based operations only in passive-target epochs
// (lock to that target, or lock_all); RMA_PROC_NULL needs one too. A bad
// rank is left to the operation's own check (RMA_ERR_RANK).
Status check_passive_epoch(rma_win_s* win, const char* call, int target) {
  const int n = static_cast<int>(win->peers.size());
  bool ok = win->lock_all;
  if (target == RMA_PROC_NULL) {
    ok = ok || std::any_of(win->locks.begin(), win->locks.end(), [](std::uint8_t l) { return l != 0; });
  } else if (target >= 0 && target < n) {
    ok = ok || win->locks[static_cast<std::size_t>(target)] != 0;
  } else {
    return {};
  }
  if (ok) return {};
  return class_error(RMA_ERR_RMA_SYNC,
                     std::string(call) + " needs a passive-target epoch " +
                         (target == RMA_PROC_NULL ? std::string("(any lock)")
                                                  : "to rank " + std::to_string(target)) +
                         ": call rma_win_lock or rma_win_lock_all first (fence and start epochs "
                         "do not allow request-based operations)");
}

}  // namespace rma::api
