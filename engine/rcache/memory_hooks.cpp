// Interception of the calls that take memory away, for processes where
// userfaultfd is not available. librma defines munmap, mremap, madvise, mmap,
// brk, sbrk and shmdt; each forwards to the next definition (the C library,
// or a sanitizer's interceptor) and, when hooks are enabled and the call
// succeeded, invalidates the affected range in every registration cache
// before returning.
//
// Limits: glibc's malloc/free call internal aliases that no interposition
// sees. When hooks are enabled we therefore ask malloc never to give memory
// back (M_TRIM_THRESHOLD, M_MMAP_MAX), as MPI libraries do for "leave
// pinned" registration caches, so free() cannot unmap a cached buffer.
#include <dlfcn.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdint>

#include "rcache/memory_monitor.hpp"

namespace rma::rcache {
namespace {

std::atomic<bool> g_hooks_enabled{false};

// Resolved lazily with RTLD_NEXT; a thread re-entering while resolving (dlsym
// itself unmapping) falls back to the raw system call.
thread_local bool t_resolving = false;

template <typename Fn>
Fn resolve_next(const char* name, std::atomic<Fn>& slot) noexcept {
  Fn fn = slot.load(std::memory_order_acquire);
  if (fn != nullptr || t_resolving) return fn;
  t_resolving = true;
  fn = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
  t_resolving = false;
  slot.store(fn, std::memory_order_release);
  return fn;
}

std::uintptr_t page_floor(std::uintptr_t a) noexcept {
  return a & ~static_cast<std::uintptr_t>(getpagesize() - 1);
}
std::uintptr_t page_ceil(std::uintptr_t a) noexcept {
  auto ps = static_cast<std::uintptr_t>(getpagesize());
  return a > UINTPTR_MAX - (ps - 1) ? UINTPTR_MAX & ~(ps - 1) : (a + ps - 1) & ~(ps - 1);
}

void report(const void* addr, std::size_t len) noexcept {
  if (!g_hooks_enabled.load(std::memory_order_relaxed) || len == 0) return;
  auto s = reinterpret_cast<std::uintptr_t>(addr);
  std::uintptr_t e = len > UINTPTR_MAX - s ? UINTPTR_MAX : s + len;
  count_hook_event();
  MemoryMonitor::instance().dispatch(page_floor(s), page_ceil(e));
}

using munmap_fn = int (*)(void*, size_t);
using mremap_fn = void* (*)(void*, size_t, size_t, int, ...);
using madvise_fn = int (*)(void*, size_t, int);
using mmap_fn = void* (*)(void*, size_t, int, int, int, off_t);
using brk_fn = int (*)(void*);
using sbrk_fn = void* (*)(intptr_t);
using shmdt_fn = int (*)(const void*);

std::atomic<munmap_fn> g_munmap{nullptr};
std::atomic<mremap_fn> g_mremap{nullptr};
std::atomic<madvise_fn> g_madvise{nullptr};
std::atomic<mmap_fn> g_mmap{nullptr};
std::atomic<brk_fn> g_brk{nullptr};
std::atomic<sbrk_fn> g_sbrk{nullptr};
std::atomic<shmdt_fn> g_shmdt{nullptr};

bool discards(int advice) noexcept {
  switch (advice) {
    case MADV_DONTNEED:
    case MADV_FREE:
    case MADV_REMOVE:
#ifdef MADV_DONTNEED_LOCKED
    case MADV_DONTNEED_LOCKED:
#endif
      return true;
    default:
      return false;
  }
}

}  // namespace

void enable_memory_hooks() noexcept {
  if (g_hooks_enabled.exchange(true)) return;
  mallopt(M_TRIM_THRESHOLD, -1);
  mallopt(M_MMAP_MAX, 0);
}
bool memory_hooks_enabled() noexcept { return g_hooks_enabled.load(std::memory_order_relaxed); }

}  // namespace rma::rcache

using rma::rcache::report;

