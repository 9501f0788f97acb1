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

#include "datatype/datatype.hpp"
#include "datatype/errors.hpp"
#include "rma/log.hpp"
#include "rma/rma.h"
#include "window/context.hpp"
#include "window/info.hpp"
#include "window/testing.hpp"
#include "window/window.hpp"

struct rma_comm_s rma_comm_world_ = {0};
struct rma_comm_s rma_comm_self_ = {1};

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
int raise(rma_win_s* win, const char* call, const Status& s) {
  int code = error_code(s);
  Context* ctx = current_context();
  const char* cls = error_class_name(code);
  std::string msg = std::string(call) + " on rank " +
                    (ctx != nullptr ? std::to_string(ctx->rank()) : std::string("?")) + ": " +
                    (cls != nullptr ? cls : "RMA_ERR_UNKNOWN") + ": " + std::string(error_detail(s));
  set_last_error_message(msg);
  rma_Errhandler eh = RMA_ERRORS_ARE_FATAL;
  if (live_window(win)) eh = win->errhandler;
  else if (ctx != nullptr) eh = ctx->comm_errhandler;
  if (eh == RMA_ERRORS_RETURN) return code;
  if (!predefined_handler(eh)) {
    rma_Win w = win;
    eh->fn(&w, &code);
    return code;
  }
  std::fprintf(stderr, "librma: fatal error: %s\n", msg.c_str());
  std::fflush(stderr);
  if (ctx != nullptr) ctx->bootstrap().abort(code == 0 ? 1 : code, msg);
  std::abort();
}

Status not_initialized() {
  return class_error(RMA_ERR_OTHER, "librma is not initialized on this thread: call rma_init first");
}

template <typename F>
int run(rma_win_s* win, const char* call, F&& f) {
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
  if (s.ok()) [[likely]] return RMA_SUCCESS;
  return raise(win, call, s);
}

Result<Context*> context() {
  Context* c = current_context();
  if (c == nullptr) return not_initialized();
  return c;
}

Status check_comm(rma_Comm comm) {
  if (comm == RMA_COMM_WORLD) return {};
  if (comm == RMA_COMM_SELF) {
    return class_error(RMA_ERR_COMM, "RMA_COMM_SELF cannot carry windows here; use RMA_COMM_WORLD");
  }
  return class_error(RMA_ERR_COMM, comm == nullptr ? "comm is RMA_COMM_NULL" : "comm is not a communicator");
}

