// Node-local shared segments (include/rma/sdk/node.hpp): allocation,
// attachment, the table locate() reads, and the removal of segments whose
// owner died.
//
// A segment is one POSIX shm object: a control page (magic, nonce, pid,
// size, the freed mark) followed by the data the caller sees. The name
// carries the owner's uid and pid and the nonce, so a dead owner's
// segments can be found from the name alone and a name is never reused.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "rma/sdk/log.hpp"
#include "rma/sdk/node.hpp"

namespace rma::node {
namespace {

constexpr char kMagic[8] = {'r', 'm', 'a', '.', 's', 'e', 'g', '1'};
constexpr std::uint32_t kFreed = 2;
constexpr std::size_t kMaxPurpose = 15;

// The first page of every segment. Peers read it; only the owner writes it
// (a peer could, as it could write anything in the segment: the owner
// never trusts it for its own decisions).
struct ControlPage {
  char magic[8];
  std::uint64_t nonce;
  std::uint64_t size;  // data bytes after this page
  std::uint32_t pid;
  std::atomic<std::uint32_t> state;  // kLive, then kFreed
};
static_assert(std::atomic<std::uint32_t>::is_always_lock_free, "the freed mark is read by other processes");

std::size_t page_size() noexcept {
  static const std::size_t p = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return p;
}

// This process's live segments, for locate() and for unlinking at exit.
// Fixed size: locate() never allocates, and allocate() says when it is full.
constexpr std::size_t kMaxLive = 1024;
struct LiveSegment {
  std::uintptr_t start = 0;
  std::size_t size = 0;
  SegmentRef ref;
  bool named = false;  // not unlinked yet
};
struct LiveTable {
  std::mutex mutex;
  LiveSegment entries[kMaxLive];
  std::size_t count = 0;
  bool atexit_registered = false;
  bool stale_removed = false;
};
LiveTable& live() {
  static LiveTable* t = new LiveTable;  // immortal: segments may be freed during static destruction
  return *t;
}

// Normal exit with segments still allocated: the names go, only in the
// process that created them (a forked child that exits leaves its
// parent's alone).
void unlink_live_at_exit() {
  LiveTable& t = live();
  std::lock_guard lock(t.mutex);
  const auto me = static_cast<std::uint32_t>(::getpid());
  for (std::size_t i = 0; i < t.count; ++i) {
    LiveSegment& e = t.entries[i];
    if (e.named && e.ref.pid == me) {
      ::shm_unlink(e.ref.name);
      e.named = false;
    }
  }
}

bool valid_purpose(std::string_view p) noexcept {
  if (p.empty() || p.size() > kMaxPurpose) return false;
  for (const char c : p) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

// A parsed name "rma.<uid>.<pid>.<purpose>.<16 hex>" (without the slash).
struct ParsedName {
  std::uint32_t uid = 0;
  std::uint32_t pid = 0;
  std::uint64_t nonce = 0;
};

bool parse_decimal(const char*& p, std::uint32_t& out) noexcept {
  if (*p < '0' || *p > '9') return false;
  std::uint64_t v = 0;
  int digits = 0;
  while (*p >= '0' && *p <= '9') {
    v = v * 10 + static_cast<std::uint64_t>(*p - '0');
    if (++digits > 10 || v > 0xFFFFFFFFull) return false;
    ++p;
  }
  out = static_cast<std::uint32_t>(v);
  return true;
}

// Exactly librma's naming, nothing looser: cleanup must never touch a name
// that another program (or an older librma) chose.
bool parse_name(const char* n, ParsedName& out) noexcept {
  if (std::strncmp(n, "rma.", 4) != 0) return false;
  const char* p = n + 4;
  if (!parse_decimal(p, out.uid) || *p++ != '.') return false;
  if (!parse_decimal(p, out.pid) || *p++ != '.' || out.pid == 0) return false;
  const char* purpose = p;
  while (*p != '\0' && *p != '.') ++p;
  if (*p != '.' || !valid_purpose(std::string_view(purpose, static_cast<std::size_t>(p - purpose)))) return false;
  ++p;
  std::uint64_t nonce = 0;
  for (int i = 0; i < 16; ++i, ++p) {
    const char c = *p;
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else {
      return false;
    }
    nonce = nonce << 4 | static_cast<std::uint64_t>(d);
  }
  if (*p != '\0') return false;
  out.nonce = nonce;
  return true;
}

bool pid_dead(std::uint32_t pid) noexcept {
  return pid > 0x7FFFFFFFu || (::kill(static_cast<pid_t>(pid), 0) == -1 && errno == ESRCH);
}

std::uint64_t random_nonce() noexcept {
  std::uint64_t n = 0;
  while (n == 0) {
    if (::getrandom(&n, sizeof n, 0) != static_cast<ssize_t>(sizeof n)) {
      // getrandom cannot fail for 8 bytes once the pool is up; never loop forever.
      n = static_cast<std::uint64_t>(::getpid()) << 32 ^ reinterpret_cast<std::uintptr_t>(&n);
    }
  }
  return n;
}

std::string errno_text(int e) { return std::strerror(e); }

}  // namespace

Result<std::unique_ptr<SharedMemory>> SharedMemory::allocate(std::size_t bytes, std::string_view purpose) {
  if (!valid_purpose(purpose)) {
    return invalid_argument("SharedMemory::allocate: purpose \"" + std::string(purpose) +
                            "\" must be 1 to 15 characters of [a-z0-9_]");
  }
  const std::size_t page = page_size();
  if (bytes == 0) return invalid_argument("SharedMemory::allocate: 0 bytes asked for");
  if (bytes > (std::size_t{1} << 46)) {
    return invalid_argument("SharedMemory::allocate: " + std::to_string(bytes) + " bytes is more than 64 TiB");
  }
  const std::size_t size = (bytes + page - 1) / page * page;
  {
    // The first allocation of a process sweeps up what killed processes of
    // this user left behind.
    LiveTable& t = live();
    bool sweep = false;
    {
      std::lock_guard lock(t.mutex);
      sweep = !t.stale_removed;
      t.stale_removed = true;
    }
    if (sweep) (void)remove_stale_segments();
  }

  const auto pid = static_cast<std::uint32_t>(::getpid());
  const std::uint64_t nonce = random_nonce();
  char name[SegmentRef::kMaxName + 1];
  const int len = std::snprintf(name, sizeof name, "/rma.%u.%u.%.*s.%016" PRIx64, static_cast<unsigned>(::getuid()),
                                pid, static_cast<int>(purpose.size()), purpose.data(), nonce);
  if (len < 0 || static_cast<std::size_t>(len) > SegmentRef::kMaxName) {
    return internal_error("SharedMemory::allocate: segment name too long");
  }
  const int fd = ::shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int e = errno;
    return io_error(std::string("SharedMemory::allocate: cannot create ") + name + " (shm_open: " + errno_text(e) +
                    "); is /dev/shm mounted and writable?", 0);
  }
  const std::size_t total = size + page;
  if (::ftruncate(fd, static_cast<off_t>(total)) != 0) {
    const int e = errno;
    ::close(fd);
    ::shm_unlink(name);
    return resource_exhausted(std::string("SharedMemory::allocate: cannot size ") + name + " to " +
                              std::to_string(total) + " bytes (ftruncate: " + errno_text(e) +
                              "); is /dev/shm full (df /dev/shm)?");
  }
  void* p = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int map_errno = errno;
  ::close(fd);
  if (p == MAP_FAILED) {
    ::shm_unlink(name);
    return io_error(std::string("SharedMemory::allocate: cannot map ") + name + " (mmap: " + errno_text(map_errno) +
                    ")", 0);
  }
  std::unique_ptr<SharedMemory> m(new (std::nothrow) SharedMemory);
  if (!m) {
    ::munmap(p, total);
    ::shm_unlink(name);
    return resource_exhausted("SharedMemory::allocate: out of memory");
  }
  auto* cp = static_cast<ControlPage*>(p);
  std::memcpy(cp->magic, kMagic, sizeof kMagic);
  cp->nonce = nonce;
  cp->size = size;
  cp->pid = pid;
  cp->state.store(kLive, std::memory_order_release);
  m->base_ = static_cast<std::byte*>(p);
  m->data_ = m->base_ + page;
  m->size_ = size;
  std::memcpy(m->ref_.name, name, static_cast<std::size_t>(len) + 1);
  m->ref_.size = size;
  m->ref_.pid = pid;
  m->ref_.nonce = nonce;
  m->state_ = &cp->state;
  m->owner_ = true;

