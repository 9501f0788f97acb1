// The C functions of <rma/rma.h>: handle checks, then the window layer;
// errors go to the window's (or RMA_COMM_WORLD's) error handler.
#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>

#include "comm/comm.hpp"
#include "datatype/datatype.hpp"
#include "datatype/errors.hpp"
#include "rma/log.hpp"
#include "rma/rma.h"
#include "window/context.hpp"
#include "window/info.hpp"
#include "window/testing.hpp"
#include "window/thread_level.hpp"
#include "window/window.hpp"

namespace rma::api {
namespace {

bool predefined_handler(rma_Errhandler eh) noexcept {
  return eh == RMA_ERRORS_ARE_FATAL || eh == RMA_ERRORS_RETURN || eh == RMA_ERRORS_ABORT;
}
bool valid_handler(rma_Errhandler eh) noexcept {
  return predefined_handler(eh) || (eh != nullptr && eh->magic == rma_errhandler_s::kMagic);
}
bool live_window(rma_win_s* w) noexcept { return w != nullptr && w->magic == rma_win_s::kMagic; }
// A live window of the calling thread's context: the data-path shortcuts'
// only handle check (check_window gives the messages).
bool owned_window(rma_win_s* w) noexcept {
  return live_window(w) && w->ctx != nullptr && w->ctx == current_context();
}

// Renders the error, records it for rma_last_error_message, and applies the
// handler. Runs outside any try block: a custom handler may throw (the C++
// API's rma::Error) or not return.
// `freed_handler` (rma_win_free) is the handler of a window that no longer
// exists: it is applied with RMA_WIN_NULL, and `win` is never read.
int raise(rma_win_s* win, const char* call, const Status& s, rma_Errhandler freed_handler = nullptr) {
  int code = error_code(s);
  Context* ctx = current_context();
  const char* cls = error_class_name(code);
  std::string msg = std::string(call) + " on rank " +
                    (ctx != nullptr ? std::to_string(ctx->rank()) : std::string("?")) + ": " +
                    (cls != nullptr ? cls : "RMA_ERR_UNKNOWN") + ": " + std::string(error_detail(s));
  set_last_error_message(msg);
  rma_Errhandler eh = RMA_ERRORS_ARE_FATAL;
  if (freed_handler != nullptr) {
    eh = freed_handler;
    win = RMA_WIN_NULL;
  } else if (live_window(win)) {
    eh = win->errhandler;
  } else if (ctx != nullptr) {
    eh = ctx->comm_errhandler;
  }
  if (eh == RMA_ERRORS_RETURN) return code;
  if (!predefined_handler(eh)) {
    if (eh->fn == nullptr) {  // RMA_COMM_WORLD's, made by rma_comm_create_errhandler
      rma_Comm c = RMA_COMM_WORLD;
      eh->comm_fn(&c, &code);
      return code;
    }
    rma_Win w = win;
    eh->fn(&w, &code);
    return code;
  }
  std::fprintf(stderr, "librma: fatal error: %s\n", msg.c_str());
  std::fflush(stderr);
  if (ctx != nullptr) ctx->bootstrap().abort(code == 0 ? 1 : code, msg);
  std::abort();
}

}  // namespace

int raise_window_error(rma_win_s* win, const char* call, const Status& s) { return raise(win, call, s); }

namespace {

Status not_initialized() {
  return class_error(RMA_ERR_OTHER, "librma is not initialized on this thread: call rma_init first");
}

// f(), with exceptions turned into error classes.
template <typename F>
Status guarded(F&& f) {
  Status s;
  try {
    s = f();
  } catch (const std::bad_alloc&) {
    s = class_error(RMA_ERR_NO_MEM, "out of memory");
  } catch (const std::exception& e) {
    s = class_error(RMA_ERR_INTERN, std::string("unexpected exception: ") + e.what());
  } catch (...) {
    s = class_error(RMA_ERR_INTERN, "unexpected exception");
  }
  return s;
}

// f() under the API lock (RMA_THREAD_MULTIPLE), then its error, if any,
// raised outside it: a handler may call librma or not return.
template <typename F>
int run(rma_win_s* win, const char* call, F&& f) {
  Status s;
  {
    ApiCallLock serialized;
    s = guarded(std::forward<F>(f));
  }
  if (s.ok()) [[likely]] return RMA_SUCCESS;
  return raise(win, call, s);
}

Result<Context*> context() {
  Context* c = current_context();
  if (c == nullptr) return not_initialized();
  return c;
}

// Checks the creation arguments, resolves `comm` into `on` and reads the
// hints of `info` into `hints`.
Status check_create_args(Context& ctx, rma_Aint size, int disp_unit, rma_Info info, rma_Comm comm,
                         rma_Win* win, WindowHints& hints, rma_comm_s*& on) {
  RMA_ASSIGN_OR_RETURN(on, resolve_comm(ctx, comm));
  RMA_RETURN_IF_ERROR(check_info_handle(info, true));
  RMA_RETURN_IF_ERROR(apply_window_hints(info, hints));
  if (size < 0) return class_error(RMA_ERR_SIZE, "size " + std::to_string(size) + " is negative");
  if (disp_unit <= 0) {
    return class_error(RMA_ERR_DISP, "disp_unit " + std::to_string(disp_unit) + " is not positive");
  }
  if (win == nullptr) return arg_error("win is null");
  return {};
}

Status check_request_ptr(rma_Request* request) {
  if (request == nullptr) return class_error(RMA_ERR_REQUEST, "request is null");
  return {};
}

// Window-taking calls: the window is checked first; its handler reports.
template <typename F>
int win_call(rma_Win win, const char* call, F&& f) {
  return run(win, call, [&]() -> Status {
    if (current_context() == nullptr) return not_initialized();
    RMA_RETURN_IF_ERROR(check_window(win));
    return f();
  });
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

void release_handler(rma_Errhandler eh) noexcept {
  if (eh != nullptr && !predefined_handler(eh) && eh->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    eh->magic = 0;
    delete eh;
  }
}

}  // namespace

namespace testing {
int init_thread(std::unique_ptr<Bootstrap> bootstrap, std::string_view provider, int thread_level) {
  return run(nullptr, "rma_init", [&]() -> Status {
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

using namespace rma::api;  // NOLINT
using rma::Result;
using rma::Status;
using rma::StatusCode;

extern "C" {

// ------------------------------------------------------------------ processes

namespace {
int init_process(const char* call, int thread_level) {
  return run(nullptr, call, [&]() -> Status {
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
  if (provided == nullptr) return run(nullptr, "rma_init_thread", [] { return arg_error("provided is null"); });
  if (required < RMA_THREAD_SINGLE || required > RMA_THREAD_MULTIPLE) {
    return run(nullptr, "rma_init_thread", [&] {
      return arg_error("required " + std::to_string(required) +
                       " is not RMA_THREAD_SINGLE, _FUNNELED, _SERIALIZED or _MULTIPLE");
    });
  }
  const int rc = init_process("rma_init_thread", required);
  if (rc == RMA_SUCCESS) *provided = required;
  return rc;
}

int rma_query_thread(int* provided) {
  return run(nullptr, "rma_query_thread", [&]() -> Status {
    if (provided == nullptr) return arg_error("provided is null");
    Context* c = current_context();
    if (c == nullptr) return not_initialized();
    *provided = c->thread_level();
    return {};
  });
}

int rma_finalize(void) {
  // Not under the API lock: the context (and its lock) ends here. MPI has
  // the main thread finalize once the others are done with librma.
  const Status st = guarded([&]() -> Status {
    Context* c = current_context();
    if (c == nullptr) return not_initialized();
    Status first;
    while (!c->windows.empty()) {
      rma_win_s* w = c->windows.front();
      RMA_LOG_WARN("rma_finalize on rank %d: freeing a window the program did not free", c->rank());
      w->lock_all = false;
      std::fill(w->locks.begin(), w->locks.end(), 0);
      w->start_active = w->post_active = false;
      const rma_Errhandler eh = w->errhandler;
      Status s = free_window(w);
      release_handler(eh);
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
  return raise(nullptr, "rma_finalize", st);
}

int rma_initialized(int* flag) {
  if (flag == nullptr) return run(nullptr, "rma_initialized", [] { return arg_error("flag is null"); });
  *flag = current_context() != nullptr ? 1 : 0;
  return RMA_SUCCESS;
}

int rma_finalized(int* flag) {
  if (flag == nullptr) return run(nullptr, "rma_finalized", [] { return arg_error("flag is null"); });
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

// ------------------------------------------------------------------ windows

int rma_win_create(void* base, rma_Aint size, int disp_unit, rma_Info info, rma_Comm comm,
                   rma_Win* win) {
  return run(nullptr, "rma_win_create", [&]() -> Status {
    RMA_ASSIGN_OR_RETURN(Context * c, context());
    WindowHints hints;
    rma_comm_s* on = nullptr;
    RMA_RETURN_IF_ERROR(check_create_args(*c, size, disp_unit, info, comm, win, hints, on));
    if (base == nullptr && size > 0) return class_error(RMA_ERR_BASE, "base is null but size is " + std::to_string(size));
    RMA_ASSIGN_OR_RETURN(*win, create_window(*c, *on, RMA_WIN_FLAVOR_CREATE, base, size, disp_unit));
    (*win)->hints = std::move(hints);
    return {};
  });
}

int rma_win_allocate(rma_Aint size, int disp_unit, rma_Info info, rma_Comm comm, void* baseptr,
                     rma_Win* win) {
  return run(nullptr, "rma_win_allocate", [&]() -> Status {
    RMA_ASSIGN_OR_RETURN(Context * c, context());
    WindowHints hints;
    rma_comm_s* on = nullptr;
    RMA_RETURN_IF_ERROR(check_create_args(*c, size, disp_unit, info, comm, win, hints, on));
    if (baseptr == nullptr) return arg_error("baseptr is null");
    RMA_ASSIGN_OR_RETURN(rma_win_s * w, create_window(*c, *on, RMA_WIN_FLAVOR_ALLOCATE, nullptr, size, disp_unit));
    w->hints = std::move(hints);
    *static_cast<void**>(baseptr) = w->base;
    *win = w;
    return {};
  });
}

int rma_win_create_dynamic(rma_Info info, rma_Comm comm, rma_Win* win) {
  return run(nullptr, "rma_win_create_dynamic", [&]() -> Status {
    RMA_ASSIGN_OR_RETURN(Context * c, context());
    WindowHints hints;
    rma_comm_s* on = nullptr;
    RMA_RETURN_IF_ERROR(check_create_args(*c, 0, 1, info, comm, win, hints, on));
    RMA_ASSIGN_OR_RETURN(*win, create_window(*c, *on, RMA_WIN_FLAVOR_DYNAMIC, nullptr, 0, 1));
    (*win)->hints = std::move(hints);
    return {};
  });
}

int rma_win_attach(rma_Win win, void* base, rma_Aint size) {
  return win_call(win, "rma_win_attach", [&] { return attach(win, base, size); });
}

int rma_win_detach(rma_Win win, const void* base) {
  return win_call(win, "rma_win_detach", [&] { return detach(win, base); });
}

int rma_win_free(rma_Win* win) {
  rma_Win w = win != nullptr ? *win : nullptr;
  // Once free_window ran, the window is gone but an error it reports still
  // goes to the window's handler: that handler is kept (one reference)
  // until the error has been raised, even when a custom one throws.
  rma_Errhandler freed_eh = nullptr;
  struct ReleaseAfterRaise {
    rma_Errhandler& eh;
    ~ReleaseAfterRaise() { release_handler(eh); }
  } release_after{freed_eh};
  Status s;
  {
    ApiCallLock serialized;  // RMA_THREAD_MULTIPLE; the handler runs outside it
    s = guarded([&]() -> Status {
      if (current_context() == nullptr) return not_initialized();
      if (win == nullptr) return arg_error("win is null");
      RMA_RETURN_IF_ERROR(check_window(*win));
      RMA_RETURN_IF_ERROR(check_free(*win));
      RMA_RETURN_IF_ERROR(delete_window_attributes(*win));  // MPI: callbacks run at free
      freed_eh = (*win)->errhandler;
      Status st = free_window(*win);
      *win = RMA_WIN_NULL;
      return st;
    });
  }
  if (s.ok()) return RMA_SUCCESS;
  if (freed_eh != nullptr) return raise(nullptr, "rma_win_free", s, freed_eh);
  return raise(w, "rma_win_free", s);
}

int rma_win_get_attr(rma_Win win, int win_keyval, void* attribute_val, int* flag) {
  return win_call(win, "rma_win_get_attr", [&]() -> Status {
    if (attribute_val == nullptr || flag == nullptr) return arg_error("attribute_val or flag is null");
    void* v = nullptr;
    switch (win_keyval) {
      case RMA_WIN_BASE: v = win->base; break;
      case RMA_WIN_SIZE: v = &win->size; break;
      case RMA_WIN_DISP_UNIT: v = &win->disp_unit; break;
      case RMA_WIN_CREATE_FLAVOR: v = &win->flavor; break;
      case RMA_WIN_MODEL: v = &win->model; break;
      default: {  // a user's keyval (window/attributes.cpp)
        void* value = nullptr;
        RMA_ASSIGN_OR_RETURN(bool found, find_window_attribute(win, win_keyval, &value));
        *flag = found ? 1 : 0;
        if (found) *static_cast<void**>(attribute_val) = value;
        return {};
      }
    }
    *static_cast<void**>(attribute_val) = v;
    *flag = 1;
    return {};
  });
}

int rma_win_get_group(rma_Win win, rma_Group* group) {
  return win_call(win, "rma_win_get_group", [&]() -> Status {
    if (group == nullptr) return arg_error("group is null");
    *group = new_group(win->comm.ranks);
    return {};
  });
}

// rma_win_set_info, rma_win_get_info, names and user attributes: window/attributes.cpp.

// ------------------------------------------------------------------ info objects

// Info calls need no context (MPI allows them before rma_init); their errors
// go to RMA_COMM_WORLD's handler, or are fatal before rma_init.
int rma_info_create(rma_Info* info) {
  return run(nullptr, "rma_info_create", [&]() -> Status {
    if (info == nullptr) return arg_error("info is null");
    *info = new rma_info_s;
    return {};
  });
}

int rma_info_set(rma_Info info, const char* key, const char* value) {
  return run(nullptr, "rma_info_set", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_info_handle(info, false));
    RMA_RETURN_IF_ERROR(check_info_key(key));
    RMA_RETURN_IF_ERROR(check_info_value(value));
    info->set(key, value);
    return {};
  });
}

int rma_info_delete(rma_Info info, const char* key) {
  return run(nullptr, "rma_info_delete", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_info_handle(info, false));
    RMA_RETURN_IF_ERROR(check_info_key(key));
    if (!info->erase(key)) return class_error(RMA_ERR_INFO_NOKEY, std::string("key \"") + key + "\" is not in the info object");
    return {};
  });
}

int rma_info_get_string(rma_Info info, const char* key, int* buflen, char* value, int* flag) {
  return run(nullptr, "rma_info_get_string", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_info_handle(info, false));
    RMA_RETURN_IF_ERROR(check_info_key(key));
    if (buflen == nullptr || flag == nullptr) return arg_error("buflen or flag is null");
    if (*buflen < 0) return arg_error("*buflen " + std::to_string(*buflen) + " is negative");
    if (*buflen > 0 && value == nullptr) return arg_error("value is null but *buflen is " + std::to_string(*buflen));
    const std::string* v = info->find(key);
    *flag = v != nullptr ? 1 : 0;
    if (v == nullptr) return {};
    if (*buflen > 0) {
      const std::size_t n = std::min(v->size(), static_cast<std::size_t>(*buflen) - 1);
      std::memcpy(value, v->data(), n);
      value[n] = '\0';
    }
    *buflen = static_cast<int>(v->size()) + 1;
    return {};
  });
}

int rma_info_get(rma_Info info, const char* key, int valuelen, char* value, int* flag) {
  return run(nullptr, "rma_info_get", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_info_handle(info, false));
    RMA_RETURN_IF_ERROR(check_info_key(key));
    if (flag == nullptr) return arg_error("flag is null");
    if (valuelen < 0) return arg_error("valuelen " + std::to_string(valuelen) + " is negative");
    if (value == nullptr) return arg_error("value is null");
    const std::string* v = info->find(key);
    *flag = v != nullptr ? 1 : 0;
    if (v == nullptr) return {};
    const std::size_t n = std::min(v->size(), static_cast<std::size_t>(valuelen));
    std::memcpy(value, v->data(), n);
    value[n] = '\0';
    return {};
  });
}

int rma_info_get_valuelen(rma_Info info, const char* key, int* valuelen, int* flag) {
  return run(nullptr, "rma_info_get_valuelen", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_info_handle(info, false));
    RMA_RETURN_IF_ERROR(check_info_key(key));
    if (valuelen == nullptr || flag == nullptr) return arg_error("valuelen or flag is null");
    const std::string* v = info->find(key);
    *flag = v != nullptr ? 1 : 0;
    if (v != nullptr) *valuelen = static_cast<int>(v->size());
    return {};
  });
}

int rma_info_get_nkeys(rma_Info info, int* nkeys) {
  return run(nullptr, "rma_info_get_nkeys", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_info_handle(info, false));
    if (nkeys == nullptr) return arg_error("nkeys is null");
    *nkeys = static_cast<int>(info->entries.size());
    return {};
  });
}

int rma_info_get_nthkey(rma_Info info, int n, char* key) {
  return run(nullptr, "rma_info_get_nthkey", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_info_handle(info, false));
    if (key == nullptr) return arg_error("key is null");
    if (n < 0 || static_cast<std::size_t>(n) >= info->entries.size()) {
      return arg_error("n " + std::to_string(n) + " is not in [0, " + std::to_string(info->entries.size()) +
                       "), the number of keys");
    }
    const std::string& k = info->entries[static_cast<std::size_t>(n)].first;
    std::memcpy(key, k.c_str(), k.size() + 1);
    return {};
  });
}

