// The C functions of <rma/rma.h> that start and end librma in a process
// (MPI 4.x chapter 11): rma_init, rma_init_thread, rma_query_thread,
// rma_finalize, rma_initialized, rma_finalized, rma_abort; and the testing
// entry points that start ranks as threads (window/testing.hpp).
#include <algorithm>
#include <memory>
#include <string>

#include "rma/sdk/bootstrap.hpp"
#include "rma/sdk/log.hpp"
#include "window/testing.hpp"

#include "window/c_call.hpp"

using namespace rma::api;  // NOLINT
using rma::Result;
using rma::Status;
using rma::StatusCode;

namespace rma::api {

namespace testing {
int init_thread(std::unique_ptr<Bootstrap> bootstrap, std::string_view provider, int thread_level) {
  return run_window_call(nullptr, "rma_init", [&]() -> Status {
    if (current_context() != nullptr) return class_error(RMA_ERR_OTHER, "librma is already initialized on this thread");
    InitOptions o;
    o.provider = std::string(provider);
    o.thread_level = thread_level;
    auto c = Context::create(std::move(bootstrap), o);
    if (!c.ok()) return class_error(RMA_ERR_OTHER, c.status().to_string());
    set_thread_context(std::move(c).value());
    return {};
  });
}
Context* thread_context() noexcept { return current_context(); }
void share_context(Context* ctx) noexcept { borrow_context(ctx); }
}  // namespace testing

}  // namespace rma::api

extern "C" {

namespace {
int init_process(const char* call, int thread_level) {
  return run_window_call(nullptr, call, [&]() -> Status {
    if (current_context() != nullptr) return class_error(RMA_ERR_OTHER, "librma is already initialized");
    if (process_finalized()) {
      return class_error(RMA_ERR_OTHER, "rma_init after rma_finalize: librma starts once per process (as MPI)");
    }
    auto bs = rma::open_bootstrap();
    if (!bs.ok()) return class_error(RMA_ERR_OTHER, "no bootstrap: " + bs.status().to_string());
    InitOptions o;
    o.thread_level = thread_level;
    auto c = Context::create(std::move(bs).value(), o);
    if (!c.ok()) return class_error(RMA_ERR_OTHER, c.status().to_string());
    set_process_context(std::move(c).value());
    return {};
  });
}
}  // namespace

int rma_init(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  return init_process("rma_init", RMA_THREAD_SINGLE);
}

int rma_init_thread(int* argc, char*** argv, int required, int* provided) {
  (void)argc;
  (void)argv;
  if (provided == nullptr) return run_window_call(nullptr, "rma_init_thread", [] { return arg_error("provided is null"); });
  if (required < RMA_THREAD_SINGLE || required > RMA_THREAD_MULTIPLE) {
    return run_window_call(nullptr, "rma_init_thread", [&] {
      return arg_error("required " + std::to_string(required) +
                       " is not RMA_THREAD_SINGLE, _FUNNELED, _SERIALIZED or _MULTIPLE");
    });
  }
  const int rc = init_process("rma_init_thread", required);
  if (rc == RMA_SUCCESS) *provided = required;
  return rc;
}

int rma_query_thread(int* provided) {
  return run_window_call(nullptr, "rma_query_thread", [&]() -> Status {
    if (provided == nullptr) return arg_error("provided is null");
    Context* c = current_context();
    if (c == nullptr) return not_initialized_error();
    *provided = c->thread_level();
    return {};
  });
}

int rma_finalize(void) {
  // Not under the API lock: the context (and its lock) ends here. MPI has
  // the main thread finalize once the others are done with librma.
  const Status st = guarded_status([&]() -> Status {
    Context* c = current_context();
    if (c == nullptr) return not_initialized_error();
    Status first;
    while (!c->windows.empty()) {
      rma_win_s* w = c->windows.front();
      RMA_LOG_WARN("rma_finalize on rank %d: freeing a window the program did not free", c->rank());
      w->lock_all = false;
      std::fill(w->locks.begin(), w->locks.end(), 0);
      w->start_active = w->post_active = false;
      const rma_Errhandler eh = w->errhandler;
      Status s = free_window(w);
      release_errhandler(eh);
      if (!s.ok() && first.ok()) first = s;
    }
    (void)c->eps().flush_all();
    Status b = c->bootstrap().barrier();
    if (!b.ok() && first.ok()) first = class_error(RMA_ERR_OTHER, "the final barrier failed: " + b.message());
    std::unique_ptr<Context> owned = take_thread_context();
    if (!owned) owned = take_process_context();
    owned.reset();
    return first;
  });
  if (st.ok()) return RMA_SUCCESS;
  return raise_window_error(nullptr, "rma_finalize", st);
}

int rma_initialized(int* flag) {
  if (flag == nullptr) return run_window_call(nullptr, "rma_initialized", [] { return arg_error("flag is null"); });
  *flag = current_context() != nullptr ? 1 : 0;
  return RMA_SUCCESS;
}

int rma_finalized(int* flag) {
  if (flag == nullptr) return run_window_call(nullptr, "rma_finalized", [] { return arg_error("flag is null"); });
  *flag = (current_context() == nullptr && process_finalized()) ? 1 : 0;
  return RMA_SUCCESS;
}

int rma_abort(rma_Comm comm, int errorcode) {
  (void)comm;
  Context* c = current_context();
  const std::string msg = "rma_abort called with error code " + std::to_string(errorcode);
  std::fprintf(stderr, "librma: %s\n", msg.c_str());
  if (c != nullptr) c->bootstrap().abort(errorcode, msg);
  std::exit(errorcode == 0 ? 1 : errorcode);
}

// rma_comm_rank, rma_comm_size, rma_barrier and the group calls: comm/.

}  // extern "C"
