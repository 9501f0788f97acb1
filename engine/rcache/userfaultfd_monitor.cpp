#include "rcache/userfaultfd_monitor.hpp"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>

#include "rcache/memory_monitor.hpp"
#include "rma/sdk/log.hpp"

namespace rma::rcache {
namespace {

struct State {
  std::mutex start_mutex;
  std::atomic<int> fd{-1};
  pthread_t thread{};
  bool thread_started = false;
  std::string failure;  // why userfaultfd is unusable, once known
};

State& state() {
  static State* s = new State;  // never destroyed: the monitor thread outlives main()
  return *s;
}

constexpr std::uint64_t kFeatures =
    UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE | UFFD_FEATURE_EVENT_REMAP;

int open_userfaultfd(std::string* why) {
  // UFFD_USER_MODE_ONLY lets unprivileged processes use it where the sysctl
  // vm.unprivileged_userfaultfd is 0; we never need kernel-mode faults.
  int fd = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY));
  if (fd < 0 && errno == EINVAL) {
    fd = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
  }
  if (fd < 0) {
    int e = errno;
    *why = std::string("userfaultfd() failed: ") + std::strerror(e) +
           (e == EPERM ? " (needs CAP_SYS_PTRACE or vm.unprivileged_userfaultfd=1)" : "");
    return -1;
  }
  uffdio_api api{};
  api.api = UFFD_API;
  api.features = kFeatures;
  if (ioctl(fd, UFFDIO_API, &api) != 0) {
    *why = std::string("userfaultfd lacks UNMAP/REMOVE/REMAP events: ") + std::strerror(errno);
    close(fd);
    return -1;
  }
  if ((api.ioctls & (1ULL << _UFFDIO_REGISTER)) == 0) {
    *why = "userfaultfd cannot register ranges here";
    close(fd);
    return -1;
  }
  return fd;
}

void handle_message(int fd, const uffd_msg& msg) noexcept {
  MemoryMonitor& mon = MemoryMonitor::instance();
  switch (msg.event) {
    case UFFD_EVENT_UNMAP:
      mon.dispatch_locked(msg.arg.remove.start, msg.arg.remove.end);
      break;
    case UFFD_EVENT_REMOVE:
      mon.dispatch_locked(msg.arg.remove.start, msg.arg.remove.end);
      break;
    case UFFD_EVENT_REMAP:
      mon.dispatch_locked(msg.arg.remap.from, msg.arg.remap.from + msg.arg.remap.len);
      mon.dispatch_locked(msg.arg.remap.to, msg.arg.remap.to + msg.arg.remap.len);
      break;
    case UFFD_EVENT_PAGEFAULT: {
      // We register in write-protect mode and never protect a page, so this
      // should not happen; wake the faulting thread rather than leave it stuck.
      uffdio_range r{};
      r.start = msg.arg.pagefault.address & ~static_cast<std::uint64_t>(getpagesize() - 1);
      r.len = static_cast<std::uint64_t>(getpagesize());
      uffdio_writeprotect wp{};
      wp.range = r;
      wp.mode = 0;
      if (ioctl(fd, UFFDIO_WRITEPROTECT, &wp) != 0) ioctl(fd, UFFDIO_WAKE, &r);
      break;
    }
    default:
      break;
  }
  count_userfaultfd_event();
}

void* monitor_thread(void* arg) {
  const int fd = static_cast<int>(reinterpret_cast<std::intptr_t>(arg));
  MemoryMonitor& mon = MemoryMonitor::instance();
  uffd_msg msgs[32];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    int n = poll(&p, 1, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if ((p.revents & (POLLERR | POLLNVAL)) != 0) break;
    // Read while holding every cache lock: the unmapping thread resumes as
    // soon as its event is read, and must not find the old range cached.
    mon.lock_all();
    for (;;) {
      ssize_t got = read(fd, msgs, sizeof msgs);
      if (got <= 0) break;
      auto count = static_cast<std::size_t>(got) / sizeof(uffd_msg);
      for (std::size_t i = 0; i < count; ++i) handle_message(fd, msgs[i]);
    }
    mon.unlock_all();
  }
  return nullptr;
}

}  // namespace

Status UserfaultfdMonitor::start() {
  State& s = state();
  std::lock_guard lock(s.start_mutex);
  if (s.fd.load() >= 0) return {};
  std::string why;
  int fd = open_userfaultfd(&why);
  if (fd < 0) return unavailable(why);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  // Block signals in the monitor thread: it must never run a handler that
  // could touch a cache.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&s.thread, &attr, monitor_thread,
                          reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)));
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    close(fd);
    return unavailable(std::string("cannot start the userfaultfd monitor thread: ") + std::strerror(rc));
  }
  s.thread_started = true;
  s.fd.store(fd);
  RMA_LOG_DEBUG("registration cache: userfaultfd monitor started (fd %d)", fd);
  return {};
}

bool UserfaultfdMonitor::running() noexcept { return state().fd.load() >= 0; }

UserfaultfdMonitor::Watch UserfaultfdMonitor::watch(std::uintptr_t start, std::uintptr_t end) noexcept {
  int fd = state().fd.load();
  if (fd < 0) {
    if (!UserfaultfdMonitor::start().ok()) return Watch::kNotWatchable;
    fd = state().fd.load();
  }
  uffdio_register reg{};
  reg.range.start = start;
  reg.range.len = end - start;
  reg.mode = UFFDIO_REGISTER_MODE_WP;
  if (ioctl(fd, UFFDIO_REGISTER, &reg) == 0) return Watch::kOk;
  // ENOMEM: part of the range is not mapped. EINVAL: a mapping type that
  // userfaultfd does not support (file-backed, VM_PFNMAP...). EBUSY: another
  // userfaultfd owns it.
  return errno == ENOMEM ? Watch::kNotMapped : Watch::kNotWatchable;
}

void UserfaultfdMonitor::forget_after_fork() noexcept {
  State& s = state();
  int fd = s.fd.exchange(-1);
  if (fd >= 0) close(fd);
  s.thread_started = false;
}

}  // namespace rma::rcache
