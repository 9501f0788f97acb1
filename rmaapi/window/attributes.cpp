// Window attributes, names and info (MPI 4.x 7.7.3, 7.8, 12.2.7):
// rma_win_create_keyval / free_keyval / set_attr / delete_attr (get_attr,
// which also answers the predefined keys, is in c_api_windows.cpp and calls
// find_window_attribute), rma_win_set_name / get_name, and rma_win_set_info
// (collective) / get_info.
//
// Keyvals are process-wide (any thread's windows may use one), numbered from
// kFirstKeyval so they never collide with the predefined RMA_WIN_* keys. A
// freed keyval stays known (as "freed") while windows still hold
// attributes of it; their delete callbacks still run, as MPI requires.
#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "comm/collectives.hpp"
#include "datatype/errors.hpp"
#include "window/c_call.hpp"
#include "window/info.hpp"
#include "window/window.hpp"

namespace rma::api {
namespace {

constexpr int kFirstKeyval = 100;

struct Keyval {
  rma_Win_copy_attr_function* copy = nullptr;
  rma_Win_delete_attr_function* del = nullptr;
  void* extra_state = nullptr;
  int users = 0;       // attributes set with it, on any window
  bool freed = false;  // rma_win_free_keyval was called
};

struct Keyvals {
  std::mutex mu;
  std::map<int, Keyval> by_id;
  int next = kFirstKeyval;
};
Keyvals& keyvals() {
  static Keyvals* k = new Keyvals;  // never destroyed: used until exit
  return *k;
}

// A copy of a live keyval's callbacks (nothing is called under the lock).
Status find_keyval(int id, Keyval& out) {
  Keyvals& k = keyvals();
  std::lock_guard<std::mutex> lock(k.mu);
  auto it = k.by_id.find(id);
  if (it == k.by_id.end() || it->second.freed) {
    return class_error(RMA_ERR_KEYVAL, "win_keyval " + std::to_string(id) +
                                           " is not a keyval made by rma_win_create_keyval (or it was freed)");
  }
  out = it->second;
  return {};
}

void adjust_users(int id, int delta) {
  Keyvals& k = keyvals();
  std::lock_guard<std::mutex> lock(k.mu);
  auto it = k.by_id.find(id);
  if (it == k.by_id.end()) return;
  it->second.users += delta;
  if (it->second.freed && it->second.users == 0) k.by_id.erase(it);
}

// Runs the delete callback of one attribute (MPI: its error fails the call).
Status run_delete(rma_win_s* win, int id, void* value) {
  rma_Win_delete_attr_function* del = nullptr;
  void* extra = nullptr;
  {
    Keyvals& k = keyvals();
    std::lock_guard<std::mutex> lock(k.mu);
    auto it = k.by_id.find(id);
    if (it != k.by_id.end()) {
      del = it->second.del;
      extra = it->second.extra_state;
    }
  }
  if (del == nullptr) return {};
  const int rc = del(win, id, value, extra);
  if (rc != RMA_SUCCESS) {
    return class_error(rc > 0 && error_class_name(rc) != nullptr ? rc : RMA_ERR_OTHER,
                       "the delete callback of keyval " + std::to_string(id) + " returned " + std::to_string(rc));
  }
  return {};
}

Status check_out(const void* p, const char* name) {
  if (p == nullptr) return arg_error(std::string(name) + " is null");
  return {};
}


// What every rank must agree on for rma_win_set_info to be collective in
// substance: the hints that change how operations run.
std::string behaviour_hints(const WindowHints& h) {
  return std::string(h.no_locks ? "1" : "0") + "|" + h.accumulate_ordering + "|" + h.accumulate_ops;
}

}  // namespace

Result<bool> find_window_attribute(rma_win_s* win, int keyval, void** value) {
  {
    Keyvals& k = keyvals();
    std::lock_guard<std::mutex> lock(k.mu);
    if (k.by_id.count(keyval) == 0) {
      return class_error(RMA_ERR_KEYVAL, "win_keyval " + std::to_string(keyval) +
                                             " is not a predefined key nor one made by rma_win_create_keyval");
    }
  }
  for (const auto& a : win->attributes) {
    if (a.first == keyval) {
      *value = a.second;
      return true;
    }
  }
  return false;
}

Status delete_window_attributes(rma_win_s* win) {
  // In reverse order of setting; one failing callback stops the free.
  while (!win->attributes.empty()) {
    const auto [id, value] = win->attributes.back();
    RMA_RETURN_IF_ERROR(run_delete(win, id, value));
    win->attributes.pop_back();
    adjust_users(id, -1);
  }
  return {};
}

}  // namespace rma::api

using namespace rma::api;  // NOLINT
using rma::Status;

extern "C" {

int rma_win_create_keyval(rma_Win_copy_attr_function* win_copy_attr_fn,
                          rma_Win_delete_attr_function* win_delete_attr_fn, int* win_keyval,
                          void* extra_state) {
  return world_call("rma_win_create_keyval", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_out(win_keyval, "win_keyval"));
    Keyvals& k = keyvals();
    std::lock_guard<std::mutex> lock(k.mu);
    const int id = k.next++;
    k.by_id[id] = Keyval{win_copy_attr_fn, win_delete_attr_fn, extra_state, 0, false};
    *win_keyval = id;
    return {};
  });
}

