// The shm provider between real processes: this test process and
// rma_shm_peer (fork + exec), which exchange endpoint addresses and
// commands over a socketpair. Covers what one process cannot show: data
// and atomics crossing address spaces, one word hammered by two processes,
// a peer killed with SIGKILL in the middle of traffic, stale-segment
// cleanup, and the statuses of bad input.
#include <dirent.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/registry.hpp"

namespace rma {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::seconds kDeadline{30};

// Device segments of `pid` in /dev/shm.
std::vector<std::string> segments_of(pid_t pid) {
  const std::string prefix = "rma." + std::to_string(::getuid()) + "." + std::to_string(pid) + ".dev.";
  std::vector<std::string> out;
  if (DIR* d = ::opendir("/dev/shm")) {
    while (dirent* e = ::readdir(d)) {
      if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) out.push_back(e->d_name);
    }
    ::closedir(d);
  }
  return out;
}

// The peer process and its command socket.
class Peer {
 public:
  Peer() {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return;
    // Everything exec needs is built before fork: the child of a
    // multithreaded process may only make async-signal-safe calls.
    const int child_fd = 100;
    const std::string fd_arg = std::to_string(child_fd);
    const char* path = RMA_SHM_PEER_PATH;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(sv[1], child_fd);  // dup2 clears FD_CLOEXEC on the copy
      char* const args[] = {const_cast<char*>(path), const_cast<char*>(fd_arg.c_str()), nullptr};
      ::execv(path, args);
      ::_exit(127);
    }
    ::close(sv[1]);
    fd_ = sv[0];
    std::string hello = line();
    std::istringstream in(hello);
    std::string word, hex;
    in >> word >> hex >> buf >> rkey >> ro >> ro_rkey >> sbuf >> srkey;
    if (word == "hello") {
      auto a = EndpointAddress::from_hex(hex);
      if (a.ok()) address = *a;
    }
  }
  ~Peer() {
    if (pid_ > 0 && !reaped_) {
      if (fd_ >= 0) (void)cmd("exit", std::chrono::seconds(5));
      reap(std::chrono::seconds(10));
    }
    if (fd_ >= 0) ::close(fd_);
  }
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;

  bool ok() const { return pid_ > 0 && address.size > 0; }
  pid_t pid() const { return pid_; }

  // Sends a command, returns its answer ("" on timeout or EOF).
  std::string cmd(const std::string& c, std::chrono::seconds limit = kDeadline) {
    send(c);
    return line(limit);
  }
  void send(const std::string& c) {
    const std::string l = c + "\n";
    if (::write(fd_, l.data(), l.size()) != static_cast<ssize_t>(l.size())) ADD_FAILURE() << "peer socket: " << c;
  }
  std::string line(std::chrono::seconds limit = kDeadline) {
    std::string out;
    const auto deadline = Clock::now() + limit;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return "";
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      char c;
      if (::read(fd_, &c, 1) != 1) return out;
      if (c == '\n') return out;
      out += c;
    }
  }
  void signal(int sig) { ::kill(pid_, sig); }
  void kill9() {
    ::kill(pid_, SIGKILL);
    reap(std::chrono::seconds(10));
  }
  void reap(std::chrono::seconds limit) {
    const auto deadline = Clock::now() + limit;
    int st = 0;
    while (::waitpid(pid_, &st, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &st, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    reaped_ = true;
    status_ = st;
  }
  int exit_status() const { return status_; }

  EndpointAddress address;
  std::uint64_t buf = 0, ro = 0;
  std::uint32_t rkey = 0, ro_rkey = 0;
  std::uint64_t sbuf = 0;  // 1 MiB in the peer's node::SharedMemory segment: the mapped path
  std::uint32_t srkey = 0;

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  bool reaped_ = false;
  int status_ = 0;
};

class ShmCrossProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = ProviderRegistry::global().open("shm");
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    dev = *d;
    auto p = dev->alloc_pd();
    ASSERT_TRUE(p.ok());
    pd = *p;
    auto c = dev->create_cq(4096);
    ASSERT_TRUE(c.ok());
    cq = *c;
    mem.reset(new std::uint8_t[kSize + 64]);
    buf = mem.get() + (64 - reinterpret_cast<std::uintptr_t>(mem.get()) % 64) % 64;
    std::memset(buf, 0, kSize);
    auto m = pd->register_memory(buf, kSize, kAllAccess);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    mr = std::move(m).value();
  }

  QpConfig config() const {
    QpConfig q;
    q.send_cq = cq;
    q.recv_cq = cq;
    q.max_send_wr = 256;
    q.max_recv_wr = 256;
    q.max_send_sge = 4;
    q.max_recv_sge = 4;
    q.max_inline_data = 64;
    return q;
  }
  // A QP of ours connected both ways to the peer's.
  std::unique_ptr<QueuePair> connect(Peer& peer) {
    auto q = pd->create_qp(config());
    EXPECT_TRUE(q.ok()) << q.status().to_string();
    if (!q.ok()) return nullptr;
    Status s = (*q)->connect(peer.address);
    EXPECT_TRUE(s.ok()) << s.to_string();
    auto mine = (*q)->local_address();
    EXPECT_EQ(peer.cmd("connect " + mine->to_hex()), "ok");
    return std::move(q).value();
  }

  Sge sge(std::size_t off, std::uint32_t len) const {
    return Sge{reinterpret_cast<std::uint64_t>(buf + off), len, mr->lkey()};
  }
  std::uint64_t u64(std::size_t off) const {
    std::uint64_t v;
    std::memcpy(&v, buf + off, 8);
    return v;
  }
  PostResult post(QueuePair& q, Opcode op, std::span<const Sge> sgl, std::uint64_t raddr, std::uint32_t rkey,
                  std::uint64_t id, std::uint64_t add = 0, std::uint64_t swap = 0, std::uint32_t imm = 0) {
    WorkRequest w;
    w.wr_id = id;
    w.opcode = op;
    w.sgl = sgl;
    w.remote_addr = raddr;
    w.rkey = rkey;
    w.compare_add = add;
    w.swap = swap;
    w.imm_data = imm;
    return q.post({&w, 1});
  }
  std::vector<Completion> wait(std::size_t n, std::chrono::seconds limit = kDeadline) {
    std::vector<Completion> got;
    const auto deadline = Clock::now() + limit;
    Completion c[16];
    while (got.size() < n && Clock::now() < deadline) {
      const int k = cq->poll({c, std::min<std::size_t>(16, n - got.size())});
      if (k < 0) {
        ADD_FAILURE() << "CQ overrun: " << cq->overrun_reason();
        break;
      }
      got.insert(got.end(), c, c + k);
    }
    return got;
  }
  Completion wait_one() {
    auto v = wait(1);
    if (v.empty()) {
      ADD_FAILURE() << "no completion within " << kDeadline.count() << " s";
      Completion c;
      c.status = WcStatus::kGeneralErr;
      return c;
    }
    return v[0];
  }
  static std::uint64_t fnv(const std::uint8_t* p, std::size_t n) {
    std::uint64_t h = 1469598103934665603ull;
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
    return h;
  }

  static constexpr std::size_t kSize = 1 << 20;
  std::shared_ptr<Device> dev;
  std::shared_ptr<ProtectionDomain> pd;
  std::shared_ptr<CompletionQueue> cq;
  std::unique_ptr<std::uint8_t[]> mem;
  std::uint8_t* buf = nullptr;
  std::unique_ptr<MemoryRegion> mr;
};

