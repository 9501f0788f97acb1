// Two processes over net_memif through the softroce provider: this test
// process (memif server) and rma_softroce_mp_peer (memif client, spawned with
// its own EAL) each run the mixed flow of mixed_flow.hpp against the other,
// 100,000 operations per direction (the read-backs that verify the writes
// included): RDMA WRITE and READ of 1 B .. 1 MiB (log-uniform: 97 %
// up to 64 KiB, 3 % above), FETCH_ADD and CMP_SWAP; every byte and every
// atomic result verified, every operation completed exactly once.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "mixed_flow.hpp"
#include "rma/sdk/registry.hpp"

extern char** environ;

namespace rma::softroce::mp {
namespace {

// ThreadSanitizer slows both processes about twentyfold (38 s for 30,000
// per direction): its preset, there to find races, runs 30,000 per
// direction. ASan runs the full count (about 15 s).
#if defined(__SANITIZE_THREAD__)
constexpr std::uint64_t kOpsPerDirection = 30000;
#else
constexpr std::uint64_t kOpsPerDirection = 100000;
#endif

// Both ports wait this long for the link: it bounds the other process's
// start-up (exec and DPDK's EAL under a sanitizer on a busy machine), not
// the transport under test.
const std::string kStartWait = ",wait=60000";

struct Child {
  pid_t pid = -1;
  ~Child() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      int st = 0;
      ::waitpid(pid, &st, 0);
    }
  }
};

// Spawns the peer with `fd` as its descriptor 3 and `env` replacing the
// RMA_SOFTROCE_* variables of ours.
pid_t spawn_peer(const std::vector<std::string>& args, int fd, const std::vector<std::string>& env) {
  std::vector<std::string> envs;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string(*e).rfind("RMA_SOFTROCE_", 0) != 0) envs.emplace_back(*e);
  }
  envs.insert(envs.end(), env.begin(), env.end());
  std::vector<char*> argv, envp;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : envs) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fd, 3);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

std::optional<int> wait_exit(pid_t pid, std::chrono::milliseconds limit) {
  const auto end = Clock::now() + limit;
  while (Clock::now() < end) {
    int st = 0;
    const pid_t r = ::waitpid(pid, &st, WNOHANG);
    if (r == pid) return st;
    if (r < 0) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return std::nullopt;
}

TEST(SoftroceMemifTwoProcesses, MixedOperationsBothDirectionsVerified) {
  const std::string sock = "rma-mp-" + std::to_string(::getpid());
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  // The peer's end must survive exec as fd 3 (dup2 clears CLOEXEC).
  Child child;
  child.pid = spawn_peer({RMA_MP_PEER_PATH, "--oob-fd", "3", "--seed", "2", "--ops",
                          std::to_string(kOpsPerDirection), "--timeout-ms", "240000"},
                         sv[1], {"RMA_SOFTROCE_PORT=memif:client:" + sock + ",ip=10.77.0.2" + kStartWait});
  ::close(sv[1]);
  ASSERT_GT(child.pid, 0);
  ::setenv("RMA_SOFTROCE_PORT", ("memif:server:" + sock + ",ip=10.77.0.1" + kStartWait).c_str(), 1);
  ::unsetenv("RMA_SOFTROCE_PCAP");
  RunResult r;
  {
    auto dev = ProviderRegistry::global().open("softroce");
    ASSERT_TRUE(dev.ok()) << dev.status().to_string();
    Side s;
    const std::string e = make_side(s, *dev);
    ASSERT_EQ(e, "");
    r = run_side(s, sv[0], 1, kOpsPerDirection, 240000);
  }  // device closed: memif FIN handshake with the peer
  ::close(sv[0]);
  const auto st = wait_exit(child.pid, std::chrono::seconds(30));
  ASSERT_TRUE(st.has_value()) << "peer did not exit";
  child.pid = -1;
  const auto& s = r.stats;
  std::printf("[ mp ] this side: %llu operations in %.2f s (writes %llu, reads %llu, read-backs %llu, fetch-add %llu, "
              "cmp-swap %llu; %.1f MB written, %.1f MB read)\n",
              static_cast<unsigned long long>(s.completed), r.seconds, static_cast<unsigned long long>(s.writes),
              static_cast<unsigned long long>(s.reads), static_cast<unsigned long long>(s.readbacks),
              static_cast<unsigned long long>(s.fetch_adds), static_cast<unsigned long long>(s.cmp_swaps),
              static_cast<double>(s.bytes_written) / 1e6, static_cast<double>(s.bytes_read) / 1e6);
  EXPECT_EQ(r.error, "");
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0)
      << "peer failed (status " << *st << "): " << r.peer_done.error;
  EXPECT_EQ(r.peer_done.ok, 1u) << r.peer_done.error;
  // Mixed operations per direction (read-backs and the final counter read
  // come on top).
  EXPECT_GE(s.writes + s.reads + s.fetch_adds + s.cmp_swaps + s.readbacks, kOpsPerDirection);
  EXPECT_GE(s.completed, kOpsPerDirection);
  EXPECT_GE(r.peer_done.completed, kOpsPerDirection);
  EXPECT_GT(s.writes, 0u);
  EXPECT_GT(s.reads, 0u);
  EXPECT_GT(s.fetch_adds, 0u);
  EXPECT_GT(s.cmp_swaps, 0u);
}


