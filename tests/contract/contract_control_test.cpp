// Contract suite, control path: device description, CQ/QP creation limits,
// memory registration, the QP life cycle, and the checks post() makes before
// anything runs (the shared ones of rma/sdk/provider_checks.hpp, so the same
// reason text for every provider).
#include <sys/mman.h>

#include "contract_fixture.hpp"

namespace rma::contract {
namespace {

bool is_pow2(std::uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// ------------------------------------------------------------------ device

TEST_P(Contract, DeviceDescribesItselfWithinStatedLimits) {
  for (Side* s : {&a, &b}) {
    const DeviceInfo& i = s->dev->info();
    EXPECT_EQ(i.provider, provider());
    EXPECT_FALSE(i.name.empty());
    EXPECT_EQ(s->dev->name(), i.name);
    EXPECT_FALSE(i.transport.empty());
    EXPECT_FALSE(i.link_layer.empty());
    const DeviceCaps& c = i.caps;
    EXPECT_GE(c.max_sge, 1u);
    EXPECT_GE(c.max_recv_sge, 1u);
    EXPECT_GE(c.max_qp_wr, 1u);
    EXPECT_GE(c.max_cqe, 1u);
    EXPECT_GE(c.max_qp, 1u);
    EXPECT_GE(c.max_mr, 1u);
    EXPECT_GT(c.max_mr_size, 0u);
    EXPECT_GT(c.max_msg_size, 0u);
    EXPECT_GE(c.max_qp_rd_atom, 1u);
    // path_mtu: "bytes: 256..4096".
    EXPECT_TRUE(is_pow2(c.path_mtu) && c.path_mtu >= 256 && c.path_mtu <= 4096) << c.path_mtu;
    // Every provider of this tree offers 8-byte atomics; the atomics cases rely on it.
    EXPECT_TRUE(c.atomics);
  }
  // The provider lists the device it opened.
  auto p = ProviderRegistry::global().find(provider());
  ASSERT_TRUE(p.ok());
  auto listed = (*p)->query_devices();
  ASSERT_TRUE(listed.ok()) << listed.status().to_string();
  bool found = false;
  for (const DeviceInfo& d : *listed) found = found || (d.name == a.dev->name() && d.provider == provider());
  EXPECT_TRUE(found) << a.dev->name() << " not among query_devices()";
  // Unknown device names are NOT_FOUND.
  auto missing = (*p)->open_device("no-such-device-7");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status().to_string();
}

TEST_P(Contract, CreateCqRefusesDepthOutsideOneToMaxCqe) {
  auto zero = a.dev->create_cq(0);
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().code(), StatusCode::kInvalidArgument) << zero.status().to_string();
  if (caps().max_cqe < UINT32_MAX) {
    auto big = a.dev->create_cq(caps().max_cqe + 1);
    ASSERT_FALSE(big.ok());
    EXPECT_EQ(big.status().code(), StatusCode::kInvalidArgument) << big.status().to_string();
  }
  auto one = a.dev->create_cq(1);
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  EXPECT_GE((*one)->depth(), 1u);
  EXPECT_STREQ((*one)->overrun_reason(), "");
}

TEST_P(Contract, CreateQpRefusesConfigBeyondCaps) {
  struct Bad {
    const char* what;
    void (*edit)(QpConfig&, const DeviceCaps&);
  };
  const Bad bad[] = {
      {"send_cq null", [](QpConfig& c, const DeviceCaps&) { c.send_cq = nullptr; }},
      {"recv_cq null", [](QpConfig& c, const DeviceCaps&) { c.recv_cq = nullptr; }},
      {"max_send_wr 0", [](QpConfig& c, const DeviceCaps&) { c.max_send_wr = 0; }},
      {"max_send_wr > max_qp_wr", [](QpConfig& c, const DeviceCaps& d) { c.max_send_wr = d.max_qp_wr + 1; }},
      {"max_send_sge > max_sge", [](QpConfig& c, const DeviceCaps& d) { c.max_send_sge = d.max_sge + 1; }},
      {"max_recv_sge > max_recv_sge", [](QpConfig& c, const DeviceCaps& d) { c.max_recv_sge = d.max_recv_sge + 1; }},
      {"max_inline_data > caps", [](QpConfig& c, const DeviceCaps& d) { c.max_inline_data = d.max_inline_data + 1; }},
      {"max_rd_atomic > caps", [](QpConfig& c, const DeviceCaps& d) { c.max_rd_atomic = d.max_qp_rd_atom + 1; }},
      {"rnr_retry 8", [](QpConfig& c, const DeviceCaps&) { c.rnr_retry = 8; }},
      {"retry_cnt 8", [](QpConfig& c, const DeviceCaps&) { c.retry_cnt = 8; }},
      {"timeout 32", [](QpConfig& c, const DeviceCaps&) { c.timeout = 32; }},
      {"path_mtu 1000", [](QpConfig& c, const DeviceCaps&) { c.path_mtu = 1000; }},
  };
  for (const Bad& x : bad) {
    QpConfig c = config(a);
    x.edit(c, caps());
    auto q = a.pd->create_qp(c);
    ASSERT_FALSE(q.ok()) << x.what;
    EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument) << x.what << ": " << q.status().to_string();
    EXPECT_NE(q.status().message().find("create_qp"), std::string::npos) << q.status().to_string();
  }
}

// ------------------------------------------------------------------ memory registration

TEST_P(Contract, RegistrationKeepsRangeAndRights) {
  const Access rights[] = {Access::kNone,
                           Access::kLocalWrite,
                           Access::kRemoteRead,
                           Access::kLocalWrite | Access::kRemoteWrite,
                           Access::kLocalWrite | Access::kRemoteAtomic,
                           kAllAccess};
  std::vector<std::uint8_t> mem(8192);
  for (Access r : rights) {
    auto mr = a.pd->register_memory(mem.data() + 100, 5000, r);
    ASSERT_TRUE(mr.ok()) << access_to_string(r) << ": " << mr.status().to_string();
    EXPECT_EQ((*mr)->addr(), reinterpret_cast<std::uint64_t>(mem.data() + 100));
    EXPECT_EQ((*mr)->length(), 5000u);
    EXPECT_EQ((*mr)->access(), r) << access_to_string((*mr)->access());
  }
}

TEST_P(Contract, RegistrationRefusesBadInputWithAClearStatus) {
  std::vector<std::uint8_t> mem(4096);
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  void* hole = ::mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(hole, MAP_FAILED);
  ASSERT_EQ(::munmap(static_cast<std::uint8_t*>(hole) + page, page), 0);  // second page unmapped
  struct Bad {
    const char* what;
    void* addr;
    std::size_t len;
    Access access;
  };
  const Bad bad[] = {
      {"null address", nullptr, 64, kAllAccess},
      {"zero length", mem.data(), 0, kAllAccess},
      {"REMOTE_WRITE without LOCAL_WRITE", mem.data(), 64, Access::kRemoteWrite},
      {"REMOTE_ATOMIC without LOCAL_WRITE", mem.data(), 64, Access::kRemoteAtomic | Access::kRemoteRead},
      {"unknown access bits", mem.data(), 64, static_cast<Access>(1u << 7)},
      {"range wraps", mem.data(), SIZE_MAX - 16, kAllAccess},
      {"range with an unmapped page", hole, 2 * page, kAllAccess},
  };
  for (const Bad& x : bad) {
    auto mr = a.pd->register_memory(x.addr, x.len, x.access);
    EXPECT_FALSE(mr.ok()) << x.what;
    if (mr.ok()) continue;
    EXPECT_EQ(mr.status().code(), StatusCode::kInvalidArgument) << x.what << ": " << mr.status().to_string();
    EXPECT_NE(mr.status().message().find("register_memory"), std::string::npos)
        << x.what << ": " << mr.status().to_string();
  }
  ::munmap(hole, page);
}

TEST_P(Contract, KeysOfDifferentRegionsDiffer) {
  struct Key {
    Device* dev;
    std::uint32_t lkey, rkey;
  };
  std::vector<Buffer> bufs;
  std::vector<Key> keys;
  for (int i = 0; i < 8; ++i) {
    Side& s = i % 2 ? a : b;
    bufs.push_back(buffer(s, 256));
    ASSERT_TRUE(bufs.back().mr);
    keys.push_back({s.dev.get(), bufs.back().lkey(), bufs.back().rkey()});
  }
  // Two registrations of the same memory are two regions too.
  auto again = a.pd->register_memory(bufs[1].data, 256, kAllAccess);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  keys.push_back({a.dev.get(), (*again)->lkey(), (*again)->rkey()});
  // Keys name regions of one device (softroce's two sides are two devices).
  for (std::size_t i = 0; i < keys.size(); ++i) {
    for (std::size_t j = i + 1; j < keys.size(); ++j) {
      if (keys[i].dev != keys[j].dev) continue;
      EXPECT_NE(keys[i].lkey, keys[j].lkey) << "regions " << i << " and " << j;
      EXPECT_NE(keys[i].rkey, keys[j].rkey) << "regions " << i << " and " << j;
    }
  }
}

TEST_P(Contract, DeregisteredRkeyFailsRemotely) {
  ASSERT_NO_FATAL_FAILURE(connect_pair());
  Buffer src = buffer(a, 64, kAllAccess, 0x5A);
  Buffer dst = buffer(b, 64, kAllAccess, 0xEE);
  const std::uint64_t addr = dst.addr();
  const std::uint32_t rkey = dst.rkey();
  dst.mr.reset();  // deregistered; the memory stays
  Sge s = src.sge(0, 8);
  ASSERT_TRUE(post1(*a.qp, make_wr(Opcode::kRdmaWrite, {&s, 1}, addr, rkey, 9)).ok());
  Completion c = wait_one(a);
  EXPECT_EQ(c.wr_id, 9u);
  EXPECT_EQ(c.status, WcStatus::kRemAccessErr) << wc_status_name(c.status);
  EXPECT_TRUE(dst.all(0xEE));
  EXPECT_TRUE(wait_state(*a.qp, QpState::kError));
}

// ------------------------------------------------------------------ QP life cycle

TEST_P(Contract, QpGoesFromResetToRtsByConnectOnce) {
  auto qa = make_qp(a, config(a));
  auto qb = make_qp(b, config(b));
  ASSERT_TRUE(qa && qb);
  EXPECT_EQ(qa->state(), QpState::kReset);
  EXPECT_NE(qa->qp_num(), 0u);
  if (a.dev == b.dev) {
    EXPECT_NE(qa->qp_num(), qb->qp_num());
  }
  auto addr_a = qa->local_address();
  auto addr_b = qb->local_address();
  ASSERT_TRUE(addr_a.ok() && addr_b.ok());
  // "it starts with the provider's name"
  const std::string name = provider();
  ASSERT_GE(addr_a->size, name.size());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(addr_a->bytes.data()), name.size()), name);
  // Hex round trip, as the bootstrap moves it.
  auto parsed = EndpointAddress::from_hex(addr_b->to_hex());
  ASSERT_TRUE(parsed.ok());
  Status s = qa->connect(*parsed);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(qa->state(), QpState::kRts);
  ASSERT_TRUE(qb->connect(*addr_a).ok());
  EXPECT_EQ(qb->state(), QpState::kRts);
  Status again = qa->connect(*addr_b);
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition) << again.to_string();
  EXPECT_EQ(qa->state(), QpState::kRts);
}

