// The self provider pins nothing, so it must notice registered memory going
// away: an access through a region whose memory was unmapped or discarded
// fails with a protection error instead of faulting or writing into whatever
// is mapped at that address now (a real NIC would write to the old, pinned
// pages, which nobody can see any more).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include "swkit/vendor_err.hpp"
#include "self_loopback.hpp"

namespace rma {
namespace {

const std::size_t kPage = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));

struct OrphanTest : ::testing::Test {
  void SetUp() override {
    auto l = testing_support::SelfLoopback::make();
    ASSERT_TRUE(l.ok()) << l.status().to_string();
    self = std::move(*l);
    src.assign(kPage, 'x');
    auto r = self.pd->register_memory(src.data(), src.size(), Access::kLocalWrite);
    ASSERT_TRUE(r.ok());
    src_mr = std::move(*r);
  }
  Completion write_and_wait(std::uint64_t dst, std::uint32_t rkey, std::uint32_t lkey) {
    Sge sge{reinterpret_cast<std::uint64_t>(src.data()), 64, lkey};
    WorkRequest wr;
    wr.opcode = Opcode::kRdmaWrite;
    wr.sgl = {&sge, 1};
    wr.remote_addr = dst;
    wr.rkey = rkey;
    EXPECT_TRUE(self.qp->post({&wr, 1}).ok());
    Completion c;
    while (self.cq->poll({&c, 1}) == 0) {
    }
    return c;
  }
  testing_support::SelfLoopback self;
  std::vector<char> src;
  std::unique_ptr<MemoryRegion> src_mr;
};

TEST_F(OrphanTest, WriteIntoUnmappedRegionFailsWithoutFaulting) {
  void* p = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  auto mr = self.pd->register_memory(p, kPage, Access::kLocalWrite | Access::kRemoteWrite);
  ASSERT_TRUE(mr.ok());
  ASSERT_EQ(munmap(p, kPage), 0);
  Completion c = write_and_wait(reinterpret_cast<std::uint64_t>(p), (*mr)->rkey(), src_mr->lkey());
  EXPECT_EQ(c.status, WcStatus::kRemAccessErr);
  EXPECT_EQ(c.vendor_err, swkit::kVeRemoteUnmapped);
}

TEST_F(OrphanTest, StaleRegionNeverWritesIntoANewMappingAtTheSameAddress) {
  // A sanitizer's allocator may map the freed page for itself between our
  // munmap and mmap (the kernel hands out the lowest hole first); once it
  // has, it has memory to spare, so a few more tries find a page it leaves
  // alone.
  void* p = nullptr;
  void* again = nullptr;
  std::unique_ptr<MemoryRegion> mr;
  for (int attempt = 0; attempt < 16 && again == nullptr; ++attempt) {
    p = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    auto r = self.pd->register_memory(p, kPage, Access::kLocalWrite | Access::kRemoteWrite);
    ASSERT_TRUE(r.ok());
    mr = std::move(*r);
    ASSERT_EQ(munmap(p, kPage), 0);
    bool relocated = false;
    void* q = testing_support::map_again(p, kPage, &relocated);
    ASSERT_NE(q, nullptr);
    if (relocated) munmap(q, kPage);
    else again = q;
  }
  if (again == nullptr) GTEST_SKIP() << "the sanitizer runtime took the address first 16 times; nothing to test";
  Completion c = write_and_wait(reinterpret_cast<std::uint64_t>(p), mr->rkey(), src_mr->lkey());
  EXPECT_EQ(c.status, WcStatus::kRemAccessErr);
  EXPECT_EQ(static_cast<const char*>(again)[0], 0) << "the stale registration wrote into the new mapping";
  munmap(again, kPage);
}

TEST_F(OrphanTest, DiscardedSourceIsALocalProtectionError) {
  void* p = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  std::vector<char> dst(kPage);
  auto dmr = self.pd->register_memory(dst.data(), dst.size(), Access::kLocalWrite | Access::kRemoteWrite);
  auto smr = self.pd->register_memory(p, kPage, Access::kLocalWrite);
  ASSERT_TRUE(dmr.ok() && smr.ok());
  ASSERT_EQ(madvise(p, kPage, MADV_DONTNEED), 0);
  Sge sge{reinterpret_cast<std::uint64_t>(p), 64, (*smr)->lkey()};
  WorkRequest wr;
  wr.sgl = {&sge, 1};
  wr.remote_addr = reinterpret_cast<std::uint64_t>(dst.data());
  wr.rkey = (*dmr)->rkey();
  ASSERT_TRUE(self.qp->post({&wr, 1}).ok());
  Completion c;
  while (self.cq->poll({&c, 1}) == 0) {
  }
  EXPECT_EQ(c.status, WcStatus::kLocProtErr);
  EXPECT_EQ(c.vendor_err, swkit::kVeLocalUnmapped);
  munmap(p, kPage);
}

TEST_F(OrphanTest, RegionsOfLiveMemoryKeepWorking) {
  std::vector<char> dst(kPage);
  auto mr = self.pd->register_memory(dst.data(), dst.size(), Access::kLocalWrite | Access::kRemoteWrite);
  ASSERT_TRUE(mr.ok());
  // Unrelated memory going away leaves this region alone.
  void* other = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(other, kPage);
  Completion c = write_and_wait(reinterpret_cast<std::uint64_t>(dst.data()), (*mr)->rkey(), src_mr->lkey());
  EXPECT_EQ(c.status, WcStatus::kSuccess);
  EXPECT_EQ(std::memcmp(dst.data(), src.data(), 64), 0);
}

}  // namespace
}  // namespace rma