int rma_info_dup(rma_Info info, rma_Info* newinfo) {
  return run(nullptr, "rma_info_dup", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_info_handle(info, false));
    if (newinfo == nullptr) return arg_error("newinfo is null");
    *newinfo = new rma_info_s(*info);
    return {};
  });
}

int rma_info_free(rma_Info* info) {
  return run(nullptr, "rma_info_free", [&]() -> Status {
    if (info == nullptr) return arg_error("info is null");
    RMA_RETURN_IF_ERROR(check_info_handle(*info, false));
    delete *info;
    *info = RMA_INFO_NULL;
    return {};
  });
}

// ------------------------------------------------------------------ communication

int rma_put(const void* origin_addr, int origin_count, rma_Datatype origin_datatype,
            int target_rank, rma_Aint target_disp, int target_count,
            rma_Datatype target_datatype, rma_Win win) {
  ApiCallLock serialized;
  if (owned_window(win) &&
      put_fast(win, FastArgs{origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                             target_count, target_datatype})) [[likely]] {
    return RMA_SUCCESS;
  }
  return win_call(win, "rma_put", [&] {
    OpArgs a;
    a.origin = origin_addr; a.origin_count = origin_count; a.origin_type = origin_datatype;
    a.target = target_rank; a.target_disp = target_disp; a.target_count = target_count;
    a.target_type = target_datatype;
    return put(win, "rma_put", a, nullptr);
  });
}

