#include "comm/c_call.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace rma::api {

bool predefined_errhandler(rma_Errhandler eh) noexcept {
  return eh == RMA_ERRORS_ARE_FATAL || eh == RMA_ERRORS_RETURN || eh == RMA_ERRORS_ABORT;
}
bool valid_errhandler(rma_Errhandler eh) noexcept {
  return predefined_errhandler(eh) || (eh != nullptr && eh->magic == rma_errhandler_s::kMagic);
}
void retain_errhandler(rma_Errhandler eh) noexcept {
  if (eh != nullptr && !predefined_errhandler(eh)) eh->refs.fetch_add(1, std::memory_order_relaxed);
}
void release_errhandler(rma_Errhandler eh) noexcept {
  if (eh != nullptr && !predefined_errhandler(eh) && eh->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    eh->magic = 0;
    delete eh;
  }
}

Status not_initialized_error() {
  return class_error(RMA_ERR_OTHER, "librma is not initialized on this thread: call rma_init first");
}

std::string record_error(const char* call, const Status& s) {
  Context* ctx = current_context();
  const char* cls = error_class_name(error_code(s));
  std::string msg = std::string(call) + " on rank " +
                    (ctx != nullptr ? std::to_string(ctx->rank()) : std::string("?")) + ": " +
                    (cls != nullptr ? cls : "RMA_ERR_UNKNOWN") + ": " + std::string(error_detail(s));
  set_last_error_message(msg);
  return msg;
}

int apply_errhandler(rma_Errhandler eh, rma_Comm comm, rma_Win win, int code, const std::string& msg) {
  if (eh == RMA_ERRORS_RETURN) return code;
  if (!predefined_errhandler(eh)) {
    if (eh->comm_fn != nullptr) {
      eh->comm_fn(&comm, &code);
    } else {
      eh->fn(&win, &code);
    }
    return code;
  }
  std::fprintf(stderr, "librma: fatal error: %s\n", msg.c_str());
  std::fflush(stderr);
  if (Context* ctx = current_context(); ctx != nullptr) ctx->bootstrap().abort(code == 0 ? 1 : code, msg);
  std::abort();
}

int raise_comm(rma_comm_s* comm, const char* call, const Status& s) {
  const std::string msg = record_error(call, s);
  Context* ctx = current_context();
  rma_Errhandler eh = RMA_ERRORS_ARE_FATAL;
  rma_Comm handle = RMA_COMM_WORLD;
  if (comm != nullptr && !comm->is_world) {
    eh = comm->errhandler;
    handle = ctx != nullptr && comm == &ctx->self_comm() ? RMA_COMM_SELF : comm;
  } else if (ctx != nullptr) {
    eh = ctx->comm_errhandler;
  }
  return apply_errhandler(eh, handle, RMA_WIN_NULL, error_code(s), msg);
}

}  // namespace rma::api