// ------------------------------------------------------------------ data

TEST_F(ShmCrossProcess, WriteAndReadCrossAddressSpaces) {
  Peer peer;
  ASSERT_TRUE(peer.ok());
  auto qp = connect(peer);
  ASSERT_TRUE(qp);
  for (std::size_t i = 0; i < 100000; ++i) buf[i] = static_cast<std::uint8_t>(i * 7 + 3);
  // Several sizes, the last one spanning pages, into the peer's buffer.
  std::size_t off = 0;
  for (std::uint32_t len : {1u, 8u, 4095u, 4096u, 65537u}) {
    Sge s = sge(off, len);
    ASSERT_TRUE(post(*qp, Opcode::kRdmaWrite, {&s, 1}, peer.buf + off, peer.rkey, len).ok());
    Completion c = wait_one();
    EXPECT_EQ(c.status, WcStatus::kSuccess) << wc_status_name(c.status) << " vendor " << c.vendor_err;
    // Visible at the target as soon as the WRITE completed.
    EXPECT_EQ(peer.cmd("sum " + std::to_string(off) + " " + std::to_string(len)),
              "ok " + std::to_string(fnv(buf + off, len)))
        << len;
    off += len + 13;
  }
  // READ back what the peer has now.
  ASSERT_EQ(peer.cmd("fill 200000 5000 171"), "ok");
  Sge r = sge(300000, 5000);
  ASSERT_TRUE(post(*qp, Opcode::kRdmaRead, {&r, 1}, peer.buf + 200000, peer.rkey, 9).ok());
  Completion c = wait_one();
  EXPECT_EQ(c.status, WcStatus::kSuccess) << wc_status_name(c.status);
  EXPECT_EQ(c.byte_len, 5000u);
  for (std::size_t i = 0; i < 5000; ++i) ASSERT_EQ(buf[300000 + i], 171) << i;
  // And the peer's requests reach us the same way.
  EXPECT_EQ(peer.cmd("write " + std::to_string(reinterpret_cast<std::uint64_t>(buf + 500000)) + " " +
                     std::to_string(mr->rkey()) + " 4096"),
            "ok SUCCESS 0");
}