int rma_get(void* origin_addr, int origin_count, rma_Datatype origin_datatype, int target_rank,
            rma_Aint target_disp, int target_count, rma_Datatype target_datatype, rma_Win win) {
  ApiCallLock serialized;
  if (owned_window(win) &&
      get_fast(win, FastArgs{origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                             target_count, target_datatype})) [[likely]] {
    return RMA_SUCCESS;
  }
  return win_call(win, "rma_get", [&] {
    OpArgs a;
    a.result = origin_addr; a.origin_count = origin_count; a.origin_type = origin_datatype;
    a.target = target_rank; a.target_disp = target_disp; a.target_count = target_count;
    a.target_type = target_datatype;
    return get(win, "rma_get", a, nullptr);
  });
}

int rma_accumulate(const void* origin_addr, int origin_count, rma_Datatype origin_datatype,
                   int target_rank, rma_Aint target_disp, int target_count,
                   rma_Datatype target_datatype, rma_Op op, rma_Win win) {
  return win_call(win, "rma_accumulate", [&] {
    OpArgs a;
    a.origin = origin_addr; a.origin_count = origin_count; a.origin_type = origin_datatype;
    a.target = target_rank; a.target_disp = target_disp; a.target_count = target_count;
    a.target_type = target_datatype; a.op = op;
    return accumulate(win, "rma_accumulate", a, false, nullptr);
  });
}

