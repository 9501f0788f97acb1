// Device tests of the verbs provider. They need an RDMA device: kernel
// rdma_rxe in the soft-RoCE QEMU guest (tests/softroce_vm runs them there),
// or any RoCE NIC. They fail, not skip, without one: a guest that lost its
// device must not look green.
//
// Environment: RMA_VERBS_TEST_NETDEV (default eth0) is the netdev the async
// event test takes down and up again; it runs last.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/registration_cache.hpp"
#include "rma/sdk/registry.hpp"
#include "rma/sdk/verbs.hpp"

namespace rma {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = ::getenv(name)) {
      had_ = true;
      old_ = old;
    }
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) {
      ::setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_;
  std::string old_;
  bool had_ = false;
};

std::string ipv4_of(const DeviceInfo& info) {
  const auto& g = info.gid;
  return std::to_string(g[12]) + "." + std::to_string(g[13]) + "." + std::to_string(g[14]) + "." +
         std::to_string(g[15]);
}

// A registered buffer.
struct Buffer {
  std::vector<std::uint8_t> bytes;
  std::unique_ptr<MemoryRegion> mr;
  std::uint64_t addr() const { return reinterpret_cast<std::uint64_t>(bytes.data()); }
  Sge sge(std::uint32_t offset, std::uint32_t len) const { return Sge{addr() + offset, len, mr->lkey()}; }
};

class VerbsDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = ProviderRegistry::global().open("verbs");
    ASSERT_TRUE(d.ok()) << d.status().to_string()
                        << "\nthese tests need an RDMA device: run them in the soft-RoCE guest (rxe0)";
    device_ = *d;
    auto pd = device_->alloc_pd();
    ASSERT_TRUE(pd.ok()) << pd.status().to_string();
    pd_ = *pd;
    auto a = device_->create_cq(256);
    auto b = device_->create_cq(256);
    ASSERT_TRUE(a.ok() && b.ok());
    cq_a_ = *a;
    cq_b_ = *b;
  }

  QpConfig config(const std::shared_ptr<CompletionQueue>& cq) const {
    QpConfig c;
    c.send_cq = cq;
    c.recv_cq = cq;
    c.max_send_wr = 256;
    c.max_recv_wr = 64;
    c.max_send_sge = 4;
    c.max_recv_sge = 4;
    c.max_inline_data = std::min<std::uint32_t>(64, device_->caps().max_inline_data);
    c.max_rd_atomic = std::min<std::uint32_t>(4, device_->caps().max_qp_rd_atom);
    return c;
  }

  std::unique_ptr<QueuePair> qp(const QpConfig& c) {
    auto q = pd_->create_qp(c);
    EXPECT_TRUE(q.ok()) << q.status().to_string();
    return q.ok() ? std::move(q).value() : nullptr;
  }

  // Two QPs of this device connected to each other by address exchange.
  void connect_pair(const QpConfig& ca, const QpConfig& cb) {
    a_ = qp(ca);
    b_ = qp(cb);
    ASSERT_TRUE(a_ && b_);
    auto addr_a = a_->local_address();
    auto addr_b = b_->local_address();
    ASSERT_TRUE(addr_a.ok() && addr_b.ok());
    Status s1 = a_->connect(*addr_b);
    ASSERT_TRUE(s1.ok()) << s1.to_string();
    Status s2 = b_->connect(*addr_a);
    ASSERT_TRUE(s2.ok()) << s2.to_string();
    EXPECT_EQ(a_->state(), QpState::kRts);
  }
  void connect_pair() { connect_pair(config(cq_a_), config(cq_b_)); }

  Buffer buffer(std::size_t len, Access access = kAllAccess, std::uint8_t fill = 0) {
    Buffer b;
    b.bytes.assign(len, fill);
    auto mr = pd_->register_memory(b.bytes.data(), len, access);
    EXPECT_TRUE(mr.ok()) << mr.status().to_string();
    if (mr.ok()) b.mr = std::move(mr).value();
    return b;
  }

  // The next `n` completions of `cq`, waiting at most `limit`.
  std::vector<Completion> wait(const std::shared_ptr<CompletionQueue>& cq, std::size_t n,
                               std::chrono::milliseconds limit = 10s) {
    std::vector<Completion> got;
    const auto deadline = Clock::now() + limit;
    while (got.size() < n && Clock::now() < deadline) {
      Completion c[16];
      const int k = cq->poll({c, std::min<std::size_t>(16, n - got.size())});
      if (k < 0) {
        ADD_FAILURE() << "CQ overrun: " << cq->overrun_reason();
        break;
      }
      got.insert(got.end(), c, c + k);
      if (k == 0) std::this_thread::sleep_for(100us);
    }
    EXPECT_EQ(got.size(), n) << "completions missing after " << limit.count() << " ms";
    return got;
  }
  Completion wait_one(const std::shared_ptr<CompletionQueue>& cq, std::chrono::milliseconds limit = 10s) {
    auto v = wait(cq, 1, limit);
    return v.empty() ? Completion{0, WcStatus::kGeneralErr} : v[0];
  }

  void post_ok(QueuePair& q, const WorkRequest& wr) {
    PostResult r = q.post({&wr, 1});
    ASSERT_TRUE(r.ok()) << r.to_status().to_string();
  }
  void post_recv_ok(QueuePair& q, std::uint64_t wr_id, std::span<const Sge> sgl) {
    RecvRequest rr{wr_id, sgl};
    PostResult r = q.post_recv({&rr, 1});
    ASSERT_TRUE(r.ok()) << r.to_status().to_string();
  }

  static WorkRequest rdma(Opcode op, const Sge* sge, std::size_t n, const Buffer& target, std::uint64_t offset,
                          std::uint64_t wr_id = 1) {
    WorkRequest wr;
    wr.wr_id = wr_id;
    wr.opcode = op;
    wr.sgl = {sge, n};
    wr.remote_addr = target.addr() + offset;
    wr.rkey = target.mr->rkey();
    return wr;
  }

  std::shared_ptr<Device> device_;
  std::shared_ptr<ProtectionDomain> pd_;
  std::shared_ptr<CompletionQueue> cq_a_, cq_b_;
  std::unique_ptr<QueuePair> a_, b_;
};