TEST_F(ShmCrossProcess, AtomicsRunOnTheTargetsWord) {
  Peer peer;
  ASSERT_TRUE(peer.ok());
  auto qp = connect(peer);
  ASSERT_TRUE(qp);
  Sge res = sge(0, 8);
  ASSERT_TRUE(post(*qp, Opcode::kAtomicFetchAdd, {&res, 1}, peer.buf + 64, peer.rkey, 1, 40).ok());
  EXPECT_EQ(wait_one().status, WcStatus::kSuccess);
  EXPECT_EQ(u64(0), 0u);
  ASSERT_TRUE(post(*qp, Opcode::kAtomicFetchAdd, {&res, 1}, peer.buf + 64, peer.rkey, 2, 2).ok());
  EXPECT_EQ(wait_one().status, WcStatus::kSuccess);
  EXPECT_EQ(u64(0), 40u);
  EXPECT_EQ(peer.cmd("word 64"), "ok 42");
  ASSERT_TRUE(post(*qp, Opcode::kAtomicCmpSwap, {&res, 1}, peer.buf + 64, peer.rkey, 3, 41, 7).ok());
  EXPECT_EQ(wait_one().status, WcStatus::kSuccess);
  EXPECT_EQ(u64(0), 42u);
  EXPECT_EQ(peer.cmd("word 64"), "ok 42") << "swapped although the compare did not match";
  ASSERT_TRUE(post(*qp, Opcode::kAtomicCmpSwap, {&res, 1}, peer.buf + 64, peer.rkey, 4, 42, 7).ok());
  EXPECT_EQ(wait_one().status, WcStatus::kSuccess);
  EXPECT_EQ(peer.cmd("word 64"), "ok 7");
}

TEST_F(ShmCrossProcess, SendsFillThePeersReceives) {
  Peer peer;
  ASSERT_TRUE(peer.ok());
  auto qp = connect(peer);
  ASSERT_TRUE(qp);
  ASSERT_EQ(peer.cmd("recv 3 8192"), "ok");
  for (std::size_t i = 0; i < 20000; ++i) buf[i] = static_cast<std::uint8_t>(i * 13 + 1);
  Sge a = sge(0, 100), b[2] = {sge(1000, 3000), sge(9000, 2000)}, inl = sge(50, 40);
  ASSERT_TRUE(post(*qp, Opcode::kSend, {&a, 1}, 0, 0, 1).ok());
  ASSERT_TRUE(post(*qp, Opcode::kSendWithImm, b, 0, 0, 2, 0, 0, 0xC0FFEE).ok());
  ASSERT_TRUE(post(*qp, Opcode::kRdmaWriteWithImm, {&inl, 1}, peer.buf + 100000, peer.rkey, 3, 0, 0, 77).ok());
  auto sc = wait(3);
  ASSERT_EQ(sc.size(), 3u);
  for (const Completion& c : sc) EXPECT_EQ(c.status, WcStatus::kSuccess) << wc_status_name(c.status);
  EXPECT_EQ(peer.cmd("waitrecv 3"), "ok SUCCESS,100,0 SUCCESS,5000,12648430 SUCCESS,40,77");
  EXPECT_EQ(peer.cmd("sum 0 100"), "ok " + std::to_string(fnv(buf, 100)));
  std::vector<std::uint8_t> two(buf + 1000, buf + 4000);
  two.insert(two.end(), buf + 9000, buf + 11000);
  EXPECT_EQ(peer.cmd("sum 8192 5000"), "ok " + std::to_string(fnv(two.data(), two.size())));
  EXPECT_EQ(peer.cmd("sum 100000 40"), "ok " + std::to_string(fnv(buf + 50, 40)));
}