int rma_get_accumulate(const void* origin_addr, int origin_count, rma_Datatype origin_datatype,
                       void* result_addr, int result_count, rma_Datatype result_datatype,
                       int target_rank, rma_Aint target_disp, int target_count,
                       rma_Datatype target_datatype, rma_Op op, rma_Win win) {
  return win_call(win, "rma_get_accumulate", [&] {
    OpArgs a;
    a.origin = origin_addr; a.origin_count = origin_count; a.origin_type = origin_datatype;
    a.result = result_addr; a.result_count = result_count; a.result_type = result_datatype;
    a.target = target_rank; a.target_disp = target_disp; a.target_count = target_count;
    a.target_type = target_datatype; a.op = op;
    return accumulate(win, "rma_get_accumulate", a, true, nullptr);
  });
}

int rma_fetch_and_op(const void* origin_addr, void* result_addr, rma_Datatype datatype,
                     int target_rank, rma_Aint target_disp, rma_Op op, rma_Win win) {
  ApiCallLock serialized;
  if (owned_window(win) &&
      fetch_and_op_fast(win, FastArgs{origin_addr, 1, datatype, target_rank, target_disp, 1, datatype},
                        result_addr, op)) [[likely]] {
    return RMA_SUCCESS;
  }
  return win_call(win, "rma_fetch_and_op", [&]() -> Status {
    OpArgs a;
    a.origin = origin_addr; a.origin_count = 1; a.origin_type = datatype;
    a.result = result_addr; a.result_count = 1; a.result_type = datatype;
    a.target = target_rank; a.target_disp = target_disp; a.target_count = 1;
    a.target_type = datatype; a.op = op;
    if (datatype != nullptr && datatype->magic == rma_datatype_s::kMagic && !datatype->predefined) {
      return type_error("rma_fetch_and_op needs a predefined datatype");
    }
    return accumulate(win, "rma_fetch_and_op", a, true, nullptr);
  });
}

