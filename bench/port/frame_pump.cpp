// rma_frame_pump: raw frame throughput of a link between two processes,
// through the same port layer and EAL defaults as librma: by default a memif
// link, or any two port specs (two ends of a veth pair over af_packet or
// af_xdp, the two-host benchmark's link).
//
//   rma_frame_pump [--size PAYLOAD] [--count N] [--socket NAME] [--pingpong [--with-ack]] [--cpus TX,RX]
//                  [--port SPEC --peer-port SPEC [--peer-netns NAME]]
//
// The parent spawns itself as the receiver (memif client, counts frames),
// opens the memif server and sends N frames of PAYLOAD + 58 bytes (Eth 14 +
// IPv4 20 + UDP 8 + BTH 12 + ICRC 4, as a RoCE v2 frame would be) as fast as
// the link takes them, then closes with the FIN handshake. The receiver
// times first to last frame and prints frames/s and payload GB/s.
//
// --port / --peer-port: the sender's and the receiver's port specs instead
// of the memif pair (both or neither); --peer-netns: the receiver enters
// that network namespace (/var/run/netns/NAME, as `ip netns` makes) before
// it opens its port. A kernel interface has no flow control and no link
// state between the two processes, so there the receiver announces itself
// with "ready" frames until the first data frame arrives, the sender ends
// with "end" frames, and the receiver reports the frames it lost (the rate
// is of the frames that arrived, first to last).
//
// --pingpong: the raw link's latency instead. The parent sends one frame and
// waits for the child's echo, N times (after N/10 untimed warm-up rounds),
// both sides busy-polling as the RDMA latency tools do; it prints the
// median ("typical", as perftest) and average half round trip. With
// --with-ack every ping and every echo leaves in one burst behind a frame
// of a RoCE ACK's size (62 B), and the other side answers when both have
// arrived: what a hop of an RDMA WRITE ping-pong puts on the link
// (perftest's latency test waits for its WRITE's completion, so a NIC
// sends the answer and the ACK of the WRITE it answers), where a kernel
// interface charges for every frame.
//
// --cpus TX,RX pins the sending (parent) process to CPU TX and the receiving
// one to CPU RX, as bench/port/softroce_vs_pump.sh -P pins the RDMA tools.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "port/port.hpp"
#include "port/port_link.hpp"

extern char** environ;
using namespace rma::roce;
using Clock = std::chrono::steady_clock;