int rma_win_free_keyval(int* win_keyval) {
  return world_call("rma_win_free_keyval", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_out(win_keyval, "win_keyval"));
    Keyvals& k = keyvals();
    std::lock_guard<std::mutex> lock(k.mu);
    auto it = k.by_id.find(*win_keyval);
    if (it == k.by_id.end() || it->second.freed) {
      return class_error(RMA_ERR_KEYVAL, "win_keyval " + std::to_string(*win_keyval) +
                                             " is not a keyval made by rma_win_create_keyval (or it was freed)");
    }
    if (it->second.users == 0) {
      k.by_id.erase(it);
    } else {
      it->second.freed = true;  // attributes keep it until they are deleted
    }
    *win_keyval = RMA_KEYVAL_INVALID;
    return {};
  });
}

int rma_win_set_attr(rma_Win win, int win_keyval, void* attribute_val) {
  return win_call(win, "rma_win_set_attr", [&]() -> Status {
    Keyval kv;
    RMA_RETURN_IF_ERROR(find_keyval(win_keyval, kv));
    for (auto& a : win->attributes) {
      if (a.first == win_keyval) {
        // Replacing runs the delete callback on the old value first.
        RMA_RETURN_IF_ERROR(run_delete(win, win_keyval, a.second));
        a.second = attribute_val;
        return {};
      }
    }
    win->attributes.emplace_back(win_keyval, attribute_val);
    adjust_users(win_keyval, +1);
    return {};
  });
}

int rma_win_delete_attr(rma_Win win, int win_keyval) {
  return win_call(win, "rma_win_delete_attr", [&]() -> Status {
    Keyval kv;
    RMA_RETURN_IF_ERROR(find_keyval(win_keyval, kv));
    auto it = std::find_if(win->attributes.begin(), win->attributes.end(),
                           [&](const auto& a) { return a.first == win_keyval; });
    if (it == win->attributes.end()) {
      return class_error(RMA_ERR_KEYVAL, "the window has no attribute for keyval " + std::to_string(win_keyval));
    }
    RMA_RETURN_IF_ERROR(run_delete(win, win_keyval, it->second));
    win->attributes.erase(it);
    adjust_users(win_keyval, -1);
    return {};
  });
}

int rma_win_set_name(rma_Win win, const char* win_name) {
  return win_call(win, "rma_win_set_name", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_out(win_name, "win_name"));
    const std::size_t n = std::strlen(win_name);
    if (n >= RMA_MAX_OBJECT_NAME) {
      return arg_error("win_name has " + std::to_string(n) + " characters; at most " +
                       std::to_string(RMA_MAX_OBJECT_NAME - 1) + " fit");
    }
    win->name = win_name;
    return {};
  });
}

int rma_win_get_name(rma_Win win, char* win_name, int* resultlen) {
  return win_call(win, "rma_win_get_name", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_out(win_name, "win_name"));
    RMA_RETURN_IF_ERROR(check_out(resultlen, "resultlen"));
    std::memcpy(win_name, win->name.c_str(), win->name.size() + 1);
    *resultlen = static_cast<int>(win->name.size());
    return {};
  });
}

int rma_win_set_info(rma_Win win, rma_Info info) {
  return win_call(win, "rma_win_set_info", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_info_handle(info, true));
    WindowHints h = win->hints;
    Status local = apply_window_hints(info, h);
    // The memory's layout was chosen at creation; the hint cannot move it.
    h.alloc_shared_noncontig = win->hints.alloc_shared_noncontig;
    const bool locked = win->lock_all || std::any_of(win->locks.begin(), win->locks.end(),
                                                     [](std::uint8_t l) { return l != 0; });
    if (local.ok() && h.no_locks && locked) {
      local = class_error(RMA_ERR_RMA_SYNC, "no_locks=true while a lock or lock_all epoch is open on this window");
    }
    // Collective (MPI 4.x 12.2.7): every rank learns whether all could
    // apply the hints and whether they agree on those that change how
    // operations run, and all apply them or none does.
    const std::string mine = (local.ok() ? "ok|" : "bad|") + behaviour_hints(h);
    RMA_ASSIGN_OR_RETURN(auto all, comm_allgather(*win->ctx, win->comm,
                                                  {reinterpret_cast<const std::uint8_t*>(mine.data()), mine.size()}));
    RMA_RETURN_IF_ERROR(local);
    for (std::size_t r = 0; r < all.size(); ++r) {
      const std::string theirs(all[r].begin(), all[r].end());
      if (theirs.rfind("bad|", 0) == 0) {
        return class_error(RMA_ERR_INFO_VALUE, "rank " + std::to_string(r) + " of the window could not apply its hints");
      }
      if (theirs != mine) {
        return class_error(RMA_ERR_INFO_VALUE, "rank " + std::to_string(r) +
                                                   " set other no_locks/accumulate_ordering/accumulate_ops hints (" +
                                                   theirs.substr(3) + ") than this rank (" + mine.substr(3) + ")");
      }
    }
    win->hints = std::move(h);
    return {};
  });
}

int rma_win_get_info(rma_Win win, rma_Info* info_used) {
  return win_call(win, "rma_win_get_info", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_out(info_used, "info_used"));
    auto info = std::make_unique<rma_info_s>();
    window_hints_to_info(win->hints, *info);
    *info_used = info.release();
    return {};
  });
}

}  // extern "C"
