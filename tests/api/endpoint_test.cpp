// The engine's endpoint manager on the self provider: credits, selective
// signaling, bounce buffers, requests and their failure.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "api_test_util.hpp"
#include "rma/sdk/endpoint_manager.hpp"
#include "rma/sdk/registry.hpp"

namespace {

using rma::endpoint::EndpointManager;
using rma::endpoint::EndpointOptions;
using rma::endpoint::OnComplete;
using rma::endpoint::Request;

// Two ranks as threads; each runs body(manager, peer's window address/rkey).
struct Exposed {
  std::uint64_t addr;
  std::uint32_t rkey;
};

// The self device, saying it answers at most `rd_atom` READs/atomics at once
// (as a NIC with fewer responder resources would).
class FewerRespondersDevice final : public rma::Device {
 public:
  FewerRespondersDevice(std::shared_ptr<rma::Device> inner, std::uint32_t rd_atom)
      : inner_(std::move(inner)), info_(inner_->info()) {
    info_.caps.max_qp_rd_atom = rd_atom;
  }
  const rma::DeviceInfo& info() const noexcept override { return info_; }
  rma::Result<std::shared_ptr<rma::ProtectionDomain>> alloc_pd() override { return inner_->alloc_pd(); }
  rma::Result<std::shared_ptr<rma::CompletionQueue>> create_cq(std::uint32_t depth) override {
    return inner_->create_cq(depth);
  }

