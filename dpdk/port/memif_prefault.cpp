#include "port/memif_prefault.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "rma/sdk/log.hpp"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

namespace rma::roce::port {

namespace {

// The kernel fills the page tables in one call; then one locked add of zero
// per page, because a hypervisor that shadows the guest's page tables (PVM,
// as on these machines) still traps the first access to each page after
// that: the populate alone halved the slow start, the touch removed most of
// the rest. A locked add of zero is a write that cannot lose a concurrent
// store of the peer's, so the rings stay intact while the peer uses them.
void prefault(std::uintptr_t begin, std::uintptr_t end, std::uintptr_t page) noexcept {
  if (::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE) != 0) {
    RMA_LOG_DEBUG("softroce: madvise(MADV_POPULATE_WRITE) on a memif region: %s; touching its pages instead",
                  std::strerror(errno));
  }
  for (std::uintptr_t a = begin; a < end; a += page) {
    __atomic_fetch_add(reinterpret_cast<int*>(a), 0, __ATOMIC_RELAXED);
  }
}

}  // namespace

std::size_t prefault_memif_regions() noexcept {
  std::FILE* maps = std::fopen("/proc/self/maps", "re");
  if (maps == nullptr) return 0;
  const long ps = ::sysconf(_SC_PAGESIZE);
  const std::uintptr_t page = ps > 0 ? static_cast<std::uintptr_t>(ps) : 4096;
  std::size_t bytes = 0;
  char line[512];
  while (std::fgets(line, sizeof line, maps) != nullptr) {
    if (std::strstr(line, "/memfd:memif_region_") == nullptr) continue;
    std::uintptr_t begin = 0, end = 0;
    char perms[8] = {};
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s", &begin, &end, perms) != 3) continue;
    if (end <= begin || std::strncmp(perms, "rw", 2) != 0 || perms[3] != 's') continue;
    prefault(begin, end, page);
    bytes += end - begin;
  }
  std::fclose(maps);
  return bytes;
}

}  // namespace rma::roce::port
