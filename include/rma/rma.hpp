// librma's MPI-shaped one-sided API for C++: RAII and typed calls over the
// same objects as <rma/rma.h>.
//
//   rma::Environment env(&argc, &argv);            // rma_init ... rma_finalize
//   auto win = rma::Window::allocate<double>(1024);  // collective
//   win.throw_exceptions();                         // errors throw rma::Error
//   win.fence();
//   win.put(data, 16, /*target=*/1, /*disp=*/0);
//   win.fence();
//
// Errors go to the window's error handler as in C: fatal by default,
// RMA_ERRORS_RETURN makes the methods return the code, and
// throw_exceptions() installs a handler that throws rma::Error (code and the
// message naming call, rank and problem). Calls that fail before a window
// exists (creation) throw rma::Error unless the RMA_COMM_WORLD handler is
// fatal. Window's destructor frees the window, which is collective: destroy
// windows in the same order on every rank.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "rma/rma.h"

// librma is built with hidden visibility: what this header declares is
// part of its exported interface.
#pragma GCC visibility push(default)

namespace rma {

class Error : public std::runtime_error {
 public:
  Error(int code, const std::string& message) : std::runtime_error(message), code_(code) {}
  int code() const noexcept { return code_; }
  int error_class() const noexcept { return code_; }

 private:
  int code_;
};

namespace detail {
inline std::string last_message() {
  char buf[RMA_MAX_ERROR_STRING];
  int len = 0;
  rma_last_error_message(buf, &len);
  return std::string(buf, static_cast<std::size_t>(len));
}
inline void throw_handler(rma_Win* /*win*/, int* code, ...) { throw Error(*code, last_message()); }
// For calls whose handler returned: creation and other non-window calls.
inline int checked(int rc) {
  if (rc != RMA_SUCCESS) throw Error(rc, last_message());
  return rc;
}
}  // namespace detail

// A window error handler that throws rma::Error; created once per process.
inline rma_Errhandler errors_throw_exceptions() {
  static const rma_Errhandler eh = [] {
    rma_Errhandler h = RMA_ERRHANDLER_NULL;
    detail::checked(rma_win_create_errhandler(&detail::throw_handler, &h));
    return h;
  }();
  return eh;
}

// The predefined datatype of a C++ type.
template <typename T>
rma_Datatype datatype_of() noexcept {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, bool>) return RMA_C_BOOL;
  else if constexpr (std::is_same_v<U, char>) return RMA_CHAR;
  else if constexpr (std::is_same_v<U, std::byte>) return RMA_BYTE;
  else if constexpr (std::is_same_v<U, float>) return RMA_FLOAT;
  else if constexpr (std::is_same_v<U, double>) return RMA_DOUBLE;
  else if constexpr (std::is_same_v<U, long double>) return RMA_LONG_DOUBLE;
  else if constexpr (std::is_same_v<U, std::complex<float>>) return RMA_C_FLOAT_COMPLEX;
  else if constexpr (std::is_same_v<U, std::complex<double>>) return RMA_C_DOUBLE_COMPLEX;
  else if constexpr (std::is_same_v<U, std::complex<long double>>) return RMA_C_LONG_DOUBLE_COMPLEX;
  else if constexpr (std::is_integral_v<U> && std::is_signed_v<U>) {
    if constexpr (sizeof(U) == 1) return RMA_INT8_T;
    else if constexpr (sizeof(U) == 2) return RMA_INT16_T;
    else if constexpr (sizeof(U) == 4) return RMA_INT32_T;
    else return RMA_INT64_T;
  } else if constexpr (std::is_integral_v<U>) {
    if constexpr (sizeof(U) == 1) return RMA_UINT8_T;
    else if constexpr (sizeof(U) == 2) return RMA_UINT16_T;
    else if constexpr (sizeof(U) == 4) return RMA_UINT32_T;
    else return RMA_UINT64_T;
  } else {
    static_assert(sizeof(U) == 0, "no predefined rma datatype for this type");
  }
}

