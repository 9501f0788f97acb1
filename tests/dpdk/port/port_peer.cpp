// rma_port_peer: the other end of the multi-process port tests. Enters a
// network namespace (optional) BEFORE the EAL starts, opens a port and
//   echo   : sends back every test frame until FIN / link down / STOP frame / timeout
//   ping   : for each size x rounds sends a frame and waits for its echo, byte-compares
//   count  : expects --count intact frames of --size, then a FIN
//   stream : sends frames of --size as fast as it can until killed or the link goes
//   late-server : a memif server on --socket NAME (ethdev directly, not
//            open_port) that starts only once it has refused a client's
//            handshake, then echoes test frames until a STOP frame
// then closes the port (memif: FIN handshake). Exit 0 = success.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "port/port.hpp"
#include "port/port_link.hpp"
#include "raw_memif.hpp"
#include "test_frames.hpp"

using namespace rma::roce;
using namespace rma::roce::testing;
using Clock = std::chrono::steady_clock;

namespace {
std::atomic<bool> g_stop{false};
void on_term(int) { g_stop = true; }

struct EchoSink : FrameSink {
  Link* link = nullptr;
  std::uint64_t echoed = 0, failed = 0;
  bool stop = false;
  void on_frame(std::span<const std::uint8_t> f) noexcept override {
    if (!is_test_frame(f)) return;
    if (frame_seq(f) == kStopSeq) {
      stop = true;
      return;
    }
    TxFrame tx{f, {}, {}};
    const auto deadline = Clock::now() + std::chrono::milliseconds(200);
    while (link->transmit(std::span<const TxFrame>(&tx, 1)) == 0) {
      if (Clock::now() >= deadline) {
        ++failed;
        return;
      }
    }
    ++echoed;
  }
};

struct MatchSink : FrameSink {
  std::uint32_t want_seq = 0;
  const std::vector<std::uint8_t>* want = nullptr;
  bool matched = false, mismatch = false;
  void on_frame(std::span<const std::uint8_t> f) noexcept override {
    if (!is_test_frame(f) || frame_seq(f) != want_seq) return;
    if (f.size() == want->size() && std::memcmp(f.data(), want->data(), f.size()) == 0) matched = true;
    else mismatch = true;
  }
};

// DPDK 22.11's memif server refuses a handshake until it has started (see
// DpdkPort::connect_memif_client); this server waits to do so until its
// log says it has refused one.
int late_server(const std::string& sock, int timeout_ms) {
  if (rma::Status st = ensure_eal(); !st.ok()) {
    std::fprintf(stderr, "peer: %s\n", st.to_string().c_str());
    return 9;
  }
  MemifLogCapture log;
  RawMemifServer server(sock);
  if (!server.created()) {
    std::fprintf(stderr, "peer: cannot create a memif server on %s\n", sock.c_str());
    return 5;
  }
  const auto budget = std::chrono::milliseconds(timeout_ms);
  if (!log.wait_for("ID 0 not found", budget)) {
    std::fprintf(stderr, "peer: no client was refused; DPDK logged:\n%s", log.contents().c_str());
    return 6;
  }
  if (!server.start()) {
    std::fprintf(stderr, "peer: the memif server did not start\n");
    return 7;
  }
  const auto end = Clock::now() + budget;
  std::uint64_t echoed = 0;
  while (!g_stop && Clock::now() < end) {
    const std::vector<std::uint8_t> f = server.receive(std::chrono::milliseconds(10));
    if (f.empty() || !is_test_frame(f)) continue;
    if (frame_seq(f) == kStopSeq) {
      std::printf("echoed %llu\n", static_cast<unsigned long long>(echoed));
      return echoed > 0 ? 0 : 1;
    }
    server.send(f);
    ++echoed;
  }
  std::fprintf(stderr, "peer: no STOP frame within the timeout (echoed %llu)\n", static_cast<unsigned long long>(echoed));
  return 8;
}

std::vector<std::size_t> parse_sizes(const std::string& s) {
  std::vector<std::size_t> out;
  std::size_t start = 0;
  while (start < s.size()) {
    std::size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    out.push_back(std::stoul(s.substr(start, comma - start)));
    start = comma + 1;
  }
  return out;
}
}  // namespace