namespace {
constexpr std::size_t kHeaders = 58;

// What a frame is, in the byte after the Ethernet header (the headers are
// otherwise filler): the sender's data, the echo's answer, on kernel
// interfaces the receiver's "ready" and the sender's "end", and the ACK-sized
// frame that --with-ack puts before each ping and echo (ignored on arrival).
enum Marker : std::uint8_t { kData = 0x11, kEcho = 0x22, kReady = 0x33, kEnd = 0x44, kAck = 0x55 };
// A RoCE v2 ACK: Eth 14 + IPv4 20 + UDP 8 + BTH 12 + AETH 4 + ICRC 4.
constexpr std::size_t kAckFrame = 62;
constexpr std::size_t kMarkerAt = 14;
constexpr std::size_t kSeqAt = kHeaders - 4;  // the payload's first 4 bytes: a ping's number

// The two ends' port specs; `lossy` for a kernel interface (not memif).
struct Ends {
  std::string port, peer_port, peer_netns;
  bool lossy = false;
};

// One end of the link; null after printing why when the port does not open.
struct PumpPort {
  std::unique_ptr<Link> link;
  port::PortLink* pl = nullptr;
  bool up() const { return pl->state() == port::PortState::kUp; }
};
PumpPort open_pump_port(const char* who, const std::string& spec) {
  auto r = open_port(spec);
  if (!r.ok()) {
    std::fprintf(stderr, "%s: %s\n", who, r.status().to_string().c_str());
    return {};
  }
  PumpPort p{std::move(r).value(), nullptr};
  p.pl = dynamic_cast<port::PortLink*>(p.link.get());
  if (p.pl == nullptr) {
    std::fprintf(stderr, "%s: '%s' is not a single port\n", who, spec.c_str());
    return {};
  }
  return p;
}

// The bytes of a frame with `payload` bytes between the headers (IPv4
// ethertype, locally administered unicast MACs, the rest filled with the
// marker) and a 4-byte trailer.
struct FrameBytes {
  std::vector<std::uint8_t> head, body, tail;
  FrameBytes(std::size_t payload, Marker marker)
      : head(kHeaders - 4, marker), body(payload, 0x5a), tail(4, 0xee) {
    const std::uint8_t macs[12] = {0x02, 0, 0, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0x02};
    std::copy(std::begin(macs), std::end(macs), head.begin());
    head[12] = 0x08;
    head[13] = 0x00;
  }
  TxFrame frame() const { return TxFrame{head, body, tail}; }
};

Marker marker_of(std::span<const std::uint8_t> f) {
  return f.size() > kMarkerAt ? static_cast<Marker>(f[kMarkerAt]) : Marker{0};
}
std::uint32_t seq_of(std::span<const std::uint8_t> f) {
  std::uint32_t v = 0;
  if (f.size() >= kSeqAt + 4) std::memcpy(&v, f.data() + kSeqAt, 4);
  return v;
}

void send_one(Link& link, port::PortLink& pl, const TxFrame& f) {
  while (link.transmit(std::span<const TxFrame>(&f, 1)) == 0 && pl.state() != port::PortState::kClosed) {
  }
}

// A ping or an echo: `f` alone, or (--with-ack) behind `ack` in one burst.
void send_hop(Link& link, port::PortLink& pl, const TxFrame& f, const FrameBytes* ack) {
  if (ack == nullptr) return send_one(link, pl, f);
  const TxFrame both[2] = {ack->frame(), f};
  std::size_t taken = 0;
  while (taken < 2 && pl.state() != port::PortState::kClosed) {
    taken += link.transmit(std::span<const TxFrame>(both + taken, 2 - taken));
  }
}

struct Counter : FrameSink {
  std::size_t expect = 0;
  std::uint64_t frames = 0, bytes = 0, wrong_size = 0, first_wrong = 0, ends = 0;
  Clock::time_point first{}, last{};
  void on_frame(std::span<const std::uint8_t> f) noexcept override {
    const Marker m = marker_of(f);
    if (m == kEnd) ++ends;
    if (m != kData) return;  // "ready" and filler a kernel interface also carries
    if (frames == 0) first = Clock::now();
    ++frames;
    last = Clock::now();
    bytes += f.size();
    if (f.size() != expect) {
      if (wrong_size++ == 0) first_wrong = f.size();
    }
  }
};

// Kernel interfaces: the receiver says "ready" every millisecond until
// `started()`, and gives up after a minute without the sender.
template <typename Started>
bool announce_until(PumpPort& port, FrameSink& sink, Started started) {
  const FrameBytes ready(8, kReady);
  const TxFrame f = ready.frame();
  const auto give_up = Clock::now() + std::chrono::seconds(60);
  auto next = Clock::now();
  while (!started()) {
    if (Clock::now() >= next) {
      send_one(*port.link, *port.pl, f);
      next = Clock::now() + std::chrono::milliseconds(1);
    }
    port.link->poll(sink, 64);
    if (Clock::now() > give_up) {
      std::fprintf(stderr, "rx: no frame from the sender within 60 s\n");
      return false;
    }
  }
  return true;
}

// Counts the receiver's "ready" frames (the sender's side of the handshake).
struct ReadyFrames : FrameSink {
  std::uint64_t ready = 0;
  void on_frame(std::span<const std::uint8_t> f) noexcept override {
    if (marker_of(f) == kReady) ++ready;
  }
};
pid_t g_receiver = -1;  // the spawned receiver, watched while the sender waits for it

bool wait_for_receiver(PumpPort& port) {
  ReadyFrames r;
  const auto give_up = Clock::now() + std::chrono::seconds(60);
  while (r.ready == 0) {
    port.link->poll(r, 64);
    int status = 0;
    if (g_receiver > 0 && waitpid(g_receiver, &status, WNOHANG) == g_receiver) {
      g_receiver = -1;
      std::fprintf(stderr, "tx: the receiver exited before it was ready (%s %d)\n",
                   WIFEXITED(status) ? "exit" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
      return false;
    }
    if (Clock::now() > give_up) {
      std::fprintf(stderr, "tx: no ready frame from the receiver within 60 s\n");
      return false;
    }
  }
  return true;
}
void send_ends(PumpPort& port) {
  const FrameBytes end(8, kEnd);
  const TxFrame f = end.frame();
  for (int i = 0; i < 20; ++i) {
    send_one(*port.link, *port.pl, f);
    const auto until = Clock::now() + std::chrono::milliseconds(1);
    while (Clock::now() < until) {
    }
  }
}

int receiver(const Ends& ends, std::size_t payload, std::uint64_t count) {
  PumpPort port = open_pump_port("rx", ends.port);
  if (!port.link) return 1;
  Counter c;
  c.expect = payload + kHeaders;
  if (ends.lossy && !announce_until(port, c, [&] { return c.frames > 0 || c.ends > 0; })) return 1;
  const auto give_up = Clock::now() + std::chrono::seconds(120);
  while (port.up() && Clock::now() < give_up) {
    port.link->poll(c, 64);
    // A kernel interface: done at the sender's "end", or when frames stop
    // for a second (the ends lost too).
    if (ends.lossy && (c.ends > 0 || Clock::now() - c.last > std::chrono::seconds(1))) break;
  }
  (void)port.pl->close();
  const double secs = std::chrono::duration<double>(c.last - c.first).count();
  const double fps = secs > 0 ? static_cast<double>(c.frames) / secs : 0;
  std::printf("rx payload %zu B frame %zu B: %llu/%llu frames in %.3f s: %.3f Mframes/s, payload %.3f GB/s, "
              "frames %.3f Gb/s\n",
              payload, payload + kHeaders, static_cast<unsigned long long>(c.frames),
              static_cast<unsigned long long>(count), secs, fps / 1e6, fps * static_cast<double>(payload) / 1e9,
              fps * static_cast<double>(payload + kHeaders) * 8 / 1e9);
  if (ends.lossy) {
    std::printf("rx: %llu of %llu frames lost (%.2f %%)\n", static_cast<unsigned long long>(count - c.frames),
                static_cast<unsigned long long>(count),
                count > 0 ? 100.0 * static_cast<double>(count - c.frames) / static_cast<double>(count) : 0.0);
  }
  if (c.wrong_size != 0) {
    std::printf("rx: %llu frames had the wrong size (first: %llu B, expected %zu B)\n",
                static_cast<unsigned long long>(c.wrong_size), static_cast<unsigned long long>(c.first_wrong),
                c.expect);
  }
  if (c.wrong_size != 0) return 1;
  return ends.lossy ? (c.frames > 1 ? 0 : 1) : (c.frames == count ? 0 : 1);
}

int sender(const Ends& ends, std::size_t payload, std::uint64_t count) {
  PumpPort port = open_pump_port("tx", ends.port);
  if (!port.link) return 1;
  if (ends.lossy && !wait_for_receiver(port)) return 1;
  const FrameBytes bytes(payload, kData);
  std::vector<TxFrame> batch(32, bytes.frame());
  std::uint64_t sent = 0;
  const auto t0 = Clock::now();
  while (sent < count && port.up()) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(batch.size(), count - sent));
    sent += port.link->transmit(std::span<const TxFrame>(batch.data(), n));
  }
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  if (ends.lossy) send_ends(port);
  rma::Status st = port.pl->close();
  std::printf("tx %llu frames in %.3f s: %.3f Mframes/s (not-taken retries included)%s%s\n",
              static_cast<unsigned long long>(sent), secs, static_cast<double>(sent) / secs / 1e6,
              st.ok() ? "" : "; close: ", st.ok() ? "" : st.to_string().c_str());
  return sent == count ? 0 : 1;
}
bool pin_to(int cpu) {
  if (cpu < 0) return true;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) == 0) return true;
  std::perror("sched_setaffinity");
  return false;
}

