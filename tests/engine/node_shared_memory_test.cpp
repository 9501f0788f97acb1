// rma::node::SharedMemory, locate() and remove_stale_segments()
// (include/rma/sdk/node.hpp): segments shared with fork()ed children, the
// checks attach() makes, the table locate() reads, and the cleanup of dead
// owners' segments that must never touch a live process's or another
// naming's.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "rma/sdk/node.hpp"

namespace rma::node {
namespace {

bool exists(const std::string& shm_name) {
  return ::access(("/dev/shm" + shm_name).c_str(), F_OK) == 0;
}

std::vector<std::string> entries_of(pid_t pid) {
  const std::string tag = "rma." + std::to_string(::getuid()) + "." + std::to_string(pid) + ".";
  std::vector<std::string> out;
  if (DIR* d = ::opendir("/dev/shm")) {
    while (dirent* e = ::readdir(d)) {
      if (std::strncmp(e->d_name, tag.c_str(), tag.size()) == 0) out.push_back(e->d_name);
    }
    ::closedir(d);
  }
  return out;
}

// A segment a child leaves allocated on purpose: reachable, so
// LeakSanitizer does not fail the child's exit over it.
SharedMemory* volatile g_kept = nullptr;

// Waits for the child and returns its exit code (-signal when killed).
int reap(pid_t pid) {
  int st = 0;
  if (::waitpid(pid, &st, 0) != pid) return -1000;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

TEST(NodeSharedMemory, AllocateNamesRoundsZeroFillsAndUnlinksOnFree) {
  auto m = SharedMemory::allocate(100, "test");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  SharedMemory& s = **m;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  EXPECT_EQ(s.size(), page);
  EXPECT_EQ(s.ref().size, page);
  EXPECT_TRUE(s.owner());
  EXPECT_FALSE(s.freed());
  EXPECT_EQ(s.ref().pid, static_cast<std::uint32_t>(::getpid()));
  char want[64];
  std::snprintf(want, sizeof want, "/rma.%u.%d.test.%016" PRIx64, ::getuid(), ::getpid(), s.ref().nonce);
  EXPECT_STREQ(s.ref().name, want);
  EXPECT_TRUE(exists(s.ref().name));
  for (std::size_t i = 0; i < s.size(); ++i) ASSERT_EQ(s.data()[i], std::byte{0}) << i;
  const std::string name = s.ref().name;
  m->reset();
  EXPECT_FALSE(exists(name)) << "the owner unlinks at free";
}

TEST(NodeSharedMemory, AllocateRefusesBadPurposeAndSize) {
  for (const char* p : {"", "Upper", "a.b", "a/b", "sixteen_chars_xx", "dash-ed"}) {
    auto m = SharedMemory::allocate(4096, p);
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << '"' << p << '"';
    EXPECT_NE(m.status().message().find("purpose"), std::string::npos) << m.status().to_string();
  }
  EXPECT_TRUE(SharedMemory::allocate(1, "fifteen_chars_x").ok());
  auto zero = SharedMemory::allocate(0, "test");
  EXPECT_EQ(zero.status().code(), StatusCode::kInvalidArgument);
  auto huge = SharedMemory::allocate(std::size_t{1} << 60, "test");
  EXPECT_EQ(huge.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(entries_of(::getpid()).empty()) << "a refused allocation leaves nothing behind";
}

// The parent's segment in a child (a new mapping of the same pages, by
// ref), the child's in the parent, and CPU atomics from both on one word.
TEST(NodeSharedMemory, AttachAcrossAForkedChild) {
  auto m = SharedMemory::allocate(3 * 4096, "test");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  SharedMemory& s = **m;
  for (std::size_t i = 0; i < 3 * 4096; ++i) s.data()[i] = static_cast<std::byte>(i * 7);
  const SegmentRef ref = s.ref();
  auto* word = reinterpret_cast<std::uint64_t*>(s.data() + 4096);
  *word = 0;
  int to_parent[2];
  ASSERT_EQ(::pipe(to_parent), 0);
  constexpr std::uint64_t kAdds = 100000;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(to_parent[0]);
    auto a = SharedMemory::attach(ref);
    if (!a.ok()) ::_exit(10);
    SharedMemory& peer = **a;
    if (peer.owner() || peer.data() == s.data()) ::_exit(11);  // a mapping of its own
    for (std::size_t i = 0; i < 3 * 4096; ++i) {
      if (peer.data()[i] != static_cast<std::byte>(i * 7) && i / 8 != 4096 / 8) ::_exit(12);
    }
    auto* w = reinterpret_cast<std::uint64_t*>(peer.data() + 4096);
    for (std::uint64_t i = 0; i < kAdds; ++i) __atomic_fetch_add(w, 1, __ATOMIC_SEQ_CST);
    // The child's own segment, for the parent to attach.
    auto own = SharedMemory::allocate(4096, "child");
    if (!own.ok()) ::_exit(13);
    std::memcpy((*own)->data(), "from the child", 15);
    const SegmentRef cref = (*own)->ref();
    if (::write(to_parent[1], &cref, sizeof cref) != static_cast<ssize_t>(sizeof cref)) ::_exit(14);
    for (;;) ::pause();  // alive until the parent has attached (it kills us then)
  }
  ::close(to_parent[1]);
  for (std::uint64_t i = 0; i < kAdds; ++i) __atomic_fetch_add(word, 1, __ATOMIC_SEQ_CST);
  SegmentRef cref;
  ASSERT_EQ(::read(to_parent[0], &cref, sizeof cref), static_cast<ssize_t>(sizeof cref));
  EXPECT_EQ(cref.pid, static_cast<std::uint32_t>(child));
  auto c = SharedMemory::attach(cref);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_STREQ(reinterpret_cast<const char*>((*c)->data()), "from the child");
  EXPECT_FALSE((*c)->owner());
  ::close(to_parent[0]);
  ::kill(child, SIGTERM);
  EXPECT_EQ(reap(child), -SIGTERM);
  EXPECT_EQ(__atomic_load_n(word, __ATOMIC_SEQ_CST), 2 * kAdds) << "an atomic add was lost between the processes";
  // The parent's mapping of the killed child's segment stays usable.
  EXPECT_STREQ(reinterpret_cast<const char*>((*c)->data()), "from the child");
  c->reset();
  (void)remove_stale_segments(static_cast<std::uint32_t>(child));
}

TEST(NodeSharedMemory, ChildSegmentsGoAtItsNormalExitAndTheParentsStay) {
  auto m = SharedMemory::allocate(4096, "test");
  ASSERT_TRUE(m.ok());
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto own = SharedMemory::allocate(4096, "child");
    if (!own.ok()) ::_exit(10);
    g_kept = own->release();  // never freed: exit() must unlink it anyway
    std::exit(0);    // runs the atexit handlers (the parent's segment is not the child's)
  }
  EXPECT_EQ(reap(child), 0);
  EXPECT_TRUE(entries_of(child).empty()) << "the child's segment is left after its normal exit";
  EXPECT_TRUE(exists((*m)->ref().name)) << "the child's exit removed its parent's segment";
}

TEST(NodeSharedMemory, LocateFindsInnerRangesOnly) {
  auto m = SharedMemory::allocate(3 * 4096, "test");
  ASSERT_TRUE(m.ok());
  SharedMemory& s = **m;
  auto in = locate(s.data() + 100, 50);
  ASSERT_TRUE(in.has_value());
  EXPECT_EQ(in->offset, 100u);
  EXPECT_STREQ(in->ref.name, s.ref().name);
  EXPECT_EQ(in->ref.nonce, s.ref().nonce);
  EXPECT_EQ(in->ref.size, s.size());
  auto whole = locate(s.data(), s.size());
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(whole->offset, 0u);
  auto last = locate(s.data() + s.size() - 8, 8);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->offset, s.size() - 8);
  EXPECT_FALSE(locate(s.data() + s.size() - 8, 9).has_value()) << "straddles the end";
  EXPECT_FALSE(locate(s.data() - 1, 2).has_value()) << "straddles the start (the control page)";
  EXPECT_FALSE(locate(s.data() + 4096, ~std::size_t{0}).has_value()) << "a length that wraps";
  int stack_var = 0;
  EXPECT_FALSE(locate(&stack_var, sizeof stack_var).has_value());
  const std::byte* gone = s.data();
  m->reset();
  EXPECT_FALSE(locate(gone + 100, 50).has_value()) << "found after free";
}

TEST(NodeSharedMemory, LocateIsSafeWhileSegmentsComeAndGo) {
  auto keep = SharedMemory::allocate(4096, "test");
  ASSERT_TRUE(keep.ok());
  const std::byte* k = (*keep)->data();
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> misses{0};
  std::thread reader([&] {
    while (!stop.load()) {
      if (!locate(k + 8, 8).has_value()) misses.fetch_add(1);
    }
  });
  for (int i = 0; i < 200; ++i) {
    auto t = SharedMemory::allocate(4096, "churn");
    ASSERT_TRUE(t.ok());
    EXPECT_TRUE(locate((*t)->data(), 4096).has_value());
  }
  stop.store(true);
  reader.join();
  EXPECT_EQ(misses.load(), 0u) << "a live segment went missing while others were freed";
}

TEST(NodeSharedMemory, AttachOfAFreedOrUnlinkedSegmentIsNotFound) {
  auto m = SharedMemory::allocate(4096, "test");
  ASSERT_TRUE(m.ok());
  SegmentRef ref = (*m)->ref();
  auto again = SharedMemory::attach(ref);  // this process may map its own segment too
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  (*m)->unlink();
  (*m)->unlink();  // idempotent
  auto a = SharedMemory::attach(ref);
  EXPECT_EQ(a.status().code(), StatusCode::kNotFound) << a.status().to_string();
  EXPECT_FALSE((*again)->freed());
  EXPECT_TRUE(locate((*m)->data(), 8).has_value()) << "unlinked is still allocated";
  m->reset();
  EXPECT_TRUE((*again)->freed()) << "a peer's mapping must see that the owner freed it";
  auto b = SharedMemory::attach(ref);
  EXPECT_EQ(b.status().code(), StatusCode::kNotFound) << b.status().to_string();
}

TEST(NodeSharedMemory, AttachRefusesMismatchedReferences) {
  auto m = SharedMemory::allocate(2 * 4096, "test");
  ASSERT_TRUE(m.ok());
  const SegmentRef good = (*m)->ref();

  SegmentRef size = good;
  size.size = 4096;
  EXPECT_EQ(SharedMemory::attach(size).status().code(), StatusCode::kFailedPrecondition);
  size.size = 100;
  EXPECT_EQ(SharedMemory::attach(size).status().code(), StatusCode::kInvalidArgument);

  SegmentRef nonce = good;
  nonce.nonce ^= 1;  // the name says otherwise
  EXPECT_EQ(SharedMemory::attach(nonce).status().code(), StatusCode::kInvalidArgument);

  SegmentRef other_user = good;
  std::snprintf(other_user.name, sizeof other_user.name, "/rma.%u.%u.test.%016" PRIx64, ::getuid() + 1, good.pid,
                good.nonce);
  auto ou = SharedMemory::attach(other_user);
  EXPECT_EQ(ou.status().code(), StatusCode::kPermissionDenied) << ou.status().to_string();

  SegmentRef not_ours = good;
  std::snprintf(not_ours.name, sizeof not_ours.name, "/rma-shm.%u.%u.%016" PRIx64, ::getuid(), good.pid, good.nonce);
  EXPECT_EQ(SharedMemory::attach(not_ours).status().code(), StatusCode::kInvalidArgument);
  SegmentRef unterminated = good;
  std::memset(unterminated.name, 'a', sizeof unterminated.name);
  EXPECT_EQ(SharedMemory::attach(unterminated).status().code(), StatusCode::kInvalidArgument);

  // A name of librma's shape whose object holds another segment (another
  // nonce in its control page): told apart.
  const std::uint64_t fake_nonce = 0x0123456789abcdefull;
  char fake[64];
  std::snprintf(fake, sizeof fake, "/rma.%u.%d.test.%016" PRIx64, ::getuid(), ::getpid(), fake_nonce);
  const int fd = ::shm_open(fake, O_RDWR | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 2 * 4096), 0);
  std::uint64_t page0[4] = {};
  std::memcpy(page0, "rma.seg1", 8);
  page0[1] = fake_nonce ^ 0xFF;  // recreated: another nonce inside
  page0[2] = 4096;
  ASSERT_EQ(::pwrite(fd, page0, sizeof page0, 0), static_cast<ssize_t>(sizeof page0));
  ::close(fd);
  SegmentRef recreated = good;
  std::memcpy(recreated.name, fake, sizeof fake);
  recreated.nonce = fake_nonce;
  recreated.size = 4096;
  auto r = SharedMemory::attach(recreated);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status().to_string();
  ::shm_unlink(fake);
}