// rma_init on construction, rma_finalize on destruction.
class Environment {
 public:
  Environment() : Environment(nullptr, nullptr) {}
  Environment(int* argc, char*** argv) { detail::checked(rma_init(argc, argv)); }
  ~Environment() { (void)rma_finalize(); }
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;
};

inline int rank() {
  int r = -1;
  detail::checked(rma_comm_rank(RMA_COMM_WORLD, &r));
  return r;
}
inline int size() {
  int s = -1;
  detail::checked(rma_comm_size(RMA_COMM_WORLD, &s));
  return s;
}
inline void barrier() { detail::checked(rma_barrier(RMA_COMM_WORLD)); }

// An info object (key/value hints): rma_info_create ... rma_info_free.
//   rma::Info hints{{"no_locks", "true"}};
//   auto win = rma::Window::allocate<int>(64, hints);
class Info {
 public:
  Info() { detail::checked(rma_info_create(&info_)); }
  Info(std::initializer_list<std::pair<std::string, std::string>> entries) : Info() {
    for (const auto& [k, v] : entries) set(k, v);
  }
  // Takes ownership of a handle (rma_win_get_info's result).
  explicit Info(rma_Info adopted) noexcept : info_(adopted) {}
  Info(Info&& o) noexcept : info_(std::exchange(o.info_, RMA_INFO_NULL)) {}
  Info& operator=(Info&& o) noexcept {
    if (this != &o) {
      reset();
      info_ = std::exchange(o.info_, RMA_INFO_NULL);
    }
    return *this;
  }
  Info(const Info&) = delete;
  Info& operator=(const Info&) = delete;
  ~Info() { reset(); }

  void set(const std::string& key, const std::string& value) {
    detail::checked(rma_info_set(info_, key.c_str(), value.c_str()));
  }
  void erase(const std::string& key) { detail::checked(rma_info_delete(info_, key.c_str())); }
  // The value of `key`, if present.
  std::optional<std::string> get(const std::string& key) const {
    int len = 0, flag = 0;
    detail::checked(rma_info_get_string(info_, key.c_str(), &len, nullptr, &flag));
    if (flag == 0) return std::nullopt;
    std::string v(static_cast<std::size_t>(len), '\0');
    detail::checked(rma_info_get_string(info_, key.c_str(), &len, v.data(), &flag));
    v.resize(static_cast<std::size_t>(len) - 1);
    return v;
  }
  int size() const {
    int n = 0;
    detail::checked(rma_info_get_nkeys(info_, &n));
    return n;
  }
  rma_Info handle() const noexcept { return info_; }

 private:
  void reset() noexcept {
    if (info_ != RMA_INFO_NULL) (void)rma_info_free(&info_);
  }
  rma_Info info_ = RMA_INFO_NULL;
};

// A group of processes (rma_Group), freed on destruction.
class Group {
 public:
  explicit Group(rma_Group adopted) noexcept : g_(adopted) {}
  Group(Group&& o) noexcept : g_(std::exchange(o.g_, RMA_GROUP_NULL)) {}
  Group& operator=(Group&& o) noexcept {
    if (this != &o) {
      reset();
      g_ = std::exchange(o.g_, RMA_GROUP_NULL);
    }
    return *this;
  }
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
  ~Group() { reset(); }
  int size() const {
    int n = 0;
    detail::checked(rma_group_size(g_, &n));
    return n;
  }
  int rank() const {  // RMA_UNDEFINED_RANK if the caller is not a member
    int r = 0;
    detail::checked(rma_group_rank(g_, &r));
    return r;
  }
  Group incl(std::initializer_list<int> ranks) const {
    rma_Group n = RMA_GROUP_NULL;
    detail::checked(rma_group_incl(g_, static_cast<int>(ranks.size()), ranks.begin(), &n));
    return Group(n);
  }
  Group excl(std::initializer_list<int> ranks) const {
    rma_Group n = RMA_GROUP_NULL;
    detail::checked(rma_group_excl(g_, static_cast<int>(ranks.size()), ranks.begin(), &n));
    return Group(n);
  }
  rma_Group handle() const noexcept { return g_; }