  LiveTable& t = live();
  std::lock_guard lock(t.mutex);
  if (t.count == kMaxLive) {
    // m's destructor would look for itself in the table: undo by hand.
    ::munmap(p, total);
    ::shm_unlink(name);
    m->base_ = nullptr;
    m->owner_ = false;
    return resource_exhausted("SharedMemory::allocate: this process already has " + std::to_string(kMaxLive) +
                              " shared segments; free some first");
  }
  t.entries[t.count++] = LiveSegment{reinterpret_cast<std::uintptr_t>(m->data_), size, m->ref_, true};
  if (!t.atexit_registered) t.atexit_registered = std::atexit(unlink_live_at_exit) == 0;
  return m;
}

Result<std::unique_ptr<SharedMemory>> SharedMemory::attach(const SegmentRef& ref) {
  const std::size_t nlen = strnlen(ref.name, sizeof ref.name);
  if (nlen == sizeof ref.name) return invalid_argument("SharedMemory::attach: the segment name is not terminated");
  const std::string name(ref.name, nlen);
  ParsedName parsed;
  if (name.empty() || name[0] != '/' || !parse_name(name.c_str() + 1, parsed)) {
    return invalid_argument("SharedMemory::attach: \"" + name +
                            "\" is not a librma segment name (/rma.<uid>.<pid>.<purpose>.<16 hex digits>)");
  }
  if (parsed.pid != ref.pid || parsed.nonce != ref.nonce) {
    return invalid_argument("SharedMemory::attach: the reference's pid " + std::to_string(ref.pid) + " or nonce " +
                            "does not match its name " + name + " (corrupt reference)");
  }
  const auto uid = static_cast<std::uint32_t>(::getuid());
  if (parsed.uid != uid) {
    return permission_denied("SharedMemory::attach: " + name + " belongs to uid " + std::to_string(parsed.uid) +
                             ", this process runs as uid " + std::to_string(uid) +
                             "; librma shares memory between processes of one user only");
  }
  const std::size_t page = page_size();
  if (ref.size == 0 || ref.size % page != 0 || ref.size > (std::uint64_t{1} << 46)) {
    return invalid_argument("SharedMemory::attach: the reference's size " + std::to_string(ref.size) +
                            " is not a positive multiple of the page size");
  }
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) {
    const int e = errno;
    if (e == ENOENT) {
      return not_found("SharedMemory::attach: " + name + " does not exist any more: its owner (pid " +
                       std::to_string(ref.pid) + ") freed it or exited");
    }
    if (e == EACCES) {
      return permission_denied("SharedMemory::attach: " + name + ": permission denied (shm_open); the segment "
                               "belongs to another user");
    }
    return io_error("SharedMemory::attach: " + name + " (shm_open)", e);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return io_error("SharedMemory::attach: " + name + " (fstat)", e);
  }
  if (st.st_uid != uid) {
    ::close(fd);
    return permission_denied("SharedMemory::attach: " + name + " is owned by uid " + std::to_string(st.st_uid) +
                             ", not by this process's uid " + std::to_string(uid));
  }
  const std::size_t total = ref.size + page;
  if (static_cast<std::uint64_t>(st.st_size) != total) {
    ::close(fd);
    return failed_precondition("SharedMemory::attach: " + name + " has " +
                               std::to_string(static_cast<std::uint64_t>(st.st_size)) + " bytes, the reference says " +
                               std::to_string(total) + " (data and control page): it is another segment");
  }
  void* p = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int map_errno = errno;
  ::close(fd);
  if (p == MAP_FAILED) return io_error("SharedMemory::attach: " + name + " (mmap)", map_errno);
  auto* cp = static_cast<ControlPage*>(p);
  const char* bad = nullptr;
  if (std::memcmp(cp->magic, kMagic, sizeof kMagic) != 0) {
    bad = "has no librma control page";
  } else if (cp->nonce != ref.nonce || cp->pid != ref.pid || cp->size != ref.size) {
    bad = "holds another segment than the reference names (nonce, pid or size differ)";
  } else if (cp->state.load(std::memory_order_acquire) != kLive) {
    ::munmap(p, total);
    return not_found("SharedMemory::attach: " + name + " was freed by its owner");
  }
  if (bad != nullptr) {
    ::munmap(p, total);
    return failed_precondition("SharedMemory::attach: " + name + " " + bad);
  }
  std::unique_ptr<SharedMemory> m(new (std::nothrow) SharedMemory);
  if (!m) {
    ::munmap(p, total);
    return resource_exhausted("SharedMemory::attach: out of memory");
  }
  m->base_ = static_cast<std::byte*>(p);
  m->data_ = m->base_ + page;
  m->size_ = ref.size;
  m->ref_ = ref;
  m->state_ = &cp->state;
  return m;
}

