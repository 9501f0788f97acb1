#include "window/info.hpp"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "datatype/errors.hpp"

const std::string* rma_info_s::find(const std::string& key) const noexcept {
  for (const auto& [k, v] : entries) {
    if (k == key) return &v;
  }
  return nullptr;
}

void rma_info_s::set(std::string key, std::string value) {
  for (auto& [k, v] : entries) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(std::move(key), std::move(value));
}

bool rma_info_s::erase(const std::string& key) {
  auto it = std::find_if(entries.begin(), entries.end(), [&](const auto& e) { return e.first == key; });
  if (it == entries.end()) return false;
  entries.erase(it);
  return true;
}

namespace rma::api {
namespace {

Status value_error(const std::string& key, const std::string& value, const char* expected) {
  return class_error(RMA_ERR_INFO_VALUE, "info key \"" + key + "\" has value \"" + value + "\"; expected " + expected);
}

Status read_bool(const rma_info_s& info, const char* key, bool& out) {
  const std::string* v = info.find(key);
  if (v == nullptr) return {};
  if (*v == "true") out = true;
  else if (*v == "false") out = false;
  else return value_error(key, *v, "true or false");
  return {};
}

// "none", or a comma-separated list of rar, raw, war, waw (MPI 4.x 12.7.2).
bool valid_ordering(std::string_view v) {
  if (v == "none") return true;
  if (v.empty()) return false;
  while (true) {
    const std::size_t comma = v.find(',');
    const std::string_view item = v.substr(0, comma);
    if (item != "rar" && item != "raw" && item != "war" && item != "waw") return false;
    if (comma == std::string_view::npos) return true;
    v.remove_prefix(comma + 1);
  }
}

}  // namespace

bool live_info(const rma_info_s* info) noexcept { return info != nullptr && info->magic == rma_info_s::kMagic; }

Status check_info_handle(const rma_info_s* info, bool null_ok) {
  if (info == RMA_INFO_NULL) {
    if (null_ok) return {};
    return class_error(RMA_ERR_INFO, "info is RMA_INFO_NULL");
  }
  if (!live_info(info)) return class_error(RMA_ERR_INFO, "info is not an info object (freed, or never created)");
  return {};
}

Status check_info_key(const char* key) {
  if (key == nullptr) return class_error(RMA_ERR_INFO_KEY, "key is null");
  const std::size_t n = std::strlen(key);
  if (n == 0) return class_error(RMA_ERR_INFO_KEY, "key is empty");
  if (n > RMA_MAX_INFO_KEY) {
    return class_error(RMA_ERR_INFO_KEY, "key is " + std::to_string(n) + " characters long; RMA_MAX_INFO_KEY is " +
                                             std::to_string(RMA_MAX_INFO_KEY));
  }
  return {};
}

Status check_info_value(const char* value) {
  if (value == nullptr) return class_error(RMA_ERR_INFO_VALUE, "value is null");
  const std::size_t n = std::strlen(value);
  if (n > RMA_MAX_INFO_VAL) {
    return class_error(RMA_ERR_INFO_VALUE, "value is " + std::to_string(n) +
                                               " characters long; RMA_MAX_INFO_VAL is " + std::to_string(RMA_MAX_INFO_VAL));
  }
  return {};
}

Status apply_window_hints(const rma_info_s* info, WindowHints& hints) {
  if (info == RMA_INFO_NULL) return {};
  WindowHints h = hints;
  RMA_RETURN_IF_ERROR(read_bool(*info, "no_locks", h.no_locks));
  RMA_RETURN_IF_ERROR(read_bool(*info, "same_size", h.same_size));
  RMA_RETURN_IF_ERROR(read_bool(*info, "same_disp_unit", h.same_disp_unit));
  RMA_RETURN_IF_ERROR(read_bool(*info, "alloc_shared_noncontig", h.alloc_shared_noncontig));
  if (const std::string* v = info->find("accumulate_ordering")) {
    if (!valid_ordering(*v)) {
      return value_error("accumulate_ordering", *v, "none or a comma-separated list of rar, raw, war, waw");
    }
    h.accumulate_ordering = *v;
  }
  if (const std::string* v = info->find("accumulate_ops")) {
    if (*v != "same_op_no_op" && *v != "same_op") return value_error("accumulate_ops", *v, "same_op_no_op or same_op");
    h.accumulate_ops = *v;
  }
  hints = std::move(h);
  return {};
}

void window_hints_to_info(const WindowHints& hints, rma_info_s& out) {
  out.set("no_locks", hints.no_locks ? "true" : "false");
  out.set("accumulate_ordering", hints.accumulate_ordering);
  out.set("accumulate_ops", hints.accumulate_ops);
  out.set("same_size", hints.same_size ? "true" : "false");
  out.set("same_disp_unit", hints.same_disp_unit ? "true" : "false");
  out.set("alloc_shared_noncontig", hints.alloc_shared_noncontig ? "true" : "false");
}

}  // namespace rma::api
