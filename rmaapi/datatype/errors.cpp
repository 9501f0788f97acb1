#include "datatype/errors.hpp"

#include <cstdio>
#include <cstring>
#include <string_view>

#include "rma/rma_errors.h"

namespace rma::api {
namespace {

struct ClassInfo {
  int code;
  const char* name;     // "RMA_ERR_TYPE"
  const char* prefix;   // message prefix that carries the class through a Status
  const char* text;     // what rma_error_string says
};

constexpr ClassInfo kClasses[] = {
    {RMA_SUCCESS, "RMA_SUCCESS", "", "no error"},
    {RMA_ERR_BUFFER, "RMA_ERR_BUFFER", "invalid buffer: ", "invalid buffer pointer"},
    {RMA_ERR_COUNT, "RMA_ERR_COUNT", "invalid count: ", "invalid count argument"},
    {RMA_ERR_TYPE, "RMA_ERR_TYPE", "invalid datatype: ", "invalid datatype argument"},
    {RMA_ERR_COMM, "RMA_ERR_COMM", "invalid communicator: ", "invalid communicator"},
    {RMA_ERR_RANK, "RMA_ERR_RANK", "invalid rank: ", "invalid rank"},
    {RMA_ERR_GROUP, "RMA_ERR_GROUP", "invalid group: ", "invalid group"},
    {RMA_ERR_OP, "RMA_ERR_OP", "invalid operation: ", "invalid reduction operation"},
    {RMA_ERR_ARG, "RMA_ERR_ARG", "invalid argument: ", "invalid argument"},
    {RMA_ERR_UNKNOWN, "RMA_ERR_UNKNOWN", "unknown error: ", "unknown error"},
    {RMA_ERR_OTHER, "RMA_ERR_OTHER", "failure: ", "other error"},
    {RMA_ERR_INTERN, "RMA_ERR_INTERN", "internal error: ", "internal error in librma (please report it)"},
    {RMA_ERR_REQUEST, "RMA_ERR_REQUEST", "invalid request: ", "invalid request handle"},
    {RMA_ERR_IN_STATUS, "RMA_ERR_IN_STATUS", "error in status: ", "error code is in the status of a request"},
    {RMA_ERR_PENDING, "RMA_ERR_PENDING", "pending: ", "the request has neither failed nor completed"},
    {RMA_ERR_INFO, "RMA_ERR_INFO", "invalid info: ", "invalid info argument"},
    {RMA_ERR_INFO_KEY, "RMA_ERR_INFO_KEY", "invalid info key: ", "info key too long or empty"},
    {RMA_ERR_INFO_VALUE, "RMA_ERR_INFO_VALUE", "invalid info value: ", "invalid info value"},
    {RMA_ERR_INFO_NOKEY, "RMA_ERR_INFO_NOKEY", "no such info key: ", "info key not present"},
    {RMA_ERR_NO_MEM, "RMA_ERR_NO_MEM", "out of memory: ", "out of memory"},
    {RMA_ERR_WIN, "RMA_ERR_WIN", "invalid window: ", "invalid window"},
    {RMA_ERR_BASE, "RMA_ERR_BASE", "invalid base: ", "invalid base address"},
    {RMA_ERR_LOCKTYPE, "RMA_ERR_LOCKTYPE", "invalid lock type: ", "invalid lock type"},
    {RMA_ERR_KEYVAL, "RMA_ERR_KEYVAL", "invalid attribute key: ", "invalid attribute key"},
    {RMA_ERR_RMA_CONFLICT, "RMA_ERR_RMA_CONFLICT", "conflicting accesses: ", "conflicting accesses to a window"},
    {RMA_ERR_RMA_SYNC, "RMA_ERR_RMA_SYNC", "wrong synchronization: ", "wrong synchronization of RMA calls"},
    {RMA_ERR_SIZE, "RMA_ERR_SIZE", "invalid size: ", "invalid size"},
    {RMA_ERR_DISP, "RMA_ERR_DISP", "invalid displacement unit: ", "invalid displacement unit"},
    {RMA_ERR_ASSERT, "RMA_ERR_ASSERT", "invalid assertion: ", "invalid assertion"},
    {RMA_ERR_RMA_RANGE, "RMA_ERR_RMA_RANGE", "out of the window: ", "target memory is outside the window"},
    {RMA_ERR_RMA_ATTACH, "RMA_ERR_RMA_ATTACH", "cannot attach: ", "memory cannot be attached to the window"},
    {RMA_ERR_RMA_SHARED, "RMA_ERR_RMA_SHARED", "cannot share memory: ", "memory cannot be shared"},
    {RMA_ERR_RMA_FLAVOR, "RMA_ERR_RMA_FLAVOR", "wrong window flavor: ", "the window's flavor does not allow the call"},
    {RMA_ERR_LASTCODE, "RMA_ERR_LASTCODE", "", "last error code"},
};

const ClassInfo* find_class(int code) noexcept {
  for (const ClassInfo& c : kClasses) {
    if (c.code == code) return &c;
  }
  return nullptr;
}

bool starts_with(const std::string& s, std::string_view p) {
  return !p.empty() && s.size() >= p.size() && std::string_view(s).substr(0, p.size()) == p;
}
}  // namespace

Status class_error(int error_class, std::string message) {
  const ClassInfo* c = find_class(error_class);
  if (c == nullptr || error_class == RMA_SUCCESS || error_class == RMA_ERR_LASTCODE) {
    c = find_class(RMA_ERR_INTERN);
  }
  const StatusCode sc = error_class == RMA_ERR_INTERN ? StatusCode::kInternal
                        : error_class == RMA_ERR_OTHER ? StatusCode::kUnavailable
                                                       : StatusCode::kInvalidArgument;
  return Status(sc, std::string(c->prefix) + message);
}

Status type_error(std::string message) { return class_error(RMA_ERR_TYPE, std::move(message)); }
Status count_error(std::string message) { return class_error(RMA_ERR_COUNT, std::move(message)); }
Status arg_error(std::string message) { return class_error(RMA_ERR_ARG, std::move(message)); }
Status buffer_error(std::string message) { return class_error(RMA_ERR_BUFFER, std::move(message)); }

int error_code(const Status& status) noexcept {
  if (status.ok()) return RMA_SUCCESS;
  const std::string& m = status.message();
  for (const ClassInfo& c : kClasses) {
    if (starts_with(m, c.prefix)) return c.code;
  }
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
      return RMA_ERR_ARG;
    case StatusCode::kResourceExhausted:
      return RMA_ERR_NO_MEM;
    case StatusCode::kInternal:
      return RMA_ERR_INTERN;
    default:
      return RMA_ERR_OTHER;
  }
}