// Both processes add to one word at once: the target's CPU atomics must
// not lose an update, whoever issues them (the peer's RDMA fetch-adds,
// ours through a loopback QP pair, and plain CPU atomics of this process).
TEST_F(ShmCrossProcess, ConcurrentFetchAddsFromBothProcessesSumExactly) {
  Peer peer;
  ASSERT_TRUE(peer.ok());
  auto qp = connect(peer);
  ASSERT_TRUE(qp);
  constexpr std::uint64_t kN = 1000;
  const std::size_t word = 4096;
  auto* w = reinterpret_cast<std::uint64_t*>(buf + word);
  // Loopback pair in this process, on the same device.
  auto l1 = pd->create_qp(config());
  auto l2 = pd->create_qp(config());
  ASSERT_TRUE(l1.ok() && l2.ok());
  ASSERT_TRUE((*l1)->connect(*(*l2)->local_address()).ok());
  ASSERT_TRUE((*l2)->connect(*(*l1)->local_address()).ok());

  peer.send("fadd " + std::to_string(kN) + " " + std::to_string(reinterpret_cast<std::uint64_t>(w)) + " " +
            std::to_string(mr->rkey()) + " 1");
  std::thread cpu([&] {
    for (std::uint64_t i = 0; i < kN; ++i) __atomic_fetch_add(w, 1000000, __ATOMIC_SEQ_CST);
  });
  std::set<std::uint64_t> seen;
  for (std::uint64_t i = 0; i < kN; ++i) {
    Sge res = sge(8192 + (i % 512) * 8, 8);
    ASSERT_TRUE(post(**l1, Opcode::kAtomicFetchAdd, {&res, 1}, reinterpret_cast<std::uint64_t>(w), mr->rkey(), i,
                     1000)
                    .ok());
    Completion c = wait_one();
    ASSERT_EQ(c.status, WcStatus::kSuccess) << wc_status_name(c.status) << " vendor " << c.vendor_err;
    seen.insert(u64(8192 + (i % 512) * 8));
  }
  cpu.join();
  EXPECT_EQ(peer.line(), "ok");
  EXPECT_EQ(seen.size(), kN) << "two fetch-adds returned the same value";
  EXPECT_EQ(__atomic_load_n(w, __ATOMIC_SEQ_CST), kN * 1 + kN * 1000 + kN * 1000000);
}

// connect() is one call per side, in any order: requests to a peer that has
// not connected yet wait (as retransmissions would), then run.
TEST_F(ShmCrossProcess, RequestsWaitForAPeerThatConnectsLater) {
  Peer peer;
  ASSERT_TRUE(peer.ok());
  auto q = pd->create_qp(config());
  ASSERT_TRUE(q.ok());
  QueuePair& qp = **q;
  ASSERT_TRUE(qp.connect(peer.address).ok());
  buf[0] = 0x5A;
  Sge w = sge(0, 1), r = sge(8, 8);
  ASSERT_TRUE(post(qp, Opcode::kRdmaWrite, {&w, 1}, peer.buf + 100, peer.rkey, 1).ok());
  ASSERT_TRUE(post(qp, Opcode::kAtomicFetchAdd, {&r, 1}, peer.buf + 64, peer.rkey, 2, 5).ok());
  Completion c[2];
  for (auto until = Clock::now() + std::chrono::milliseconds(30); Clock::now() < until;) {
    ASSERT_EQ(cq->poll(c), 0) << "completed before the peer connected";
  }
  EXPECT_EQ(peer.cmd("connect " + qp.local_address()->to_hex()), "ok");
  auto wcs = wait(2);
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].status, WcStatus::kSuccess) << wc_status_name(wcs[0].status);
  EXPECT_EQ(wcs[1].status, WcStatus::kSuccess) << wc_status_name(wcs[1].status);
  EXPECT_EQ(peer.cmd("word 64"), "ok 5");
  EXPECT_EQ(peer.cmd("sum 100 1"), "ok " + std::to_string(fnv(buf, 1)));
}

TEST_F(ShmCrossProcess, APeerThatNeverConnectsRunsOutTheRetries) {
  Peer peer;
  ASSERT_TRUE(peer.ok());
  QpConfig cfg = config();
  cfg.timeout = 10;  // 4.2 ms, 8 tries: about 34 ms
  cfg.retry_cnt = 7;
  auto q = pd->create_qp(cfg);
  ASSERT_TRUE(q.ok());
  ASSERT_TRUE((*q)->connect(peer.address).ok());
  Sge w = sge(0, 8);
  ASSERT_TRUE(post(**q, Opcode::kRdmaWrite, {&w, 1}, peer.buf, peer.rkey, 1).ok());
  ASSERT_TRUE(post(**q, Opcode::kRdmaWrite, {&w, 1}, peer.buf, peer.rkey, 2).ok());
  auto wcs = wait(2);
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].status, WcStatus::kRetryExcErr) << wc_status_name(wcs[0].status);
  EXPECT_EQ(wcs[0].vendor_err, 19u) << "vendor_err: the peer QP is not ready";
  EXPECT_EQ(wcs[1].status, WcStatus::kWrFlushErr) << wc_status_name(wcs[1].status);
  EXPECT_EQ((*q)->state(), QpState::kError);
}

// ------------------------------------------------------------------ mapped path

