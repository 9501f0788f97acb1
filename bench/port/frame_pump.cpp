// rma_frame_pump: raw frame throughput over memif between two processes,
// through the same port layer and EAL defaults as librma.
//
//   rma_frame_pump [--size PAYLOAD] [--count N] [--socket NAME] [--pingpong] [--cpus TX,RX]
//
// The parent spawns itself as the receiver (memif client, counts frames),
// opens the memif server and sends N frames of PAYLOAD + 58 bytes (Eth 14 +
// IPv4 20 + UDP 8 + BTH 12 + ICRC 4, as a RoCE v2 frame would be) as fast as
// the link takes them, then closes with the FIN handshake. The receiver
// times first to last frame and prints frames/s and payload GB/s.
//
// --pingpong: the raw link's latency instead. The parent sends one frame and
// waits for the child's echo, N times (after N/10 untimed warm-up rounds),
// both sides busy-polling as the RDMA latency tools do; it prints the
// median ("typical", as perftest) and average half round trip.
//
// --cpus TX,RX pins the sending (parent) process to CPU TX and the receiving
// one to CPU RX, as bench/port/softroce_vs_pump.sh -P pins the RDMA tools.
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
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

// One end of the memif link: "memif:client" or "memif:server"; null after
// printing why when the port does not open.
struct PumpPort {
  std::unique_ptr<Link> link;
  port::PortLink* pl = nullptr;
};
PumpPort open_pump_port(const char* who, const char* role, const std::string& sock) {
  auto r = open_port(std::string("memif:") + role + ":" + sock + ",wait=20000");
  if (!r.ok()) {
    std::fprintf(stderr, "%s: %s\n", who, r.status().to_string().c_str());
    return {};
  }
  PumpPort p{std::move(r).value(), nullptr};
  p.pl = dynamic_cast<port::PortLink*>(p.link.get());
  return p;
}

// The bytes of a frame with `payload` bytes between the headers (IPv4
// ethertype, the rest filled with `fill`) and a 4-byte trailer.
struct FrameBytes {
  std::vector<std::uint8_t> head, body, tail;
  FrameBytes(std::size_t payload, std::uint8_t fill) : head(kHeaders - 4, fill), body(payload, 0x5a), tail(4, 0xee) {
    head[12] = 0x08;
    head[13] = 0x00;
  }
  TxFrame frame() const { return TxFrame{head, body, tail}; }
};

struct Counter : FrameSink {
  std::size_t expect = 0;
  std::uint64_t frames = 0, bytes = 0, wrong_size = 0, first_wrong = 0;
  Clock::time_point first{}, last{};
  void on_frame(std::span<const std::uint8_t> f) noexcept override {
    if (frames == 0) first = Clock::now();
    ++frames;
    bytes += f.size();
    if (f.size() != expect) {
      if (wrong_size++ == 0) first_wrong = f.size();
    }
  }
};

int receiver(const std::string& sock, std::size_t payload, std::uint64_t count) {
  PumpPort port = open_pump_port("rx", "client", sock);
  if (!port.link) return 1;
  Counter c;
  c.expect = payload + kHeaders;
  const auto give_up = Clock::now() + std::chrono::seconds(120);
  while (port.pl->state() == port::PortState::kUp && Clock::now() < give_up) {
    if (port.link->poll(c, 64) > 0) c.last = Clock::now();
  }
  (void)port.pl->close();
  const double secs = std::chrono::duration<double>(c.last - c.first).count();
  const double fps = secs > 0 ? static_cast<double>(c.frames) / secs : 0;
  std::printf("rx payload %zu B frame %zu B: %llu/%llu frames in %.3f s: %.3f Mframes/s, payload %.3f GB/s, "
              "frames %.3f Gb/s\n",
              payload, payload + kHeaders, static_cast<unsigned long long>(c.frames),
              static_cast<unsigned long long>(count), secs, fps / 1e6, fps * static_cast<double>(payload) / 1e9,
              fps * static_cast<double>(payload + kHeaders) * 8 / 1e9);
  if (c.wrong_size != 0) {
    std::printf("rx: %llu frames had the wrong size (first: %llu B, expected %zu B)\n",
                static_cast<unsigned long long>(c.wrong_size), static_cast<unsigned long long>(c.first_wrong),
                c.expect);
  }
  return c.frames == count && c.wrong_size == 0 ? 0 : 1;
}

