// Control-path status types: rma::Status and rma::Result<T>.
//
// Modelled on absl::Status / absl::StatusOr: a code for programs and a
// message for people. The message names what was wrong and, where it helps,
// what to do about it. The data path does not use these (they may allocate);
// it returns rma::StatusCode or small structs holding one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

// librma is built with hidden visibility: what this header declares is
// part of its exported interface.
#pragma GCC visibility push(default)

namespace rma {

enum class StatusCode : std::uint8_t {
  kOk = 0,
  kInvalidArgument,     // the caller passed something malformed or out of range
  kNotFound,            // a named thing (provider, device, key, region) does not exist
  kAlreadyExists,       // a unique thing was added twice
  kOutOfRange,          // an address range falls outside what is registered or allowed
  kPermissionDenied,    // access rights or OS privileges do not allow the operation
  kResourceExhausted,   // a queue, table or budget is full
  kFailedPrecondition,  // the object is in the wrong state for the call
  kUnavailable,         // a facility exists in principle but not on this machine
  kTimeout,             // a bounded wait ran out
  kIoError,             // the operating system reported an error
  kInternal,            // a bug in librma: please report it
};

// Short stable name of a code, e.g. "INVALID_ARGUMENT".
std::string_view status_code_name(StatusCode code) noexcept;

class [[nodiscard]] Status {
 public:
  Status() noexcept = default;  // OK
  Status(StatusCode code, std::string message);

  static Status ok_status() noexcept { return Status(); }

  bool ok() const noexcept { return code_ == StatusCode::kOk; }
  StatusCode code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }

  // "INVALID_ARGUMENT: length 0 ..." or "OK".
  std::string to_string() const;

  // Prefixes the message with where it happened, keeping the code; the
  // function that first saw the error wrote the rest.
  Status with_context(std::string_view context) const;

  friend bool operator==(const Status& a, const Status& b) noexcept {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

Status invalid_argument(std::string message);
Status not_found(std::string message);
Status already_exists(std::string message);
Status out_of_range(std::string message);
Status permission_denied(std::string message);
Status resource_exhausted(std::string message);
Status failed_precondition(std::string message);
Status unavailable(std::string message);
Status timeout_error(std::string message);
Status io_error(std::string message);  // appends strerror(errno) if errno_value != 0
Status io_error(std::string message, int errno_value);
Status internal_error(std::string message);

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
  static_assert(!std::is_same_v<std::remove_cv_t<T>, Status>,
                "Result<Status> makes no sense; return Status");

 public:
  Result(const T& value) : data_(value) {}             // NOLINT(google-explicit-constructor)
  Result(T&& value) : data_(std::move(value)) {}       // NOLINT(google-explicit-constructor)
  Result(Status status) : data_(std::move(status)) {   // NOLINT(google-explicit-constructor)
    if (std::get<Status>(data_).ok()) {
      data_ = Status(StatusCode::kInternal, "Result constructed from an OK status without a value");
    }
  }

  bool ok() const noexcept { return std::holds_alternative<T>(data_); }

  // The error, or OK when a value is held.
  Status status() const { return ok() ? Status() : std::get<Status>(data_); }

  // Precondition: ok(). Checked: calling these on an error aborts with the
  // error's message rather than reading garbage.
  T& value() & { check(); return std::get<T>(data_); }
  const T& value() const& { check(); return std::get<T>(data_); }
  T&& value() && { check(); return std::get<T>(std::move(data_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void check() const {
    if (!ok()) abort_on_error(std::get<Status>(data_));
  }
  [[noreturn]] static void abort_on_error(const Status& s);

  std::variant<T, Status> data_;
};

namespace detail {
[[noreturn]] void abort_with_status(const Status& s, const char* what) noexcept;
}  // namespace detail

template <typename T>
void Result<T>::abort_on_error(const Status& s) {
  detail::abort_with_status(s, "rma::Result::value() called on an error");
}

}  // namespace rma

#define RMA_STATUS_CONCAT_INNER_(a, b) a##b
#define RMA_STATUS_CONCAT_(a, b) RMA_STATUS_CONCAT_INNER_(a, b)

// Returns the Status from the enclosing function if `expr` is not OK.
#define RMA_RETURN_IF_ERROR(expr)                 \
  do {                                            \
    ::rma::Status rma_status_tmp_ = (expr);       \
    if (!rma_status_tmp_.ok()) return rma_status_tmp_; \
  } while (0)

// `lhs = value of rexpr`, or return its Status from the enclosing function.
#define RMA_ASSIGN_OR_RETURN(lhs, rexpr) \
  RMA_ASSIGN_OR_RETURN_IMPL_(RMA_STATUS_CONCAT_(rma_result_tmp_, __LINE__), lhs, rexpr)
#define RMA_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                               \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()

#pragma GCC visibility pop