// ------------------------------------------------------------------ device

TEST_F(VerbsDevice, DescribesARoceV2DeviceWithItsIpv4Gid) {
  const DeviceInfo& i = device_->info();
  EXPECT_EQ(i.provider, "verbs");
  EXPECT_EQ(i.transport, "RoCE v2");
  EXPECT_EQ(i.link_layer, "Ethernet");
  EXPECT_EQ(i.gid[10], 0xff);
  EXPECT_EQ(i.gid[11], 0xff) << "the chosen GID is not IPv4-mapped";
  EXPECT_NE(i.mac, (std::array<std::uint8_t, 6>{}));
  EXPECT_GE(i.caps.max_sge, 4u);
  EXPECT_GT(i.caps.max_inline_data, 0u);
  EXPECT_GT(i.caps.max_qp_rd_atom, 0u);
  EXPECT_TRUE(i.caps.atomics);
  EXPECT_GE(i.caps.path_mtu, 256u);
  auto listed = ProviderRegistry::global().find("verbs");
  ASSERT_TRUE(listed.ok());
  auto devices = (*listed)->query_devices();
  ASSERT_TRUE(devices.ok());
  ASSERT_FALSE(devices->empty());
  EXPECT_EQ((*devices)[0].name, i.name);
  // With a device, verbs is what an unnamed selection picks.
  ::unsetenv("RMA_PROVIDER");
  auto chosen = ProviderRegistry::global().select();
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ((*chosen)->name(), "verbs");
}

TEST_F(VerbsDevice, WrongGidIndexAndAddressAreClearErrors) {
  {
    ScopedEnv e("RMA_GID_INDEX", "7");
    auto d = ProviderRegistry::global().open("verbs");
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.status().message().find("GID index 7 out of range"), std::string::npos) << d.status().message();
    EXPECT_NE(d.status().message().find(device_->name() + " port 1"), std::string::npos) << d.status().message();
  }
  {
    ScopedEnv e("RMA_VERBS_IP", "10.99.99.99");
    auto d = ProviderRegistry::global().open("verbs");
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.status().message().find("has no RoCE v2 GID for 10.99.99.99"), std::string::npos)
        << d.status().message();
  }
  {
    ScopedEnv e("RMA_VERBS_IP", ipv4_of(device_->info()).c_str());
    auto d = ProviderRegistry::global().open("verbs");
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    EXPECT_EQ((*d)->info().gid, device_->info().gid);
  }
  {
    auto d = ProviderRegistry::global().open("verbs", "mlx5_7");
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.status().message().find("no device \"mlx5_7\""), std::string::npos) << d.status().message();
    EXPECT_NE(d.status().message().find(device_->name()), std::string::npos) << d.status().message();
  }
}

TEST_F(VerbsDevice, OnDemandPagingIsRefusedWhereUnsupported) {
  ScopedEnv e("RMA_VERBS_ODP", "1");
  auto d = ProviderRegistry::global().open("verbs");
  if (d.ok()) GTEST_SKIP() << device_->name() << " supports ODP";
  EXPECT_NE(d.status().message().find("on-demand paging"), std::string::npos) << d.status().message();
}