// perftest prints it; the peer expects it. On a wire it is drawn at random
// (rxe, mlx5 and softroce all do), so four QPs do not all share one.
TEST_P(Contract, InitialPsnFitsTwentyFourBitsAndStaysPut) {
  std::vector<std::unique_ptr<QueuePair>> qps;
  for (int i = 0; i < 4; ++i) {
    qps.push_back(make_qp(i % 2 == 0 ? a : b, config(i % 2 == 0 ? a : b)));
    ASSERT_TRUE(qps.back());
  }
  std::vector<std::uint32_t> psn;
  for (auto& q : qps) {
    psn.push_back(q->initial_psn());
    EXPECT_LE(psn.back(), 0xFFFFFFu);
  }
  ASSERT_TRUE(qps[0]->connect(*qps[1]->local_address()).ok());
  ASSERT_TRUE(qps[1]->connect(*qps[0]->local_address()).ok());
  EXPECT_EQ(qps[0]->initial_psn(), psn[0]);
  EXPECT_EQ(qps[1]->initial_psn(), psn[1]);
  const bool wire = a.dev->info().link_layer != "none";
  if (wire) {
    EXPECT_FALSE(std::all_of(psn.begin(), psn.end(), [&](std::uint32_t p) { return p == psn[0]; }));
  } else {
    for (std::uint32_t p : psn) EXPECT_EQ(p, 0u) << "no wire, no PSN";
  }
}