// Checks the creation arguments and reads the hints of `info` into `hints`.
Status check_create_args(rma_Aint size, int disp_unit, rma_Info info, rma_Comm comm, rma_Win* win,
                         WindowHints& hints) {
  RMA_RETURN_IF_ERROR(check_comm(comm));
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

void fill_status(rma_Status* st, int source, int error) {
  if (st == RMA_STATUS_IGNORE) return;
  st->RMA_SOURCE = source;
  st->RMA_TAG = -1;
  st->RMA_ERROR = error;
}

// Completes *request (done or failed): the Status to report, and frees it.
Status finish_request(rma_Request* request, rma_Status* st) {
  rma_request_s* r = *request;
  Context* ctx = current_context();
  Status s;
  if (r->req.failed()) {
    s = class_error(RMA_ERR_OTHER, "the operation to rank " + std::to_string(r->req.error_peer) +
                                       " failed: " + endpoint::describe_error(r->req.error, r->req.vendor_err));
  }
  fill_status(st, r->target, error_code(s));
  ctx->release_request(r);
  *request = RMA_REQUEST_NULL;
  return s;
}

Status check_request(rma_request_s* r) {
  if (r->magic != rma_request_s::kMagic || !r->active) {
    return class_error(RMA_ERR_REQUEST, "the handle is not an active request (already completed or corrupt)");
  }
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

template <typename F>
int request_op(rma_Win win, const char* call, rma_Request* request, int target, F&& f) {
  return win_call(win, call, [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_request_ptr(request));
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
int init_thread(std::unique_ptr<Bootstrap> bootstrap, std::string_view provider) {
  return run(nullptr, "rma_init", [&]() -> Status {
    if (current_context() != nullptr) return class_error(RMA_ERR_OTHER, "librma is already initialized on this thread");
    InitOptions o;
    o.provider = std::string(provider);
    auto c = Context::create(std::move(bootstrap), o);
    if (!c.ok()) return class_error(RMA_ERR_OTHER, c.status().to_string());
    set_thread_context(std::move(c).value());
    return {};
  });
}
}  // namespace testing

}  // namespace rma::api

using namespace rma::api;  // NOLINT
using rma::Result;
using rma::Status;
using rma::StatusCode;

extern "C" {

// ------------------------------------------------------------------ processes

int rma_init(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  return run(nullptr, "rma_init", [&]() -> Status {
    if (current_context() != nullptr) return class_error(RMA_ERR_OTHER, "librma is already initialized");
    if (process_finalized()) {
      return class_error(RMA_ERR_OTHER, "rma_init after rma_finalize: librma starts once per process (as MPI)");
    }
    auto bs = rma::open_bootstrap();
    if (!bs.ok()) return class_error(RMA_ERR_OTHER, "no bootstrap: " + bs.status().to_string());
    auto c = Context::create(std::move(bs).value(), InitOptions{});
    if (!c.ok()) return class_error(RMA_ERR_OTHER, c.status().to_string());
    set_process_context(std::move(c).value());
    return {};
  });
}

int rma_finalize(void) {
  return run(nullptr, "rma_finalize", [&]() -> Status {
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

int rma_comm_rank(rma_Comm comm, int* rank) {
  return run(nullptr, "rma_comm_rank", [&]() -> Status {
    RMA_ASSIGN_OR_RETURN(Context * c, context());
    if (comm != RMA_COMM_WORLD && comm != RMA_COMM_SELF) RMA_RETURN_IF_ERROR(check_comm(comm));
    if (rank == nullptr) return arg_error("rank is null");
    *rank = comm == RMA_COMM_SELF ? 0 : c->rank();
    return {};
  });
}

int rma_comm_size(rma_Comm comm, int* size) {
  return run(nullptr, "rma_comm_size", [&]() -> Status {
    RMA_ASSIGN_OR_RETURN(Context * c, context());
    if (comm != RMA_COMM_WORLD && comm != RMA_COMM_SELF) RMA_RETURN_IF_ERROR(check_comm(comm));
    if (size == nullptr) return arg_error("size is null");
    *size = comm == RMA_COMM_SELF ? 1 : c->size();
    return {};
  });
}

int rma_barrier(rma_Comm comm) {
  return run(nullptr, "rma_barrier", [&]() -> Status {
    RMA_ASSIGN_OR_RETURN(Context * c, context());
    if (comm == RMA_COMM_SELF) return {};
    RMA_RETURN_IF_ERROR(check_comm(comm));
    // Progress on both sides of the barrier, as rma_win_sync does: a
    // software NIC reads and writes windows on its own thread under the
    // device lock, and these make this rank's stores before the barrier
    // visible to it and its writes visible to loads after. (MPI asks for
    // rma_win_sync here; doing it anyway costs two polls.)
    if (c->eps().progress() < 0) return class_error(RMA_ERR_OTHER, "the completion queue overran");
    Status b = c->bootstrap().barrier();
    if (!b.ok()) return class_error(RMA_ERR_OTHER, b.message());
    if (c->eps().progress() < 0) return class_error(RMA_ERR_OTHER, "the completion queue overran");
    return {};
  });
}

// ------------------------------------------------------------------ groups

int rma_comm_group(rma_Comm comm, rma_Group* group) {
  return run(nullptr, "rma_comm_group", [&]() -> Status {
    RMA_ASSIGN_OR_RETURN(Context * c, context());
    if (comm != RMA_COMM_WORLD && comm != RMA_COMM_SELF) RMA_RETURN_IF_ERROR(check_comm(comm));
    if (group == nullptr) return arg_error("group is null");
    auto g = std::make_unique<rma_group_s>();
    if (comm == RMA_COMM_SELF) {
      g->ranks.push_back(c->rank());
    } else {
      for (int r = 0; r < c->size(); ++r) g->ranks.push_back(r);
    }
    *group = g.release();
    return {};
  });
}

int rma_group_incl(rma_Group group, int n, const int ranks[], rma_Group* newgroup) {
  return run(nullptr, "rma_group_incl", [&]() -> Status {
    if (group == nullptr || group->magic != rma_group_s::kMagic) return class_error(RMA_ERR_GROUP, "group is not a group");
    if (n < 0) return count_error("n " + std::to_string(n) + " is negative");
    if (ranks == nullptr && n > 0) return arg_error("ranks is null");
    if (newgroup == nullptr) return arg_error("newgroup is null");
    auto g = std::make_unique<rma_group_s>();
    const int gs = static_cast<int>(group->ranks.size());
    for (int i = 0; i < n; ++i) {
      if (ranks[i] < 0 || ranks[i] >= gs) {
        return class_error(RMA_ERR_RANK, "ranks[" + std::to_string(i) + "] = " + std::to_string(ranks[i]) +
                                             " is not a rank of the group (size " + std::to_string(gs) + ")");
      }
      const int world = group->ranks[static_cast<std::size_t>(ranks[i])];
      if (std::find(g->ranks.begin(), g->ranks.end(), world) != g->ranks.end()) {
        return class_error(RMA_ERR_RANK, "ranks[" + std::to_string(i) + "] = " + std::to_string(ranks[i]) + " appears twice");
      }
      g->ranks.push_back(world);
    }
    *newgroup = g.release();
    return {};
  });
}

int rma_group_size(rma_Group group, int* size) {
  return run(nullptr, "rma_group_size", [&]() -> Status {
    if (group == nullptr || group->magic != rma_group_s::kMagic) return class_error(RMA_ERR_GROUP, "group is not a group");
    if (size == nullptr) return arg_error("size is null");
    *size = static_cast<int>(group->ranks.size());
    return {};
  });
}

int rma_group_rank(rma_Group group, int* rank) {
  return run(nullptr, "rma_group_rank", [&]() -> Status {
    RMA_ASSIGN_OR_RETURN(Context * c, context());
    if (group == nullptr || group->magic != rma_group_s::kMagic) return class_error(RMA_ERR_GROUP, "group is not a group");
    if (rank == nullptr) return arg_error("rank is null");
    auto it = std::find(group->ranks.begin(), group->ranks.end(), c->rank());
    *rank = it == group->ranks.end() ? RMA_UNDEFINED_RANK : static_cast<int>(it - group->ranks.begin());
    return {};
  });
}

int rma_group_free(rma_Group* group) {
  return run(nullptr, "rma_group_free", [&]() -> Status {
    if (group == nullptr || *group == nullptr || (*group)->magic != rma_group_s::kMagic) {
      return class_error(RMA_ERR_GROUP, "group is not a group");
    }
    (*group)->magic = 0;
    delete *group;
    *group = RMA_GROUP_NULL;
    return {};
  });
}

// ------------------------------------------------------------------ windows

int rma_win_create(void* base, rma_Aint size, int disp_unit, rma_Info info, rma_Comm comm,
                   rma_Win* win) {
  return run(nullptr, "rma_win_create", [&]() -> Status {
    RMA_ASSIGN_OR_RETURN(Context * c, context());
    WindowHints hints;
    RMA_RETURN_IF_ERROR(check_create_args(size, disp_unit, info, comm, win, hints));
    if (base == nullptr && size > 0) return class_error(RMA_ERR_BASE, "base is null but size is " + std::to_string(size));
    RMA_ASSIGN_OR_RETURN(*win, create_window(*c, RMA_WIN_FLAVOR_CREATE, base, size, disp_unit));
    (*win)->hints = std::move(hints);
    return {};
  });
}

int rma_win_allocate(rma_Aint size, int disp_unit, rma_Info info, rma_Comm comm, void* baseptr,
                     rma_Win* win) {
  return run(nullptr, "rma_win_allocate", [&]() -> Status {
    RMA_ASSIGN_OR_RETURN(Context * c, context());
    WindowHints hints;
    RMA_RETURN_IF_ERROR(check_create_args(size, disp_unit, info, comm, win, hints));
    if (baseptr == nullptr) return arg_error("baseptr is null");
    RMA_ASSIGN_OR_RETURN(rma_win_s * w, create_window(*c, RMA_WIN_FLAVOR_ALLOCATE, nullptr, size, disp_unit));
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
    RMA_RETURN_IF_ERROR(check_create_args(0, 1, info, comm, win, hints));
    RMA_ASSIGN_OR_RETURN(*win, create_window(*c, RMA_WIN_FLAVOR_DYNAMIC, nullptr, 0, 1));
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
  return run(w, "rma_win_free", [&]() -> Status {
    if (current_context() == nullptr) return not_initialized();
    if (win == nullptr) return arg_error("win is null");
    RMA_RETURN_IF_ERROR(check_window(*win));
    RMA_RETURN_IF_ERROR(check_free(*win));
    const rma_Errhandler eh = (*win)->errhandler;
    Status s = free_window(*win);
    *win = RMA_WIN_NULL;
    w = nullptr;
    release_handler(eh);
    return s;
  });
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
      default:
        return class_error(RMA_ERR_KEYVAL, "win_keyval " + std::to_string(win_keyval) +
                                               " is not RMA_WIN_BASE, _SIZE, _DISP_UNIT, _CREATE_FLAVOR or _MODEL");
    }
    *static_cast<void**>(attribute_val) = v;
    *flag = 1;
    return {};
  });
}

int rma_win_get_group(rma_Win win, rma_Group* group) {
  return win_call(win, "rma_win_get_group", [&]() -> Status {
    if (group == nullptr) return arg_error("group is null");
    auto g = std::make_unique<rma_group_s>();
    for (int r = 0; r < static_cast<int>(win->peers.size()); ++r) g->ranks.push_back(r);
    *group = g.release();
    return {};
  });
}

int rma_win_set_info(rma_Win win, rma_Info info) {
  return win_call(win, "rma_win_set_info", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_info_handle(info, true));
    WindowHints h = win->hints;
    RMA_RETURN_IF_ERROR(apply_window_hints(info, h));
    const bool locked = win->lock_all || std::any_of(win->locks.begin(), win->locks.end(),
                                                     [](std::uint8_t l) { return l != 0; });
    if (h.no_locks && locked) {
      return class_error(RMA_ERR_RMA_SYNC, "no_locks=true while a lock or lock_all epoch is open on this window");
    }
    win->hints = std::move(h);
    return {};
  });
}

int rma_win_get_info(rma_Win win, rma_Info* info_used) {
  return win_call(win, "rma_win_get_info", [&]() -> Status {
    if (info_used == nullptr) return arg_error("info_used is null");
    auto info = std::make_unique<rma_info_s>();
    window_hints_to_info(win->hints, *info);
    *info_used = info.release();
    return {};
  });
}

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

int rma_wait(rma_Request* request, rma_Status* status) {
  return run(nullptr, "rma_wait", [&]() -> Status {
    RMA_ASSIGN_OR_RETURN(Context * c, context());
    RMA_RETURN_IF_ERROR(check_request_ptr(request));
    if (*request == RMA_REQUEST_NULL) {
      fill_status(status, RMA_PROC_NULL, RMA_SUCCESS);
      return {};
    }
    RMA_RETURN_IF_ERROR(check_request(*request));
    const StatusCode rc = c->eps().wait((*request)->req);
    if (rc != StatusCode::kOk) {
      return class_error(RMA_ERR_OTHER, "the request did not complete within RMA_WAIT_TIMEOUT_MS (" +
                                            std::string(status_code_name(rc)) + ")");
    }
    return finish_request(request, status);
  });
}

int rma_test(rma_Request* request, int* flag, rma_Status* status) {
  return run(nullptr, "rma_test", [&]() -> Status {
    RMA_ASSIGN_OR_RETURN(Context * c, context());
    RMA_RETURN_IF_ERROR(check_request_ptr(request));
    if (flag == nullptr) return arg_error("flag is null");
    if (*request == RMA_REQUEST_NULL) {
      *flag = 1;
      fill_status(status, RMA_PROC_NULL, RMA_SUCCESS);
      return {};
    }
    RMA_RETURN_IF_ERROR(check_request(*request));
    if (!(*request)->req.done()) (void)c->eps().progress();
    if (!(*request)->req.done()) {
      *flag = 0;
      return {};
    }
    *flag = 1;
    return finish_request(request, status);
  });
}

int rma_waitall(int count, rma_Request requests[], rma_Status statuses[]) {
  if (count < 0) return run(nullptr, "rma_waitall", [&] { return count_error("count " + std::to_string(count) + " is negative"); });
  if (requests == nullptr && count > 0) return run(nullptr, "rma_waitall", [] { return arg_error("requests is null"); });
  int worst = RMA_SUCCESS;
  for (int i = 0; i < count; ++i) {
    const int rc = rma_wait(&requests[i], statuses == RMA_STATUSES_IGNORE ? RMA_STATUS_IGNORE : &statuses[i]);
    if (rc != RMA_SUCCESS && worst == RMA_SUCCESS) worst = rc;
  }
  return worst;
}

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
  // Shortcut: a live window of this thread with a passive epoch to `rank`
  // and nothing failed. Everything else (errors too) takes the checked path.
  if (owned_window(win) && win->flavor != RMA_WIN_FLAVOR_DYNAMIC &&
      static_cast<std::size_t>(rank) < win->locks.size() &&
      (win->lock_all || win->locks[static_cast<std::size_t>(rank)] != 0) &&
      win->ctx->eps().endpoint(rank).flush() == StatusCode::kOk) [[likely]] {
    return RMA_SUCCESS;
  }
  return win_call(win, "rma_win_flush", [&] { return flush(win, "rma_win_flush", rank); });
}
int rma_win_flush_all(rma_Win win) {
  return win_call(win, "rma_win_flush_all", [&] { return flush_all(win, "rma_win_flush_all"); });
}
// Local completion is delivered as remote completion (stronger, as MPI allows).
int rma_win_flush_local(int rank, rma_Win win) {
  return win_call(win, "rma_win_flush_local", [&] { return flush(win, "rma_win_flush_local", rank); });
}
int rma_win_flush_local_all(rma_Win win) {
  return win_call(win, "rma_win_flush_local_all", [&] { return flush_all(win, "rma_win_flush_local_all"); });
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

int rma_comm_set_errhandler(rma_Comm comm, rma_Errhandler errhandler) {
  return run(nullptr, "rma_comm_set_errhandler", [&]() -> Status {
    RMA_ASSIGN_OR_RETURN(Context * c, context());
    if (comm != RMA_COMM_WORLD) return class_error(RMA_ERR_COMM, "only RMA_COMM_WORLD has an error handler");
    if (!predefined_handler(errhandler)) {
      return arg_error("RMA_COMM_WORLD takes RMA_ERRORS_ARE_FATAL, RMA_ERRORS_RETURN or RMA_ERRORS_ABORT");
    }
    c->comm_errhandler = errhandler;
    return {};
  });
}

int rma_comm_get_errhandler(rma_Comm comm, rma_Errhandler* errhandler) {
  return run(nullptr, "rma_comm_get_errhandler", [&]() -> Status {
    RMA_ASSIGN_OR_RETURN(Context * c, context());
    if (comm != RMA_COMM_WORLD) return class_error(RMA_ERR_COMM, "only RMA_COMM_WORLD has an error handler");
    if (errhandler == nullptr) return arg_error("errhandler is null");
    *errhandler = c->comm_errhandler;
    return {};
  });
}

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