TEST_F(VerbsDevice, BadConfigurationAndRegistrationAreRejected) {
  QpConfig c = config(cq_a_);
  c.max_send_sge = device_->caps().max_sge + 1;
  EXPECT_EQ(pd_->create_qp(c).status().code(), StatusCode::kInvalidArgument);
  c = config(cq_a_);
  c.path_mtu = 1000;
  EXPECT_FALSE(pd_->create_qp(c).ok());
  EXPECT_FALSE(device_->create_cq(0).ok());
  std::vector<std::uint8_t> mem(64);
  EXPECT_FALSE(pd_->register_memory(mem.data(), 0, kAllAccess).ok());
  EXPECT_FALSE(pd_->register_memory(mem.data(), 64, Access::kRemoteWrite).ok());  // needs LOCAL_WRITE
}

// ------------------------------------------------------------------ data path

TEST_F(VerbsDevice, WriteThroughTheRegistrationCache) {
  connect_pair();
  auto cache = RegistrationCache::create(pd_);
  ASSERT_TRUE(cache.ok()) << cache.status().to_string();
  std::vector<std::uint8_t> src(8192), dst(8192, 0);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>(i * 7 + 1);
  auto hs = (*cache)->acquire(src.data(), src.size(), Access::kLocalWrite);
  auto hd = (*cache)->acquire(dst.data(), dst.size(), kAllAccess);
  ASSERT_TRUE(hs.ok() && hd.ok());
  Sge sge{reinterpret_cast<std::uint64_t>(src.data()), 8192, hs->lkey()};
  WorkRequest wr;
  wr.wr_id = 42;
  wr.opcode = Opcode::kRdmaWrite;
  wr.sgl = {&sge, 1};
  wr.remote_addr = reinterpret_cast<std::uint64_t>(dst.data());
  wr.rkey = hd->rkey();
  post_ok(*a_, wr);
  Completion c = wait_one(cq_a_);
  EXPECT_EQ(c.status, WcStatus::kSuccess) << wc_status_name(c.status);
  EXPECT_EQ(c.wr_id, 42u);
  EXPECT_EQ(c.opcode, Opcode::kRdmaWrite);
  EXPECT_EQ(c.qp_num, a_->qp_num());
  EXPECT_EQ(src, dst);
  auto again = (*cache)->acquire(src.data(), 100, Access::kLocalWrite);
  ASSERT_TRUE(again.ok());
  EXPECT_GE((*cache)->stats().hits, 1u);
}

TEST_F(VerbsDevice, WriteWithImmediateConsumesAReceive) {
  connect_pair();
  Buffer src = buffer(1000, kAllAccess, 0x5a);
  Buffer dst = buffer(1000);
  post_recv_ok(*b_, 900, {});
  Sge s = src.sge(0, 1000);
  WorkRequest wr = rdma(Opcode::kRdmaWriteWithImm, &s, 1, dst, 0, 7);
  wr.imm_data = 0xdeadbeef;
  post_ok(*a_, wr);
  Completion sc = wait_one(cq_a_);
  EXPECT_EQ(sc.status, WcStatus::kSuccess);
  EXPECT_EQ(sc.opcode, Opcode::kRdmaWrite);
  Completion rc = wait_one(cq_b_);
  EXPECT_EQ(rc.status, WcStatus::kSuccess);
  EXPECT_EQ(rc.wr_id, 900u);
  EXPECT_EQ(rc.opcode, Opcode::kRecvRdmaWithImm);
  EXPECT_TRUE(rc.has_imm);
  EXPECT_EQ(rc.imm_data, 0xdeadbeefu);
  EXPECT_EQ(rc.byte_len, 1000u);
  EXPECT_EQ(dst.bytes, src.bytes);
}

TEST_F(VerbsDevice, ReadMultiplePathMtus) {
  connect_pair();
  const std::uint32_t len = 3 * device_->caps().path_mtu + 17;
  Buffer remote = buffer(len);
  for (std::uint32_t i = 0; i < len; ++i) remote.bytes[i] = static_cast<std::uint8_t>(i ^ 0x3c);
  Buffer local = buffer(len);
  Sge s = local.sge(0, len);
  post_ok(*a_, rdma(Opcode::kRdmaRead, &s, 1, remote, 0, 5));
  Completion c = wait_one(cq_a_);
  EXPECT_EQ(c.status, WcStatus::kSuccess);
  EXPECT_EQ(c.opcode, Opcode::kRdmaRead);
  EXPECT_EQ(c.byte_len, len);
  EXPECT_EQ(local.bytes, remote.bytes);
}