 private:
  void reset() noexcept {
    if (g_ != RMA_GROUP_NULL) (void)rma_group_free(&g_);
  }
  rma_Group g_ = RMA_GROUP_NULL;
};

// A communicator. Comm::world() and Comm::self() refer to the predefined
// ones; dup/split/split_type/create_group make new ones, freed (locally) on
// destruction. A split that leaves this rank out gives a null Comm.
class Comm {
 public:
  static Comm world() noexcept { return Comm(RMA_COMM_WORLD, false); }
  static Comm self() noexcept { return Comm(RMA_COMM_SELF, false); }
  Comm(Comm&& o) noexcept : c_(std::exchange(o.c_, RMA_COMM_NULL)), owned_(o.owned_) {}
  Comm& operator=(Comm&& o) noexcept {
    if (this != &o) {
      reset();
      c_ = std::exchange(o.c_, RMA_COMM_NULL);
      owned_ = o.owned_;
    }
    return *this;
  }
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  ~Comm() { reset(); }

  bool is_null() const noexcept { return c_ == RMA_COMM_NULL; }
  rma_Comm handle() const noexcept { return c_; }
  int rank() const {
    int r = -1;
    detail::checked(rma_comm_rank(c_, &r));
    return r;
  }
  int size() const {
    int n = -1;
    detail::checked(rma_comm_size(c_, &n));
    return n;
  }
  void barrier() const { detail::checked(rma_barrier(c_)); }
  Group group() const {
    rma_Group g = RMA_GROUP_NULL;
    detail::checked(rma_comm_group(c_, &g));
    return Group(g);
  }
  // Collective.
  Comm dup() const { return made([&](rma_Comm* n) { return rma_comm_dup(c_, n); }); }
  Comm split(int color, int key) const { return made([&](rma_Comm* n) { return rma_comm_split(c_, color, key, n); }); }
  Comm split_shared(int key) const {
    return made([&](rma_Comm* n) { return rma_comm_split_type(c_, RMA_COMM_TYPE_SHARED, key, RMA_INFO_NULL, n); });
  }
  // Collective over the members of `group` only.
  Comm create_group(const Group& group, int tag) const {
    return made([&](rma_Comm* n) { return rma_comm_create_group(c_, group.handle(), tag, n); });
  }

 private:
  Comm(rma_Comm c, bool owned) noexcept : c_(c), owned_(owned) {}
  template <typename F>
  static Comm made(F&& f) {
    rma_Comm n = RMA_COMM_NULL;
    detail::checked(f(&n));
    return Comm(n, true);
  }
  void reset() noexcept {
    if (owned_ && c_ != RMA_COMM_NULL) (void)rma_comm_free(&c_);
    c_ = RMA_COMM_NULL;
  }
  rma_Comm c_ = RMA_COMM_NULL;
  bool owned_ = false;
};