TEST_P(Contract, ConnectRejectsAnAddressItCannotRead) {
  auto qa = make_qp(a, config(a));
  ASSERT_TRUE(qa);
  EndpointAddress empty;
  EXPECT_EQ(qa->connect(empty).code(), StatusCode::kInvalidArgument);
  const std::string foreign = "other-provider:0123456789abcdef0123456789";
  auto other = EndpointAddress::from_bytes(
      std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(foreign.data()), foreign.size()));
  ASSERT_TRUE(other.ok());
  Status s = qa->connect(*other);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_EQ(qa->state(), QpState::kReset);
}

TEST_P(Contract, PostInAWrongStateFailsAndChangesNothing) {
  Buffer buf = buffer(a, 64);
  Sge s = buf.sge(0, 8);
  auto q = make_qp(a, config(a));
  ASSERT_TRUE(q);
  WorkRequest w = make_wr(Opcode::kRdmaWrite, {&s, 1}, buf.addr(8), buf.rkey(), 1);
  PostResult pr = post1(*q, w);
  EXPECT_EQ(pr.code, StatusCode::kFailedPrecondition);
  EXPECT_EQ(pr.bad_index, 0u);
  EXPECT_NE(pr.reason, nullptr);
  pr = recv1(*q, {&s, 1}, 2);
  EXPECT_EQ(pr.code, StatusCode::kFailedPrecondition) << "post_recv in RESET";
  EXPECT_EQ(pr.bad_index, 0u);

  ASSERT_NO_FATAL_FAILURE(connect_pair());
  ASSERT_TRUE(a.qp->set_error().ok());
  EXPECT_EQ(a.qp->state(), QpState::kError);
  ASSERT_TRUE(a.qp->set_error().ok()) << "set_error is idempotent";
  EXPECT_EQ(a.qp->state(), QpState::kError);
  pr = post1(*a.qp, w);
  EXPECT_EQ(pr.code, StatusCode::kFailedPrecondition) << "post in ERROR";
  pr = recv1(*a.qp, {&s, 1}, 3);
  EXPECT_EQ(pr.code, StatusCode::kFailedPrecondition) << "post_recv in ERROR";
  EXPECT_TRUE(quiet_for(a, milliseconds(20)));  // nothing was posted, nothing completes
}