// Memory the peer allocated with node::SharedMemory is reached through a
// mapping: WRITE, READ and atomics complete while the peer's process is
// stopped (SIGSTOP: no progress thread, no CQ poll, nothing of it runs).
TEST_F(ShmCrossProcess, MappedRegionsNeedNoTargetProgress) {
  Peer peer;
  ASSERT_TRUE(peer.ok());
  auto qp = connect(peer);
  ASSERT_TRUE(qp);
  for (std::size_t i = 0; i < 70000; ++i) buf[i] = static_cast<std::uint8_t>(i * 11 + 5);
  peer.signal(SIGSTOP);
  std::size_t off = 0;
  std::uint64_t id = 0;
  for (std::uint32_t len : {1u, 8u, 4096u, 65537u}) {
    Sge s = sge(off, len);
    ASSERT_TRUE(post(*qp, Opcode::kRdmaWrite, {&s, 1}, peer.sbuf + off, peer.srkey, ++id).ok());
    Completion c = wait_one();
    EXPECT_EQ(c.status, WcStatus::kSuccess) << wc_status_name(c.status) << " vendor " << c.vendor_err;
    EXPECT_EQ(c.byte_len, len);
    off += len + 3;
  }
  // Read it all back into another place of ours (two SGEs).
  Sge back[2] = {sge(200000, 40000), sge(300000, static_cast<std::uint32_t>(off - 40000))};
  ASSERT_TRUE(post(*qp, Opcode::kRdmaRead, back, peer.sbuf, peer.srkey, ++id).ok());
  Completion r = wait_one();
  EXPECT_EQ(r.status, WcStatus::kSuccess) << wc_status_name(r.status);
  EXPECT_EQ(r.byte_len, off);
  std::vector<std::uint8_t> expect(off, 0), got(buf + 200000, buf + 240000);
  got.insert(got.end(), buf + 300000, buf + 300000 + (off - 40000));
  {
    std::size_t o = 0;
    for (std::uint32_t len : {1u, 8u, 4096u, 65537u}) {
      std::memcpy(expect.data() + o, buf + o, len);
      o += len + 3;
    }
  }
  EXPECT_TRUE(got == expect) << "READ did not return what the WRITEs put there";
  Sge res = sge(500000, 8);
  ASSERT_TRUE(post(*qp, Opcode::kAtomicFetchAdd, {&res, 1}, peer.sbuf + 4096 * 32, peer.srkey, ++id, 40).ok());
  EXPECT_EQ(wait_one().status, WcStatus::kSuccess);
  ASSERT_TRUE(post(*qp, Opcode::kAtomicCmpSwap, {&res, 1}, peer.sbuf + 4096 * 32, peer.srkey, ++id, 40, 7).ok());
  Completion cs = wait_one();
  EXPECT_EQ(cs.status, WcStatus::kSuccess);
  EXPECT_EQ(cs.byte_len, 8u);
  EXPECT_EQ(u64(500000), 40u) << "CMP_SWAP returns the original value";
  peer.signal(SIGCONT);
  EXPECT_EQ(peer.cmd("sword " + std::to_string(4096 * 32)), "ok 7");
  EXPECT_EQ(peer.cmd("ssum 0 " + std::to_string(off)), "ok " + std::to_string(fnv(expect.data(), off)));
}

// Mapped fetch-adds from this process and the peer's own CPU atomics on one
// word at once: no update lost, no value returned twice.
TEST_F(ShmCrossProcess, MappedAtomicsAreCoherentWithTheTargetsOwn) {
  Peer peer;
  ASSERT_TRUE(peer.ok());
  auto qp = connect(peer);
  ASSERT_TRUE(qp);
  constexpr std::uint64_t kN = 20000;
  const std::uint64_t word = 8192;
  peer.send("sadd " + std::to_string(kN) + " " + std::to_string(word));
  std::set<std::uint64_t> seen;
  for (std::uint64_t i = 0; i < kN; ++i) {
    Sge res = sge((i % 4096) * 8, 8);
    ASSERT_TRUE(post(*qp, Opcode::kAtomicFetchAdd, {&res, 1}, peer.sbuf + word, peer.srkey, i, 1000000).ok());
    Completion c = wait_one();
    ASSERT_EQ(c.status, WcStatus::kSuccess) << wc_status_name(c.status) << " vendor " << c.vendor_err;
    seen.insert(u64((i % 4096) * 8));
  }
  EXPECT_EQ(peer.line(), "ok");
  EXPECT_EQ(seen.size(), kN) << "two fetch-adds returned the same value";
  EXPECT_EQ(peer.cmd("sword " + std::to_string(word)), "ok " + std::to_string(kN + kN * 1000000));
}

