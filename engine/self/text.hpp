// Small formatting helpers for control-path error messages of the self
// provider. Control path only: these allocate.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace rma::self {

inline std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

inline std::string dec(std::uint64_t v) { return std::to_string(v); }

}  // namespace rma::self
