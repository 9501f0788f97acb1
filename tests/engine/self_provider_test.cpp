// Self provider: registration, device, PD/CQ/QP creation limits, memory
// registration and keys, object lifetimes.
#include <sys/mman.h>
#include <unistd.h>

#include <set>

#include "self_test_util.hpp"

namespace rma::self::testing {
namespace {

TEST(SelfProvider, RegistersWithNamePriorityDescription) {
  ProviderRegistry registry;
  ASSERT_TRUE(providers::register_self(registry).ok());
  auto p = registry.find("self");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)->name(), "self");
  EXPECT_EQ((*p)->priority(), 10);
  EXPECT_EQ((*p)->description(), "in-process loopback: both QPs in this process");
  // A second registration under the same name is refused by the registry.
  EXPECT_EQ(providers::register_self(registry).code(), StatusCode::kAlreadyExists);
}

TEST(SelfProvider, QueryDevicesReportsSelf0WithCaps) {
  auto devs = self_provider().query_devices();
  ASSERT_TRUE(devs.ok());
  ASSERT_EQ(devs->size(), 1u);
  const DeviceInfo& d = (*devs)[0];
  EXPECT_EQ(d.name, "self0");
  EXPECT_EQ(d.provider, "self");
  EXPECT_EQ(d.transport, "in-process");
  EXPECT_EQ(d.link_layer, "none");
  EXPECT_EQ(d.gid, (std::array<std::uint8_t, 16>{}));
  EXPECT_EQ(d.mac, (std::array<std::uint8_t, 6>{}));
  EXPECT_EQ(d.caps.max_sge, 32u);
  EXPECT_EQ(d.caps.max_recv_sge, 32u);
  EXPECT_EQ(d.caps.max_inline_data, 256u);
  EXPECT_EQ(d.caps.max_qp_rd_atom, 16u);
  EXPECT_EQ(d.caps.max_qp_wr, 16384u);
  EXPECT_EQ(d.caps.max_cqe, 1u << 20);
  EXPECT_EQ(d.caps.max_qp, 65536u);
  EXPECT_EQ(d.caps.max_mr, 1u << 20);
  EXPECT_EQ(d.caps.max_mr_size, std::uint64_t{1} << 46);
  EXPECT_EQ(d.caps.max_msg_size, 1u << 31);
  EXPECT_TRUE(d.caps.atomics);
  EXPECT_EQ(d.caps.path_mtu, 4096u);
}

TEST(SelfProvider, OpenDeviceByNameOrDefault) {
  auto d1 = self_provider().open_device("");
  auto d2 = self_provider().open_device("self0");
  ASSERT_TRUE(d1.ok() && d2.ok());
  EXPECT_EQ((*d1)->name(), "self0");
  EXPECT_EQ((*d2)->caps().max_sge, 32u);
  auto bad = self_provider().open_device("mlx5_0");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kNotFound);
  EXPECT_NE(bad.status().message().find("mlx5_0"), std::string::npos);
  EXPECT_NE(bad.status().message().find("self0"), std::string::npos);
}

using SelfObjects = SelfFixture;