TEST_P(Contract, SetErrorFlushesPostedWork) {
  ASSERT_NO_FATAL_FAILURE(connect_pair());
  Buffer buf = buffer(b, 256);
  Sge r = buf.sge(0, 64);
  for (std::uint64_t id = 10; id < 13; ++id) ASSERT_TRUE(recv1(*b.qp, {&r, 1}, id).ok());
  ASSERT_TRUE(b.qp->set_error().ok());
  auto wcs = wait(b, 3);
  ASSERT_EQ(wcs.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(wcs[i].wr_id, 10 + i);
    EXPECT_EQ(wcs[i].status, WcStatus::kWrFlushErr) << wc_status_name(wcs[i].status);
    EXPECT_EQ(wcs[i].qp_num, b.qp->qp_num());
  }
  EXPECT_TRUE(buf.all(0));
}

TEST_P(Contract, SetErrorFlushesSendsWaitingForAReceiverEvenUnsignaled) {
  ASSERT_NO_FATAL_FAILURE(connect_pair());  // rnr_retry 7: the SEND waits for a receive forever
  Buffer src = buffer(a, 64, kAllAccess, 0x5A);
  Buffer dst = buffer(b, 64, kAllAccess, 0xEE);
  Sge s = src.sge(0, 8);
  WorkRequest list[3] = {make_wr(Opcode::kSend, {&s, 1}, 0, 0, 1),
                         make_wr(Opcode::kRdmaWrite, {&s, 1}, dst.addr(), dst.rkey(), 2, 0),  // unsignaled
                         make_wr(Opcode::kRdmaWrite, {&s, 1}, dst.addr(8), dst.rkey(), 3)};
  ASSERT_TRUE(a.qp->post(list).ok());
  ASSERT_TRUE(quiet_for(a, milliseconds(20)));
  ASSERT_TRUE(a.qp->set_error().ok());
  auto wcs = wait(a, 3);
  ASSERT_EQ(wcs.size(), 3u) << "flushed requests complete even when unsignaled";
  for (std::size_t i = 0; i < wcs.size(); ++i) {
    EXPECT_EQ(wcs[i].wr_id, i + 1);
    EXPECT_EQ(wcs[i].status, WcStatus::kWrFlushErr) << wc_status_name(wcs[i].status);
    EXPECT_EQ(wcs[i].qp_num, a.qp->qp_num());
  }
  EXPECT_TRUE(dst.all(0xEE)) << "requests behind the waiting SEND ran";
}