// Collects the pings (or echoes) delivered by one poll, by number (the echo
// must not transmit from inside the poll: the port reuses its burst array
// for both).
struct Arrivals : FrameSink {
  Marker want = kData;
  std::uint64_t frames = 0, ends = 0;
  std::uint32_t last_seq = 0;
  std::vector<std::uint32_t> seqs;
  void on_frame(std::span<const std::uint8_t> f) noexcept override {
    const Marker m = marker_of(f);
    if (m == kEnd) ++ends;
    if (m != want) return;
    ++frames;
    last_seq = seq_of(f);
    if (seqs.size() < seqs.capacity()) seqs.push_back(last_seq);
  }
};

int echo_receiver(const Ends& ends, std::size_t payload, bool with_ack) {
  PumpPort port = open_pump_port("echo", ends.port);
  if (!port.link) return 1;
  FrameBytes bytes(payload, kEcho);
  const FrameBytes ack(kAckFrame - kHeaders, kAck);
  Arrivals a;
  a.seqs.reserve(64);
  if (ends.lossy && !announce_until(port, a, [&] { return a.frames > 0 || a.ends > 0; })) return 1;
  auto answer = [&] {
    for (std::uint32_t seq : a.seqs) {
      if (bytes.body.size() >= 4) std::memcpy(bytes.body.data(), &seq, 4);
      const TxFrame f = bytes.frame();
      send_hop(*port.link, *port.pl, f, with_ack ? &ack : nullptr);
    }
    a.seqs.clear();
  };
  answer();  // the pings that ended the handshake
  const auto give_up = Clock::now() + std::chrono::seconds(120);
  auto last = Clock::now();
  while (port.up() && Clock::now() < give_up) {
    if (port.link->poll(a, 64) > 0) last = Clock::now();
    answer();
    if (ends.lossy && (a.ends > 0 || Clock::now() - last > std::chrono::seconds(5))) break;
  }
  (void)port.pl->close();
  return 0;
}

