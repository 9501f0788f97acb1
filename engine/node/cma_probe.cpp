// Cross-memory attach probe (include/rma/sdk/node.hpp): the engine asks it
// before choosing shared memory between two ranks of one host, so that a
// refusal is reported once, at start, with its cause, and not as a remote
// access error in the middle of a job.
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "rma/sdk/node.hpp"

namespace rma::node {
namespace {

// "kernel.yama.ptrace_scope=1 (only a parent may attach its descendants)",
// or "" when Yama is not in the kernel.
std::string yama_scope() {
  std::ifstream in("/proc/sys/kernel/yama/ptrace_scope");
  int v = -1;
  if (!(in >> v)) return {};
  switch (v) {
    case 0: return {};
    case 1: return "kernel.yama.ptrace_scope=1 (only a parent may attach its descendants)";
    case 2: return "kernel.yama.ptrace_scope=2 (only processes with CAP_SYS_PTRACE may attach)";
    default: return "kernel.yama.ptrace_scope=" + std::to_string(v) + " (attach disabled)";
  }
}

}  // namespace

Status probe_cross_memory_attach(std::uint32_t pid, std::uint64_t addr, std::uint64_t expect) {
  std::uint64_t seen = 0;
  iovec local{&seen, sizeof seen};
  iovec remote{reinterpret_cast<void*>(addr), sizeof seen};
  const ssize_t n = ::process_vm_readv(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0);
  if (n == static_cast<ssize_t>(sizeof seen)) {
    if (seen != expect) {
      return Status(StatusCode::kFailedPrecondition,
                    "process " + std::to_string(pid) + " holds another value at the probed address " +
                        "(a different librma build, or not a librma process)");
    }
    return {};
  }
  const int err = n < 0 ? errno : EFAULT;
  const std::string call = "process_vm_readv of process " + std::to_string(pid) + ": " + std::strerror(err);
  if (err == ESRCH) return not_found(call + " (the process is gone)");
  if (err == EPERM) {
    std::string cause = yama_scope();
    if (cause.empty()) {
      cause = "it runs as another user (uid " + std::to_string(::getuid()) +
              " here) and this process lacks CAP_SYS_PTRACE";
    }
    return Status(StatusCode::kPermissionDenied, call + ": " + cause);
  }
  if (err == ENOSYS) {
    return Status(StatusCode::kUnavailable, call + " (the kernel has no cross-memory attach: CONFIG_CROSS_MEMORY_ATTACH)");
  }
  return Status(StatusCode::kIoError, call);
}

}  // namespace rma::node
