#include "shm/segment.hpp"

#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "rma/sdk/text.hpp"
#include "swkit/secure_random.hpp"

namespace rma::shm {

namespace {

// The mappings this process holds, by name, so every QP connected to one
// peer device shares one. Immortal: devices and QPs may be released during
// static destruction.
struct Registry {
  std::mutex mutex;
  std::map<std::string, std::weak_ptr<Segment>> mapped;
};
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

int pidfd_open(pid_t pid) noexcept {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  errno = ENOSYS;
  return -1;
#endif
}

bool pid_dead(pid_t pid) noexcept { return ::kill(pid, 0) == -1 && errno == ESRCH; }

// The device segment's size as node::SharedMemory rounds it (whole pages).
std::uint64_t segment_bytes() noexcept {
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  return (kSegmentSize + page - 1) / page * page;
}

// The 16 hex digits that end a device segment's name: its node nonce.
std::uint64_t name_nonce(const std::string& name) noexcept {
  if (name.size() < 16) return 0;
  std::uint64_t n = 0;
  for (std::size_t i = name.size() - 16; i < name.size(); ++i) {
    const char c = name[i];
    n = n << 4 | static_cast<std::uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
  }
  return n;
}

}  // namespace

std::string segment_prefix(std::uint32_t uid, std::uint32_t pid) {
  return "/rma." + dec(uid) + "." + dec(pid) + ".dev.";
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
  if (pidfd_ >= 0) ::close(pidfd_);
  // memory_ unmaps (and, ours, unlinks if the device has not yet).
}

bool Segment::owner_alive() const noexcept {
  if (own_) return true;
  bool alive;
  if (pidfd_ >= 0) {
    pollfd p{pidfd_, POLLIN, 0};
    alive = ::poll(&p, 1, 0) == 0;  // readable once the process exited
  } else {
    alive = !pid_dead(pid_);  // no pidfd (kernel < 5.3): pid reuse can fool this
  }
  if (!alive && !swept_.exchange(true)) {
    // The first to notice the death removes what the dead process left in
    // /dev/shm (it was killed or crashed, or it would have unlinked them).
    try {
      (void)node::remove_stale_segments(static_cast<std::uint32_t>(pid_));
    } catch (...) {
      // Out of memory: rmarun, the next open or rma_info --cleanup will.
    }
  }
  return alive;
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
  if (own_) memory_->unlink();
}

Result<std::shared_ptr<Segment>> SegmentMap::create() {
  auto mem = node::SharedMemory::allocate(kSegmentSize, "dev");
  if (!mem.ok()) return mem.status().with_context("shm: cannot create the device's shared segment");
  std::shared_ptr<Segment> seg(new Segment);
  seg->memory_ = std::move(mem).value();
  // The object is zero-filled: every atomic starts at 0 (free slots, empty
  // rings). Only the header needs writing.
  auto* layout = reinterpret_cast<SegmentLayout*>(seg->memory_->data());
  SegmentHeader& h = layout->header;
  const pid_t pid = ::getpid();
  std::memcpy(h.magic, kSegmentMagic, sizeof h.magic);
  h.version = kSegmentVersion;
  h.pid = static_cast<std::uint32_t>(pid);
  h.nonce = process_nonce();
  h.max_qp = kMaxQp;
  h.max_mr = kMaxMr;
  h.ring_depth = kRingDepth;
  h.max_ring_sge = kMaxRingSge;
  h.size = kSegmentSize;
  seg->layout_ = layout;
  seg->name_ = seg->memory_->ref().name;
  seg->pid_ = pid;
  seg->own_ = true;
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.mapped[seg->name_] = seg;
  return seg;
}

Result<std::shared_ptr<Segment>> SegmentMap::attach(const std::string& name, std::uint32_t pid,
                                                    std::uint64_t nonce) {
  Registry& r = registry();
  // Declared before the lock: if it turns out to be the last reference, the
  // segment goes after the lock is released.
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
  node::SegmentRef ref;
  std::memcpy(ref.name, name.data(), std::min(name.size(), node::SegmentRef::kMaxName));
  ref.size = segment_bytes();
  ref.pid = pid;
  ref.nonce = name_nonce(name);
  auto mem = node::SharedMemory::attach(ref);
  if (!mem.ok()) {
    const Status& s = mem.status();
    if (s.code() == StatusCode::kNotFound) {
      return fail(not_found(who + ": the segment does not exist: the peer closed its device or exited"));
    }
    if (s.code() == StatusCode::kFailedPrecondition) {
      return fail(invalid_argument(who + ": " + s.message() + " (a librma of another version made it?)"));
    }
    return fail(s.with_context(who));
  }
  auto* layout = reinterpret_cast<SegmentLayout*>((*mem)->data());
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
  if (bad != nullptr) return fail(invalid_argument(who + ": the segment " + bad));
  std::shared_ptr<Segment> seg(new Segment);
  seg->memory_ = std::move(mem).value();
  seg->layout_ = layout;
  seg->name_ = name;
  seg->pid_ = static_cast<pid_t>(pid);
  seg->pidfd_ = pidfd;
  r.mapped[name] = seg;
  return seg;
}

int SegmentMap::remove_stale() { return static_cast<int>(node::remove_stale_segments().size()); }

}  // namespace rma::shm