int main(int argc, char** argv) {
  std::string spec, mode = "echo", netns, sizes = "64,1082,4154", socket;
  int rounds = 3, timeout_ms = 20000, hold_ms = 0;
  std::uint64_t expect_attached = 0;
  std::size_t size = 1082;
  std::uint64_t count = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--spec") spec = v;
    else if (k == "--mode") mode = v;
    else if (k == "--socket") socket = v;
    else if (k == "--netns") netns = v;
    else if (k == "--sizes") sizes = v;
    else if (k == "--rounds") rounds = std::stoi(v);
    else if (k == "--size") size = std::stoul(v);
    else if (k == "--count") count = std::stoull(v);
    else if (k == "--timeout-ms") timeout_ms = std::stoi(v);
    else if (k == "--hold-ms") hold_ms = std::stoi(v);  // count: wait this long before polling
    else if (k == "--expect-attached") expect_attached = std::stoull(v);  // fail with fewer frames sent attached
    else {
      std::fprintf(stderr, "peer: unknown argument %s\n", k.c_str());
      return 2;
    }
  }
  signal(SIGTERM, on_term);
  signal(SIGINT, on_term);
  if (!netns.empty()) {
    const std::string path = "/var/run/netns/" + netns;
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
      std::fprintf(stderr, "peer: cannot enter netns %s: %s\n", netns.c_str(), std::strerror(errno));
      return 3;
    }
    close(fd);
  }
  if (mode == "late-server") return late_server(socket, timeout_ms);
  auto opened = open_port(spec);
  if (!opened.ok()) {
    std::fprintf(stderr, "peer: open_port(%s): %s\n", spec.c_str(), opened.status().to_string().c_str());
    return 4;
  }
  std::unique_ptr<Link> link = std::move(opened).value();
  auto* pl = dynamic_cast<port::PortLink*>(link.get());
  const auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
  int rc = 0;

  if (mode == "echo") {
    EchoSink sink;
    sink.link = link.get();
    while (!g_stop && !sink.stop && Clock::now() < end) {
      link->poll(sink, 32);
      if (pl->state() != port::PortState::kUp && pl->state() != port::PortState::kWaiting) break;
    }
    std::printf("echoed %llu failed %llu state %s\n", static_cast<unsigned long long>(sink.echoed),
                static_cast<unsigned long long>(sink.failed), port::port_state_name(pl->state()));
    rc = sink.failed == 0 ? 0 : 1;
  } else if (mode == "ping") {
    std::uint32_t seq = 1;
    int ok = 0, bad = 0;
    for (int r = 0; r < rounds && !g_stop; ++r) {
      for (std::size_t sz : parse_sizes(sizes)) {
        auto f = make_frame(sz, seq);
        MatchSink ms;
        ms.want_seq = seq;
        ms.want = &f;
        for (int attempt = 0; attempt < 20 && !ms.matched && !ms.mismatch; ++attempt) {
          if (!send_until(*link, f, Clock::now() + std::chrono::milliseconds(500))) break;
          const auto wait = Clock::now() + std::chrono::milliseconds(200);
          while (!ms.matched && !ms.mismatch && Clock::now() < wait) link->poll(ms, 32);
        }
        if (ms.matched) ++ok;
        else {
          ++bad;
          std::fprintf(stderr, "peer: size %zu seq %u: %s\n", sz, seq, ms.mismatch ? "bytes differ" : "no echo");
        }
        ++seq;
      }
    }
    // STOP for echoers that do not see a FIN (af_packet).
    auto stop = make_frame(64, kStopSeq);
    for (int i = 0; i < 3; ++i) (void)send_until(*link, stop, Clock::now() + std::chrono::milliseconds(100));
    std::printf("ping ok %d bad %d\n", ok, bad);
    rc = bad == 0 && ok > 0 ? 0 : 1;
  } else if (mode == "count") {
    // Counts test frames until FIN; every one must be --size bytes and intact.
    struct Check : FrameSink {
      std::size_t size = 0;
      std::uint64_t good = 0, bad = 0;
      std::vector<std::uint8_t> want;
      void on_frame(std::span<const std::uint8_t> f) noexcept override {
        if (f.size() == want.size() && std::memcmp(f.data(), want.data(), f.size()) == 0) ++good;
        else ++bad;
      }
    } check;
    check.want = make_frame(size, 9);
    if (hold_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
    while (!g_stop && Clock::now() < end && (pl->state() == port::PortState::kUp || pl->state() == port::PortState::kWaiting)) {
      link->poll(check, 64);
    }
    std::printf("count good %llu bad %llu\n", static_cast<unsigned long long>(check.good),
                static_cast<unsigned long long>(check.bad));
    rc = check.bad == 0 && check.good == count && pl->state() == port::PortState::kPeerClosed ? 0 : 1;
  } else if (mode == "stream") {
    auto f = make_frame(size, 7);
    std::vector<TxFrame> batch(32, as_tx(f));
    std::uint64_t sent = 0;
    while (!g_stop && Clock::now() < end && pl->state() == port::PortState::kUp) {
      sent += link->transmit(batch);
      CountSink drain;
      link->poll(drain, 32);
    }
    std::printf("streamed %llu\n", static_cast<unsigned long long>(sent));
  } else {
    std::fprintf(stderr, "peer: unknown mode %s\n", mode.c_str());
    rc = 2;
  }
  rma::Status st = pl->close();
  if (!st.ok()) std::fprintf(stderr, "peer: close: %s\n", st.to_string().c_str());
  auto c = pl->port_counters();
  if (c.tx_payload_attached < expect_attached) {
    std::fprintf(stderr, "peer: %llu frames sent with their payload attached, expected at least %llu\n",
                 static_cast<unsigned long long>(c.tx_payload_attached),
                 static_cast<unsigned long long>(expect_attached));
    rc = 1;
  }
  std::printf("tx %llu rx %llu ctl tx %llu rx %llu\n", static_cast<unsigned long long>(c.link.tx_frames),
              static_cast<unsigned long long>(c.link.rx_frames), static_cast<unsigned long long>(c.tx_control),
              static_cast<unsigned long long>(c.rx_control));
  std::fflush(stdout);
  link.reset();
  return rc;
}