TEST_F(VerbsDevice, FetchAddAndCompareSwap) {
  connect_pair();
  Buffer target = buffer(16);
  std::uint64_t v = 5;
  std::memcpy(target.bytes.data() + 8, &v, 8);
  Buffer result = buffer(8);
  Sge s = result.sge(0, 8);
  WorkRequest fa = rdma(Opcode::kAtomicFetchAdd, &s, 1, target, 8, 1);
  fa.compare_add = 10;
  post_ok(*a_, fa);
  Completion c = wait_one(cq_a_);
  EXPECT_EQ(c.status, WcStatus::kSuccess);
  EXPECT_EQ(c.opcode, Opcode::kAtomicFetchAdd);
  std::uint64_t got = 0;
  std::memcpy(&got, result.bytes.data(), 8);
  EXPECT_EQ(got, 5u);
  std::memcpy(&got, target.bytes.data() + 8, 8);
  EXPECT_EQ(got, 15u);

  WorkRequest miss = rdma(Opcode::kAtomicCmpSwap, &s, 1, target, 8, 2);
  miss.compare_add = 99;
  miss.swap = 1;
  post_ok(*a_, miss);
  EXPECT_EQ(wait_one(cq_a_).status, WcStatus::kSuccess);
  std::memcpy(&got, target.bytes.data() + 8, 8);
  EXPECT_EQ(got, 15u) << "compare did not match; nothing may be swapped";

  WorkRequest hit = rdma(Opcode::kAtomicCmpSwap, &s, 1, target, 8, 3);
  hit.compare_add = 15;
  hit.swap = 0x1122334455667788ull;
  post_ok(*a_, hit);
  c = wait_one(cq_a_);
  EXPECT_EQ(c.status, WcStatus::kSuccess);
  EXPECT_EQ(c.opcode, Opcode::kAtomicCmpSwap);
  std::memcpy(&got, result.bytes.data(), 8);
  EXPECT_EQ(got, 15u);
  std::memcpy(&got, target.bytes.data() + 8, 8);
  EXPECT_EQ(got, 0x1122334455667788ull);
}

TEST_F(VerbsDevice, SendScattersIntoTheReceiveSgeList) {
  connect_pair();
  Buffer src = buffer(300);
  for (int i = 0; i < 300; ++i) src.bytes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(i);
  Buffer dst = buffer(400, kAllAccess, 0xee);
  Sge rsg[2] = {dst.sge(0, 100), dst.sge(200, 200)};
  post_recv_ok(*b_, 31, rsg);
  Sge ssg[3] = {src.sge(0, 50), src.sge(50, 150), src.sge(200, 100)};
  WorkRequest wr;
  wr.wr_id = 30;
  wr.opcode = Opcode::kSendWithImm;
  wr.imm_data = 77;
  wr.sgl = ssg;
  post_ok(*a_, wr);
  EXPECT_EQ(wait_one(cq_a_).opcode, Opcode::kSend);
  Completion r = wait_one(cq_b_);
  EXPECT_EQ(r.status, WcStatus::kSuccess);
  EXPECT_EQ(r.opcode, Opcode::kRecv);
  EXPECT_EQ(r.byte_len, 300u);
  EXPECT_TRUE(r.has_imm);
  EXPECT_EQ(r.imm_data, 77u);
  EXPECT_EQ(std::memcmp(dst.bytes.data(), src.bytes.data(), 100), 0);
  EXPECT_EQ(dst.bytes[150], 0xee);
  EXPECT_EQ(std::memcmp(dst.bytes.data() + 200, src.bytes.data() + 100, 200), 0);
}

TEST_F(VerbsDevice, GatherWriteAndInlineFromUnregisteredMemory) {
  connect_pair();
  Buffer src = buffer(64);
  for (int i = 0; i < 64; ++i) src.bytes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(200 + i);
  Buffer dst = buffer(256);
  Sge g[4] = {src.sge(48, 16), src.sge(32, 16), src.sge(16, 16), src.sge(0, 16)};
  post_ok(*a_, rdma(Opcode::kRdmaWrite, g, 4, dst, 0, 1));
  EXPECT_EQ(wait_one(cq_a_).status, WcStatus::kSuccess);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(std::memcmp(dst.bytes.data() + 16 * k, src.bytes.data() + 48 - 16 * k, 16), 0) << k;
  }

  std::array<std::uint8_t, 48> stack{};
  stack.fill(0x99);
  Sge inl{reinterpret_cast<std::uint64_t>(stack.data()), 48, 0};  // no lkey: inline
  WorkRequest wr = rdma(Opcode::kRdmaWrite, &inl, 1, dst, 100, 2);
  wr.flags |= kWrInline;
  post_ok(*a_, wr);
  stack.fill(0);  // the payload was copied at post time
  EXPECT_EQ(wait_one(cq_a_).status, WcStatus::kSuccess);
  for (int i = 0; i < 48; ++i) EXPECT_EQ(dst.bytes[100 + static_cast<std::size_t>(i)], 0x99);

  // Above the QP's inline limit: refused with the shared check's reason.
  std::vector<std::uint8_t> big(a_ ? 65 : 0, 1);
  Sge too_big{reinterpret_cast<std::uint64_t>(big.data()), 65, 0};
  WorkRequest over = rdma(Opcode::kRdmaWrite, &too_big, 1, dst, 0, 3);
  over.flags |= kWrInline;
  PostResult r = a_->post({&over, 1});
  EXPECT_EQ(r.code, StatusCode::kInvalidArgument);
  EXPECT_STREQ(r.reason, "inline data exceeds max_inline_data");
}

