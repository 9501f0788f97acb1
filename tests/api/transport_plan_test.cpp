// The transport plan and the endpoint manager's rails: which device serves
// which peer, and that memory exposed on every rail is reached through the
// rail that joins two ranks. Ranks are threads of this process; their host
// identities are given, so "two hosts" run here (the shm provider serves
// same-host pairs, the self provider stands in for the network).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "api_test_util.hpp"
#include "rma/sdk/endpoint_manager.hpp"
#include "rma/sdk/node.hpp"
#include "rma/sdk/registry.hpp"

namespace {

using rma::endpoint::EndpointManager;
using rma::endpoint::kNetworkRail;
using rma::endpoint::kNodeRail;
using rma::endpoint::OnComplete;
using rma::endpoint::PlanRequest;
using rma::endpoint::RemoteKeys;
using rma::endpoint::Request;
using rma::endpoint::TransportPlan;

// Runs body on `n` thread-ranks whose host identity is hosts[rank].
void run_hosts(const std::vector<std::string>& hosts,
               const std::function<void(rma::Bootstrap&, const PlanRequest&)>& body) {
  auto group = api_test::make_group(static_cast<int>(hosts.size()));
  ASSERT_EQ(group.size(), hosts.size());
  std::vector<std::thread> ts;
  for (std::size_t r = 0; r < hosts.size(); ++r) {
    ts.emplace_back([&, r] {
      PlanRequest req;
      req.host_identity = hosts[r];
      req.network_provider = "self";
      body(*group[r], req);
    });
  }
  for (auto& t : ts) t.join();
}

TEST(TransportPlan, PeersOnThisHostUseSharedMemoryAndTheOthersTheNetwork) {
  run_hosts({"A", "A", "B", "B"}, [](rma::Bootstrap& bs, const PlanRequest& req) {
    auto plan = rma::endpoint::plan_transports(bs, req);
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    const int me = bs.rank();
    EXPECT_FALSE(plan->forced);
    EXPECT_EQ(plan->host_of, (std::vector<std::int32_t>{0, 0, 1, 1}));
    for (int p = 0; p < 4; ++p) {
      const bool same = (p / 2) == (me / 2);
      EXPECT_EQ(plan->rail_of[static_cast<std::size_t>(p)], same ? kNodeRail : kNetworkRail) << "peer " << p;
    }
    ASSERT_TRUE(plan->devices[kNodeRail]);
    ASSERT_TRUE(plan->devices[kNetworkRail]);
    EXPECT_EQ(plan->devices[kNodeRail]->info().provider, "shm");
    EXPECT_EQ(plan->devices[kNetworkRail]->info().provider, "self");
    EXPECT_NE(plan->summary.find("shm (shm0) for 2 peers on this host"), std::string::npos) << plan->summary;
    EXPECT_NE(plan->summary.find("self (self0) for 2 peers on 1 other host"), std::string::npos) << plan->summary;
  });
}

TEST(TransportPlan, OneHostNeedsNoNetworkProvider) {
  run_hosts({"A", "A", "A"}, [](rma::Bootstrap& bs, const PlanRequest& base) {
    PlanRequest req = base;
    req.network_provider = "no-such-provider";  // never opened: nobody needs it
    auto plan = rma::endpoint::plan_transports(bs, req);
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    EXPECT_FALSE(plan->devices[kNetworkRail]);
    for (auto r : plan->rail_of) EXPECT_EQ(r, kNodeRail);
  });
}

TEST(TransportPlan, MissingNetworkProviderNamesTheRanksThatNeedIt) {
  run_hosts({"A", "B"}, [](rma::Bootstrap& bs, const PlanRequest& base) {
    PlanRequest req = base;
    req.network_provider = "no-such-provider";
    auto plan = rma::endpoint::plan_transports(bs, req);
    ASSERT_FALSE(plan.ok());
    const std::string other = std::to_string(1 - bs.rank());
    EXPECT_NE(plan.status().message().find("rank " + other + " need a network provider"), std::string::npos)
        << plan.status().message();
    EXPECT_NE(plan.status().message().find("no-such-provider"), std::string::npos) << plan.status().message();
  });
}

TEST(TransportPlan, AForcedProviderServesEveryPeer) {
  run_hosts({"A", "B"}, [](rma::Bootstrap& bs, const PlanRequest& base) {
    PlanRequest req = base;
    req.provider = "self";
    auto plan = rma::endpoint::plan_transports(bs, req);
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    EXPECT_TRUE(plan->forced);
    EXPECT_EQ(plan->rail_of, (std::vector<std::uint8_t>{kNetworkRail, kNetworkRail}));
    EXPECT_EQ(plan->host_of, (std::vector<std::int32_t>{0, 1}));
    EXPECT_NE(plan->summary.find("(forced)"), std::string::npos) << plan->summary;
  });
}

TEST(TransportPlan, AHostOnlyProviderForcedAcrossHostsIsRefused) {
  run_hosts({"A", "A", "B"}, [](rma::Bootstrap& bs, const PlanRequest& base) {
    PlanRequest req = base;
    req.provider = "shm";
    auto plan = rma::endpoint::plan_transports(bs, req);
    ASSERT_FALSE(plan.ok());
    EXPECT_EQ(plan.status().code(), rma::StatusCode::kFailedPrecondition);
    EXPECT_NE(plan.status().message().find("provider shm reaches only the processes of one host"), std::string::npos)
        << plan.status().message();
    EXPECT_NE(plan.status().message().find("unset RMA_PROVIDER"), std::string::npos) << plan.status().message();
  });
}

// Every rank exposes one region on every rail; each writes its rank into
// its slot of every peer's region and fetch-adds a shared counter word,
// through whichever rail joins them, then reads everything back.
TEST(TransportPlan, ExposedMemoryIsReachedThroughTheRailOfEachPeer) {
  constexpr int kRanks = 4;
  run_hosts({"A", "A", "B", "B"}, [](rma::Bootstrap& bs, const PlanRequest& req) {
    auto plan = rma::endpoint::plan_transports(bs, req);
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    auto m = EndpointManager::create(bs, *plan);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EndpointManager& mgr = **m;
    const int me = bs.rank();
    EXPECT_EQ(mgr.same_host(me ^ 1), true);
    EXPECT_EQ(mgr.same_host((me + 2) % kRanks), false);
    EXPECT_EQ(mgr.transport_of(me ^ 1), "shm (shm0)");
    EXPECT_EQ(mgr.transport_of((me + 2) % kRanks), "self (self0)");

    std::vector<std::uint64_t> mem(1 + kRanks, 0);
    auto exposed = mgr.expose(mem.data(), mem.size() * 8, rma::kAllAccess);
    ASSERT_TRUE(exposed.ok()) << exposed.status().to_string();
    ASSERT_NE(exposed->rkeys().key[kNodeRail], 0u);
    ASSERT_NE(exposed->rkeys().key[kNetworkRail], 0u);
    struct Desc {
      std::uint64_t addr;
      RemoteKeys keys;
    } mine{reinterpret_cast<std::uint64_t>(mem.data()), exposed->rkeys()};
    auto all = bs.allgather({reinterpret_cast<const std::uint8_t*>(&mine), sizeof mine});
    ASSERT_TRUE(all.ok());
    Request done;
    std::uint64_t olds[kRanks] = {};
    for (int p = 0; p < kRanks; ++p) {
      Desc d;
      std::memcpy(&d, (*all)[static_cast<std::size_t>(p)].data(), sizeof d);
      auto& ep = mgr.endpoint(p);
      const std::uint64_t v = 100 + static_cast<std::uint64_t>(me);
      rma::Sge s{reinterpret_cast<std::uint64_t>(&v), 8, 0};
      rma::WorkRequest wr;
      wr.opcode = rma::Opcode::kRdmaWrite;
      wr.flags = rma::kWrInline;
      wr.sgl = {&s, 1};
      wr.remote_addr = d.addr + 8 * (1 + static_cast<std::uint64_t>(me));
      wr.rkey = ep.rkey(d.keys);
      ASSERT_EQ(ep.post(wr, OnComplete{&done, {}, nullptr, 0}, true), rma::StatusCode::kOk);
      ASSERT_EQ(ep.post_atomic(rma::Opcode::kAtomicFetchAdd, d.addr, ep.rkey(d.keys), 1, 0,
                               OnComplete{&done, {}, &olds[p], 8}),
                rma::StatusCode::kOk);
    }
    ASSERT_EQ(mgr.wait(done), rma::StatusCode::kOk);
    EXPECT_FALSE(done.failed());
    ASSERT_TRUE(bs.barrier().ok());
    EXPECT_EQ(__atomic_load_n(&mem[0], __ATOMIC_ACQUIRE), static_cast<std::uint64_t>(kRanks));
    for (int p = 0; p < kRanks; ++p) EXPECT_EQ(mem[1 + static_cast<std::size_t>(p)], 100u + static_cast<unsigned>(p));
    for (int p = 0; p < kRanks; ++p) EXPECT_LT(olds[p], static_cast<std::uint64_t>(kRanks));
    ASSERT_TRUE(bs.barrier().ok());
  });
}

}  // namespace

