#include "shm/cma.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>

#include "rma/sdk/log.hpp"
#include "shm/layout.hpp"

namespace rma::shm {

namespace {

constexpr std::size_t kMaxIov = kMaxRingSge + 1;

// The pieces of `list` that hold bytes [skip, skip+len), as iovecs.
std::size_t to_iov(std::span<const Sge> list, std::uint64_t skip, std::uint64_t len, iovec* out) noexcept {
  std::size_t n = 0;
  for (const Sge& s : list) {
    if (len == 0 || n == kMaxIov) break;
    if (skip >= s.length) {
      skip -= s.length;
      continue;
    }
    const std::uint64_t take = std::min<std::uint64_t>(len, s.length - skip);
    out[n++] = iovec{reinterpret_cast<void*>(s.addr + skip), static_cast<std::size_t>(take)};
    len -= take;
    skip = 0;
  }
  return n;
}

std::atomic<int> g_ptrace_scope{-1};
std::atomic<bool> g_denied_logged{false};

}  // namespace

int cma_copy(pid_t pid, bool write, std::span<const Sge> local, std::span<const Sge> remote,
             std::uint64_t len) noexcept {
  std::uint64_t done = 0;
  while (done < len) {
    iovec l[kMaxIov], r[kMaxIov];
    const std::size_t nl = to_iov(local, done, len - done, l);
    const std::size_t nr = to_iov(remote, done, len - done, r);
    const ssize_t n = write ? ::process_vm_writev(pid, l, nl, r, nr, 0) : ::process_vm_readv(pid, l, nl, r, nr, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    // A short copy stops at the first iovec that faulted; the next call
    // starts there and reports why.
    if (n == 0) return EFAULT;
    done += static_cast<std::uint64_t>(n);
  }
  return 0;
}

void remember_ptrace_scope() noexcept {
  if (g_ptrace_scope.load(std::memory_order_relaxed) != -1) return;
  int scope = -2;  // no Yama in this kernel
  if (std::FILE* f = std::fopen("/proc/sys/kernel/yama/ptrace_scope", "re")) {
    if (std::fscanf(f, "%d", &scope) != 1) scope = -2;
    std::fclose(f);
  }
  g_ptrace_scope.store(scope, std::memory_order_relaxed);
}

void log_cma_denied(pid_t pid, bool write) noexcept {
  if (g_denied_logged.exchange(true)) return;
  const int scope = g_ptrace_scope.load(std::memory_order_relaxed);
  char why[160];
  if (scope >= 0) {
    std::snprintf(why, sizeof why, "kernel.yama.ptrace_scope is %d%s", scope,
                  scope >= 1 ? " (1 allows only descendants; 0 allows any process of the same uid)" : "");
  } else {
    std::snprintf(why, sizeof why, "no Yama; the processes must run as the same uid (or have CAP_SYS_PTRACE)");
  }
  RMA_LOG_ERROR("shm: process_vm_%s to pid %d was refused (EPERM): ptrace restrictions forbid cross-memory "
                "attach: %s. Run both processes as one user and set `sysctl kernel.yama.ptrace_scope=0`, or "
                "use another provider. Completions carry vendor_err 26.",
                write ? "writev" : "readv", static_cast<int>(pid), why);
}

}  // namespace rma::shm
