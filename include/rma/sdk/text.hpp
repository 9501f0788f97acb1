// Number formatting for control-path error messages (providers, engine):
// one spelling of addresses and keys ("0x1f4") and counts across the tree.
// Control path only: these allocate.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

// librma is built with hidden visibility: what this header declares is
// part of its exported interface.
#pragma GCC visibility push(default)

namespace rma {

inline std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

inline std::string dec(std::uint64_t v) { return std::to_string(v); }

}  // namespace rma

#pragma GCC visibility pop