 private:
  std::shared_ptr<rma::Device> inner_;
  rma::DeviceInfo info_;
};

// rd_atom[r]: when non-zero, rank r's device answers that many READs/atomics.
void run_pair(const EndpointOptions& opts,
              const std::function<void(EndpointManager&, int rank, Exposed peer, std::vector<std::uint64_t>& mine)>& body,
              std::array<std::uint32_t, 2> rd_atom = {0, 0}) {
  auto group = api_test::make_group(2);
  ASSERT_EQ(group.size(), 2u);
  std::vector<std::thread> ts;
  for (int r = 0; r < 2; ++r) {
    ts.emplace_back([&, r] {
      rma::Bootstrap& bs = *group[static_cast<std::size_t>(r)];
      auto dev = rma::ProviderRegistry::global().open("self");
      ASSERT_TRUE(dev.ok()) << dev.status().to_string();
      if (rd_atom[static_cast<std::size_t>(r)] != 0) {
        dev = std::shared_ptr<rma::Device>(
            std::make_shared<FewerRespondersDevice>(*dev, rd_atom[static_cast<std::size_t>(r)]));
      }
      auto m = EndpointManager::create(bs, *dev, opts);
      ASSERT_TRUE(m.ok()) << m.status().to_string();
      std::vector<std::uint64_t> mem(4096, 0);
      auto reg = (*m)->rcache(rma::endpoint::kNetworkRail).acquire(mem.data(), mem.size() * 8, rma::kAllAccess);
      ASSERT_TRUE(reg.ok());
      Exposed mine{reinterpret_cast<std::uint64_t>(mem.data()), reg->rkey()};
      auto all = bs.allgather({reinterpret_cast<const std::uint8_t*>(&mine), sizeof(mine)});
      ASSERT_TRUE(all.ok());
      Exposed peer;
      std::memcpy(&peer, (*all)[static_cast<std::size_t>(1 - r)].data(), sizeof(peer));
      body(**m, r, peer, mem);
      ASSERT_TRUE(bs.barrier().ok());
    });
  }
  for (auto& t : ts) t.join();
}

// An 8-byte READ of the peer's window at `offset` into the bounce slot of
// the next post (after ep.reserve(true)); `done` copies the value out.
rma::StatusCode post_bounce_read(rma::endpoint::Endpoint& ep, Exposed peer, std::uint64_t offset, OnComplete&& done) {
  const rma::Sge b = ep.bounce(8);
  rma::WorkRequest wr;
  wr.opcode = rma::Opcode::kRdmaRead;
  wr.sgl = {&b, 1};
  wr.remote_addr = peer.addr + offset;
  wr.rkey = peer.rkey;
  return ep.post(wr, std::move(done));
}

TEST(ApiEndpoint, CreditsAndSelectiveSignalingNeverOverflow) {
  EndpointOptions o;
  o.sq_depth = 4;  // far fewer slots than posts
  run_pair(o, [](EndpointManager& m, int rank, Exposed peer, std::vector<std::uint64_t>&) {
    auto& ep = m.endpoint(1 - rank);
    Request req;
    std::uint64_t values[1000];
    for (int i = 0; i < 1000; ++i) {
      values[i] = static_cast<std::uint64_t>(rank * 100000 + i);
      rma::Sge s{reinterpret_cast<std::uint64_t>(&values[i]), 8, 0};
      rma::WorkRequest wr;
      wr.opcode = rma::Opcode::kRdmaWrite;
      wr.flags = rma::kWrInline;
      wr.sgl = {&s, 1};
      wr.remote_addr = peer.addr + 8 * static_cast<std::uint64_t>(i);
      wr.rkey = peer.rkey;
      const bool last = i == 999;
      ASSERT_EQ(ep.post(wr, last ? OnComplete{&req, {}, nullptr, 0} : OnComplete{}), rma::StatusCode::kOk);
    }
    ASSERT_EQ(m.wait(req), rma::StatusCode::kOk);
    EXPECT_FALSE(req.failed());
    EXPECT_TRUE(ep.idle());
    // Reads with bounce copy-out, beyond the read/atomic limit.
    std::uint64_t got[64] = {};
    Request rd;
    for (int i = 0; i < 64; ++i) {
      ASSERT_EQ(ep.reserve(true), rma::StatusCode::kOk);
      ASSERT_EQ(post_bounce_read(ep, peer, 8 * static_cast<std::uint64_t>(i), OnComplete{&rd, {}, &got[i], 8}),
                rma::StatusCode::kOk);
    }
    ASSERT_EQ(m.wait(rd), rma::StatusCode::kOk);
    // Our own writes went to the peer; the peer's to us may still be racing,
    // so read back what we wrote there.
    for (int i = 0; i < 64; ++i) EXPECT_EQ(got[i], static_cast<std::uint64_t>(rank * 100000 + i));
  });
}

// Each endpoint keeps in flight at most the READs/atomics both devices
// allow: here rank 1's device answers 4 and rank 0's (self) 16, so both
// ends of the pair stop at 4; a fifth READ waits until one of the first four
// completed (the self provider completes only when progress polls).
TEST(ApiEndpoint, OutstandingReadsAreTheSmallerOfBothDevicesLimits) {
  std::atomic<int> written{0};
  run_pair(EndpointOptions{}, [&written](EndpointManager& m, int rank, Exposed peer, std::vector<std::uint64_t>& mine) {
    mine[0] = 40 + static_cast<std::uint64_t>(rank);
    written.fetch_add(1);
    while (written.load() < 2) std::this_thread::yield();
    EXPECT_EQ(m.endpoint(1 - rank).max_rd_atomic(), 4u);
    EXPECT_EQ(m.endpoint(rank).max_rd_atomic(), rank == 0 ? 16u : 4u);  // loopback: the own device twice
    auto& ep = m.endpoint(1 - rank);
    std::uint64_t got[5] = {};
    Request reads[5];
    for (int i = 0; i < 5; ++i) {
      ASSERT_EQ(ep.reserve(true), rma::StatusCode::kOk);
      if (i == 4) {
        int done = 0;
        for (int k = 0; k < 4; ++k) done += reads[k].done() ? 1 : 0;
        EXPECT_GE(done, 1) << "a fifth READ was allowed with four in flight";
      }
      ASSERT_EQ(post_bounce_read(ep, peer, 0, OnComplete{&reads[i], {}, &got[i], 8}), rma::StatusCode::kOk);
    }
    ASSERT_EQ(ep.flush(), rma::StatusCode::kOk);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(got[i], 40u + static_cast<std::uint64_t>(1 - rank)) << i;
  }, {0, 4});
}

TEST(ApiEndpoint, FailedWorkRequestFailsTheRequestAndBreaksTheEndpoint) {
  run_pair(EndpointOptions{}, [](EndpointManager& m, int rank, Exposed peer, std::vector<std::uint64_t>&) {
    if (rank != 0) return;
    auto& ep = m.endpoint(1);
    Request req;
    std::uint64_t v = 1;
    rma::Sge s{reinterpret_cast<std::uint64_t>(&v), 8, 0};
    rma::WorkRequest wr;
    wr.opcode = rma::Opcode::kRdmaWrite;
    wr.flags = rma::kWrInline;
    wr.sgl = {&s, 1};
    wr.remote_addr = peer.addr;
    wr.rkey = peer.rkey + 12345;  // no such key
    ASSERT_EQ(ep.post(wr, OnComplete{&req, {}, nullptr, 0}), rma::StatusCode::kOk);
    ASSERT_EQ(m.wait(req), rma::StatusCode::kOk);
    EXPECT_TRUE(req.failed());
    EXPECT_EQ(req.error, rma::WcStatus::kRemAccessErr);
    EXPECT_EQ(req.error_peer, 1);
    EXPECT_TRUE(ep.broken());
    EXPECT_EQ(ep.post(wr, OnComplete{}), rma::StatusCode::kFailedPrecondition);
    EXPECT_NE(rma::endpoint::describe_error(ep.error(), ep.vendor_err()).find("REM_ACCESS_ERR"), std::string::npos);
  });
}

// flush_local (MPI's local completion): a write whose payload was copied at
// post time (inline, or from the bounce area) leaves no local buffer in use,
// so it is locally complete before its completion is even polled; a write
// from the user's registered memory, a READ and an atomic are not until
// they complete. The self provider queues every completion until progress()
// polls it, so "before any progress" is observable here.
TEST(ApiEndpoint, FlushLocalWaitsOnlyForWhatStillUsesLocalMemory) {
  run_pair(EndpointOptions{}, [](EndpointManager& m, int rank, Exposed peer, std::vector<std::uint64_t>& mine) {
    if (rank != 0) return;
    auto& ep = m.endpoint(1);
    auto post_write = [&](rma::Sge s, std::uint32_t flags, bool signal) {
      rma::WorkRequest wr;
      wr.opcode = rma::Opcode::kRdmaWrite;
      wr.flags = flags;
      wr.sgl = {&s, 1};
      wr.remote_addr = peer.addr;
      wr.rkey = peer.rkey;
      ASSERT_EQ(ep.post(wr, OnComplete{}, signal), rma::StatusCode::kOk);
    };
    std::uint64_t v = 7;

    // Inline: copied at post.
    post_write(rma::Sge{reinterpret_cast<std::uint64_t>(&v), 8, 0}, rma::kWrInline, true);
    EXPECT_FALSE(ep.idle());
    EXPECT_TRUE(ep.locally_idle());
    ASSERT_EQ(ep.flush_local(), rma::StatusCode::kOk);
    EXPECT_FALSE(ep.idle()) << "flush_local polled for a completion it does not need";

    // From the bounce area: the poster copied it there.
    ASSERT_EQ(ep.reserve(false), rma::StatusCode::kOk);
    const rma::Sge b = ep.bounce(8);
    std::memcpy(reinterpret_cast<void*>(b.addr), &v, 8);
    post_write(b, 0, true);
    EXPECT_TRUE(ep.locally_idle());
    ASSERT_EQ(ep.flush(), rma::StatusCode::kOk);
    EXPECT_TRUE(ep.idle());

    // From registered user memory: a retransmission would read it again.
    auto reg = m.rcache(rma::endpoint::kNetworkRail).acquire(mine.data(), 4096, rma::kAllAccess);
    ASSERT_TRUE(reg.ok());
    post_write(rma::Sge{reinterpret_cast<std::uint64_t>(mine.data()), 4096, reg->lkey()}, 0, true);
    EXPECT_FALSE(ep.locally_idle());
    ASSERT_EQ(ep.flush_local(), rma::StatusCode::kOk);
    EXPECT_TRUE(ep.locally_idle());
    // An inline write after it does not make it complete.
    post_write(rma::Sge{reinterpret_cast<std::uint64_t>(mine.data()), 4096, reg->lkey()}, 0, false);
    post_write(rma::Sge{reinterpret_cast<std::uint64_t>(&v), 8, 0}, rma::kWrInline, true);
    EXPECT_FALSE(ep.locally_idle());
    ASSERT_EQ(ep.flush_local(), rma::StatusCode::kOk);
    EXPECT_TRUE(ep.locally_idle());

    // A READ: its result is local memory the NIC writes; flush_local returns
    // with the value in place (copied out of the bounce area).
    ASSERT_EQ(ep.flush(), rma::StatusCode::kOk);
    std::uint64_t got = 0;
    ASSERT_EQ(ep.reserve(true), rma::StatusCode::kOk);
    ASSERT_EQ(post_bounce_read(ep, peer, 0, OnComplete{nullptr, {}, &got, 8}), rma::StatusCode::kOk);
    EXPECT_FALSE(ep.locally_idle());
    ASSERT_EQ(ep.flush_local(), rma::StatusCode::kOk);
    EXPECT_EQ(got, 7u);
  });
}

}  // namespace
