// Self provider: endpoint addresses, connect, state, set_error.
#include <unistd.h>

#include <cstring>

#include "self_test_util.hpp"
#include "swkit/vendor_err.hpp"

namespace rma::self::testing {
namespace {

using SelfConnect = SelfFixture;

TEST_F(SelfConnect, LocalAddressStartsWithProviderName) {
  auto qp = make_qp(config());
  auto addr = qp->local_address();
  ASSERT_TRUE(addr.ok());
  ASSERT_GE(addr->size, 4u);
  EXPECT_EQ(std::memcmp(addr->bytes.data(), "self", 4), 0);
  // Different QPs have different addresses; hex round trip connects.
  auto qp2 = make_qp(config());
  EXPECT_NE(addr->to_hex(), qp2->local_address()->to_hex());
  auto parsed = EndpointAddress::from_hex(qp2->local_address()->to_hex());
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(qp->connect(*parsed).ok());
  EXPECT_EQ(qp->state(), QpState::kRts);
}

TEST_F(SelfConnect, LoopbackConnectToItself) {
  auto qp = make_qp(config());
  ASSERT_TRUE(qp->connect(*qp->local_address()).ok());
  EXPECT_EQ(qp->state(), QpState::kRts);
}

TEST_F(SelfConnect, ConnectTwiceIsFailedPrecondition) {
  make_pair();
  Status s = a->connect(*b->local_address());
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(a->state(), QpState::kRts);
}

TEST_F(SelfConnect, RejectsGarbageAndForeignAddresses) {
  auto qp = make_qp(config());
  auto peer = make_qp(config());
  const EndpointAddress good = *peer->local_address();

  EndpointAddress empty;
  EXPECT_EQ(qp->connect(empty).code(), StatusCode::kInvalidArgument);

  EndpointAddress other_provider = *EndpointAddress::from_bytes(
      std::vector<std::uint8_t>{'v', 'e', 'r', 'b', 's', 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  Status s = qp->connect(other_provider);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("verbs"), std::string::npos) << s.message();

  EndpointAddress garbage;
  for (std::size_t i = 0; i < EndpointAddress::kMaxSize; ++i) garbage.bytes[i] = static_cast<std::uint8_t>(i * 37);
  garbage.size = EndpointAddress::kMaxSize;
  EXPECT_EQ(qp->connect(garbage).code(), StatusCode::kInvalidArgument);

  for (std::uint32_t n = 0; n < good.size; ++n) {
    EndpointAddress truncated = good;
    truncated.size = n;
    EXPECT_EQ(qp->connect(truncated).code(), StatusCode::kInvalidArgument) << n;
  }
  EndpointAddress longer = good;
  longer.size = good.size + 1;
  EXPECT_EQ(qp->connect(longer).code(), StatusCode::kInvalidArgument);

  EndpointAddress bad_version = good;
  bad_version.bytes[4] ^= 0xFF;
  EXPECT_EQ(qp->connect(bad_version).code(), StatusCode::kInvalidArgument);

  EndpointAddress oversize = good;
  oversize.size = EndpointAddress::kMaxSize + 1;
  EXPECT_EQ(qp->connect(oversize).code(), StatusCode::kInvalidArgument);

  // None of that changed the QP.
  EXPECT_EQ(qp->state(), QpState::kReset);
  EXPECT_TRUE(qp->connect(good).ok());
}

TEST_F(SelfConnect, RejectsAddressFromAnotherProcess) {
  auto qp = make_qp(config());
  auto peer = make_qp(config());
  const EndpointAddress good = *peer->local_address();
  for (std::size_t byte : {5u, 9u, 16u}) {  // pid, nonce low, nonce high
    EndpointAddress other = good;
    other.bytes[byte] ^= 0x5A;
    Status s = qp->connect(other);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << byte;
    EXPECT_NE(s.message().find("another process"), std::string::npos) << s.message();
  }
  EXPECT_EQ(qp->state(), QpState::kReset);
}

TEST_F(SelfConnect, RejectsUnknownAndDestroyedQp) {
  auto qp = make_qp(config());
  auto peer = make_qp(config());
  EndpointAddress addr = *peer->local_address();
  peer.reset();
  Status s = qp->connect(addr);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("destroyed"), std::string::npos);
  // Flip the QP number bytes: a QP that never existed.
  addr.bytes[20] ^= 0x7F;
  EXPECT_EQ(qp->connect(addr).code(), StatusCode::kNotFound);
  EXPECT_EQ(qp->state(), QpState::kReset);
}

TEST_F(SelfConnect, RejectsPeerInErrorState) {
  auto qp = make_qp(config());
  auto peer = make_qp(config());
  ASSERT_TRUE(peer->set_error().ok());
  EXPECT_EQ(qp->connect(*peer->local_address()).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(peer->connect(*qp->local_address()).code(), StatusCode::kFailedPrecondition);
}

TEST_F(SelfConnect, SetErrorFlushesEverythingAndIsIdempotent) {
  make_pair();
  Buffer buf = buffer(64);
  Sge s = buf.sge(0, 8);
  ASSERT_TRUE(recv1(*a, {&s, 1}, 11).ok());
  ASSERT_TRUE(recv1(*a, {&s, 1}, 12).ok());
  ASSERT_TRUE(a->set_error().ok());
  EXPECT_EQ(a->state(), QpState::kError);
  auto wcs = drain();
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].wr_id, 11u);
  EXPECT_EQ(wcs[1].wr_id, 12u);
  for (const Completion& c : wcs) {
    EXPECT_EQ(c.status, WcStatus::kWrFlushErr);
    EXPECT_EQ(c.qp_num, a->qp_num());
    EXPECT_EQ(c.vendor_err, swkit::kVeFlushed);
  }
  ASSERT_TRUE(a->set_error().ok());
  EXPECT_TRUE(drain().empty());
  // Posting is refused in the error state.
  WorkRequest wr = make_wr(Opcode::kRdmaWrite, {&s, 1}, buf.addr(), buf.rkey());
  PostResult pr = post1(*a, wr);
  EXPECT_EQ(pr.code, StatusCode::kFailedPrecondition);
  EXPECT_STREQ(pr.reason, "QP is in the error state");
  EXPECT_EQ(recv1(*a, {&s, 1}).code, StatusCode::kFailedPrecondition);
  EXPECT_FALSE(a->connect(*b->local_address()).ok());
}

TEST_F(SelfConnect, SetErrorOnResetQp) {
  auto qp = make_qp(config());
  ASSERT_TRUE(qp->set_error().ok());
  EXPECT_EQ(qp->state(), QpState::kError);
  EXPECT_TRUE(drain().empty());
}

TEST_F(SelfConnect, ResetQpRejectsPostsAndReceives) {
  auto qp = make_qp(config());
  Buffer buf = buffer(64);
  Sge s = buf.sge(0, 8);
  WorkRequest wr = make_wr(Opcode::kRdmaWrite, {&s, 1}, buf.addr(), buf.rkey());
  PostResult pr = post1(*qp, wr);
  EXPECT_EQ(pr.code, StatusCode::kFailedPrecondition);
  EXPECT_EQ(pr.bad_index, 0u);
  EXPECT_STREQ(pr.reason, "QP is not in RTS state");
  pr = recv1(*qp, {&s, 1});
  EXPECT_EQ(pr.code, StatusCode::kFailedPrecondition);
  EXPECT_STREQ(pr.reason, "QP is in RESET state");
  EXPECT_TRUE(drain().empty());
}

}  // namespace
}  // namespace rma::self::testing