// The hooks must stay interposable (exported) although librma builds with
// hidden visibility: they work only as the first definition the dynamic
// linker finds.
#pragma GCC visibility push(default)
extern "C" {

int munmap(void* addr, size_t len) noexcept {
  auto fn = rma::rcache::resolve_next("munmap", rma::rcache::g_munmap);
  int rc = fn != nullptr ? fn(addr, len) : static_cast<int>(syscall(SYS_munmap, addr, len));
  if (rc == 0) report(addr, len);
  return rc;
}

void* mremap(void* old_addr, size_t old_len, size_t new_len, int flags, ...) noexcept {
  void* new_addr = nullptr;
  if ((flags & MREMAP_FIXED) != 0) {
    va_list ap;
    va_start(ap, flags);
    new_addr = va_arg(ap, void*);
    va_end(ap);
  }
  auto fn = rma::rcache::resolve_next("mremap", rma::rcache::g_mremap);
  void* r = fn != nullptr ? fn(old_addr, old_len, new_len, flags, new_addr)
                          : reinterpret_cast<void*>(syscall(SYS_mremap, old_addr, old_len, new_len, flags, new_addr));
  if (r != MAP_FAILED) {
    report(old_addr, old_len);
    if (new_addr != nullptr) report(new_addr, new_len);
  }
  return r;
}

int madvise(void* addr, size_t len, int advice) noexcept {
  auto fn = rma::rcache::resolve_next("madvise", rma::rcache::g_madvise);
  int rc = fn != nullptr ? fn(addr, len, advice) : static_cast<int>(syscall(SYS_madvise, addr, len, advice));
  if (rc == 0 && rma::rcache::discards(advice)) report(addr, len);
  return rc;
}

void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) noexcept {
  auto fn = rma::rcache::resolve_next("mmap", rma::rcache::g_mmap);
  void* r = fn != nullptr ? fn(addr, len, prot, flags, fd, off)
                          : reinterpret_cast<void*>(syscall(SYS_mmap, addr, len, prot, flags, fd, off));
  // MAP_FIXED replaces whatever was mapped there.
  if (r != MAP_FAILED && (flags & MAP_FIXED) != 0) report(r, len);
  return r;
}

int brk(void* addr) noexcept {
  auto sb = rma::rcache::resolve_next("sbrk", rma::rcache::g_sbrk);
  void* old_end = sb != nullptr ? sb(0) : nullptr;
  auto fn = rma::rcache::resolve_next("brk", rma::rcache::g_brk);
  if (fn == nullptr) {
    errno = ENOMEM;
    return -1;
  }
  int rc = fn(addr);
  if (rc == 0 && old_end != nullptr && addr < old_end) {
    report(addr, static_cast<size_t>(static_cast<char*>(old_end) - static_cast<char*>(addr)));
  }
  return rc;
}

void* sbrk(intptr_t increment) noexcept {
  auto fn = rma::rcache::resolve_next("sbrk", rma::rcache::g_sbrk);
  if (fn == nullptr) {
    errno = ENOMEM;
    return reinterpret_cast<void*>(-1);
  }
  void* old_end = fn(increment);
  if (old_end != reinterpret_cast<void*>(-1) && increment < 0) {
    report(static_cast<char*>(old_end) + increment, static_cast<size_t>(-increment));
  }
  return old_end;
}

int shmdt(const void* addr) noexcept {
  auto fn = rma::rcache::resolve_next("shmdt", rma::rcache::g_shmdt);
  if (fn == nullptr) {
    errno = EINVAL;
    return -1;
  }
  // shmdt takes no length. Measure how far the mapping at addr extends with
  // msync (ENOMEM once part of the range is unmapped): doubling, then
  // bisecting. Mapped memory right after the segment is invalidated too,
  // which costs a re-registration at worst.
  size_t len = 0;
  if (rma::rcache::g_hooks_enabled.load(std::memory_order_relaxed)) {
    auto* base = const_cast<void*>(addr);
    auto mapped = [&](size_t n) { return msync(base, n, MS_ASYNC) == 0; };
    const auto ps = static_cast<size_t>(getpagesize());
    size_t good = 0, probe = ps;
    while (probe <= (static_cast<size_t>(1) << 40) && mapped(probe)) {
      good = probe;
      probe *= 2;
    }
    size_t bad = probe;
    while (bad - good > ps) {
      size_t mid = good + ((bad - good) / 2 / ps) * ps;
      if (mapped(mid)) good = mid; else bad = mid;
    }
    len = good;
  }
  int rc = fn(addr);
  if (rc == 0) report(addr, len);
  return rc;
}

}  // extern "C"
#pragma GCC visibility pop