namespace {

// Sets (or unsets, with nullptr) an environment variable for one test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Rank 1 cannot attach to rank 0's memory (as with another user or Yama);
// every other probe is the real one.
std::function<rma::Status(int, std::uint32_t, std::uint64_t, std::uint64_t)> rank1_refused_by_rank0(int me) {
  return [me](int rank, std::uint32_t pid, std::uint64_t addr, std::uint64_t expect) {
    if (me == 1 && rank == 0) return rma::Status(rma::StatusCode::kPermissionDenied, "test: attach refused");
    return rma::node::probe_cross_memory_attach(pid, addr, expect);
  };
}

TEST(TransportPlan, ARefusedAttachStopsEveryRankNamingThePairAndTheKnob) {
  ScopedEnv fallback("RMA_SHM_FALLBACK", nullptr);
  run_hosts({"A", "A", "A"}, [](rma::Bootstrap& bs, const PlanRequest& base) {
    PlanRequest req = base;
    req.probe = rank1_refused_by_rank0(bs.rank());
    auto plan = rma::endpoint::plan_transports(bs, req);
    ASSERT_FALSE(plan.ok()) << "rank " << bs.rank();
    EXPECT_EQ(plan.status().code(), rma::StatusCode::kPermissionDenied);
    const std::string m = plan.status().message();
    EXPECT_NE(m.find("rank 1 cannot reach rank 0's memory by cross-memory attach"), std::string::npos) << m;
    EXPECT_NE(m.find("RMA_SHM_FALLBACK=network"), std::string::npos) << m;
    EXPECT_NE(m.find("kernel.yama.ptrace_scope"), std::string::npos) << m;
  });
}

TEST(TransportPlan, FallbackUsesTheNetworkOnlyBetweenTheRefusedPair) {
  ScopedEnv fallback("RMA_SHM_FALLBACK", "network");
  run_hosts({"A", "A", "A"}, [](rma::Bootstrap& bs, const PlanRequest& base) {
    PlanRequest req = base;
    req.probe = rank1_refused_by_rank0(bs.rank());
    auto plan = rma::endpoint::plan_transports(bs, req);
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    const int me = bs.rank();
    for (int p = 0; p < 3; ++p) {
      const bool refused = (me == 0 && p == 1) || (me == 1 && p == 0);
      EXPECT_EQ(plan->rail_of[static_cast<std::size_t>(p)], refused ? kNetworkRail : kNodeRail)
          << "rank " << me << " peer " << p;
    }
    auto m = EndpointManager::create(bs, *plan);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
  });
}

TEST(TransportPlan, CrossMemoryAttachProbeReadsTheWordOrNamesTheCause) {
  static const std::uint64_t word = 0x1122334455667788ull;
  const auto pid = static_cast<std::uint32_t>(::getpid());
  EXPECT_TRUE(rma::node::probe_cross_memory_attach(pid, reinterpret_cast<std::uint64_t>(&word), word).ok());
  const rma::Status other = rma::node::probe_cross_memory_attach(pid, reinterpret_cast<std::uint64_t>(&word), 1);
  EXPECT_EQ(other.code(), rma::StatusCode::kFailedPrecondition) << other.to_string();
  const rma::Status unmapped = rma::node::probe_cross_memory_attach(pid, 8, word);
  EXPECT_EQ(unmapped.code(), rma::StatusCode::kIoError) << unmapped.to_string();
  // A process that exited.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  const rma::Status gone = rma::node::probe_cross_memory_attach(static_cast<std::uint32_t>(child), 4096, word);
  EXPECT_EQ(gone.code(), rma::StatusCode::kNotFound) << gone.to_string();
}

// Another user without CAP_SYS_PTRACE: the child drops to nobody and probes
// this (root) process, which the kernel refuses.
TEST(TransportPlan, CrossMemoryAttachProbeOfAnotherUsersProcessIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to become another user";
  static const std::uint64_t word = 0x1122334455667788ull;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    char code = 'x';
    if (::setgid(65534) == 0 && ::setuid(65534) == 0) {
      const rma::Status s = rma::node::probe_cross_memory_attach(static_cast<std::uint32_t>(parent),
                                                                 reinterpret_cast<std::uint64_t>(&word), word);
      // The cause named: another user, or Yama where the kernel has it.
      const bool named = s.message().find("another user") != std::string::npos ||
                         s.message().find("kernel.yama.ptrace_scope") != std::string::npos;
      code = s.code() == rma::StatusCode::kPermissionDenied && named ? 'p' : (s.ok() ? 'o' : 'e');
    }
    (void)!::write(fds[1], &code, 1);
    ::_exit(0);
  }
  ::close(fds[1]);
  char code = 0;
  ASSERT_EQ(::read(fds[0], &code, 1), 1);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(code, 'p') << "o: attach allowed, e: another error, x: could not become nobody";
}

}  // namespace