SharedMemory::~SharedMemory() {
  if (base_ == nullptr) return;
  // Only the process that allocated it: a forked child's copy of this
  // object does not own the parent's segment.
  const bool mine = owner_ && ref_.pid == static_cast<std::uint32_t>(::getpid());
  if (mine) {
    // First the mark, so a peer's next access sees it; then the table.
    state_->store(kFreed, std::memory_order_release);
    LiveTable& t = live();
    std::lock_guard lock(t.mutex);
    for (std::size_t i = 0; i < t.count; ++i) {
      if (t.entries[i].start == reinterpret_cast<std::uintptr_t>(data_)) {
        t.entries[i] = t.entries[--t.count];
        break;
      }
    }
  }
  ::munmap(base_, size_ + page_size());
  if (mine && !unlinked_) ::shm_unlink(ref_.name);
}

void SharedMemory::unlink() noexcept {
  if (!owner_ || unlinked_ || ref_.pid != static_cast<std::uint32_t>(::getpid())) return;
  unlinked_ = true;
  ::shm_unlink(ref_.name);
  LiveTable& t = live();
  std::lock_guard lock(t.mutex);
  for (std::size_t i = 0; i < t.count; ++i) {
    if (t.entries[i].start == reinterpret_cast<std::uintptr_t>(data_)) t.entries[i].named = false;
  }
}