int pingpong_sender(const Ends& ends, std::size_t payload, std::uint64_t count, bool with_ack) {
  PumpPort port = open_pump_port("ping", ends.port);
  if (!port.link) return 1;
  if (ends.lossy && !wait_for_receiver(port)) return 1;
  FrameBytes bytes(payload, kData);
  const FrameBytes ack(kAckFrame - kHeaders, kAck);
  const std::uint64_t warmup = count / 10;
  std::vector<double> half_us;
  half_us.reserve(count);
  Arrivals a;
  a.want = kEcho;
  // A ping or its echo lost on a kernel interface is sent again after
  // 20 ms and that round is not timed; 100 such losses end the run. memif
  // loses nothing: there the ping waits for its echo (a descheduled echo
  // process is slow, not gone).
  const auto resend_after = ends.lossy ? std::chrono::milliseconds(20) : std::chrono::milliseconds(120000);
  std::uint64_t lost = 0;
  const auto give_up = Clock::now() + std::chrono::seconds(120);
  bool ok = true;
  for (std::uint64_t i = 0; i < warmup + count && ok; ++i) {
    const auto seq = static_cast<std::uint32_t>(i + 1);
    if (bytes.body.size() >= 4) std::memcpy(bytes.body.data(), &seq, 4);
    const TxFrame f = bytes.frame();
    bool timed = true;
    for (;;) {
      const auto t0 = Clock::now();
      send_hop(*port.link, *port.pl, f, with_ack ? &ack : nullptr);
      const std::uint64_t before = a.frames;
      bool answered = false;
      while (!answered) {
        if (port.link->poll(a, 64) > 0 && a.frames > before) {
          // Payloads under 4 bytes carry no number: any echo answers.
          answered = bytes.body.size() < 4 || a.last_seq == seq;
        }
        if (!port.up() || Clock::now() > give_up || Clock::now() - t0 > resend_after) break;
      }
      if (answered) {
        if (timed && i >= warmup) {
          half_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / 2);
        }
        break;
      }
      timed = false;
      if (!ends.lossy || ++lost > 100 || !port.up() || Clock::now() > give_up) {
        ok = false;
        break;
      }
    }
  }
  if (ends.lossy) send_ends(port);
  rma::Status st = port.pl->close();
  if (!ok || half_us.empty()) {
    std::fprintf(stderr, "ping: the echo stopped after %zu of %llu round trips\n", half_us.size(),
                 static_cast<unsigned long long>(count));
    return 1;
  }
  double sum = 0;
  for (double v : half_us) sum += v;
  const double avg = sum / static_cast<double>(half_us.size());
  std::nth_element(half_us.begin(), half_us.begin() + static_cast<std::ptrdiff_t>(half_us.size() / 2), half_us.end());
  const double typical = half_us[half_us.size() / 2];
  const std::string behind = with_ack ? " behind a " + std::to_string(kAckFrame) + " B ACK frame each way" : "";
  std::printf("pingpong payload %zu B frame %zu B%s: %zu round trips: half round trip typical %.3f us, average %.3f us%s%s\n",
              payload, payload + kHeaders, behind.c_str(), half_us.size(), typical, avg, st.ok() ? "" : "; close: ",
              st.ok() ? "" : st.to_string().c_str());
  if (lost != 0) std::printf("ping: %llu pings or echoes lost and sent again (not timed)\n",
                             static_cast<unsigned long long>(lost));
  return 0;
}

// Enters network namespace `name` (as `ip netns exec` does for a command).
bool enter_netns(const std::string& name) {
  const std::string path = "/var/run/netns/" + name;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
    std::fprintf(stderr, "rx: cannot enter network namespace %s (%s): %s\n", name.c_str(), path.c_str(),
                 std::strerror(errno));
    if (fd >= 0) close(fd);
    return false;
  }
  close(fd);
  return true;
}

