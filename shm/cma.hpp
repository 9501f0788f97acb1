// Cross-memory attach: copies between this process and another (or this
// one) with process_vm_readv/process_vm_writev. Nothing is pinned and
// nothing is mapped: the kernel copies through the other process's page
// tables, so a WRITE is visible at the target when the call returns, and
// memory the target unmapped fails with EFAULT instead of crashing anyone.
//
// Data path: no allocation (the iovec arrays are on the stack; lists are at
// most kMaxRingSge long).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>

#include "rma/sdk/provider.hpp"

namespace rma::shm {

// Copies the first `len` bytes between the local list and the remote list
// of process `pid`: write = local -> remote. 0 on success, else errno:
// EPERM (ptrace restrictions), ESRCH (the process is gone), EFAULT (an
// address is not mapped on one side), ENOMEM, EINVAL.
int cma_copy(pid_t pid, bool write, std::span<const Sge> local, std::span<const Sge> remote,
             std::uint64_t len) noexcept;

// Says once per process, in the log, why process_vm_* was refused (EPERM):
// the completion carries only the vendor error.
void log_cma_denied(pid_t pid, bool write) noexcept;

// Reads kernel.yama.ptrace_scope now (control path), so the data path can
// name it in log_cma_denied without touching /proc.
void remember_ptrace_scope() noexcept;

}  // namespace rma::shm