// ------------------------------------------------------------------ post-time checks

class PostChecks : public Contract {
 protected:
  void SetUp() override {
    Contract::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_NO_FATAL_FAILURE(connect_pair());
    src = buffer(a, 4096, kAllAccess, 0x5A);
    dst = buffer(b, 4096, kAllAccess, 0xEE);
  }

  // [good (id 1, dst[0..8)), bad, good (id 3, dst[16..24))]: rejected at
  // index 1 with (code, reason); the first request ran, the third did not,
  // the QP is still usable.
  void expect_rejected_at_1(const WorkRequest& bad, StatusCode code, const char* reason) {
    Sge good = src.sge(0, 8);
    WorkRequest list[3] = {make_wr(Opcode::kRdmaWrite, {&good, 1}, dst.addr(0), dst.rkey(), 1), bad,
                           make_wr(Opcode::kRdmaWrite, {&good, 1}, dst.addr(16), dst.rkey(), 3)};
    PostResult pr = a.qp->post(list);
    EXPECT_EQ(pr.code, code) << reason;
    EXPECT_EQ(pr.bad_index, 1u) << reason;
    ASSERT_NE(pr.reason, nullptr);
    EXPECT_STREQ(pr.reason, reason);
    EXPECT_NE(pr.to_status().message().find(std::string("work request 1: ") + reason), std::string::npos)
        << pr.to_status().to_string();
    auto wcs = wait(a, 1);
    ASSERT_EQ(wcs.size(), 1u) << reason;
    EXPECT_EQ(wcs[0].wr_id, 1u);
    EXPECT_EQ(wcs[0].status, WcStatus::kSuccess);
    EXPECT_TRUE(quiet_for(a, milliseconds(10))) << reason;
    EXPECT_TRUE(dst.all(0x5A, 0, 8));
    EXPECT_TRUE(dst.all(0xEE, 8)) << reason << ": a request at or after the rejected one ran";
    EXPECT_EQ(a.qp->state(), QpState::kRts);
    std::memset(dst.data, 0xEE, dst.size);
  }