constexpr const char* kUsage =
    "usage: %s [--size PAYLOAD] [--count N] [--socket NAME] [--pingpong [--with-ack]] [--cpus TX,RX]\n"
    "          [--port SPEC --peer-port SPEC [--peer-netns NAME]]\n";
}  // namespace

int main(int argc, char** argv) {
  std::size_t payload = 1024;
  std::uint64_t count = 1000000;
  std::string sock = "rma-pump-" + std::to_string(getpid());
  bool rx = false, pingpong = false, with_ack = false;
  int tx_cpu = -1, rx_cpu = -1;
  Ends ends;
  std::string netns;  // the receiver's, as the parent passes it on
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--size") payload = std::stoul(next());
    else if (a == "--count") count = std::stoull(next());
    else if (a == "--socket") sock = next();
    else if (a == "--rx") rx = true;
    else if (a == "--pingpong") pingpong = true;
    else if (a == "--with-ack") with_ack = true;
    else if (a == "--port") ends.port = next();
    else if (a == "--peer-port") ends.peer_port = next();
    else if (a == "--peer-netns") ends.peer_netns = next();
    else if (a == "--netns") netns = next();
    else if (a == "--cpus") {
      const std::string v = next();
      if (std::sscanf(v.c_str(), "%d,%d", &tx_cpu, &rx_cpu) != 2 || tx_cpu < 0 || rx_cpu < 0) {
        std::fprintf(stderr, "--cpus wants TX,RX (two CPU numbers), got '%s'\n", v.c_str());
        return 2;
      }
    } else if (a == "--rx-cpu") rx_cpu = std::stoi(next());
    else {
      std::fprintf(stderr, kUsage, argv[0]);
      return 2;
    }
  }
  if (payload + kHeaders > 9216) {
    std::fprintf(stderr, "payload too large (max %zu)\n", 9216 - kHeaders);
    return 2;
  }
  if (pingpong && count == 0) {
    std::fprintf(stderr, "--pingpong needs --count of at least 1\n");
    return 2;
  }
  if (with_ack && !pingpong) {
    std::fprintf(stderr, "--with-ack is a --pingpong option (an ACK-sized frame before each ping and echo)\n");
    return 2;
  }
  if (!rx && ends.port.empty() != ends.peer_port.empty()) {
    std::fprintf(stderr, "--port and --peer-port go together (the two ends of one link)\n");
    return 2;
  }
  if (!rx && !ends.peer_netns.empty() && ends.port.empty()) {
    std::fprintf(stderr, "--peer-netns needs --port and --peer-port (a memif link stays in one namespace)\n");
    return 2;
  }
  const bool memif = ends.port.empty();
  if (memif) {
    // The parent serves the memif link; wait for the other end 20 s.
    ends.port = "memif:" + std::string(rx ? "client" : "server") + ":" + sock + ",wait=20000";
    ends.peer_port = "memif:client:" + sock + ",wait=20000";
  }
  ends.lossy = ends.port.rfind("memif:", 0) != 0;
  if (rx) {
    if (!netns.empty() && !enter_netns(netns)) return 1;
    if (!pin_to(rx_cpu)) return 1;
    return pingpong ? echo_receiver(ends, payload, with_ack) : receiver(ends, payload, count);
  }
  if (!pin_to(tx_cpu)) return 1;

  std::vector<std::string> args = {"/proc/self/exe", "--rx", "--size", std::to_string(payload), "--count",
                                   std::to_string(count), "--socket", sock};
  if (pingpong) args.push_back("--pingpong");
  if (with_ack) args.push_back("--with-ack");
  if (!memif) {
    args.insert(args.end(), {"--port", ends.peer_port});
    if (!ends.peer_netns.empty()) args.insert(args.end(), {"--netns", ends.peer_netns});
  }
  if (rx_cpu >= 0) {
    args.push_back("--rx-cpu");
    args.push_back(std::to_string(rx_cpu));
  }
  std::vector<char*> cargv;
  for (auto& s : args) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  pid_t child = -1;
  if (posix_spawn(&child, "/proc/self/exe", nullptr, nullptr, cargv.data(), environ) != 0) {
    std::perror("posix_spawn");
    return 1;
  }
  g_receiver = child;
  int rc = pingpong ? pingpong_sender(ends, payload, count, with_ack) : sender(ends, payload, count);
  if (g_receiver < 0) return rc;  // reaped while the sender waited for it
  int status = 0;
  waitpid(child, &status, 0);
  const int rrc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return rc != 0 ? rc : rrc;
}
