#include "swkit/mapping_rights.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "rma/sdk/text.hpp"

namespace rma::swkit {

Status check_mapping_rights(const void* addr, std::size_t length, Access access) {
  const auto begin = reinterpret_cast<std::uint64_t>(addr);
  const std::uint64_t end = begin + length;
  const bool write = (access & (Access::kLocalWrite | Access::kRemoteWrite | Access::kRemoteAtomic)) != Access::kNone;
  const std::string what = "register_memory: [" + hex(begin) + ", " + hex(end) + ")";
  std::FILE* f = std::fopen("/proc/self/maps", "re");
  if (f == nullptr) {
    // Without /proc (unusual sandboxes) nothing can be checked; the memory
    // monitor still catches unmaps after registration.
    return {};
  }
  std::uint64_t cur = begin;  // first byte not yet shown to be mapped well
  char line[512];
  Status st;
  while (cur < end && std::fgets(line, sizeof line, f) != nullptr) {
    std::uint64_t lo = 0, hi = 0;
    char perms[8] = {};
    if (std::sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s", &lo, &hi, perms) != 3) continue;
    if (hi <= cur) continue;  // the maps are sorted: before us
    if (lo > cur) break;      // a hole at cur
    if (perms[0] != 'r') {
      st = invalid_argument(what + ": the memory at " + hex(cur) + " is not readable (mapped " + perms +
                            "); register only memory the process can read");
      break;
    }
    if (write && perms[1] != 'w') {
      st = invalid_argument(what + ": the memory at " + hex(cur) + " is mapped read-only (" + perms + "), but " +
                            access_to_string(access) +
                            " asks for write rights; register it without LOCAL_WRITE/REMOTE_WRITE/REMOTE_ATOMIC "
                            "or map it writable");
      break;
    }
    cur = hi;
  }
  std::fclose(f);
  if (st.ok() && cur < end) {
    st = invalid_argument(what + ": the memory at " + hex(cur) + " is not mapped; register only mapped memory");
  }
  return st;
}

}  // namespace rma::swkit