  Buffer src, dst;
};

TEST_P(PostChecks, TooManySges) {
  const std::uint32_t n = config(a).max_send_sge + 1;
  std::vector<Sge> sgl;
  for (std::uint32_t i = 0; i < n; ++i) sgl.push_back(src.sge(i, 1));
  expect_rejected_at_1(make_wr(Opcode::kRdmaWrite, sgl, dst.addr(8), dst.rkey(), 2), StatusCode::kInvalidArgument,
                       "too many SGEs");
  // Exactly max_send_sge is fine.
  sgl.pop_back();
  ASSERT_TRUE(post1(*a.qp, make_wr(Opcode::kRdmaWrite, sgl, dst.addr(100), dst.rkey(), 4)).ok());
  EXPECT_EQ(wait_one(a).status, WcStatus::kSuccess);
  EXPECT_TRUE(dst.all(0x5A, 100, 100 + sgl.size()));
}

TEST_P(PostChecks, InlineLargerThanMaxInline) {
  const std::uint32_t max_inline = config(a).max_inline_data;
  ASSERT_GT(max_inline, 0u);
  Sge s = src.sge(0, max_inline + 1);
  expect_rejected_at_1(make_wr(Opcode::kRdmaWrite, {&s, 1}, dst.addr(8), dst.rkey(), 2, kWrSignaled | kWrInline),
                       StatusCode::kInvalidArgument, "inline data exceeds max_inline_data");
  expect_rejected_at_1(make_wr(Opcode::kSend, {&s, 1}, 0, 0, 2, kWrSignaled | kWrInline),
                       StatusCode::kInvalidArgument, "inline data exceeds max_inline_data");
  s.length = 8;
  expect_rejected_at_1(make_wr(Opcode::kRdmaRead, {&s, 1}, dst.addr(8), dst.rkey(), 2, kWrSignaled | kWrInline),
                       StatusCode::kInvalidArgument, "inline is only valid for SEND and RDMA WRITE");
}

TEST_P(PostChecks, MessageLongerThanMaxMsgSize) {
  // Two SGEs of 2 GiB: 4 GiB exceeds any 32-bit max_msg_size. Nothing is dereferenced.
  ASSERT_GE(config(a).max_send_sge, 2u);
  Sge s[2] = {Sge{src.addr(), 1u << 31, src.lkey()}, Sge{src.addr(), 1u << 31, src.lkey()}};
  expect_rejected_at_1(make_wr(Opcode::kRdmaWrite, s, dst.addr(8), dst.rkey(), 2), StatusCode::kInvalidArgument,
                       "message exceeds max_msg_size");
  expect_rejected_at_1(make_wr(Opcode::kRdmaRead, s, dst.addr(8), dst.rkey(), 2), StatusCode::kInvalidArgument,
                       "message exceeds max_msg_size");
}

TEST_P(PostChecks, UnknownOpcodeAndFlags) {
  Sge s = src.sge(0, 8);
  for (Opcode op : {Opcode::kRecv, Opcode::kRecvRdmaWithImm, static_cast<Opcode>(200)}) {
    expect_rejected_at_1(make_wr(op, {&s, 1}, dst.addr(8), dst.rkey(), 2), StatusCode::kInvalidArgument,
                         "opcode not valid for post");
  }
  expect_rejected_at_1(make_wr(Opcode::kRdmaWrite, {&s, 1}, dst.addr(8), dst.rkey(), 2, kWrSignaled | (1u << 9)),
                       StatusCode::kInvalidArgument, "unknown work request flag bits");
}

