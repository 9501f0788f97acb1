// The C functions of <rma/rma.h> on info objects (MPI 4.x 10).
#include <algorithm>
#include <cstring>
#include <string>

#include "window/info.hpp"

#include "window/c_call.hpp"

using namespace rma::api;  // NOLINT
using rma::Result;
using rma::Status;
using rma::StatusCode;

extern "C" {

// Info calls need no context (MPI allows them before rma_init); their errors
// go to RMA_COMM_WORLD's handler, or are fatal before rma_init.
int rma_info_create(rma_Info* info) {
  return run_window_call(nullptr, "rma_info_create", [&]() -> Status {
    if (info == nullptr) return arg_error("info is null");
    *info = new rma_info_s;
    return {};
  });
}

int rma_info_set(rma_Info info, const char* key, const char* value) {
  return run_window_call(nullptr, "rma_info_set", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_info_handle(info, false));
    RMA_RETURN_IF_ERROR(check_info_key(key));
    RMA_RETURN_IF_ERROR(check_info_value(value));
    info->set(key, value);
    return {};
  });
}

int rma_info_delete(rma_Info info, const char* key) {
  return run_window_call(nullptr, "rma_info_delete", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_info_handle(info, false));
    RMA_RETURN_IF_ERROR(check_info_key(key));
    if (!info->erase(key)) return class_error(RMA_ERR_INFO_NOKEY, std::string("key \"") + key + "\" is not in the info object");
    return {};
  });
}

int rma_info_get_string(rma_Info info, const char* key, int* buflen, char* value, int* flag) {
  return run_window_call(nullptr, "rma_info_get_string", [&]() -> Status {
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
  return run_window_call(nullptr, "rma_info_get", [&]() -> Status {
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
  return run_window_call(nullptr, "rma_info_get_valuelen", [&]() -> Status {
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
  return run_window_call(nullptr, "rma_info_get_nkeys", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_info_handle(info, false));
    if (nkeys == nullptr) return arg_error("nkeys is null");
    *nkeys = static_cast<int>(info->entries.size());
    return {};
  });
}

int rma_info_get_nthkey(rma_Info info, int n, char* key) {
  return run_window_call(nullptr, "rma_info_get_nthkey", [&]() -> Status {
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
  return run_window_call(nullptr, "rma_info_dup", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_info_handle(info, false));
    if (newinfo == nullptr) return arg_error("newinfo is null");
    *newinfo = new rma_info_s(*info);
    return {};
  });
}

int rma_info_free(rma_Info* info) {
  return run_window_call(nullptr, "rma_info_free", [&]() -> Status {
    if (info == nullptr) return arg_error("info is null");
    RMA_RETURN_IF_ERROR(check_info_handle(*info, false));
    delete *info;
    *info = RMA_INFO_NULL;
    return {};
  });
}

}  // extern "C"