// A cached view of a mapped region is never used after the target
// deregistered it: the old rkey names nothing, the new registration's
// rights are obeyed, and the target's memory does not change.
TEST_F(ShmCrossProcess, MappedRegionReRegistrationIsSeenByTheNextRequest) {
  const auto reregister = [](Peer& peer, Access access) -> std::uint32_t {
    const std::string reg = peer.cmd("sreg " + std::to_string(static_cast<unsigned>(access)));
    EXPECT_EQ(reg.rfind("ok ", 0), 0u) << reg;
    const auto rkey = static_cast<std::uint32_t>(std::stoul(reg.size() > 3 ? reg.substr(3) : "0"));
    // The key table reuses the slot first: the cache entry is the same one.
    EXPECT_EQ(rkey & 0x3FFFu, peer.srkey & 0x3FFFu) << "not the same slot: the test proves less";
    return rkey;
  };
  buf[0] = 0x11;
  Sge s = sge(0, 1);
  {
    Peer peer;
    ASSERT_TRUE(peer.ok());
    auto qp = connect(peer);
    ASSERT_TRUE(qp);
    ASSERT_TRUE(post(*qp, Opcode::kRdmaWrite, {&s, 1}, peer.sbuf + 100, peer.srkey, 1).ok());
    EXPECT_EQ(wait_one().status, WcStatus::kSuccess);
    const std::uint32_t fresh = reregister(peer, kAllAccess);
    Sge r = sge(8, 1);
    ASSERT_TRUE(post(*qp, Opcode::kRdmaRead, {&r, 1}, peer.sbuf + 100, fresh, 2).ok());
    EXPECT_EQ(wait_one().status, WcStatus::kSuccess) << "the new registration is usable at once";
    EXPECT_EQ(buf[8], 0x11);
    buf[0] = 0x22;
    ASSERT_TRUE(post(*qp, Opcode::kRdmaWrite, {&s, 1}, peer.sbuf + 100, peer.srkey, 3).ok());
    Completion c = wait_one();
    EXPECT_EQ(c.status, WcStatus::kRemAccessErr) << wc_status_name(c.status);
    EXPECT_EQ(c.vendor_err, 7u) << "the old rkey names nothing";
    EXPECT_EQ(peer.cmd("sword 96"), "ok " + std::to_string(std::uint64_t{0x11} << 32));
  }
  Peer peer;
  ASSERT_TRUE(peer.ok());
  auto qp = connect(peer);
  ASSERT_TRUE(qp);
  buf[0] = 0x11;
  ASSERT_TRUE(post(*qp, Opcode::kRdmaWrite, {&s, 1}, peer.sbuf + 100, peer.srkey, 1).ok());
  EXPECT_EQ(wait_one().status, WcStatus::kSuccess);
  const std::uint32_t read_only = reregister(peer, Access::kRemoteRead);
  buf[0] = 0x22;
  ASSERT_TRUE(post(*qp, Opcode::kRdmaWrite, {&s, 1}, peer.sbuf + 100, read_only, 2).ok());
  Completion c = wait_one();
  EXPECT_EQ(c.status, WcStatus::kRemAccessErr) << wc_status_name(c.status);
  EXPECT_EQ(c.vendor_err, 9u) << "WRITE through a read-only registration";
  EXPECT_EQ(peer.cmd("sword 96"), "ok " + std::to_string(std::uint64_t{0x11} << 32));
}

TEST_F(ShmCrossProcess, MappedRegionErrorsChangeNothingAtTheTarget) {
  struct Case {
    const char* what;
    Opcode op;
    std::uint64_t offset;
    std::uint32_t len;
    std::uint32_t rkey_xor;
    std::uint32_t vendor_err;
  };
  const Case cases[] = {
      {"out of bounds", Opcode::kRdmaWrite, (1 << 20) - 4, 8, 0, 10},
      {"bad rkey", Opcode::kRdmaWrite, 0, 8, 0x5a5a0000u, 7},
      {"READ out of bounds", Opcode::kRdmaRead, (1 << 20) - 8, 9, 0, 10},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    Peer peer;
    ASSERT_TRUE(peer.ok());
    auto qp = connect(peer);
    ASSERT_TRUE(qp);
    std::memset(buf, 0xEE, 16);
    Sge s = sge(0, k.len);
    ASSERT_TRUE(post(*qp, k.op, {&s, 1}, peer.sbuf + k.offset, peer.srkey ^ k.rkey_xor, 1).ok());
    Completion c = wait_one();
    EXPECT_EQ(c.status, WcStatus::kRemAccessErr) << wc_status_name(c.status);
    EXPECT_EQ(c.vendor_err, k.vendor_err);
    const std::uint8_t zeros[16] = {};
    EXPECT_EQ(peer.cmd("ssum " + std::to_string((1 << 20) - 16) + " 16"), "ok " + std::to_string(fnv(zeros, 16)));
    EXPECT_EQ(peer.cmd("ssum 0 16"), "ok " + std::to_string(fnv(zeros, 16)));
  }
}