std::string_view error_detail(const Status& status) noexcept {
  std::string_view m = status.message();
  for (const ClassInfo& c : kClasses) {
    if (starts_with(status.message(), c.prefix)) return m.substr(std::string_view(c.prefix).size());
  }
  return m;
}

const char* error_class_name(int code) noexcept {
  const ClassInfo* c = find_class(code);
  return c == nullptr ? nullptr : c->name;
}

}  // namespace rma::api

extern "C" int rma_error_string(int code, char* str, int* len) {
  if (str == nullptr || len == nullptr) return RMA_ERR_ARG;
  const rma::api::ClassInfo* c = nullptr;
  for (const auto& k : rma::api::kClasses) {
    if (k.code == code) c = &k;
  }
  if (c == nullptr) {
    int n = std::snprintf(str, RMA_MAX_ERROR_STRING, "unknown error code %d", code);
    *len = n < 0 ? 0 : n;
    return RMA_ERR_ARG;
  }
  int n = std::snprintf(str, RMA_MAX_ERROR_STRING, "%s: %s", c->name, c->text);
  if (n < 0) n = 0;
  if (n >= RMA_MAX_ERROR_STRING) n = RMA_MAX_ERROR_STRING - 1;
  *len = n;
  return RMA_SUCCESS;
}
