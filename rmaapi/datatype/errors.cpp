#include "datatype/errors.hpp"

#include <cstdio>
#include <cstring>
#include <string_view>

#include "rma/rma_errors.h"

namespace rma::api {
namespace {
constexpr std::string_view kTypePrefix = "invalid datatype: ";
constexpr std::string_view kCountPrefix = "invalid count: ";
constexpr std::string_view kArgPrefix = "invalid argument: ";
constexpr std::string_view kBufferPrefix = "invalid buffer: ";

bool starts_with(const std::string& s, std::string_view p) {
  return s.size() >= p.size() && std::string_view(s).substr(0, p.size()) == p;
}
}  // namespace

Status type_error(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::string(kTypePrefix) + message);
}
Status count_error(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::string(kCountPrefix) + message);
}
Status arg_error(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::string(kArgPrefix) + message);
}
Status buffer_error(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::string(kBufferPrefix) + message);
}

int error_code(const Status& status) noexcept {
  if (status.ok()) return RMA_SUCCESS;
  const std::string& m = status.message();
  if (starts_with(m, kTypePrefix)) return RMA_ERR_TYPE;
  if (starts_with(m, kCountPrefix)) return RMA_ERR_COUNT;
  if (starts_with(m, kBufferPrefix)) return RMA_ERR_BUFFER;
  if (starts_with(m, kArgPrefix)) return RMA_ERR_ARG;
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
      return RMA_ERR_ARG;
    case StatusCode::kInternal:
      return RMA_ERR_INTERN;
    default:
      return RMA_ERR_OTHER;
  }
}

}  // namespace rma::api

extern "C" int rma_error_string(int code, char* str, int* len) {
  if (str == nullptr || len == nullptr) return RMA_ERR_ARG;
  const char* text = nullptr;
  switch (code) {
    case RMA_SUCCESS: text = "RMA_SUCCESS: no error"; break;
    case RMA_ERR_BUFFER: text = "RMA_ERR_BUFFER: invalid buffer pointer"; break;
    case RMA_ERR_COUNT: text = "RMA_ERR_COUNT: invalid count argument"; break;
    case RMA_ERR_TYPE: text = "RMA_ERR_TYPE: invalid datatype argument"; break;
    case RMA_ERR_RANK: text = "RMA_ERR_RANK: invalid rank"; break;
    case RMA_ERR_OP: text = "RMA_ERR_OP: invalid reduction operation"; break;
    case RMA_ERR_ARG: text = "RMA_ERR_ARG: invalid argument"; break;
    case RMA_ERR_OTHER: text = "RMA_ERR_OTHER: other error"; break;
    case RMA_ERR_INTERN: text = "RMA_ERR_INTERN: internal error in librma (please report it)"; break;
    case RMA_ERR_WIN: text = "RMA_ERR_WIN: invalid window"; break;
    case RMA_ERR_RMA_RANGE: text = "RMA_ERR_RMA_RANGE: target memory is outside the window"; break;
    case RMA_ERR_RMA_SYNC: text = "RMA_ERR_RMA_SYNC: wrong synchronization of RMA calls"; break;
    case RMA_ERR_RMA_CONFLICT: text = "RMA_ERR_RMA_CONFLICT: conflicting accesses to a window"; break;
    case RMA_ERR_LASTCODE: text = "RMA_ERR_LASTCODE: last error code"; break;
    default: {
      int n = std::snprintf(str, RMA_MAX_ERROR_STRING, "unknown error code %d", code);
      *len = n < 0 ? 0 : n;
      return RMA_ERR_ARG;
    }
  }
  std::size_t n = std::strlen(text);
  if (n >= RMA_MAX_ERROR_STRING) n = RMA_MAX_ERROR_STRING - 1;
  std::memcpy(str, text, n);
  str[n] = '\0';
  *len = static_cast<int>(n);
  return RMA_SUCCESS;
}