// The target frees its segment while the region is still registered: the
// requester's next WRITE fails instead of going to the freed pages.
TEST_F(ShmCrossProcess, MappedSegmentFreedByTheTargetFailsTheNextRequest) {
  Peer peer;
  ASSERT_TRUE(peer.ok());
  auto qp = connect(peer);
  ASSERT_TRUE(qp);
  Sge s = sge(0, 8);
  ASSERT_TRUE(post(*qp, Opcode::kRdmaWrite, {&s, 1}, peer.sbuf, peer.srkey, 1).ok());
  EXPECT_EQ(wait_one().status, WcStatus::kSuccess);
  EXPECT_EQ(peer.cmd("sfree"), "ok");
  ASSERT_TRUE(post(*qp, Opcode::kRdmaWrite, {&s, 1}, peer.sbuf, peer.srkey, 2).ok());
  Completion c = wait_one();
  EXPECT_EQ(c.status, WcStatus::kRemAccessErr) << wc_status_name(c.status);
  EXPECT_EQ(c.vendor_err, 17u) << "vendor_err: the region's memory went away";
}

// ------------------------------------------------------------------ failures

TEST_F(ShmCrossProcess, PeerKilledMidTrafficFailsOutstandingWorkWithoutHanging) {
  Peer peer;
  ASSERT_TRUE(peer.ok());
  auto qp = connect(peer);
  ASSERT_TRUE(qp);
  peer.send("hang");  // the peer's main thread sleeps; its progress thread serves
  std::uint64_t posted = 0, completed = 0;
  bool killed = false;
  std::vector<Completion> failures;
  const auto deadline = Clock::now() + kDeadline;
  while (Clock::now() < deadline && failures.empty()) {
    // Keep a window of requests in flight: atomics (the peer's progress
    // thread serves them) and WRITEs (we copy).
    while (posted - completed < 32) {
      Sge s = sge((posted % 64) * 8, 8);
      const Opcode op = posted % 2 == 0 ? Opcode::kAtomicFetchAdd : Opcode::kRdmaWrite;
      PostResult pr = post(*qp, op, {&s, 1}, peer.buf + (posted % 64) * 8, peer.rkey, posted, 1);
      if (!pr.ok()) break;  // the QP went to ERROR under us
      ++posted;
    }
    Completion c[32];
    const int k = cq->poll(c);
    ASSERT_GE(k, 0) << cq->overrun_reason();
    for (int i = 0; i < k; ++i) {
      ++completed;
      if (c[i].status != WcStatus::kSuccess) failures.push_back(c[i]);
    }
    if (!killed && completed > 200) {
      peer.kill9();
      killed = true;
    }
  }
  ASSERT_TRUE(killed);
  ASSERT_FALSE(failures.empty()) << "no error completion " << kDeadline.count() << " s after the peer was killed";
  EXPECT_EQ(failures[0].status, WcStatus::kRetryExcErr) << wc_status_name(failures[0].status);
  EXPECT_EQ(failures[0].vendor_err, 27u) << "vendor_err says the peer's process exited";
  // Everything behind the failed request is flushed, nothing hangs.
  auto rest = wait(posted - completed, std::chrono::seconds(10));
  EXPECT_EQ(rest.size(), posted - completed);
  for (const Completion& c : rest) EXPECT_EQ(c.status, WcStatus::kWrFlushErr) << wc_status_name(c.status);
  EXPECT_EQ(qp->state(), QpState::kError);
}

TEST_F(ShmCrossProcess, SegmentOfAKilledProcessIsRemovedByTheNextOpen) {
  Peer peer;
  ASSERT_TRUE(peer.ok());
  const pid_t pid = peer.pid();
  ASSERT_EQ(segments_of(pid).size(), 1u) << "the peer's device has one segment";
  peer.kill9();
  EXPECT_EQ(segments_of(pid).size(), 1u) << "SIGKILL leaves the segment behind";
  auto again = ProviderRegistry::global().open("shm");
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_TRUE(segments_of(pid).empty()) << "open did not remove the dead process's segment";
  // Our own segments stay.
  EXPECT_EQ(segments_of(::getpid()).size(), 2u);
}

TEST_F(ShmCrossProcess, SegmentGoesAtCloseAndAtNormalExit) {
  const std::size_t before = segments_of(::getpid()).size();
  {
    auto d = ProviderRegistry::global().open("shm");
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(segments_of(::getpid()).size(), before + 1);
  }
  EXPECT_EQ(segments_of(::getpid()).size(), before) << "device close unlinks its segment";
  Peer peer;
  ASSERT_TRUE(peer.ok());
  const pid_t pid = peer.pid();
  EXPECT_EQ(peer.cmd("exit"), "ok");
  peer.reap(std::chrono::seconds(10));
  EXPECT_TRUE(WIFEXITED(peer.exit_status()) && WEXITSTATUS(peer.exit_status()) == 0) << peer.exit_status();
  EXPECT_TRUE(segments_of(pid).empty());
}