std::optional<Location> locate(const void* addr, std::size_t len) noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(addr);
  LiveTable& t = live();
  std::lock_guard lock(t.mutex);
  for (std::size_t i = 0; i < t.count; ++i) {
    const LiveSegment& e = t.entries[i];
    // [a, a+len) inside [start, start+size), with no sum that can wrap.
    if (a >= e.start && len <= e.size && a - e.start <= e.size - len) {
      return Location{e.ref, a - e.start};
    }
  }
  return std::nullopt;
}

std::vector<std::string> remove_stale_segments(std::uint32_t pid) {
  std::vector<std::string> removed;
  DIR* d = ::opendir("/dev/shm");
  if (d == nullptr) return removed;
  const auto uid = static_cast<std::uint32_t>(::getuid());
  while (dirent* e = ::readdir(d)) {
    ParsedName n;
    if (!parse_name(e->d_name, n) || n.uid != uid) continue;
    if (pid != 0 && n.pid != pid) continue;
    if (!pid_dead(n.pid)) continue;
    const std::string shm_name = std::string("/") + e->d_name;
    if (::shm_unlink(shm_name.c_str()) == 0) {
      RMA_LOG_INFO("removed stale shared segment /dev/shm/%s (process %u is gone)", e->d_name, n.pid);
      removed.push_back(shm_name);
    }
  }
  ::closedir(d);
  return removed;
}

}  // namespace rma::node