class Window {
 public:
  // Collective: `count` elements of T per rank (disp_unit sizeof(T)).
  template <typename T>
  static Window allocate(std::size_t count, const Info* info = nullptr) {
    return allocate<T>(count, Comm::world(), info);
  }
  // Collective over `comm`; the window's ranks are comm's.
  template <typename T>
  static Window allocate(std::size_t count, const Comm& comm, const Info* info = nullptr) {
    void* base = nullptr;
    rma_Win w = RMA_WIN_NULL;
    detail::checked(rma_win_allocate(static_cast<rma_Aint>(count * sizeof(T)), static_cast<int>(sizeof(T)),
                                     info_handle(info), comm.handle(), &base, &w));
    return Window(w);
  }
  template <typename T>
  static Window allocate(std::size_t count, const Info& info) { return allocate<T>(count, &info); }
  // Collective over `comm`, whose ranks must all be on this host: `count`
  // elements of T per rank that every rank of comm loads and stores
  // (rma_win_allocate_shared); contiguous in rank order unless `info` has
  // alloc_shared_noncontig=true. shared_query<T>(r) gives rank r's part.
  template <typename T>
  static Window allocate_shared(std::size_t count, const Comm& comm, const Info* info = nullptr) {
    void* base = nullptr;
    rma_Win w = RMA_WIN_NULL;
    detail::checked(rma_win_allocate_shared(static_cast<rma_Aint>(count * sizeof(T)), static_cast<int>(sizeof(T)),
                                            info_handle(info), comm.handle(), &base, &w));
    return Window(w);
  }
  template <typename T>
  static Window create(T* base, std::size_t count, const Info* info = nullptr) {
    rma_Win w = RMA_WIN_NULL;
    detail::checked(rma_win_create(base, static_cast<rma_Aint>(count * sizeof(T)), static_cast<int>(sizeof(T)),
                                   info_handle(info), RMA_COMM_WORLD, &w));
    return Window(w);
  }
  static Window create_dynamic(const Info* info = nullptr) {
    rma_Win w = RMA_WIN_NULL;
    detail::checked(rma_win_create_dynamic(info_handle(info), RMA_COMM_WORLD, &w));
    return Window(w);
  }

  void set_name(const std::string& name) { detail::checked(rma_win_set_name(win_, name.c_str())); }
  std::string name() const {
    char buf[RMA_MAX_OBJECT_NAME];
    int len = 0;
    detail::checked(rma_win_get_name(win_, buf, &len));
    return std::string(buf, static_cast<std::size_t>(len));
  }

  // The hints in use (rma_win_get_info); set_info is collective, as in C.
  Info info() const {
    rma_Info i = RMA_INFO_NULL;
    detail::checked(rma_win_get_info(win_, &i));
    return Info(i);
  }
  void set_info(const Info& info) { detail::checked(rma_win_set_info(win_, info.handle())); }

  Window(Window&& o) noexcept : win_(std::exchange(o.win_, RMA_WIN_NULL)) {}
  Window& operator=(Window&& o) noexcept {
    if (this != &o) {
      reset();
      win_ = std::exchange(o.win_, RMA_WIN_NULL);
    }
    return *this;
  }
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;
  ~Window() { reset(); }

  // Collective: frees the window now.
  void reset() noexcept {
    if (win_ != RMA_WIN_NULL) {
      // Destructors must not throw: report through return codes here.
      (void)rma_win_set_errhandler(win_, RMA_ERRORS_RETURN);
      (void)rma_win_free(&win_);
      win_ = RMA_WIN_NULL;
    }
  }

  rma_Win handle() const noexcept { return win_; }
  void* base() const {
    void* b = nullptr;
    int flag = 0;
    rma_win_get_attr(win_, RMA_WIN_BASE, &b, &flag);
    return b;
  }
  template <typename T>
  T* data() const { return static_cast<T*>(base()); }
  std::size_t size_bytes() const {
    rma_Aint* s = nullptr;
    int flag = 0;
    rma_win_get_attr(win_, RMA_WIN_SIZE, &s, &flag);
    return s != nullptr ? static_cast<std::size_t>(*s) : 0;
  }

  // One rank's memory of a shared window as this process reaches it
  // (rma_win_shared_query; rank RMA_PROC_NULL: the lowest rank with memory).
  template <typename T>
  struct SharedPart {
    T* data = nullptr;
    std::size_t count = 0;  // elements of T
    int disp_unit = 0;
  };
  template <typename T>
  SharedPart<T> shared_query(int rank) const {
    rma_Aint bytes = 0;
    int disp_unit = 0;
    void* base = nullptr;
    detail::checked(rma_win_shared_query(win_, rank, &bytes, &disp_unit, &base));
    return SharedPart<T>{static_cast<T*>(base), static_cast<std::size_t>(bytes) / sizeof(T), disp_unit};
  }