int rma_compare_and_swap(const void* origin_addr, const void* compare_addr, void* result_addr,
                         rma_Datatype datatype, int target_rank, rma_Aint target_disp,
                         rma_Win win) {
  return win_call(win, "rma_compare_and_swap", [&] {
    OpArgs a;
    a.origin = origin_addr; a.compare = compare_addr; a.result = result_addr;
    a.target = target_rank; a.target_disp = target_disp; a.target_count = 1;
    a.target_type = datatype;
    return compare_and_swap(win, "rma_compare_and_swap", a, nullptr);
  });
}

int rma_rput(const void* origin_addr, int origin_count, rma_Datatype origin_datatype,
             int target_rank, rma_Aint target_disp, int target_count,
             rma_Datatype target_datatype, rma_Win win, rma_Request* request) {
  return request_op(win, "rma_rput", request, target_rank, [&](rma::endpoint::Request* r) {
    OpArgs a;
    a.origin = origin_addr; a.origin_count = origin_count; a.origin_type = origin_datatype;
    a.target = target_rank; a.target_disp = target_disp; a.target_count = target_count;
    a.target_type = target_datatype;
    return put(win, "rma_rput", a, r);
  });
}

int rma_rget(void* origin_addr, int origin_count, rma_Datatype origin_datatype, int target_rank,
             rma_Aint target_disp, int target_count, rma_Datatype target_datatype, rma_Win win,
             rma_Request* request) {
  return request_op(win, "rma_rget", request, target_rank, [&](rma::endpoint::Request* r) {
    OpArgs a;
    a.result = origin_addr; a.origin_count = origin_count; a.origin_type = origin_datatype;
    a.target = target_rank; a.target_disp = target_disp; a.target_count = target_count;
    a.target_type = target_datatype;
    return get(win, "rma_rget", a, r);
  });
}

