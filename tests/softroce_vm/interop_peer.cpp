// One side of the interoperability test between librma's software RoCE NIC
// (softroce provider, on the host) and the kernel's rdma_rxe (verbs
// provider, in the QEMU guest). Both sides run this program:
//
//   interop_peer --provider softroce --listen IP:PORT      (host, first requester)
//   interop_peer --provider verbs --connect IP:PORT        (guest)
//
// A TCP connection carries the QP parameters and the test's commands; the
// RDMA traffic goes over the wire between the two NICs. Each side in turn is
// the requester: RDMA WRITE and READ of 1 B..1 MiB at odd offsets, then
// fetch-add and compare-swap, into memory registered on the other side,
// which checks every byte (and every atomic's effect) on request. The
// requester checks READ data and atomic results itself. Exit 0 when every
// check on both sides passed.
//
// The two providers' endpoint addresses differ, so each side sends the raw
// RoCE parameters (QPN, first expected PSN, IPv4, MAC, MTU) and builds the
// other's address in its own provider's format.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "dpdk/provider/softroce_device.hpp"
#include "rma/sdk/provider.hpp"
#include "rma/sdk/registry.hpp"
#include "verbs/endpoint_address.hpp"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using rma::Completion;
using rma::Opcode;
using rma::WcStatus;

constexpr std::uint32_t kPathMtu = 1024;
constexpr std::size_t kDataBytes = (1u << 20) + 8192;  // the largest message at an odd offset
constexpr std::size_t kWordsOffset = kDataBytes;       // 8-byte aligned atomic targets
constexpr std::size_t kRegionBytes = kDataBytes + 64;
constexpr std::uint32_t kMaxRdAtomic = 4;

int failures = 0;
std::string side;  // "host" / "guest", prefixes every line

void say(const std::string& line) {
  std::printf("[%s] %s\n", side.c_str(), line.c_str());
  std::fflush(stdout);
}
void fail(const std::string& line) {
  ++failures;
  say("FAIL " + line);
}
[[noreturn]] void die(const std::string& line) {
  say("FATAL " + line);
  std::exit(2);
}

std::uint8_t pattern(std::uint32_t seed, std::size_t i) {
  return static_cast<std::uint8_t>(seed * 131u + i * 7u + (i >> 8) * 13u + 1u);
}

// ------------------------------------------------------------------ control channel
class Control {
 public:
  explicit Control(int fd) : fd_(fd) {}
  ~Control() { ::close(fd_); }
  Control(const Control&) = delete;
  Control& operator=(const Control&) = delete;

  void send(const std::string& line) {
    const std::string msg = line + "\n";
    std::size_t off = 0;
    while (off < msg.size()) {
      const ssize_t n = ::send(fd_, msg.data() + off, msg.size() - off, MSG_NOSIGNAL);
      if (n <= 0) die("control: send failed: " + std::string(std::strerror(errno)));
      off += static_cast<std::size_t>(n);
    }
  }
  // Waits for a line, calling `idle` meanwhile (the softroce NIC progresses
  // only when polled, and must answer the peer while we wait).
  template <typename Idle>
  std::string receive(Idle&& idle, std::chrono::seconds limit = 120s) {
    const auto deadline = Clock::now() + limit;
    for (;;) {
      if (auto nl = buf_.find('\n'); nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      if (Clock::now() > deadline) die("control: the peer said nothing for " + std::to_string(limit.count()) + " s");
      pollfd p{fd_, POLLIN, 0};
      const int r = ::poll(&p, 1, 1);
      if (r > 0) {
        char tmp[4096];
        const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
        if (n <= 0) die("control: the peer closed the connection");
        buf_.append(tmp, static_cast<std::size_t>(n));
      } else {
        idle();
      }
    }
  }

 private:
  int fd_;
  std::string buf_;
};

sockaddr_in parse_endpoint(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) die("'" + text + "' is not IP:PORT");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(std::stoi(text.substr(colon + 1))));
  if (::inet_pton(AF_INET, text.substr(0, colon).c_str(), &a.sin_addr) != 1) die("'" + text + "': bad IPv4 address");
  return a;
}