// The peer process is SIGKILLed in the middle of the mixed flow. This side
// must survive (memif: see MemifGate in dpdk/port), see its port go down,
// and complete every operation still outstanding exactly once: those the
// peer acknowledged before it died succeed, the oldest unacknowledged one
// fails with RETRY_EXC_ERR once the retry count is spent (within
// (retry_cnt + 1) ACK timeouts plus slack), the rest with WR_FLUSH_ERR.
// The peer may have acknowledged everything in flight before the signal
// landed; then one more WRITE, posted after the peer is gone, is the one
// that must exhaust its retries. Never a hang.
TEST(SoftroceMemifTwoProcesses, PeerKilledMidFlowGivesErrorCompletions) {
  const std::string sock = "rma-mpk-" + std::to_string(::getpid());
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  Child child;
  child.pid = spawn_peer({RMA_MP_PEER_PATH, "--oob-fd", "3", "--seed", "4", "--ops", "100000000", "--timeout-ms",
                          "60000"},
                         sv[1], {"RMA_SOFTROCE_PORT=memif:client:" + sock + ",ip=10.77.1.2" + kStartWait});
  ::close(sv[1]);
  ASSERT_GT(child.pid, 0);
  ::setenv("RMA_SOFTROCE_PORT", ("memif:server:" + sock + ",ip=10.77.1.1" + kStartWait).c_str(), 1);
  ::unsetenv("RMA_SOFTROCE_PCAP");
  auto dev = ProviderRegistry::global().open("softroce");
  ASSERT_TRUE(dev.ok()) << dev.status().to_string();
  Side s;
  ASSERT_EQ(make_side(s, *dev), "");
  Hello mine = make_hello(s), theirs;
  ASSERT_TRUE(send_all(sv[0], &mine, sizeof mine));
  ASSERT_EQ(recv_all(sv[0], &theirs, sizeof theirs, 20000), 1);
  ASSERT_EQ(connect_side(s, theirs), "");
  std::uint32_t go = kMagic, their_go = 0;
  ASSERT_TRUE(send_all(sv[0], &go, 4));
  ASSERT_EQ(recv_all(sv[0], &their_go, 4, 20000), 1);
  MixedFlow flow(s, theirs, 3, 100000000);
  flow.start();
  auto end = Clock::now() + std::chrono::seconds(30);
  while (flow.error().empty() && flow.stats().completed < 3000 && Clock::now() < end) flow.step();
  ASSERT_EQ(flow.error(), "");
  ASSERT_GE(flow.stats().completed, 3000u);
  ASSERT_EQ(::kill(child.pid, SIGKILL), 0);
  // Once the peer is reaped nothing new can arrive from it (frames it wrote
  // into the ring before dying still may).
  const auto st = wait_exit(child.pid, std::chrono::seconds(5));
  child.pid = -1;
  ASSERT_TRUE(st.has_value()) << "the killed peer did not exit";
  EXPECT_TRUE(WIFSIGNALED(*st));
  auto last_post = Clock::now();
  constexpr std::uint64_t kExtra = kSlots;  // wr_id of the WRITE posted after the kill
  std::vector<bool> outstanding(kSlots + 1);
  std::size_t left = 0;
  for (std::size_t i = 0; i < kSlots; ++i) left += (outstanding[i] = flow.slot_busy(i)) ? 1 : 0;
  ASSERT_GT(left, 0u);
  // ACK timeout 134 ms (make_side), retry_cnt 7: at most ~1.1 s of retries
  // after the last frame the peer answered; 15 s is the "never a hang" bound.
  std::size_t retry_exceeded = 0, flushed = 0, succeeded = 0;
  Completion wc[16];
  auto drain = [&] {
    const auto deadline = Clock::now() + std::chrono::seconds(15);
    while (left > 0 && Clock::now() < deadline) {
      const int n = s.cq->poll({wc, 16});
      ASSERT_GE(n, 0) << s.cq->overrun_reason();
      for (int i = 0; i < n; ++i) {
        ASSERT_LE(wc[i].wr_id, kExtra);
        ASSERT_TRUE(outstanding[wc[i].wr_id]) << "wr_id " << wc[i].wr_id << " completed twice or was never posted";
        outstanding[wc[i].wr_id] = false;
        --left;
        if (wc[i].status == WcStatus::kRetryExcErr) ++retry_exceeded;
        else if (wc[i].status == WcStatus::kWrFlushErr) ++flushed;
        else if (wc[i].status == WcStatus::kSuccess && wc[i].wr_id != kExtra) ++succeeded;  // acked before the kill
        else ADD_FAILURE() << "wr_id " << wc[i].wr_id << ": unexpected status " << wc_status_name(wc[i].status);
      }
    }
  };
  drain();
  if (HasFatalFailure()) return;
  const std::size_t in_flight = succeeded + flushed + retry_exceeded;
  bool extra_posted = false;
  if (left == 0 && retry_exceeded == 0 && flushed == 0) {
    // Everything in flight was acknowledged before the peer died.
    Sge sge{reinterpret_cast<std::uint64_t>(s.local), 64, s.local_mr->lkey()};
    WorkRequest w;
    w.wr_id = kExtra;
    w.flags = kWrSignaled;
    w.opcode = Opcode::kRdmaWrite;
    w.remote_addr = theirs.region;
    w.rkey = theirs.region_rkey;
    w.sgl = {&sge, 1};
    const PostResult pr = s.qp->post({&w, 1});
    ASSERT_TRUE(pr.ok()) << pr.reason;
    outstanding[kExtra] = true;
    left = 1;
    extra_posted = true;
    last_post = Clock::now();
    drain();
    if (HasFatalFailure()) return;
  }
  const double secs = std::chrono::duration<double>(Clock::now() - last_post).count();
  std::printf("[ mp kill ] %zu operations in flight at the kill: %zu succeeded, %zu flushed, %zu retry-exceeded%s; "
              "the last error %.2f s after the last post\n",
              in_flight, succeeded, flushed, retry_exceeded,
              extra_posted ? " (all acknowledged: one WRITE posted after the kill)" : "", secs);
  EXPECT_EQ(left, 0u) << "operations still outstanding " << secs << " s after the peer died";
  EXPECT_EQ(retry_exceeded, 1u);
  EXPECT_EQ(s.qp->state(), QpState::kError);
  EXPECT_LT(secs, 5.0);
  // Nothing else completes.
  EXPECT_EQ(s.cq->poll({wc, 16}), 0);
  ::close(sv[0]);
}

}  // namespace
}  // namespace rma::softroce::mp
