#include "shm/segment.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <set>

#include "rma/sdk/log.hpp"
#include "rma/sdk/text.hpp"
#include "swkit/secure_random.hpp"

namespace rma::shm {

namespace {

// The process's segments and the mappings it holds. Immortal: devices and
// QPs may be released during static destruction.
struct Registry {
  std::mutex mutex;
  std::map<std::string, std::weak_ptr<Segment>> mapped;  // every mapping, by name
  std::set<std::string> own_names;                        // ours, not yet unlinked
  pid_t owner = 0;                                        // the pid own_names belong to
  bool atexit_registered = false;
};
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// Normal exit without closing the device (a leaked handle, exit() from
// anywhere): the names go anyway. Only in the process that created them:
// a forked child that exits must not remove its parent's segments.
void unlink_own_at_exit() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (r.owner != ::getpid()) return;
  for (const std::string& n : r.own_names) ::shm_unlink(n.c_str());
  r.own_names.clear();
}

std::string errno_text(int e) { return std::string(std::strerror(e)); }

int pidfd_open(pid_t pid) noexcept {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  errno = ENOSYS;
  return -1;
#endif
}

bool pid_dead(pid_t pid) noexcept { return ::kill(pid, 0) == -1 && errno == ESRCH; }

}  // namespace

std::string segment_prefix(std::uint32_t uid, std::uint32_t pid) {
  return "/rma-shm." + dec(uid) + "." + dec(pid) + ".";
}

std::uint64_t process_nonce() noexcept {
  static const std::uint64_t nonce = [] {
    std::uint64_t n = 0;
    while (n == 0) swkit::secure_random_bytes(&n, sizeof n);
    return n;
  }();
  return nonce;
}

Segment::~Segment() {
  if (layout_ != nullptr) ::munmap(layout_, kSegmentSize);
  if (pidfd_ >= 0) ::close(pidfd_);
  if (own_) unlink();
}

bool Segment::owner_alive() const noexcept {
  if (own_) return true;
  if (pidfd_ >= 0) {
    pollfd p{pidfd_, POLLIN, 0};
    return ::poll(&p, 1, 0) == 0;  // readable once the process exited
  }
  return !pid_dead(pid_);  // no pidfd (kernel < 5.3): pid reuse can fool this
}

void Segment::ring_doorbell() noexcept {
  SegmentHeader& h = layout_->header;
  h.doorbell.fetch_add(1, std::memory_order_seq_cst);
  if (h.sleeping.load(std::memory_order_seq_cst) != 0) {
    // Not FUTEX_PRIVATE: the sleeper may be another process.
    ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&h.doorbell), FUTEX_WAKE, 1, nullptr, nullptr, 0);
  }
}

void Segment::unlink() noexcept {
  if (!own_ || unlinked_) return;
  unlinked_ = true;
  ::shm_unlink(name_.c_str());
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.own_names.erase(name_);
}

Result<std::shared_ptr<Segment>> SegmentMap::create() {
  const pid_t pid = ::getpid();
  std::uint64_t rnd;
  swkit::secure_random_bytes(&rnd, sizeof rnd);
  char tail[17];
  std::snprintf(tail, sizeof tail, "%016llx", static_cast<unsigned long long>(rnd));
  const std::string name = segment_prefix(::getuid(), static_cast<std::uint32_t>(pid)) + tail;

  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int e = errno;
    return io_error("shm: cannot create the shared segment " + name + " (shm_open: " + errno_text(e) +
                    "); is /dev/shm mounted and writable?", 0);
  }
  if (::ftruncate(fd, static_cast<off_t>(kSegmentSize)) != 0) {
    const int e = errno;
    ::close(fd);
    ::shm_unlink(name.c_str());
    return io_error("shm: cannot size the shared segment " + name + " to " + dec(kSegmentSize) +
                    " bytes (ftruncate: " + errno_text(e) + "); is /dev/shm full?", 0);
  }
  void* p = ::mmap(nullptr, kSegmentSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int map_errno = errno;
  ::close(fd);
  if (p == MAP_FAILED) {
    ::shm_unlink(name.c_str());
    return io_error("shm: cannot map the shared segment " + name + " (mmap: " + errno_text(map_errno) + ")", 0);
  }
  // The file is zero-filled: every atomic starts at 0 (free slots, empty
  // rings). Only the header needs writing.
  auto* layout = static_cast<SegmentLayout*>(p);
  SegmentHeader& h = layout->header;
  std::memcpy(h.magic, kSegmentMagic, sizeof h.magic);
  h.version = kSegmentVersion;
  h.pid = static_cast<std::uint32_t>(pid);
  h.nonce = process_nonce();
  h.max_qp = kMaxQp;
  h.max_mr = kMaxMr;
  h.ring_depth = kRingDepth;
  h.max_ring_sge = kMaxRingSge;
  h.size = kSegmentSize;

  std::shared_ptr<Segment> seg(new Segment);
  seg->layout_ = layout;
  seg->name_ = name;
  seg->pid_ = pid;
  seg->own_ = true;
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (r.owner != pid) {  // first segment of this process (or of a forked child)
    r.own_names.clear();
    r.owner = pid;
  }
  r.own_names.insert(name);
  r.mapped[name] = seg;
  if (!r.atexit_registered) {
    r.atexit_registered = std::atexit(unlink_own_at_exit) == 0;
  }
  return seg;
}