TEST_F(ShmCrossProcess, RemoteAccessErrorsAcrossProcesses) {
  struct Case {
    const char* what;
    Opcode op;
    bool use_ro;
    std::uint64_t offset;
    std::uint32_t len;
    bool bad_key;
    std::uint32_t vendor_err;
  };
  const Case cases[] = {
      {"bad rkey", Opcode::kRdmaWrite, false, 0, 8, true, 7},
      {"out of bounds", Opcode::kRdmaRead, false, (1 << 20) - 4, 8, false, 10},
      {"WRITE without REMOTE_WRITE", Opcode::kRdmaWrite, true, 0, 8, false, 9},
      {"FETCH_ADD without REMOTE_ATOMIC", Opcode::kAtomicFetchAdd, true, 0, 8, false, 9},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    Peer peer;
    ASSERT_TRUE(peer.ok());
    auto qp = connect(peer);
    ASSERT_TRUE(qp);
    Sge s = sge(0, k.len);
    const std::uint64_t target = (k.use_ro ? peer.ro : peer.buf) + k.offset;
    const std::uint32_t rkey = (k.use_ro ? peer.ro_rkey : peer.rkey) ^ (k.bad_key ? 0x5a5a0000u : 0u);
    ASSERT_TRUE(post(*qp, k.op, {&s, 1}, target, rkey, 1, 1).ok());
    Completion c = wait_one();
    EXPECT_EQ(c.status, WcStatus::kRemAccessErr) << wc_status_name(c.status);
    EXPECT_EQ(c.vendor_err, k.vendor_err);
    EXPECT_EQ(qp->state(), QpState::kError);
    // The target's QP breaks too (its progress thread or next poll acts on it).
    std::string st;
    for (auto until = Clock::now() + kDeadline; Clock::now() < until;) {
      st = peer.cmd("state");
      if (st == "ok ERROR") break;
    }
    EXPECT_EQ(st, "ok ERROR");
    EXPECT_EQ(peer.cmd("word 0"), "ok 0") << "the target's memory changed";
  }
}

TEST_F(ShmCrossProcess, ConnectRefusesStaleAndMalformedAddresses) {
  auto q = pd->create_qp(config());
  ASSERT_TRUE(q.ok());
  QueuePair& qp = **q;
  EndpointAddress good;
  {
    Peer peer;
    ASSERT_TRUE(peer.ok());
    good = peer.address;
    peer.kill9();  // its segment stays (SIGKILL), its pid is dead
  }
  Status s = qp.connect(good);
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.to_string();
  EXPECT_NE(s.message().find("not running"), std::string::npos) << s.to_string();
  {
    Peer peer;
    ASSERT_TRUE(peer.ok());
    good = peer.address;
    EXPECT_EQ(peer.cmd("exit"), "ok");
    peer.reap(std::chrono::seconds(10));
  }
  s = qp.connect(good);
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << "address of a process that exited: " << s.to_string();

  EndpointAddress truncated = good;
  truncated.size -= 10;
  s = qp.connect(truncated);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.to_string();

  EndpointAddress garbage = good;
  for (std::uint32_t i = 4; i < garbage.size; ++i) garbage.bytes[i] = static_cast<std::uint8_t>(i * 37 + 11);
  s = qp.connect(garbage);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();

  EndpointAddress other_name = good;
  other_name.bytes[30] ^= 0x20;  // inside the segment name
  s = qp.connect(other_name);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_EQ(qp.state(), QpState::kReset);
}

// EPERM from process_vm_*: a peer whose uid differs (no CAP_SYS_PTRACE)
// may not touch our memory. Needs root to set up (setresuid).
TEST_F(ShmCrossProcess, CrossMemoryAttachRefusedIsAClearErrorCompletion) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the peer under another uid";
  Peer peer;
  ASSERT_TRUE(peer.ok());
  auto qp = connect(peer);  // the peer maps our segment while it still may
  ASSERT_TRUE(qp);
  ASSERT_EQ(peer.cmd("dropuid 65534"), "ok");
  EXPECT_EQ(peer.cmd("write " + std::to_string(reinterpret_cast<std::uint64_t>(buf)) + " " +
                     std::to_string(mr->rkey()) + " 64"),
            "ok REM_ACCESS_ERR 26");
  // Under uid 65534 the peer cannot unlink its root-owned segment at exit
  // (/dev/shm is sticky); the next open would remove it, do it now.
  const pid_t pid = peer.pid();
  EXPECT_EQ(peer.cmd("exit"), "ok");
  peer.reap(std::chrono::seconds(10));
  for (const std::string& n : segments_of(pid)) ::shm_unlink(("/" + n).c_str());
}

}  // namespace
}  // namespace rma