TEST_P(PostChecks, AtomicsNeedOneAlignedEightByteSge) {
  Sge four = src.sge(0, 4);
  Sge eight = src.sge(64, 8);
  for (Opcode op : {Opcode::kAtomicFetchAdd, Opcode::kAtomicCmpSwap}) {
    expect_rejected_at_1(make_wr(op, {&four, 1}, dst.addr(8), dst.rkey(), 2), StatusCode::kInvalidArgument,
                         "atomic needs exactly one 8-byte SGE");
    expect_rejected_at_1(make_wr(op, {}, dst.addr(8), dst.rkey(), 2), StatusCode::kInvalidArgument,
                         "atomic needs exactly one 8-byte SGE");
    for (std::uint64_t off : {9u, 12u, 15u}) {
      expect_rejected_at_1(make_wr(op, {&eight, 1}, dst.addr(off), dst.rkey(), 2), StatusCode::kInvalidArgument,
                           "atomic remote_addr not 8-byte aligned");
    }
    expect_rejected_at_1(make_wr(op, {&eight, 1}, dst.addr(8), dst.rkey(), 2, kWrSignaled | kWrInline),
                         StatusCode::kInvalidArgument, "inline is only valid for SEND and RDMA WRITE");
  }
}

TEST_P(PostChecks, PostRecvRejectsTooManySges) {
  const std::uint32_t n = config(b).max_recv_sge + 1;
  std::vector<Sge> sgl;
  for (std::uint32_t i = 0; i < n; ++i) sgl.push_back(dst.sge(i, 1));
  Sge one = dst.sge(64, 64);
  RecvRequest r[3] = {{21, {&one, 1}}, {22, sgl}, {23, {&one, 1}}};
  PostResult pr = b.qp->post_recv(r);
  EXPECT_EQ(pr.code, StatusCode::kInvalidArgument);
  EXPECT_EQ(pr.bad_index, 1u);
  ASSERT_NE(pr.reason, nullptr);
  EXPECT_STREQ(pr.reason, "too many SGEs");
  // Exactly one receive (21) was posted: one SEND consumes it; set_error flushes nothing else.
  Sge s = src.sge(0, 16);
  ASSERT_TRUE(post1(*a.qp, make_wr(Opcode::kSend, {&s, 1}, 0, 0, 5)).ok());
  Completion rc = wait_one(b);
  EXPECT_EQ(rc.wr_id, 21u);
  EXPECT_EQ(rc.status, WcStatus::kSuccess);
  EXPECT_EQ(wait_one(a).status, WcStatus::kSuccess);
  ASSERT_TRUE(b.qp->set_error().ok());
  EXPECT_TRUE(quiet_for(b, milliseconds(20))) << "a receive at or after the rejected one was posted";
}

TEST_P(PostChecks, ZeroLengthWriteAndSendAreValid) {
  ASSERT_TRUE(post1(*a.qp, make_wr(Opcode::kRdmaWrite, {}, dst.addr(8), dst.rkey(), 7)).ok());
  Completion c = wait_one(a);
  EXPECT_EQ(c.wr_id, 7u);
  EXPECT_EQ(c.status, WcStatus::kSuccess) << wc_status_name(c.status);
  Sge r = dst.sge(0, 64);
  ASSERT_TRUE(recv1(*b.qp, {&r, 1}, 30).ok());
  ASSERT_TRUE(post1(*a.qp, make_wr(Opcode::kSend, {}, 0, 0, 8)).ok());
  Completion rc = wait_one(b);
  EXPECT_EQ(rc.wr_id, 30u);
  EXPECT_EQ(rc.status, WcStatus::kSuccess) << wc_status_name(rc.status);
  EXPECT_EQ(rc.opcode, Opcode::kRecv);
  EXPECT_EQ(rc.byte_len, 0u);
  EXPECT_EQ(wait_one(a).status, WcStatus::kSuccess);
  EXPECT_TRUE(dst.all(0xEE));
}

INSTANTIATE_TEST_SUITE_P(contract, Contract, ::testing::ValuesIn(kProviders), provider_param_name);
INSTANTIATE_TEST_SUITE_P(contract, PostChecks, ::testing::ValuesIn(kProviders), provider_param_name);

}  // namespace
}  // namespace rma::contract