TEST_F(VerbsDevice, PostListOfManyRequestsInOneCall) {
  connect_pair();
  constexpr std::size_t kN = 100;  // several of the provider's stack chunks
  Buffer src = buffer(kN * 8);
  for (std::size_t i = 0; i < kN * 8; ++i) src.bytes[i] = static_cast<std::uint8_t>(i);
  Buffer dst = buffer(kN * 8);
  std::vector<Sge> sges(kN);
  std::vector<WorkRequest> wrs(kN);
  for (std::size_t i = 0; i < kN; ++i) {
    sges[i] = src.sge(static_cast<std::uint32_t>(i * 8), 8);
    wrs[i] = rdma(Opcode::kRdmaWrite, &sges[i], 1, dst, i * 8, 1000 + i);
    wrs[i].flags = (i % 10 == 9) ? kWrSignaled : 0u;  // selective signaling
  }
  PostResult r = a_->post(wrs);
  ASSERT_TRUE(r.ok()) << r.to_status().to_string();
  auto done = wait(cq_a_, kN / 10);
  for (std::size_t k = 0; k < done.size(); ++k) {
    EXPECT_EQ(done[k].status, WcStatus::kSuccess);
    EXPECT_EQ(done[k].wr_id, 1000 + k * 10 + 9);
  }
  EXPECT_EQ(src.bytes, dst.bytes);

  // A bad request in the middle: the ones before it are posted, it is not.
  wrs[40].sgl = {};
  wrs[40].opcode = Opcode::kAtomicFetchAdd;
  for (auto& w : wrs) w.flags = kWrSignaled;
  r = a_->post(wrs);
  EXPECT_EQ(r.code, StatusCode::kInvalidArgument);
  EXPECT_EQ(r.bad_index, 40u);
  EXPECT_STREQ(r.reason, "atomic needs exactly one 8-byte SGE");
  auto first = wait(cq_a_, 40);
  EXPECT_EQ(first.back().wr_id, 1039u);
  Completion extra[4];
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(cq_a_->poll(extra), 0);
}

// ------------------------------------------------------------------ errors

TEST_F(VerbsDevice, BadRkeyIsARemoteAccessErrorAndFlushesTheRest) {
  connect_pair();
  Buffer src = buffer(64);
  Buffer dst = buffer(64);
  Sge s = src.sge(0, 64);
  WorkRequest bad = rdma(Opcode::kRdmaWrite, &s, 1, dst, 0, 1);
  bad.rkey ^= 0x5a5a00;
  WorkRequest next = rdma(Opcode::kRdmaWrite, &s, 1, dst, 0, 2);
  WorkRequest both[2] = {bad, next};
  ASSERT_TRUE(a_->post(both).ok());
  auto c = wait(cq_a_, 2);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].wr_id, 1u);
  EXPECT_EQ(c[0].status, WcStatus::kRemAccessErr) << wc_status_name(c[0].status);
  EXPECT_EQ(c[1].wr_id, 2u);
  EXPECT_EQ(c[1].status, WcStatus::kWrFlushErr) << wc_status_name(c[1].status);
  EXPECT_EQ(a_->state(), QpState::kError);
}

TEST_F(VerbsDevice, OutOfBoundsAndMissingRightsAreRemoteAccessErrors) {
  {
    connect_pair();
    Buffer src = buffer(128);
    Buffer dst = buffer(64);
    Sge s = src.sge(0, 128);
    post_ok(*a_, rdma(Opcode::kRdmaWrite, &s, 1, dst, 0, 1));  // 128 bytes into 64
    EXPECT_EQ(wait_one(cq_a_).status, WcStatus::kRemAccessErr);
  }
  {
    connect_pair();
    Buffer src = buffer(8);
    Buffer ro = buffer(8, Access::kLocalWrite | Access::kRemoteRead);
    Sge s = src.sge(0, 8);
    post_ok(*a_, rdma(Opcode::kRdmaWrite, &s, 1, ro, 0, 1));  // no REMOTE_WRITE
    EXPECT_EQ(wait_one(cq_a_).status, WcStatus::kRemAccessErr);
  }
  {
    connect_pair();
    Buffer dst = buffer(8);
    Buffer src = buffer(8);
    Sge s{src.addr(), 8, src.mr->lkey() ^ 0x1234500};  // bad local key
    post_ok(*a_, rdma(Opcode::kRdmaWrite, &s, 1, dst, 0, 1));
    const WcStatus st = wait_one(cq_a_).status;
    // A local error; kernel rxe (6.1) reports a bad lkey as LOC_QP_OP_ERR.
    EXPECT_TRUE(st == WcStatus::kLocProtErr || st == WcStatus::kLocAccessErr || st == WcStatus::kLocQpOpErr)
        << wc_status_name(st);
  }
}