int rma_raccumulate(const void* origin_addr, int origin_count, rma_Datatype origin_datatype,
                    int target_rank, rma_Aint target_disp, int target_count,
                    rma_Datatype target_datatype, rma_Op op, rma_Win win, rma_Request* request) {
  return request_op(win, "rma_raccumulate", request, target_rank, [&](rma::endpoint::Request* r) {
    OpArgs a;
    a.origin = origin_addr; a.origin_count = origin_count; a.origin_type = origin_datatype;
    a.target = target_rank; a.target_disp = target_disp; a.target_count = target_count;
    a.target_type = target_datatype; a.op = op;
    return accumulate(win, "rma_raccumulate", a, false, r);
  });
}

int rma_rget_accumulate(const void* origin_addr, int origin_count, rma_Datatype origin_datatype,
                        void* result_addr, int result_count, rma_Datatype result_datatype,
                        int target_rank, rma_Aint target_disp, int target_count,
                        rma_Datatype target_datatype, rma_Op op, rma_Win win,
                        rma_Request* request) {
  return request_op(win, "rma_rget_accumulate", request, target_rank, [&](rma::endpoint::Request* r) {
    OpArgs a;
    a.origin = origin_addr; a.origin_count = origin_count; a.origin_type = origin_datatype;
    a.result = result_addr; a.result_count = result_count; a.result_type = result_datatype;
    a.target = target_rank; a.target_disp = target_disp; a.target_count = target_count;
    a.target_type = target_datatype; a.op = op;
    return accumulate(win, "rma_rget_accumulate", a, true, r);
  });
}