int sender(const std::string& sock, std::size_t payload, std::uint64_t count) {
  PumpPort port = open_pump_port("tx", "server", sock);
  if (!port.link) return 1;
  const FrameBytes bytes(payload, 0x11);
  std::vector<TxFrame> batch(32, bytes.frame());
  std::uint64_t sent = 0;
  const auto t0 = Clock::now();
  while (sent < count && port.pl->state() == port::PortState::kUp) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(batch.size(), count - sent));
    sent += port.link->transmit(std::span<const TxFrame>(batch.data(), n));
  }
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
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

// Counts frames delivered by one poll (the echo must not transmit from
// inside the poll: the port reuses its burst array for both).
struct Arrivals : FrameSink {
  std::uint64_t frames = 0;
  void on_frame(std::span<const std::uint8_t>) noexcept override { ++frames; }
};

void send_one(Link& link, port::PortLink& pl, const TxFrame& f) {
  while (link.transmit(std::span<const TxFrame>(&f, 1)) == 0 && pl.state() != port::PortState::kClosed) {
  }
}

int echo_receiver(const std::string& sock, std::size_t payload) {
  PumpPort port = open_pump_port("echo", "client", sock);
  if (!port.link) return 1;
  const FrameBytes bytes(payload, 0x22);
  const TxFrame f = bytes.frame();
  Arrivals a;
  const auto give_up = Clock::now() + std::chrono::seconds(120);
  while (port.pl->state() == port::PortState::kUp && Clock::now() < give_up) {
    const std::uint64_t before = a.frames;
    port.link->poll(a, 64);
    for (std::uint64_t k = before; k < a.frames; ++k) send_one(*port.link, *port.pl, f);
  }
  (void)port.pl->close();
  return 0;
}

int pingpong_sender(const std::string& sock, std::size_t payload, std::uint64_t count) {
  PumpPort port = open_pump_port("ping", "server", sock);
  if (!port.link) return 1;
  const FrameBytes bytes(payload, 0x11);
  const TxFrame f = bytes.frame();
  const std::uint64_t warmup = count / 10;
  std::vector<double> half_us;
  half_us.reserve(count);
  Arrivals a;
  const auto give_up = Clock::now() + std::chrono::seconds(120);
  bool ok = true;
  for (std::uint64_t i = 0; i < warmup + count; ++i) {
    const std::uint64_t want = a.frames + 1;
    const auto t0 = Clock::now();
    send_one(*port.link, *port.pl, f);
    while (a.frames < want) {
      port.link->poll(a, 64);
      if (port.pl->state() != port::PortState::kUp || Clock::now() > give_up) break;
    }
    if (a.frames < want) {
      ok = false;
      break;
    }
    const auto t1 = Clock::now();
    if (i >= warmup) half_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / 2);
  }
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
  std::printf("pingpong payload %zu B frame %zu B: %zu round trips: half round trip typical %.3f us, average %.3f us%s%s\n",
              payload, payload + kHeaders, half_us.size(), typical, avg, st.ok() ? "" : "; close: ",
              st.ok() ? "" : st.to_string().c_str());
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  std::size_t payload = 1024;
  std::uint64_t count = 1000000;
  std::string sock = "rma-pump-" + std::to_string(getpid());
  bool rx = false, pingpong = false;
  int tx_cpu = -1, rx_cpu = -1;
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
    else if (a == "--cpus") {
      const std::string v = next();
      if (std::sscanf(v.c_str(), "%d,%d", &tx_cpu, &rx_cpu) != 2 || tx_cpu < 0 || rx_cpu < 0) {
        std::fprintf(stderr, "--cpus wants TX,RX (two CPU numbers), got '%s'\n", v.c_str());
        return 2;
      }
    } else if (a == "--rx-cpu") rx_cpu = std::stoi(next());
    else {
      std::fprintf(stderr, "usage: %s [--size PAYLOAD] [--count N] [--socket NAME] [--pingpong] [--cpus TX,RX]\n", argv[0]);
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
  if (rx) {
    if (!pin_to(rx_cpu)) return 1;
    return pingpong ? echo_receiver(sock, payload) : receiver(sock, payload, count);
  }
  if (!pin_to(tx_cpu)) return 1;

  std::vector<std::string> args = {"/proc/self/exe", "--rx", "--size", std::to_string(payload), "--count",
                                   std::to_string(count), "--socket", sock};
  if (pingpong) args.push_back("--pingpong");
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
  int rc = pingpong ? pingpong_sender(sock, payload, count) : sender(sock, payload, count);
  int status = 0;
  waitpid(child, &status, 0);
  const int rrc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return rc != 0 ? rc : rrc;
}