TEST_F(VerbsDevice, PeerDestroyedMidTransferIsARetryExceededError) {
  QpConfig ca = config(cq_a_);
  ca.timeout = 10;   // 4 ms
  ca.retry_cnt = 2;
  connect_pair(ca, config(cq_b_));
  Buffer src = buffer(1 << 20);
  Buffer dst = buffer(1 << 20);
  // The connection works...
  Sge first = src.sge(0, 4096);
  post_ok(*a_, rdma(Opcode::kRdmaWrite, &first, 1, dst, 0, 100));
  ASSERT_EQ(wait_one(cq_a_).status, WcStatus::kSuccess);
  // ...then the peer QP goes away and the rest of the transfer has nobody to
  // acknowledge it.
  b_.reset();
  std::vector<Sge> s(8);
  std::vector<WorkRequest> wrs(8);
  for (int i = 0; i < 8; ++i) {
    s[static_cast<std::size_t>(i)] = src.sge(static_cast<std::uint32_t>(i) << 17, 1u << 17);
    wrs[static_cast<std::size_t>(i)] =
        rdma(Opcode::kRdmaWrite, &s[static_cast<std::size_t>(i)], 1, dst, static_cast<std::uint64_t>(i) << 17,
             static_cast<std::uint64_t>(i));
  }
  const auto t0 = Clock::now();
  ASSERT_TRUE(a_->post(wrs).ok());
  const auto done = wait(cq_a_, 8, 30s);
  ASSERT_EQ(done.size(), 8u);
  EXPECT_EQ(done[0].status, WcStatus::kRetryExcErr) << wc_status_name(done[0].status);
  for (std::size_t i = 1; i < done.size(); ++i) {
    EXPECT_EQ(done[i].status, WcStatus::kWrFlushErr) << wc_status_name(done[i].status);
  }
  EXPECT_LT(Clock::now() - t0, 20s);
}

TEST_F(VerbsDevice, UnreachablePeerIsAClearErrorNamingIt) {
  QpConfig ca = config(cq_a_);
  ca.timeout = 10;
  ca.retry_cnt = 1;
  a_ = qp(ca);
  ASSERT_TRUE(a_);
  auto mine = a_->local_address();
  ASSERT_TRUE(mine.ok());
  EndpointAddress ghost = *mine;
  ghost.bytes[7 + 3] ^= 0x40;                   // another QPN...
  ghost.bytes[15 + 15] ^= 0x7f;                 // ...at an IPv4 address nobody has
  const std::string ghost_ip = std::to_string(ghost.bytes[15 + 12]) + "." + std::to_string(ghost.bytes[15 + 13]) +
                               "." + std::to_string(ghost.bytes[15 + 14]) + "." +
                               std::to_string(ghost.bytes[15 + 15]);
  const auto t0 = Clock::now();
  Status st = a_->connect(ghost);
  if (!st.ok()) {
    // rxe and RoCE NICs resolve the peer's MAC when the QP moves to RTR; no
    // neighbour answers, so the connection fails there, naming the peer.
    EXPECT_NE(st.message().find(ghost_ip), std::string::npos) << st.message();
    EXPECT_EQ(a_->state(), QpState::kReset) << "a failed connect leaves the QP reusable";
  } else {
    // A device that resolves later: the first work request exhausts its retries.
    Buffer src = buffer(64);
    Sge s = src.sge(0, 64);
    WorkRequest wr;
    wr.opcode = Opcode::kRdmaWrite;
    wr.sgl = {&s, 1};
    wr.remote_addr = 0x1000;
    wr.rkey = 1;
    post_ok(*a_, wr);
    EXPECT_EQ(wait_one(cq_a_, 30s).status, WcStatus::kRetryExcErr);
  }
  EXPECT_LT(Clock::now() - t0, 20s);
}

TEST_F(VerbsDevice, ReceiverNotReadyIsAnRnrError) {
  QpConfig ca = config(cq_a_);
  ca.rnr_retry = 0;
  connect_pair(ca, config(cq_b_));
  Buffer src = buffer(16);
  Sge s = src.sge(0, 16);
  WorkRequest wr;
  wr.opcode = Opcode::kSend;
  wr.sgl = {&s, 1};
  post_ok(*a_, wr);
  EXPECT_EQ(wait_one(cq_a_).status, WcStatus::kRnrRetryExcErr);
}