  int set_errhandler(rma_Errhandler eh) { return rma_win_set_errhandler(win_, eh); }
  int throw_exceptions() { return set_errhandler(errors_throw_exceptions()); }
  int return_errors() { return set_errhandler(RMA_ERRORS_RETURN); }

  // ---- communication (count elements of T; disp in the target's disp_unit)
  template <typename T>
  int put(const T* origin, int count, int target, rma_Aint disp) {
    return rma_put(origin, count, datatype_of<T>(), target, disp, count, datatype_of<T>(), win_);
  }
  template <typename T>
  int get(T* origin, int count, int target, rma_Aint disp) {
    return rma_get(origin, count, datatype_of<T>(), target, disp, count, datatype_of<T>(), win_);
  }
  template <typename T>
  int accumulate(const T* origin, int count, int target, rma_Aint disp, rma_Op op) {
    return rma_accumulate(origin, count, datatype_of<T>(), target, disp, count, datatype_of<T>(), op, win_);
  }
  template <typename T>
  int get_accumulate(const T* origin, T* result, int count, int target, rma_Aint disp, rma_Op op) {
    return rma_get_accumulate(origin, count, datatype_of<T>(), result, count, datatype_of<T>(), target, disp,
                              count, datatype_of<T>(), op, win_);
  }
  template <typename T>
  int fetch_and_op(const T& value, T& result, int target, rma_Aint disp, rma_Op op) {
    return rma_fetch_and_op(&value, &result, datatype_of<T>(), target, disp, op, win_);
  }
  template <typename T>
  int compare_and_swap(const T& value, const T& compare, T& result, int target, rma_Aint disp) {
    return rma_compare_and_swap(&value, &compare, &result, datatype_of<T>(), target, disp, win_);
  }

  // ---- synchronization
  int fence(int assert_ = 0) { return rma_win_fence(assert_, win_); }
  int lock(int lock_type, int target, int assert_ = 0) { return rma_win_lock(lock_type, target, assert_, win_); }
  int unlock(int target) { return rma_win_unlock(target, win_); }
  int lock_all(int assert_ = 0) { return rma_win_lock_all(assert_, win_); }
  int unlock_all() { return rma_win_unlock_all(win_); }
  int flush(int target) { return rma_win_flush(target, win_); }
  int flush_all() { return rma_win_flush_all(win_); }
  int flush_local(int target) { return rma_win_flush_local(target, win_); }
  int flush_local_all() { return rma_win_flush_local_all(win_); }
  int sync() { return rma_win_sync(win_); }

  // A passive-target epoch to one rank for the guard's lifetime.
  class Lock {
   public:
    Lock(Window& w, int lock_type, int target) : w_(&w), target_(target) {
      if (w_->lock(lock_type, target) != RMA_SUCCESS) w_ = nullptr;
    }
    // Unlocks with RMA_ERRORS_RETURN in effect, so a throwing handler
    // cannot throw out of a destructor; the window's handler is restored.
    ~Lock() {
      if (w_ == nullptr) return;
      rma_Errhandler eh = RMA_ERRHANDLER_NULL;
      (void)rma_win_get_errhandler(w_->handle(), &eh);
      (void)rma_win_set_errhandler(w_->handle(), RMA_ERRORS_RETURN);
      (void)w_->unlock(target_);
      if (eh != RMA_ERRHANDLER_NULL) {
        (void)rma_win_set_errhandler(w_->handle(), eh);
        (void)rma_errhandler_free(&eh);
      }
    }
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;
    bool locked() const noexcept { return w_ != nullptr; }

   private:
    Window* w_;
    int target_;
  };

 private:
  explicit Window(rma_Win w) noexcept : win_(w) {}
  static rma_Info info_handle(const Info* info) noexcept { return info != nullptr ? info->handle() : RMA_INFO_NULL; }
  rma_Win win_ = RMA_WIN_NULL;
};

}  // namespace rma

#pragma GCC visibility pop