// A killed child's segments are removed, a live process's never (the
// child's while it lives, ours), nor names of another shape.
TEST(NodeSharedMemory, RemoveStaleSegmentsTakesOnlyDeadOwnersOfThisNaming) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto a = SharedMemory::allocate(4096, "dead");
    auto b = SharedMemory::allocate(4096, "dead2");
    const char ok = a.ok() && b.ok() ? 'y' : 'n';
    (void)::write(ready[1], &ok, 1);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char ok = 0;
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  ::close(ready[0]);
  ASSERT_EQ(ok, 'y');
  auto mine = SharedMemory::allocate(4096, "test");
  ASSERT_TRUE(mine.ok());
  ASSERT_EQ(entries_of(child).size(), 2u);
  EXPECT_TRUE(remove_stale_segments(static_cast<std::uint32_t>(child)).empty()) << "removed a live child's";
  EXPECT_TRUE(remove_stale_segments(static_cast<std::uint32_t>(::getpid())).empty()) << "removed our own";
  ::kill(child, SIGKILL);
  EXPECT_EQ(reap(child), -SIGKILL);
  EXPECT_EQ(entries_of(child).size(), 2u) << "SIGKILL leaves them";

  // Names of another shape with the dead pid: never touched.
  std::vector<std::string> foreign;
  for (const std::string& n :
       {"/rma-shm." + std::to_string(::getuid()) + "." + std::to_string(child) + ".0123456789abcdef",
        "/rma." + std::to_string(::getuid()) + "." + std::to_string(child) + ".Bad.0123456789abcdef",
        "/rma." + std::to_string(::getuid()) + "." + std::to_string(child) + ".dead.0123",
        "/rma." + std::to_string(::getuid() + 1) + "." + std::to_string(child) + ".dead.0123456789abcdef"}) {
    const int fd = ::shm_open(n.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    ASSERT_GE(fd, 0) << n;
    ::close(fd);
    foreign.push_back(n);
  }
  const auto removed = remove_stale_segments(static_cast<std::uint32_t>(child));
  EXPECT_EQ(removed.size(), 2u);
  for (const std::string& n : removed) EXPECT_NE(n.find(".dead"), std::string::npos) << n;
  EXPECT_EQ(entries_of(child).size(), 2u) << "only the two foreign rma.<uid>.<child>.* names may stay";
  for (const std::string& n : foreign) {
    EXPECT_TRUE(exists(n)) << n << " was removed";
    ::shm_unlink(n.c_str());
  }
  EXPECT_TRUE(exists((*mine)->ref().name));
  // Every dead owner at once (pid 0) leaves the live ones too.
  (void)remove_stale_segments();
  EXPECT_TRUE(exists((*mine)->ref().name));
}

}  // namespace
}  // namespace rma::node
