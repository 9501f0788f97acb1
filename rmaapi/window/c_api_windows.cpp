// The C functions of <rma/rma.h> that make, free and describe windows
// (MPI 4.x 12.2, 12.2.6): create, allocate, allocate_shared, shared_query,
// create_dynamic, attach, detach, free, get_attr on the predefined keyvals,
// get_group.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "window/c_call.hpp"

using namespace rma::api;  // NOLINT
using rma::Result;
using rma::Status;
using rma::StatusCode;

namespace {

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

}  // namespace

extern "C" {

int rma_win_create(void* base, rma_Aint size, int disp_unit, rma_Info info, rma_Comm comm,
                   rma_Win* win) {
  return run_window_call(nullptr, "rma_win_create", [&]() -> Status {
    RMA_ASSIGN_OR_RETURN(Context * c, context());
    WindowHints hints;
    rma_comm_s* on = nullptr;
    RMA_RETURN_IF_ERROR(check_create_args(*c, size, disp_unit, info, comm, win, hints, on));
    if (base == nullptr && size > 0) return class_error(RMA_ERR_BASE, "base is null but size is " + std::to_string(size));
    RMA_ASSIGN_OR_RETURN(*win, create_window(*c, *on, RMA_WIN_FLAVOR_CREATE, base, size, disp_unit, hints));
    return {};
  });
}

namespace {
// rma_win_allocate and rma_win_allocate_shared: librma allocates the memory
// (of `flavor`) and returns its base through baseptr.
int allocate_window(const char* call, int flavor, rma_Aint size, int disp_unit, rma_Info info, rma_Comm comm,
                    void* baseptr, rma_Win* win) {
  return run_window_call(nullptr, call, [&]() -> Status {
    RMA_ASSIGN_OR_RETURN(Context * c, context());
    WindowHints hints;
    rma_comm_s* on = nullptr;
    RMA_RETURN_IF_ERROR(check_create_args(*c, size, disp_unit, info, comm, win, hints, on));
    if (baseptr == nullptr) return arg_error("baseptr is null");
    RMA_ASSIGN_OR_RETURN(rma_win_s * w, create_window(*c, *on, flavor, nullptr, size, disp_unit, hints));
    *static_cast<void**>(baseptr) = w->base;
    *win = w;
    return {};
  });
}
}  // namespace

int rma_win_allocate(rma_Aint size, int disp_unit, rma_Info info, rma_Comm comm, void* baseptr,
                     rma_Win* win) {
  return allocate_window("rma_win_allocate", RMA_WIN_FLAVOR_ALLOCATE, size, disp_unit, info, comm, baseptr, win);
}

int rma_win_create_dynamic(rma_Info info, rma_Comm comm, rma_Win* win) {
  return run_window_call(nullptr, "rma_win_create_dynamic", [&]() -> Status {
    RMA_ASSIGN_OR_RETURN(Context * c, context());
    WindowHints hints;
    rma_comm_s* on = nullptr;
    RMA_RETURN_IF_ERROR(check_create_args(*c, 0, 1, info, comm, win, hints, on));
    RMA_ASSIGN_OR_RETURN(*win, create_window(*c, *on, RMA_WIN_FLAVOR_DYNAMIC, nullptr, 0, 1, hints));
    return {};
  });
}

int rma_win_allocate_shared(rma_Aint size, int disp_unit, rma_Info info, rma_Comm comm, void* baseptr,
                            rma_Win* win) {
  return allocate_window("rma_win_allocate_shared", RMA_WIN_FLAVOR_SHARED, size, disp_unit, info, comm, baseptr,
                         win);
}

int rma_win_shared_query(rma_Win win, int rank, rma_Aint* size, int* disp_unit, void* baseptr) {
  return win_call(win, "rma_win_shared_query", [&]() -> Status {
    if (win->flavor != RMA_WIN_FLAVOR_SHARED) {
      return class_error(RMA_ERR_RMA_FLAVOR, "the window was not made by rma_win_allocate_shared (flavor " +
                                                 std::to_string(win->flavor) + "): its memory is not shared");
    }
    const int n = static_cast<int>(win->peers.size());
    if (rank != RMA_PROC_NULL && (rank < 0 || rank >= n)) {
      return class_error(RMA_ERR_RANK, "rank " + std::to_string(rank) +
                                           " is neither RMA_PROC_NULL nor a rank of the window's group (size " +
                                           std::to_string(n) + ")");
    }
    if (size == nullptr || disp_unit == nullptr || baseptr == nullptr) {
      return arg_error("size, disp_unit or baseptr is null");
    }
    int r = rank;
    if (r == RMA_PROC_NULL) {
      // The lowest rank with memory; none: size 0 and NULL (MPI 4.x 12.2.3).
      r = -1;
      for (int t = 0; t < n && r < 0; ++t) {
        if (win->peers[static_cast<std::size_t>(t)].size > 0) r = t;
      }
      if (r < 0) {
        *size = 0;
        *disp_unit = win->disp_unit;
        *static_cast<void**>(baseptr) = nullptr;
        return {};
      }
    }
    const PeerWindow& p = win->peers[static_cast<std::size_t>(r)];
    *size = static_cast<rma_Aint>(p.size);
    *disp_unit = p.disp_unit;
    *static_cast<void**>(baseptr) = p.size > 0 ? p.mapped : nullptr;
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
    ~ReleaseAfterRaise() { release_errhandler(eh); }
  } release_after{freed_eh};
  Status s;
  {
    ApiCallLock serialized;  // RMA_THREAD_MULTIPLE; the handler runs outside it
    s = guarded_status([&]() -> Status {
      if (current_context() == nullptr) return not_initialized_error();
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
  if (freed_eh != nullptr) return raise_window_error(nullptr, "rma_win_free", s, freed_eh);
  return raise_window_error(w, "rma_win_free", s);
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

}  // extern "C"