TEST_F(VerbsDevice, SetErrorFlushesPostedReceivesAndLaterPostsAreRefused) {
  // A receive CQ of its own: ibv_wc.opcode is undefined in error
  // completions, so only a CQ that serves receives alone can name them.
  auto recv_cq = device_->create_cq(16);
  ASSERT_TRUE(recv_cq.ok()) << recv_cq.status().to_string();
  QpConfig cb = config(cq_b_);
  cb.recv_cq = *recv_cq;
  connect_pair(config(cq_a_), cb);
  Buffer dst = buffer(64);
  for (std::uint64_t id = 1; id <= 3; ++id) {
    Sge s = dst.sge(0, 64);
    post_recv_ok(*b_, id, {&s, 1});
  }
  ASSERT_TRUE(b_->set_error().ok());
  ASSERT_TRUE(b_->set_error().ok());  // idempotent
  EXPECT_EQ(b_->state(), QpState::kError);
  auto c = wait(*recv_cq, 3);
  ASSERT_EQ(c.size(), 3u);
  for (std::size_t i = 0; i < c.size(); ++i) {
    EXPECT_EQ(c[i].status, WcStatus::kWrFlushErr);
    EXPECT_EQ(c[i].wr_id, i + 1);
    EXPECT_EQ(c[i].opcode, Opcode::kRecv) << "a receive-only CQ reports flushed receives as receives";
  }
  Sge s = dst.sge(0, 8);
  RecvRequest rr{9, {&s, 1}};
  PostResult r = b_->post_recv({&rr, 1});
  EXPECT_EQ(r.code, StatusCode::kFailedPrecondition);
  EXPECT_STREQ(r.reason, "QP is in the error state");
}

TEST_F(VerbsDevice, ConnectAndPostRulesAreChecked) {
  a_ = qp(config(cq_a_));
  ASSERT_TRUE(a_);
  Buffer src = buffer(8);
  Sge s = src.sge(0, 8);
  WorkRequest wr = rdma(Opcode::kRdmaWrite, &s, 1, src, 0, 1);
  PostResult r = a_->post({&wr, 1});
  EXPECT_EQ(r.code, StatusCode::kFailedPrecondition);
  EXPECT_STREQ(r.reason, "QP is not in RTS state");

  EndpointAddress foreign;
  std::memcpy(foreign.bytes.data(), "softroce", 8);
  foreign.size = 31;
  Status st = a_->connect(foreign);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("not made by the verbs provider"), std::string::npos) << st.message();
  EXPECT_EQ(a_->state(), QpState::kReset);

  auto self = a_->local_address();
  ASSERT_TRUE(self.ok());
  ASSERT_TRUE(a_->connect(*self).ok());  // loopback onto itself
  Status twice = a_->connect(*self);
  EXPECT_EQ(twice.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(twice.message().find("only a RESET QP"), std::string::npos);
  post_ok(*a_, wr);
  EXPECT_EQ(wait_one(cq_a_).status, WcStatus::kSuccess);
}

