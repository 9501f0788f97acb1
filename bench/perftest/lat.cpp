// LAT tests. rma_write_lat is perftest's ping-pong (run_iter_lat_write):
// each side RDMA-WRITEs its counter into the peer's buffer and spins on the
// last byte of its own; latency is RTT/2. rma_read_lat and rma_atomic_lat
// time one READ/atomic at a time on the client (full RTT); the server is
// passive and prints the client's results.
#include <algorithm>
#include <optional>
#include <cstdio>
#include <cstring>

#include "session.hpp"

namespace rma::perftest {
namespace {

constexpr std::int64_t kSecond = 1000000000;

// The pause of a spin that reads nothing but the peer's buffer. Without it
// the CPU keeps many loads of that line in flight, and when the peer's
// write takes the line away it discards them all (a memory-ordering
// machine clear) before this side can answer: about 30 ns of a 250 ns
// half round trip over shm (alternating pinned runs, medians of 21: 0.28
// against 0.25 us at 8 B). Intel's advice for spin-wait loops.
inline void relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// A post that failed: fatal. Out of line and by value, so that a loop's
// PostResult stays in registers (stored for a call in the loop, it was two
// stores per iteration, and at 8 B each store counts).
[[noreturn, gnu::noinline, gnu::cold]] void post_failed(Session& s, Opcode opcode, PostResult pr) {
  fatal(s, std::string("post of ") + std::string(opcode_name(opcode)) + " failed: " + pr.to_status().to_string());
}

std::int64_t stall_limit_ns(const Session& s) {
  return std::max<std::int64_t>(10000, s.opt.oob_timeout_ms) * 1000000;
}

// Takes every completion waiting; fatal on errors. Returns how many.
std::uint64_t drain_cq(Session& s) {
  Completion* wc = s.polled.data();
  std::uint64_t total = 0;
  for (;;) {
    int n = s.cq->poll({wc, s.polled.size()});
    if (n < 0) fatal(s, std::string("completion queue overrun: ") + s.cq->overrun_reason());
    for (int k = 0; k < n; ++k) {
      if (wc[k].status != WcStatus::kSuccess) fatal(s, completion_error(wc[k]));
    }
    total += static_cast<std::uint64_t>(n);
    if (static_cast<std::size_t>(n) < s.polled.size()) return total;
  }
}

struct WriteLatOutcome {
  LatResult lat;
  LatDurationResult dur;
};

WriteLatOutcome write_lat(Session& s, std::uint64_t size) {
  const Options& o = s.opt;
  QpCtx& q = s.qps[0];
  const bool server = o.is_server();
  const bool duration = o.duration_mode();
  std::memset(q.target, 0, s.slot);
  std::memset(q.local_buf, 0, s.slot);
  volatile std::uint8_t* poll_buf = q.target + size - 1;
  std::uint8_t* post_buf = q.local_buf + size - 1;

  Sge sge{reinterpret_cast<std::uint64_t>(q.local_buf), static_cast<std::uint32_t>(size), s.reg.lkey()};
  WorkRequest wr;
  wr.opcode = Opcode::kRdmaWrite;
  wr.sgl = {&sge, 1};
  wr.remote_addr = q.remote.vaddr;
  wr.rkey = q.remote.rkey;
  wr.flags = kWrSignaled | ((o.inline_size > 0 && size <= o.inline_size) ? kWrInline : 0u);

  // The peer's buffers were zeroed before this size's sync.
  progress_sync(s);

  const std::uint64_t limit = duration ? UINT64_MAX : o.iters;
  std::vector<std::int64_t> stamps;
  if (!duration) stamps.resize(o.iters);
  std::uint64_t scnt = 0, rcnt = 0, ccnt = 0;
  bool peer_stopped = false;
  const std::int64_t start = now_ns();
  const std::int64_t end = start + static_cast<std::int64_t>(o.duration) * kSecond;

  // Spins until the peer's counter arrives; false when the client ended a
  // duration run. A device whose receive path runs in CQ polls (softroce)
  // is polled on every spin; otherwise the spin reads the buffer alone, as
  // perftest's does (a poll per spin delays seeing the peer's write by up
  // to a poll: 0.27 against 0.22 us over shm at 8 B), with a pause (relax()).
  const bool poll_while_waiting = s.dev->caps().target_needs_polls;
  auto wait_for = [&](std::uint8_t want) -> bool {
    std::uint64_t spins = 0;
    // The wait's start is read at its first check, not on entry: a clock
    // read costs 25 ns in a VM, a tenth of a shm half round trip.
    std::int64_t since = -1;
    while (*poll_buf != want) {
      if (poll_while_waiting) {
        ccnt += drain_cq(s);
      } else {
        relax();
      }
      if ((++spins & 0xffff) != 0) continue;
      const std::int64_t t = now_ns();
      if (since < 0) since = t;
      s.oob.heartbeat_if_due();
      Frame f;
      auto r = s.oob.poll_frame(f);
      if (!r.ok()) fatal(s, r.status().message());
      if (*r) {
        if (server && duration && f.type == FrameType::kReport) return false;
        fatal(s, std::string("OOB protocol error: unexpected ") + frame_type_name(f.type) + " from the peer");
      }
      if (t - since > stall_limit_ns(s)) {
        fatal(s, "no RDMA WRITE from the peer for " + std::to_string(stall_limit_ns(s) / kSecond) +
                     " s (waiting for message " + std::to_string(rcnt) + ")");
      }
    }
    return true;
  };

  while (scnt < limit || rcnt < limit) {
    if (rcnt < limit && (server || scnt >= 1)) {
      ++rcnt;
      if (!wait_for(static_cast<std::uint8_t>(rcnt))) {
        --rcnt;
        peer_stopped = true;
        break;
      }
    }
    if (scnt < limit) {
      if (duration && !server && now_ns() >= end) break;
      while (scnt - ccnt >= o.tx_depth) ccnt += drain_cq(s);
      *post_buf = static_cast<std::uint8_t>(++scnt);
      if (const PostResult pr = q.qp->post({&wr, 1}); !pr.ok()) [[unlikely]] post_failed(s, wr.opcode, pr);
      // Stamped after the post, as ucx_perftest's ping-pong reads its clock
      // after the send: the gap between two stamps is still one round trip,
      // but the clock read (25 ns in a VM, a tenth of a shm half round trip)
      // overlaps the peer's turn instead of delaying this side's WRITE.
      if (!duration) stamps[scnt - 1] = now_stamp();
    }
    ccnt += drain_cq(s);
  }
  const std::int64_t elapsed = now_ns() - start;
  std::int64_t since = now_ns();
  while (ccnt < scnt) {
    std::uint64_t got = drain_cq(s);
    ccnt += got;
    if (got == 0 && now_ns() - since > stall_limit_ns(s)) fatal(s, "no completion for the last RDMA WRITE");
  }
  if (duration && !server) {
    // Tells the server (spinning on its buffer) that the run is over.
    if (Status st = s.oob.send(FrameType::kReport, "stop"); !st.ok()) fatal(s, st.message());
  }
  if (duration && server && !peer_stopped) (void)passive_wait(s, FrameType::kReport);
  WriteLatOutcome out;
  if (duration) {
    out.dur = compute_lat_duration(size, scnt, elapsed, 2);
  } else {
    for (std::int64_t& t : stamps) t = stamp_to_ns(t);
    out.lat = compute_lat(stamps, size, 2);
    out.lat.iters = o.iters;
  }
  return out;
}

// One READ or atomic at a time; returns the stamps (iterations) or the count (duration).
WriteLatOutcome one_sided_lat(Session& s, std::uint64_t size) {
  const Options& o = s.opt;
  QpCtx& q = s.qps[0];
  Sge sge{reinterpret_cast<std::uint64_t>(q.local_buf), static_cast<std::uint32_t>(size), s.reg.lkey()};
  WorkRequest wr;
  wr.sgl = {&sge, 1};
  wr.remote_addr = q.remote.vaddr;
  wr.rkey = q.remote.rkey;
  wr.flags = kWrSignaled;
  const int rtt = 1;
  if (o.tool.verb == Verb::kRead) {
    wr.opcode = Opcode::kRdmaRead;
  } else {
    set_perftest_atomic(wr, sge, o.atomic_type);
  }
  const bool duration = o.duration_mode();
  std::vector<std::int64_t> stamps;
  if (!duration) stamps.resize(o.iters);
  const std::int64_t start = now_ns();
  const std::int64_t end = start + static_cast<std::int64_t>(o.duration) * kSecond;
  std::uint64_t n = 0;
  Completion c;
  for (;; ++n) {
    if (duration) {
      if ((n & 63) == 0 && now_ns() >= end) break;
    } else if (n >= o.iters) {
      break;
    }
    // A duration run reads the clock every 64 requests only, as perftest's
    // (which stops on an alarm) reads it never: a clock read here costs
    // about 10 ns (AMD EPYC guest), half of a mapped 8 B READ.
    if (!duration) stamps[n] = now_stamp();
    std::int64_t waited_from = 0;
    wr.wr_id = n;
    if (const PostResult pr = q.qp->post({&wr, 1}); !pr.ok()) [[unlikely]] post_failed(s, wr.opcode, pr);
    std::uint64_t spins = 0;
    for (;;) {
      int got = s.cq->poll({&c, 1});
      if (got < 0) fatal(s, std::string("completion queue overrun: ") + s.cq->overrun_reason());
      if (got == 1) break;
      if ((++spins & 0xffff) == 0) {
        const std::int64_t t = now_ns();
        if (waited_from == 0) waited_from = t;
        if (t - waited_from > stall_limit_ns(s)) {
          fatal(s, "no completion for " + std::string(opcode_name(wr.opcode)) + " within " +
                       std::to_string(stall_limit_ns(s) / kSecond) + " s");
        }
      }
    }
    if (c.status != WcStatus::kSuccess) fatal(s, completion_error(c));
    if ((n & 0x3ff) == 0) keep_alive(s);
  }
  WriteLatOutcome out;
  if (duration) {
    out.dur = compute_lat_duration(size, n, now_ns() - start, rtt);
  } else {
    for (std::int64_t& t : stamps) t = stamp_to_ns(t);
    out.lat = compute_lat(stamps, size, rtt);
    out.lat.iters = o.iters;
  }
  return out;
}

}  // namespace

void run_lat(Session& s) {
  const Options& o = s.opt;
  const bool duration = o.duration_mode();
  std::printf("%s", format_lat_table_header(duration).c_str());
  std::fflush(stdout);
  std::vector<LatResult> lat;
  std::vector<LatDurationResult> dur;
  for (std::uint64_t size : o.sizes(s.dev->caps().max_msg_size)) {
    WriteLatOutcome r;
    if (o.tool.verb == Verb::kWrite) {
      r = write_lat(s, size);
    } else {
      progress_sync(s);
      if (o.is_server()) {
        auto payload = std::optional<std::string>(passive_wait(s, FrameType::kReport));
        if (duration) {
          auto d = decode_lat_duration_result(*payload);
          if (!d.ok()) fatal(s, d.status().message());
          r.dur = *d;
        } else {
          auto d = decode_lat_result(*payload);
          if (!d.ok()) fatal(s, d.status().message());
          r.lat = *d;
        }
      } else {
        r = one_sided_lat(s, size);
        const std::string payload = duration ? encode_lat_duration_result(r.dur) : encode_lat_result(r.lat);
        if (Status st = s.oob.send(FrameType::kReport, payload); !st.ok()) fatal(s, st.message());
      }
    }
    if (duration) {
      std::printf("%s", format_lat_duration_row(r.dur).c_str());
      dur.push_back(r.dur);
    } else {
      std::printf("%s", format_lat_row(r.lat).c_str());
      lat.push_back(r.lat);
    }
    std::fflush(stdout);
  }
  write_json_file(s, {}, lat, dur);
}

}  // namespace rma::perftest