// ------------------------------------------------------------------ requests

// rma_wait, rma_test and the other completion calls: window/requests.cpp.

// ------------------------------------------------------------------ synchronization

int rma_win_fence(int assert_, rma_Win win) {
  return win_call(win, "rma_win_fence", [&] { return fence(win, assert_); });
}
int rma_win_start(rma_Group group, int assert_, rma_Win win) {
  return win_call(win, "rma_win_start", [&] { return start(win, group, assert_); });
}
int rma_win_complete(rma_Win win) {
  return win_call(win, "rma_win_complete", [&] { return complete(win); });
}
int rma_win_post(rma_Group group, int assert_, rma_Win win) {
  return win_call(win, "rma_win_post", [&] { return post(win, group, assert_); });
}
int rma_win_wait(rma_Win win) {
  return win_call(win, "rma_win_wait", [&] { return wait(win); });
}
int rma_win_test(rma_Win win, int* flag) {
  return win_call(win, "rma_win_test", [&]() -> Status {
    if (flag == nullptr) return arg_error("flag is null");
    RMA_ASSIGN_OR_RETURN(bool done, test(win));
    *flag = done ? 1 : 0;
    return {};
  });
}
int rma_win_lock(int lock_type, int rank, int assert_, rma_Win win) {
  return win_call(win, "rma_win_lock", [&] { return lock(win, lock_type, rank, assert_); });
}
int rma_win_lock_all(int assert_, rma_Win win) {
  return win_call(win, "rma_win_lock_all", [&] { return lock_all(win, assert_); });
}
int rma_win_unlock(int rank, rma_Win win) {
  return win_call(win, "rma_win_unlock", [&] { return unlock(win, rank); });
}
int rma_win_unlock_all(rma_Win win) {
  return win_call(win, "rma_win_unlock_all", [&] { return unlock_all(win); });
}
int rma_win_flush(int rank, rma_Win win) {
  ApiCallLock serialized;
  // Shortcut: a live window of this thread with a passive epoch to `rank`
  // nothing failed and no accumulates recorded (accumulate_ordering=none).
  // Everything else (errors too) takes the checked path.
  if (owned_window(win) && win->flavor != RMA_WIN_FLAVOR_DYNAMIC &&
      (!win->deferred || win->deferred->empty()) &&
      static_cast<std::size_t>(rank) < win->locks.size() &&
      (win->lock_all || win->locks[static_cast<std::size_t>(rank)] != 0) &&
      win->endpoint(rank).flush() == StatusCode::kOk) [[likely]] {
    return RMA_SUCCESS;
  }
  return win_call(win, "rma_win_flush", [&] { return flush(win, "rma_win_flush", rank); });
}
int rma_win_flush_all(rma_Win win) {
  return win_call(win, "rma_win_flush_all", [&] { return flush_all(win, "rma_win_flush_all"); });
}
// Local completion: origin and result buffers free; inline puts need no acknowledgement.
int rma_win_flush_local(int rank, rma_Win win) {
  return win_call(win, "rma_win_flush_local", [&] { return flush(win, "rma_win_flush_local", rank, FlushScope::kLocal); });
}
int rma_win_flush_local_all(rma_Win win) {
  return win_call(win, "rma_win_flush_local_all", [&] { return flush_all(win, "rma_win_flush_local_all", FlushScope::kLocal); });
}
int rma_win_sync(rma_Win win) {
  return win_call(win, "rma_win_sync", [&]() -> Status {
    // A full barrier between this rank's loads/stores of its window and the
    // NIC's (a locked RMW; ThreadSanitizer understands it, unlike a fence),
    // then progress: a software NIC writes the window on its own thread
    // under the device lock, which progress() takes, so later loads are
    // ordered after everything it wrote so far.
    static std::atomic<int> barrier_word{0};
    barrier_word.fetch_add(0, std::memory_order_seq_cst);
    if (win->ctx->eps().progress() < 0) return class_error(RMA_ERR_OTHER, "the completion queue overran");
    return {};
  });
}

