// swkit, the kit the software providers share: the random-identifier index,
// the CSPRNG, the mapping-rights check of a registration and the page
// placement of data-path objects. (The orphan
// tracker is covered through the providers: self_orphan_test.cpp and
// softroce's rc_hardening_test.cpp.)
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <random>
#include <cstring>
#include <set>
#include <thread>
#include <vector>
#include <unordered_map>

#include "swkit/id_index.hpp"
#include "swkit/mapping_rights.hpp"
#include "swkit/page_placed.hpp"
#include "swkit/secure_random.hpp"

namespace rma::swkit {
namespace {

// Inserts and erases against a reference map, with ids crowded into few
// home slots (low bits equal) and spread out, so probe runs wrap and the
// backward-shift deletion has to move entries.
TEST(IdIndex, MatchesAReferenceMapThroughInsertsAndErases) {
  for (std::uint32_t spread : {1u, 0x10000u}) {
    IdIndex index;
    std::unordered_map<std::uint32_t, std::uint32_t> ref;
    std::mt19937 rng(spread);
    for (int step = 0; step < 20000; ++step) {
      const std::uint32_t id = 1 + (rng() % 700) * spread;
      if (rng() % 3 != 0) {
        const bool fresh = ref.find(id) == ref.end();
        EXPECT_EQ(index.insert(id, static_cast<std::uint32_t>(step)), fresh);
        if (fresh) ref[id] = static_cast<std::uint32_t>(step);
      } else {
        index.erase(id);
        ref.erase(id);
      }
      if (step % 997 == 0) {
        for (std::uint32_t probe = 1; probe < 700u * spread; probe += spread) {
          std::uint32_t v = 0;
          const auto it = ref.find(probe);
          ASSERT_EQ(index.find(probe, v), it != ref.end()) << "id " << probe << " step " << step;
          if (it != ref.end()) {
            EXPECT_EQ(v, it->second);
          }
        }
      }
    }
    EXPECT_EQ(index.size(), ref.size());
  }
  IdIndex empty;
  std::uint32_t v;
  EXPECT_FALSE(empty.find(5, v));
  EXPECT_FALSE(empty.insert(0, 1)) << "0 is never an id";
  empty.erase(5);  // nothing to erase: no effect
}

TEST(SecureRandom, WordsDoNotRepeatAndUseEveryBit) {
  std::set<std::uint32_t> seen;
  std::uint32_t ored = 0, anded = ~0u;
  for (int i = 0; i < 1000; ++i) {
    const std::uint32_t v = secure_random_u32();
    seen.insert(v);
    ored |= v;
    anded &= v;
  }
  EXPECT_GT(seen.size(), 995u);
  EXPECT_EQ(ored, ~0u);
  EXPECT_EQ(anded, 0u);
}

// The buffered values of a parent are not a child's: after fork() both
// draw fresh ones (equal keys in two processes would let one guess the
// other's).
TEST(SecureRandom, ParentAndChildNeverShareBufferedValues) {
  (void)secure_random_u32();  // the parent's buffer now holds unused values
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::uint32_t v[16];
    for (auto& x : v) x = secure_random_u32();
    const bool ok = ::write(fds[1], v, sizeof v) == static_cast<ssize_t>(sizeof v);
    ::_exit(ok ? 0 : 1);
  }
  ::close(fds[1]);
  std::uint32_t child[16];
  std::size_t got = 0;
  while (got < sizeof child) {
    const ssize_t n = ::read(fds[0], reinterpret_cast<char*>(child) + got, sizeof child - got);
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_EQ(got, sizeof child);
  std::set<std::uint32_t> parent;
  for (int i = 0; i < 16; ++i) parent.insert(secure_random_u32());
  int shared = 0;
  for (std::uint32_t c : child) shared += parent.count(c) != 0 ? 1 : 0;
  EXPECT_EQ(shared, 0) << "the child handed out values from its parent's buffer";
}

TEST(SecureRandom, ThreadsDrawDistinctValues) {
  constexpr int kThreads = 4, kEach = 500;
  std::vector<std::uint32_t> v(kThreads * kEach);
  std::vector<std::thread> t;
  for (int i = 0; i < kThreads; ++i) {
    t.emplace_back([&, i] {
      for (int j = 0; j < kEach; ++j) v[static_cast<std::size_t>(i * kEach + j)] = secure_random_u32();
    });
  }
  for (auto& th : t) th.join();
  const std::set<std::uint32_t> seen(v.begin(), v.end());
  EXPECT_GT(seen.size(), v.size() - 5) << "values handed out twice";
}

TEST(MappingRights, NamesTheFirstAddressThatLacksARight) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  auto* p = static_cast<std::uint8_t*>(
      ::mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  EXPECT_TRUE(check_mapping_rights(p, 3 * page, Access::kLocalWrite | Access::kRemoteWrite).ok());
  ASSERT_EQ(::mprotect(p + page, page, PROT_READ), 0);
  EXPECT_TRUE(check_mapping_rights(p, 3 * page, Access::kRemoteRead).ok());
  Status st = check_mapping_rights(p, 3 * page, Access::kLocalWrite);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  char where[32];
  std::snprintf(where, sizeof where, "%p", static_cast<void*>(p + page));
  EXPECT_NE(st.message().find(where), std::string::npos) << st.to_string();
  EXPECT_NE(st.message().find("read-only"), std::string::npos) << st.to_string();
  ASSERT_EQ(::munmap(p + 2 * page, page), 0);
  st = check_mapping_rights(p + page, 2 * page, Access::kNone);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("not mapped"), std::string::npos) << st.to_string();
  ASSERT_EQ(::mprotect(p, page, PROT_NONE), 0);
  st = check_mapping_rights(p, 1, Access::kNone);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("not readable"), std::string::npos) << st.to_string();
  EXPECT_TRUE(check_mapping_rights(p, 0, Access::kNone).ok()) << "nothing to check";
  ::munmap(p, 2 * page);
}

struct PlacedAtQpOffset : PagePlaced<kQpPageOffset> {
  unsigned char bytes[kCqPageOffset - kQpPageOffset];
  virtual ~PlacedAtQpOffset() = default;
};
struct PlacedDerived final : PlacedAtQpOffset {};
struct TooLargeForItsOffset : PagePlaced<kCqPageOffset> {
  unsigned char bytes[kPlacementPage - kCqPageOffset + 1];
};

// Objects start at their offset in a page of their own and fill it up to its
// end at most; one too large is refused, not placed across the page's end.
// Deleting through a base finds the placed object's page (ASan would report
// a free of a pointer it never handed out otherwise).
TEST(PagePlaced, PutsEachObjectAtItsOffsetInAPageOfItsOwn) {
  std::vector<PlacedAtQpOffset*> objects;
  std::set<std::uintptr_t> pages;
  for (int i = 0; i < 16; ++i) {
    PlacedAtQpOffset* p = new (std::nothrow) PlacedDerived;
    ASSERT_NE(p, nullptr);
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    EXPECT_EQ(at % kPlacementPage, kQpPageOffset);
    EXPECT_TRUE(pages.insert(at / kPlacementPage).second) << "two objects in one page";
    std::memset(p->bytes, 0xa5, sizeof p->bytes);  // the whole object is ours (ASan checks)
    objects.push_back(p);
  }
  for (PlacedAtQpOffset* p : objects) delete p;
  EXPECT_EQ(new (std::nothrow) TooLargeForItsOffset, nullptr);
}

}  // namespace
}  // namespace rma::swkit