TEST_F(SelfObjects, CreateCqDepthLimits) {
  EXPECT_EQ(device->create_cq(0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(device->create_cq((1u << 20) + 1).status().code(), StatusCode::kInvalidArgument);
  auto c = device->create_cq(1);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->depth(), 1u);
  EXPECT_STREQ((*c)->overrun_reason(), "");
  Completion wc[4];
  EXPECT_EQ((*c)->poll(wc), 0);
  EXPECT_EQ((*c)->poll({}), 0);
}

TEST_F(SelfObjects, CreateQpStartsInReset) {
  auto qp = make_qp(config());
  ASSERT_TRUE(qp);
  EXPECT_EQ(qp->state(), QpState::kReset);
  auto qp2 = make_qp(config());
  EXPECT_NE(qp->qp_num(), qp2->qp_num());
}

TEST_F(SelfObjects, CreateQpRejectsBadConfigs) {
  struct Case {
    const char* what;
    void (*tweak)(QpConfig&);
  };
  const Case cases[] = {
      {"send_cq", [](QpConfig& c) { c.send_cq = nullptr; }},
      {"recv_cq", [](QpConfig& c) { c.recv_cq = nullptr; }},
      {"max_send_wr", [](QpConfig& c) { c.max_send_wr = 0; }},
      {"max_send_wr", [](QpConfig& c) { c.max_send_wr = 16385; }},
      {"max_recv_wr", [](QpConfig& c) { c.max_recv_wr = 0; }},
      {"max_recv_wr", [](QpConfig& c) { c.max_recv_wr = 16385; }},
      {"max_send_sge", [](QpConfig& c) { c.max_send_sge = 33; }},
      {"max_recv_sge", [](QpConfig& c) { c.max_recv_sge = 33; }},
      {"max_inline_data", [](QpConfig& c) { c.max_inline_data = 257; }},
      {"max_rd_atomic", [](QpConfig& c) { c.max_rd_atomic = 17; }},
      {"rnr_retry", [](QpConfig& c) { c.rnr_retry = 8; }},
      {"retry_cnt", [](QpConfig& c) { c.retry_cnt = 8; }},
      {"min_rnr_timer", [](QpConfig& c) { c.min_rnr_timer = 32; }},
      {"timeout", [](QpConfig& c) { c.timeout = 32; }},
      {"path_mtu", [](QpConfig& c) { c.path_mtu = 1000; }},
      {"path_mtu", [](QpConfig& c) { c.path_mtu = 8192; }},
  };
  for (const Case& k : cases) {
    QpConfig c = config();
    k.tweak(c);
    auto q = pd->create_qp(c);
    ASSERT_FALSE(q.ok()) << k.what;
    EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument) << k.what;
    EXPECT_NE(q.status().message().find(k.what), std::string::npos) << q.status().message();
  }
  QpConfig edge = config();
  edge.max_send_wr = 16384;
  edge.max_recv_wr = 1;
  edge.path_mtu = 256;
  EXPECT_TRUE(pd->create_qp(edge).ok());
}

// A CQ from something that is not the self provider cannot be used.
class ForeignCq final : public CompletionQueue {
 public:
  int poll(std::span<Completion>) noexcept override { return 0; }
  std::uint32_t depth() const noexcept override { return 1; }
  const char* overrun_reason() const noexcept override { return ""; }
};

TEST_F(SelfObjects, CreateQpRejectsForeignCq) {
  QpConfig c = config();
  c.recv_cq = std::make_shared<ForeignCq>();
  auto q = pd->create_qp(c);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(SelfObjects, RegisterMemoryValidates) {
  std::vector<std::uint8_t> mem(64);
  auto code = [&](void* p, std::size_t n, Access acc) { return pd->register_memory(p, n, acc).status(); };
  Status s = code(nullptr, 8, kAllAccess);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("null"), std::string::npos);
  s = code(mem.data(), 0, kAllAccess);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("length is 0"), std::string::npos);
  s = code(reinterpret_cast<void*>(~std::uintptr_t{0} - 15), 32, kAllAccess);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("wraps"), std::string::npos);
  s = code(mem.data(), (std::size_t{1} << 46) + 1, kAllAccess);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("max_mr_size"), std::string::npos);
  s = code(mem.data(), 8, static_cast<Access>(1u << 7));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("unknown access"), std::string::npos);
  s = code(mem.data(), 8, Access::kRemoteWrite);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("LOCAL_WRITE"), std::string::npos);
  s = code(mem.data(), 8, Access::kRemoteAtomic | Access::kRemoteRead);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  // REMOTE_READ alone and NONE are fine.
  EXPECT_TRUE(pd->register_memory(mem.data(), 8, Access::kRemoteRead).ok());
  EXPECT_TRUE(pd->register_memory(mem.data(), 8, Access::kNone).ok());
}

TEST_F(SelfObjects, RegisterMemoryRejectsUnmappedMemory) {
  const long page = ::sysconf(_SC_PAGESIZE);
  void* p = ::mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  auto* base = static_cast<std::uint8_t*>(p);
  ASSERT_EQ(::munmap(base + page, page), 0);  // a hole in the middle
  EXPECT_TRUE(pd->register_memory(base, page, kAllAccess).ok());
  auto r = pd->register_memory(base, 2 * page, kAllAccess);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("not (entirely) mapped"), std::string::npos);
  // Unaligned start inside the hole too.
  EXPECT_FALSE(pd->register_memory(base + page + 5, 10, kAllAccess).ok());
  ::munmap(base, page);
  ::munmap(base + 2 * page, page);
}