int listen_accept(const std::string& where) {
  const sockaddr_in a = parse_endpoint(where);
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(s, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 || ::listen(s, 1) != 0) {
    die("listen on " + where + ": " + std::strerror(errno));
  }
  say("listening on " + where);
  pollfd p{s, POLLIN, 0};
  if (::poll(&p, 1, 240000) != 1) die("nobody connected to " + where + " within 240 s");
  const int c = ::accept4(s, nullptr, nullptr, SOCK_CLOEXEC);
  ::close(s);
  if (c < 0) die(std::string("accept: ") + std::strerror(errno));
  ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return c;
}

int connect_retrying(const std::string& where) {
  const sockaddr_in a = parse_endpoint(where);
  const auto deadline = Clock::now() + 120s;
  for (;;) {
    const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(s, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0) {
      const int one = 1;
      ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return s;
    }
    const int e = errno;
    ::close(s);
    if (Clock::now() > deadline) die("connect to " + where + ": " + std::strerror(e) + " (gave up after 120 s)");
    std::this_thread::sleep_for(200ms);
  }
}

// ------------------------------------------------------------------ RoCE parameters
struct RoceParams {
  std::uint32_t qpn = 0, psn = 0, ipv4 = 0, mtu = 0;
  std::array<std::uint8_t, 6> mac{};
  std::uint64_t addr = 0;
  std::uint32_t rkey = 0;
};