TEST_F(VerbsDevice, CqOverrunMakesPollFailWithAReason) {
  auto small = device_->create_cq(1);
  ASSERT_TRUE(small.ok());
  const std::uint32_t depth = (*small)->depth();
  QpConfig c = config(*small);
  connect_pair(c, config(cq_b_));
  Buffer src = buffer(8);
  Buffer dst = buffer(8);
  Sge s = src.sge(0, 8);
  std::vector<WorkRequest> wrs(depth + 4, rdma(Opcode::kRdmaWrite, &s, 1, dst, 0, 1));
  ASSERT_TRUE(a_->post(wrs).ok());
  const auto deadline = Clock::now() + 10s;
  int n = 0;
  while (Clock::now() < deadline && n != -1) {
    std::this_thread::sleep_for(20ms);
    Completion none[1];
    n = (*small)->poll({none, 0});  // looks at the overrun flag only
  }
  ASSERT_EQ(n, -1) << "no CQ overrun reported with " << wrs.size() << " completions for depth " << depth;
  EXPECT_NE(std::string((*small)->overrun_reason()).find("overrun"), std::string::npos);
  bool event = false;
  for (int i = 0; i < 100 && !event; ++i) {
    while (auto e = device_->poll_async_event()) event |= e->type == AsyncEventType::kCqErr;
    if (!event) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(event) << "no CQ_ERR async event";
  a_.reset();  // before the CQ it overran
}

TEST_F(VerbsDevice, CountersMove) {
  auto before = device_->read_counters();
  ASSERT_TRUE(before.ok());
  if (before->empty()) GTEST_SKIP() << "no sysfs counters for " << device_->name();
  connect_pair();
  Buffer src = buffer(4096);
  Buffer dst = buffer(4096);
  Sge s = src.sge(0, 4096);
  post_ok(*a_, rdma(Opcode::kRdmaWrite, &s, 1, dst, 0, 1));
  EXPECT_EQ(wait_one(cq_a_).status, WcStatus::kSuccess);
  std::uint64_t b = 0, a = 0;
  for (const auto& c : *before) b += c.value;
  // rxe may publish its counters a little after the completion: poll.
  for (int i = 0; i < 100 && a <= b; ++i) {
    if (i > 0) std::this_thread::sleep_for(10ms);
    auto after = device_->read_counters();
    ASSERT_TRUE(after.ok());
    a = 0;
    for (const auto& c : *after) a += c.value;
  }
  EXPECT_GT(a, b);
}

// ------------------------------------------------------------------ rdma_cm

TEST_F(VerbsDevice, RdmaCmListenConnectAcceptOnTheDeviceAddress) {
  const std::string ip = ipv4_of(device_->info());
  auto listener = verbs::cm_listen(ip, 0);
  ASSERT_TRUE(listener.ok()) << listener.status().to_string();
  const std::uint16_t port = (*listener)->port();
  ASSERT_NE(port, 0);
  auto accepted = std::async(std::launch::async, [&] { return (*listener)->accept(pd_, config(cq_b_), 10s); });
  auto client = verbs::cm_connect(pd_, config(cq_a_), ip, port, 10s);
  auto server = accepted.get();
  ASSERT_TRUE(client.ok()) << client.status().to_string();
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  EXPECT_EQ((*client)->state(), QpState::kRts);
  EXPECT_EQ((*server)->state(), QpState::kRts);
  Status again = (*client)->connect(*(*server)->local_address());
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition);

  Buffer src = buffer(5000);
  for (std::size_t i = 0; i < 5000; ++i) src.bytes[i] = static_cast<std::uint8_t>(i * 3);
  Buffer dst = buffer(5000);
  Sge s = src.sge(0, 5000);
  post_ok(**client, rdma(Opcode::kRdmaWrite, &s, 1, dst, 0, 1));
  EXPECT_EQ(wait_one(cq_a_).status, WcStatus::kSuccess);
  EXPECT_EQ(src.bytes, dst.bytes);
  Buffer result = buffer(8);
  Sge r = result.sge(0, 8);
  WorkRequest fa = rdma(Opcode::kAtomicFetchAdd, &r, 1, dst, 0, 2);
  fa.compare_add = 1;
  post_ok(**server, fa);  // the other direction, atomics included
  EXPECT_EQ(wait_one(cq_b_).status, WcStatus::kSuccess);
}

TEST_F(VerbsDevice, RdmaCmErrorsAreBoundedAndNamed) {
  const std::string ip = ipv4_of(device_->info());
  auto listener = verbs::cm_listen(ip, 0);
  ASSERT_TRUE(listener.ok()) << listener.status().to_string();
  const auto t0 = Clock::now();
  auto nobody = (*listener)->accept(pd_, config(cq_b_), 300ms);
  EXPECT_EQ(nobody.status().code(), StatusCode::kTimeout) << nobody.status().to_string();
  EXPECT_LT(Clock::now() - t0, 3s);

  const std::uint16_t closed = static_cast<std::uint16_t>((*listener)->port() + 1);
  auto refused = verbs::cm_connect(pd_, config(cq_a_), ip, closed, 5s);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find(ip + ":" + std::to_string(closed)), std::string::npos)
      << refused.status().message();

  auto bad = verbs::cm_connect(pd_, config(cq_a_), "10.0.2", 1, 1s);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(verbs::cm_listen("256.1.1.1", 0).ok());
}

// ------------------------------------------------------------------ async events (last: it takes the link down)

TEST_F(VerbsDevice, ZzPortDownAndUpAreAsyncEvents) {
  const char* env = ::getenv("RMA_VERBS_TEST_NETDEV");
  const std::string netdev = env != nullptr ? env : "eth0";
  while (device_->poll_async_event()) {
  }
  auto await = [&](AsyncEventType type) -> std::optional<AsyncEvent> {
    const auto deadline = Clock::now() + 10s;
    while (Clock::now() < deadline) {
      while (auto e = device_->poll_async_event()) {
        if (e->type == type) return e;
      }
      std::this_thread::sleep_for(20ms);
    }
    return std::nullopt;
  };
  ASSERT_EQ(std::system(("ip link set " + netdev + " down").c_str()), 0);
  auto down = await(AsyncEventType::kPortErr);
  const int up_rc = std::system(("ip link set " + netdev + " up").c_str());
  ASSERT_EQ(up_rc, 0);
  ASSERT_TRUE(down.has_value()) << "no PORT_ERR after taking " << netdev << " down";
  EXPECT_EQ(down->port, 1);
  EXPECT_NE(down->description.find(device_->name() + " port 1"), std::string::npos) << down->description;
  auto up = await(AsyncEventType::kPortActive);
  ASSERT_TRUE(up.has_value()) << "no PORT_ACTIVE after bringing " << netdev << " up";
}

}  // namespace
}  // namespace rma