TEST_F(SelfObjects, RegionReportsWhatWasRegistered) {
  std::vector<std::uint8_t> mem(100);
  auto mr = pd->register_memory(mem.data() + 3, 50, Access::kLocalWrite | Access::kRemoteRead);
  ASSERT_TRUE(mr.ok());
  EXPECT_EQ((*mr)->addr(), reinterpret_cast<std::uint64_t>(mem.data() + 3));
  EXPECT_EQ((*mr)->length(), 50u);
  EXPECT_EQ((*mr)->access(), Access::kLocalWrite | Access::kRemoteRead);
  EXPECT_NE((*mr)->lkey(), (*mr)->rkey());
}

TEST_F(SelfObjects, KeysAreDistinctAndNotImmediatelyReused) {
  std::vector<std::uint8_t> mem(64);
  std::set<std::uint32_t> seen;
  // Register and deregister the same memory many times: no key ever comes back.
  for (int i = 0; i < 300; ++i) {
    auto mr = pd->register_memory(mem.data(), 64, kAllAccess);
    ASSERT_TRUE(mr.ok());
    EXPECT_TRUE(seen.insert((*mr)->lkey()).second) << "lkey reused at iteration " << i;
    EXPECT_TRUE(seen.insert((*mr)->rkey()).second) << "rkey reused at iteration " << i;
    EXPECT_NE((*mr)->lkey(), 0u);
  }
  // Many live regions at once: all keys distinct.
  std::vector<std::unique_ptr<MemoryRegion>> live;
  std::set<std::uint32_t> keys;
  for (int i = 0; i < 200; ++i) {
    auto mr = pd->register_memory(mem.data(), 64, kAllAccess);
    ASSERT_TRUE(mr.ok());
    EXPECT_TRUE(keys.insert((*mr)->lkey()).second);
    EXPECT_TRUE(keys.insert((*mr)->rkey()).second);
    live.push_back(std::move(*mr));
  }
}

// Handles may be released in any order: children keep their parents alive.
TEST(SelfLifetime, ReleaseParentsBeforeChildren) {
  auto dev = *self_provider().open_device("");
  auto pd = *dev->alloc_pd();
  auto cq = *dev->create_cq(16);
  QpConfig c;
  c.send_cq = cq;
  c.recv_cq = cq;
  c.max_inline_data = 8;
  auto qp = std::move(*pd->create_qp(c));
  std::vector<std::uint8_t> mem(64, 0);
  auto mr = std::move(*pd->register_memory(mem.data(), 64, kAllAccess));
  ASSERT_TRUE(qp->connect(*qp->local_address()).ok());
  dev.reset();
  pd.reset();
  cq.reset();
  // Still fully usable: a loopback write and its completion.
  std::vector<std::uint8_t> src(8, 0x5A);
  Sge sge{reinterpret_cast<std::uint64_t>(src.data()), 8, 0};
  WorkRequest wr = make_wr(Opcode::kRdmaWrite, {&sge, 1}, mr->addr(), mr->rkey(), 1,
                           kWrSignaled | kWrInline);
  ASSERT_TRUE(qp->post({&wr, 1}).ok());
  EXPECT_EQ(mem[7], 0x5A);
  qp.reset();  // the CQ goes with it
  mr.reset();
}

TEST(SelfLifetime, ReleaseChildrenBeforeParents) {
  auto dev = *self_provider().open_device("");
  auto pd = *dev->alloc_pd();
  auto cq = *dev->create_cq(16);
  QpConfig c;
  c.send_cq = cq;
  c.recv_cq = cq;
  auto qp = std::move(*pd->create_qp(c));
  qp.reset();
  cq.reset();
  pd.reset();
  dev.reset();
  SUCCEED();
}

}  // namespace
}  // namespace rma::self::testing