// ------------------------------------------------------------------ error handling

int rma_win_create_errhandler(rma_Win_errhandler_function* function, rma_Errhandler* errhandler) {
  return run(nullptr, "rma_win_create_errhandler", [&]() -> Status {
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
    if (!valid_handler(errhandler)) return arg_error("errhandler is not an error handler");
    if (!predefined_handler(errhandler) && errhandler->fn == nullptr) {
      return arg_error("errhandler was made by rma_comm_create_errhandler; windows take one from "
                       "rma_win_create_errhandler");
    }
    if (!predefined_handler(errhandler)) errhandler->refs.fetch_add(1, std::memory_order_relaxed);
    release_handler(win->errhandler);
    win->errhandler = errhandler;
    return {};
  });
}

int rma_win_get_errhandler(rma_Win win, rma_Errhandler* errhandler) {
  return win_call(win, "rma_win_get_errhandler", [&]() -> Status {
    if (errhandler == nullptr) return arg_error("errhandler is null");
    if (!predefined_handler(win->errhandler)) win->errhandler->refs.fetch_add(1, std::memory_order_relaxed);
    *errhandler = win->errhandler;
    return {};
  });
}

int rma_win_call_errhandler(rma_Win win, int errorcode) {
  if (!live_window(win)) return run(nullptr, "rma_win_call_errhandler", [] { return class_error(RMA_ERR_WIN, "win is not a window"); });
  return raise(win, "rma_win_call_errhandler",
               class_error(errorcode, "raised by the program with error code " + std::to_string(errorcode)));
}

int rma_errhandler_free(rma_Errhandler* errhandler) {
  return run(nullptr, "rma_errhandler_free", [&]() -> Status {
    if (errhandler == nullptr || !valid_handler(*errhandler)) return arg_error("errhandler is not an error handler");
    release_handler(*errhandler);
    *errhandler = RMA_ERRHANDLER_NULL;
    return {};
  });
}

// rma_comm_set_errhandler, rma_comm_get_errhandler: comm/comm_c_api.cpp.

int rma_error_class(int errorcode, int* errorclass) {
  return run(nullptr, "rma_error_class", [&]() -> Status {
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