std::string mac_text(const std::array<std::uint8_t, 6>& m) {
  char b[18];
  std::snprintf(b, sizeof b, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return b;
}

std::string encode_params(const RoceParams& p) {
  std::ostringstream o;
  o << "HELLO " << p.qpn << ' ' << p.psn << ' ' << p.ipv4 << ' ' << mac_text(p.mac) << ' ' << p.mtu << ' ' << p.addr
    << ' ' << p.rkey;
  return o.str();
}

RoceParams decode_params(const std::string& line) {
  RoceParams p;
  std::istringstream in(line);
  std::string tag, mac;
  in >> tag >> p.qpn >> p.psn >> p.ipv4 >> mac >> p.mtu >> p.addr >> p.rkey;
  unsigned m[6];
  if (!in || tag != "HELLO" ||
      std::sscanf(mac.c_str(), "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6) {
    die("malformed HELLO from the peer: '" + line + "'");
  }
  for (int i = 0; i < 6; ++i) p.mac[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(m[i]);
  return p;
}

std::uint32_t ipv4_of_gid(const std::array<std::uint8_t, 16>& g) {
  return (std::uint32_t{g[12]} << 24) | (std::uint32_t{g[13]} << 16) | (std::uint32_t{g[14]} << 8) | g[15];
}

// Our QP's parameters, read from our own provider's address.
RoceParams local_params(const std::string& provider, const rma::EndpointAddress& a, const rma::DeviceInfo& info) {
  RoceParams p;
  if (provider == "softroce") {
    auto f = rma::softroce::decode_endpoint(a);
    if (!f.ok()) die("own softroce address: " + f.status().to_string());
    p.qpn = f->qpn;
    p.psn = f->psn;
    p.ipv4 = f->ipv4;
    p.mac = f->mac;
    p.mtu = f->mtu;
  } else {
    auto f = rma::verbs::decode_endpoint(a);
    if (!f.ok()) die("own verbs address: " + f.status().to_string());
    p.qpn = f->qpn;
    p.psn = f->psn;
    p.ipv4 = ipv4_of_gid(f->gid);
    p.mac = info.mac;
    p.mtu = f->mtu;
  }
  return p;
}

// The peer's QP in our provider's address format.
rma::EndpointAddress remote_address(const std::string& provider, const RoceParams& r) {
  if (provider == "softroce") {
    rma::softroce::EndpointFields f;
    f.mac = r.mac;
    f.ipv4 = r.ipv4;
    f.qpn = r.qpn;
    f.psn = r.psn;
    f.mtu = r.mtu;
    return rma::softroce::encode_endpoint(f);
  }
  rma::verbs::EndpointFields f;
  f.ethernet = true;
  f.qpn = r.qpn;
  f.psn = r.psn;
  f.gid = {};
  f.gid[10] = f.gid[11] = 0xff;  // IPv4-mapped IPv6: what RoCE v2 GIDs of an IPv4 address are
  f.gid[12] = static_cast<std::uint8_t>(r.ipv4 >> 24);
  f.gid[13] = static_cast<std::uint8_t>(r.ipv4 >> 16);
  f.gid[14] = static_cast<std::uint8_t>(r.ipv4 >> 8);
  f.gid[15] = static_cast<std::uint8_t>(r.ipv4);
  f.mtu = r.mtu;
  f.max_rd_atomic = kMaxRdAtomic;
  return rma::verbs::encode_endpoint(f);
}

// ------------------------------------------------------------------ the test
struct Peer {
  std::string provider;
  std::shared_ptr<rma::Device> device;
  std::shared_ptr<rma::ProtectionDomain> pd;
  std::shared_ptr<rma::CompletionQueue> cq;
  std::unique_ptr<rma::QueuePair> qp;
  std::vector<std::uint8_t> region;    // the peer's target: WRITEs land and READs come from here
  std::vector<std::uint8_t> local;     // our source of WRITEs, sink of READs and atomic results
  std::unique_ptr<rma::MemoryRegion> region_mr, local_mr;
  RoceParams remote;
  std::unique_ptr<Control> ctl;

  void idle() {
    Completion c[4];
    const int n = cq->poll({c, 4});
    if (n < 0) die(std::string("CQ failed: ") + cq->overrun_reason());
    for (int i = 0; i < n; ++i) fail("unexpected completion wr_id " + std::to_string(c[i].wr_id));
  }
  std::string receive() {
    return ctl->receive([this] { idle(); });
  }
  // Posts one request and waits for its completion.
  Completion run(const rma::WorkRequest& wr, const char* what) {
    rma::PostResult r = qp->post({&wr, 1});
    if (!r.ok()) die(std::string(what) + ": post: " + r.to_status().to_string());
    const auto deadline = Clock::now() + 60s;
    for (;;) {
      Completion c;
      const int n = cq->poll({&c, 1});
      if (n < 0) die(std::string("CQ failed: ") + cq->overrun_reason());
      if (n == 1) return c;
      if (Clock::now() > deadline) die(std::string(what) + ": no completion within 60 s");
    }
  }
  void expect_ok(const std::string& what) {
    const std::string reply = receive();
    if (reply != "OK") fail(what + ": the peer says: " + reply);
  }

  void requester() {
    const std::vector<std::uint32_t> sizes = {1, 3, 8, 64, 1000, 1023, 1024, 1025, 4096, 10000, 65536, 1u << 20};
    std::uint32_t seed = side == "host" ? 1 : 101;
    for (const std::uint32_t size : sizes) {
      const std::uint32_t off = (size * 37u + 5u) % 4096u;  // odd offsets too
      // RDMA WRITE: our bytes into the peer's memory, which checks them.
      ++seed;
      for (std::size_t i = 0; i < size; ++i) local[i] = pattern(seed, i);
      rma::Sge s{reinterpret_cast<std::uint64_t>(local.data()), size, local_mr->lkey()};
      rma::WorkRequest w;
      w.wr_id = seed;
      w.opcode = Opcode::kRdmaWrite;
      w.sgl = {&s, 1};
      w.remote_addr = remote.addr + off;
      w.rkey = remote.rkey;
      Completion c = run(w, "RDMA WRITE");
      if (c.status != WcStatus::kSuccess) {
        fail("RDMA WRITE of " + std::to_string(size) + " B: " + std::string(rma::wc_status_name(c.status)));
      }
      ctl->send("CHECK " + std::to_string(off) + " " + std::to_string(size) + " " + std::to_string(seed));
      expect_ok("RDMA WRITE of " + std::to_string(size) + " B at offset " + std::to_string(off));

      // RDMA READ: the peer fills its memory, we read and check.
      ++seed;
      ctl->send("FILL " + std::to_string(off) + " " + std::to_string(size) + " " + std::to_string(seed));
      expect_ok("FILL");
      std::memset(local.data(), 0, size + 16);
      rma::WorkRequest r = w;
      r.wr_id = seed;
      r.opcode = Opcode::kRdmaRead;
      c = run(r, "RDMA READ");
      if (c.status != WcStatus::kSuccess) {
        fail("RDMA READ of " + std::to_string(size) + " B: " + std::string(rma::wc_status_name(c.status)));
      }
      std::size_t bad = size;
      for (std::size_t i = 0; i < size && bad == size; ++i) {
        if (local[i] != pattern(seed, i)) bad = i;
      }
      if (bad != size) {
        fail("RDMA READ of " + std::to_string(size) + " B: byte " + std::to_string(bad) + " differs");
      } else if (local[size] != 0) {
        fail("RDMA READ of " + std::to_string(size) + " B wrote past the end of the local buffer");
      }
      say("RDMA WRITE and READ of " + std::to_string(size) + " B at offset " + std::to_string(off) + ": ok");
    }

    // Atomics on an 8-byte word of the peer's memory.
    const std::uint64_t word = remote.addr + kWordsOffset + 8;
    ctl->send("SET 8 1000");
    expect_ok("SET");
    auto atomic = [&](Opcode op, std::uint64_t compare_add, std::uint64_t swap, std::uint64_t want, const char* what) {
      std::memset(local.data(), 0xa5, 8);
      rma::Sge s{reinterpret_cast<std::uint64_t>(local.data()), 8, local_mr->lkey()};
      rma::WorkRequest a;
      a.wr_id = 7;
      a.opcode = op;
      a.sgl = {&s, 1};
      a.remote_addr = word;
      a.rkey = remote.rkey;
      a.compare_add = compare_add;
      a.swap = swap;
      const Completion c = run(a, what);
      std::uint64_t got = 0;
      std::memcpy(&got, local.data(), 8);
      if (c.status != WcStatus::kSuccess) {
        fail(std::string(what) + ": " + std::string(rma::wc_status_name(c.status)));
      } else if (got != want) {
        fail(std::string(what) + ": returned " + std::to_string(got) + ", expected " + std::to_string(want));
      }
    };
    atomic(Opcode::kAtomicFetchAdd, 5, 0, 1000, "fetch-add 5");
    atomic(Opcode::kAtomicCmpSwap, 1005, 0xdeadbeefcafef00dull, 1005, "compare-swap (matching)");
    atomic(Opcode::kAtomicCmpSwap, 1, 2, 0xdeadbeefcafef00dull, "compare-swap (not matching)");
    atomic(Opcode::kAtomicFetchAdd, 1, 0, 0xdeadbeefcafef00dull, "fetch-add 1");
    ctl->send("GET 8");
    const std::string v = receive();
    if (v != "VALUE " + std::to_string(0xdeadbeefcafef00eull)) fail("the word after the atomics: " + v);
    say("fetch-add and compare-swap: " + std::string(failures == 0 ? "ok" : "see failures"));
  }

  // Serves the peer's commands on our region until `until` arrives.
  void responder(const std::string& until) {
    for (;;) {
      const std::string line = receive();
      if (line == until) return;
      std::istringstream in(line);
      std::string cmd;
      std::uint64_t a = 0, b = 0, c = 0;
      in >> cmd >> a >> b >> c;
      // The NIC may be a thread of this process (softroce's progress
      // thread). A poll takes its lock: our loads below come after what it
      // wrote before the peer sent this command, and our stores come before
      // what it reads after our reply. The peer's messages order them in
      // time already, but no memory model (nor ThreadSanitizer) sees that.
      idle();
      if (cmd == "CHECK" || cmd == "FILL") {
        if (a + b > kDataBytes) die("peer asked for " + line + ": outside the region");
        if (cmd == "FILL") {
          for (std::size_t i = 0; i < b; ++i) region[a + i] = pattern(static_cast<std::uint32_t>(c), i);
          idle();
          ctl->send("OK");
          continue;
        }
        std::size_t bad = b;
        for (std::size_t i = 0; i < b && bad == b; ++i) {
          if (region[a + i] != pattern(static_cast<std::uint32_t>(c), i)) bad = i;
        }
        if (bad == b) {
          ctl->send("OK");
        } else {
          fail("peer's write of " + std::to_string(b) + " B: byte " + std::to_string(bad) + " differs");
          ctl->send("BAD byte " + std::to_string(bad) + " of " + std::to_string(b));
        }
      } else if (cmd == "SET") {
        std::memcpy(&region[kWordsOffset + a], &b, 8);
        idle();
        ctl->send("OK");
      } else if (cmd == "GET") {
        std::uint64_t v = 0;
        std::memcpy(&v, &region[kWordsOffset + a], 8);
        ctl->send("VALUE " + std::to_string(v));
      } else {
        die("unknown command from the peer: '" + line + "'");
      }
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string provider, listen_at, connect_to;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "interop_peer: %s needs a value\n", a.c_str());
      return 2;
    }
    if (a == "--provider") {
      provider = argv[++i];
    } else if (a == "--listen") {
      listen_at = argv[++i];
    } else if (a == "--connect") {
      connect_to = argv[++i];
    } else {
      std::fprintf(stderr, "interop_peer: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  if ((provider != "softroce" && provider != "verbs") || listen_at.empty() == connect_to.empty()) {
    std::fprintf(stderr,
                 "usage: interop_peer --provider softroce|verbs (--listen IP:PORT | --connect IP:PORT)\n");
    return 2;
  }
  side = listen_at.empty() ? "guest" : "host";

  Peer p;
  p.provider = provider;
  auto dev = rma::ProviderRegistry::global().open(provider);
  if (!dev.ok()) die("open " + provider + ": " + dev.status().to_string());
  p.device = *dev;
  say("device " + p.device->info().name + " (" + provider + ")");
  auto pd = p.device->alloc_pd();
  auto cq = p.device->create_cq(64);
  if (!pd.ok() || !cq.ok()) die("PD/CQ: " + (pd.ok() ? cq.status() : pd.status()).to_string());
  p.pd = *pd;
  p.cq = *cq;
  p.region.assign(kRegionBytes, 0);
  p.local.assign(kRegionBytes, 0);
  auto rmr = p.pd->register_memory(p.region.data(), p.region.size(), rma::kAllAccess);
  auto lmr = p.pd->register_memory(p.local.data(), p.local.size(), rma::Access::kLocalWrite);
  if (!rmr.ok() || !lmr.ok()) die("register: " + (rmr.ok() ? lmr.status() : rmr.status()).to_string());
  p.region_mr = std::move(rmr).value();
  p.local_mr = std::move(lmr).value();

  rma::QpConfig cfg;
  cfg.send_cq = p.cq;
  cfg.recv_cq = p.cq;
  cfg.max_send_wr = 16;
  cfg.max_recv_wr = 4;
  cfg.max_rd_atomic = kMaxRdAtomic;
  cfg.path_mtu = kPathMtu;
  cfg.timeout = 16;  // 268 ms: the guest runs under emulation
  cfg.retry_cnt = 7;
  auto qp = p.pd->create_qp(cfg);
  if (!qp.ok()) die("create_qp: " + qp.status().to_string());
  p.qp = std::move(qp).value();
  auto mine = p.qp->local_address();
  if (!mine.ok()) die("local_address: " + mine.status().to_string());
  RoceParams me = local_params(provider, *mine, p.device->info());
  me.mtu = std::min(me.mtu, kPathMtu);
  me.addr = reinterpret_cast<std::uint64_t>(p.region.data());
  me.rkey = p.region_mr->rkey();

  p.ctl = std::make_unique<Control>(listen_at.empty() ? connect_retrying(connect_to) : listen_accept(listen_at));
  p.ctl->send(encode_params(me));
  p.remote = decode_params(p.receive());
  say("local QP " + std::to_string(me.qpn) + " psn " + std::to_string(me.psn) + " mac " + mac_text(me.mac) +
      "; remote QP " + std::to_string(p.remote.qpn) + " psn " + std::to_string(p.remote.psn) + " mac " +
      mac_text(p.remote.mac));
  const rma::Status st = p.qp->connect(remote_address(provider, p.remote));
  if (!st.ok()) die("connect: " + st.to_string());
  p.ctl->send("READY");
  if (p.receive() != "READY") die("the peer did not get ready");

  if (side == "host") {
    p.requester();
    p.ctl->send("TURN");
    p.responder("DONE");
  } else {
    p.responder("TURN");
    p.requester();
    p.ctl->send("DONE");
  }
  std::vector<rma::CounterSample> counters;
  if (auto c = p.device->read_counters(); c.ok()) {
    std::string line = "counters:";
    for (const auto& s : *c) {
      if (s.value != 0) line += " " + s.name + "=" + std::to_string(s.value);
    }
    say(line);
  }
  say(failures == 0 ? "PASS" : "FAILED: " + std::to_string(failures) + " checks");
  return failures == 0 ? 0 : 1;
}