Result<std::shared_ptr<Segment>> SegmentMap::attach(const std::string& name, std::uint32_t pid,
                                                    std::uint64_t nonce) {
  Registry& r = registry();
  // Declared before the lock: if it turns out to be the last reference, the
  // segment goes after the lock is released (an own segment's destructor
  // takes it).
  std::shared_ptr<Segment> existing;
  std::lock_guard lock(r.mutex);
  if (auto it = r.mapped.find(name); it != r.mapped.end()) {
    existing = it->second.lock();
    if (existing) {
      const SegmentHeader& h = existing->layout().header;
      if (h.pid != pid || h.nonce != nonce) {
        return invalid_argument("connect: the shm endpoint address names segment " + name +
                                ", which belongs to another process incarnation (pid reused?)");
      }
      return existing;
    }
    r.mapped.erase(it);
  }
  const std::string who = "connect: peer process " + dec(pid) + " (segment " + name + ")";
  // The pidfd first: from here on, a pid reused by another program cannot
  // pass for the peer.
  int pidfd = -1;
  if (pid != static_cast<std::uint32_t>(::getpid())) {
    pidfd = pidfd_open(static_cast<pid_t>(pid));
    if (pidfd < 0 && errno == ESRCH) {
      return not_found(who + " is not running (it exited or was killed); its endpoint address is stale");
    }
    if (pidfd < 0 && errno != ENOSYS) {
      return io_error(who + ": pidfd_open", errno);
    }
  }
  auto fail = [&](Status s) {
    if (pidfd >= 0) ::close(pidfd);
    return s;
  };
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) {
    const int e = errno;
    if (e == ENOENT) {
      return fail(not_found(who + ": the segment does not exist: the peer closed its device or exited"));
    }
    if (e == EACCES) {
      return fail(permission_denied(who + ": the segment belongs to another user; the shm provider connects "
                                          "processes of one user only"));
    }
    return fail(io_error(who + ": shm_open", e));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) != kSegmentSize) {
    ::close(fd);
    return fail(invalid_argument(who + ": the segment has " + dec(static_cast<std::uint64_t>(st.st_size)) +
                                 " bytes, expected " + dec(kSegmentSize) +
                                 " (a librma of another version made it?)"));
  }
  void* p = ::mmap(nullptr, kSegmentSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int map_errno = errno;
  ::close(fd);
  if (p == MAP_FAILED) return fail(io_error(who + ": mmap", map_errno));
  auto* layout = static_cast<SegmentLayout*>(p);
  const SegmentHeader& h = layout->header;
  const char* bad = nullptr;
  if (std::memcmp(h.magic, kSegmentMagic, sizeof h.magic) != 0 || h.version != kSegmentVersion) {
    bad = "is not an rma-shm segment of this version";
  } else if (h.max_qp != kMaxQp || h.max_mr != kMaxMr || h.ring_depth != kRingDepth ||
             h.max_ring_sge != kMaxRingSge || h.size != kSegmentSize) {
    bad = "has another layout (a librma of another version made it?)";
  } else if (h.pid != pid || h.nonce != nonce) {
    bad = "belongs to another process incarnation than the address names (pid reused?)";
  }
  if (bad != nullptr) {
    ::munmap(p, kSegmentSize);
    return fail(invalid_argument(who + ": the segment " + bad));
  }
  std::shared_ptr<Segment> seg(new Segment);
  seg->layout_ = layout;
  seg->name_ = name;
  seg->pid_ = static_cast<pid_t>(pid);
  seg->pidfd_ = pidfd;
  r.mapped[name] = seg;
  return seg;
}

int SegmentMap::remove_stale() {
  const std::string mine = segment_prefix(::getuid(), 0);  // "/rma-shm.<uid>.0."
  const std::string prefix = mine.substr(1, mine.size() - 3);  // "rma-shm.<uid>."
  DIR* d = ::opendir("/dev/shm");
  if (d == nullptr) return 0;
  int removed = 0;
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n.compare(0, prefix.size(), prefix) != 0) continue;
    char* end = nullptr;
    const unsigned long pid = std::strtoul(n.c_str() + prefix.size(), &end, 10);
    if (end == nullptr || *end != '.' || pid == 0 || pid > 0x7FFFFFFFul) continue;
    if (!pid_dead(static_cast<pid_t>(pid))) continue;
    if (::shm_unlink(("/" + n).c_str()) == 0) {
      ++removed;
      RMA_LOG_INFO("shm: removed stale segment /dev/shm/%s (process %lu is gone)", n.c_str(), pid);
    }
  }
  ::closedir(d);
  return removed;
}

}  // namespace rma::shm
