// BW tests (perftest's run_iter_bw): the client keeps up to tx-depth
// WRITEs/READs/atomics outstanding per QP, signals every cq-mod-th one and
// polls completions in batches; the server is passive (one-sided) and
// prints the client's results.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "session.hpp"

namespace rma::perftest {
namespace {

constexpr int kPollBatch = 16;  // CTX_POLL_BATCH

double unit_factor(bool gbits) { return gbits ? 125000000.0 : static_cast<double>(0x100000); }

struct Loop {
  Session& s;
  std::uint64_t size;
  std::vector<Sge> sges;
  std::vector<WorkRequest> wrs;   // post_list per QP, QP i's at [i * post_list, (i + 1) * post_list)
  std::uint32_t list = 1;         // -l
  std::vector<std::uint64_t> scnt, ccnt, since_signal;
  std::uint64_t totscnt = 0, totccnt = 0;
  std::vector<std::int64_t> posted, completed;
  bool record = true;      // iterations mode: keep timestamps
  bool no_peak = false;
  std::uint64_t total = 0;
  std::int64_t last_completion = 0;
  std::int64_t last_progress = 0;
  std::uint32_t inline_bit = 0;  // kWrInline when this size goes inline
  Completion wc[kPollBatch];

  Loop(Session& session, std::uint64_t msg_size) : s(session), size(msg_size) {
    const Options& o = s.opt;
    const std::size_t nq = s.qps.size();
    list = std::max<std::uint32_t>(1, o.post_list);
    sges.resize(nq);
    wrs.resize(nq * list);
    scnt.assign(nq, 0);
    ccnt.assign(nq, 0);
    since_signal.assign(nq, 0);
    for (std::size_t i = 0; i < nq; ++i) {
      QpCtx& q = s.qps[i];
      Sge& sge = sges[i];
      WorkRequest& wr = wrs[i * list];
      sge.addr = reinterpret_cast<std::uint64_t>(q.local_buf);
      sge.lkey = s.reg.lkey();
      wr.sgl = {&sge, 1};
      wr.remote_addr = q.remote.vaddr;
      wr.rkey = q.remote.rkey;
      switch (o.tool.verb) {
        case Verb::kWrite:
          wr.opcode = Opcode::kRdmaWrite;
          sge.length = static_cast<std::uint32_t>(size);
          break;
        case Verb::kRead:
          wr.opcode = Opcode::kRdmaRead;
          sge.length = static_cast<std::uint32_t>(size);
          break;
        case Verb::kAtomic:
          set_perftest_atomic(wr, sge, o.atomic_type);
          break;
      }
      for (std::uint32_t k = 1; k < list; ++k) wrs[i * list + k] = wr;  // the same request, one SGE
    }
    no_peak = o.no_peak;
    inline_bit = (o.tool.verb == Verb::kWrite && o.inline_size > 0 && size <= o.inline_size)
                     ? static_cast<std::uint32_t>(kWrInline)
                     : 0u;
  }

  // Posts `n` (1..list) requests to QP i in one call (perftest's -l), the
  // last one signalled when `signal_last`; a signalled completion's wr_id
  // carries how many requests it covers.
  void post(std::size_t i, bool signal_last, std::uint32_t n = 1) {
    WorkRequest* first = &wrs[i * list];
    // With -N only the first post's time is kept: read the clock for it
    // alone (a read per post cost the shm WRITE rate a third of its posts).
    const bool stamp = record && (!no_peak || totscnt == 0);
    const std::int64_t t = stamp ? now_ns() : 0;
    for (std::uint32_t k = 0; k < n; ++k) {
      WorkRequest& wr = first[k];
      const bool signaled = signal_last && k + 1 == n;
      const std::uint64_t count = since_signal[i] + 1;
      wr.flags = (signaled ? kWrSignaled : 0u) | inline_bit;
      wr.wr_id = (static_cast<std::uint64_t>(i) << 32) | (signaled ? count : 0);
      if (stamp && (!no_peak || k == 0)) posted[no_peak ? 0 : totscnt + k] = t;
      since_signal[i] = signaled ? 0 : count;
    }
    PostResult pr = s.qps[i].qp->post({first, n});
    if (!pr.ok()) post_failed(i, pr);
    scnt[i] += n;
    totscnt += n;
  }

  // Posts single requests to QP i while it has fewer than `depth`
  // outstanding and fewer than `iters` posted: post()'s work for a list of
  // one, with the counters in locals, since every post is a call the
  // compiler cannot see through (it would reload and store each counter
  // around it: a fifth of an 8 B shm WRITE's instructions). Every
  // cq_mod-th request (since_signal counts the ones since the last
  // signaled) and the last one are signaled, as perftest's
  // (scnt + 1) % cq_mod == 0.
  void post_singles(std::size_t i, std::uint64_t iters, std::uint64_t depth, std::uint64_t cq_mod) {
    QueuePair& qp = *s.qps[i].qp;
    WorkRequest& wr = wrs[i * list];
    const std::uint64_t qp_bits = static_cast<std::uint64_t>(i) << 32;
    const std::uint64_t done = ccnt[i];
    const bool stamp_each = record && !no_peak;
    std::uint64_t sent = scnt[i], since = since_signal[i], tot = totscnt;
    while (sent < iters && sent - done < depth) {
      const std::uint64_t count = since + 1;
      const bool signaled = count == cq_mod || sent == iters - 1;
      wr.flags = (signaled ? kWrSignaled : 0u) | inline_bit;
      wr.wr_id = qp_bits | (signaled ? count : 0);
      if (record && (stamp_each || tot == 0)) posted[stamp_each ? tot : 0] = now_ns();
      since = signaled ? 0 : count;
      PostResult pr = qp.post({&wr, 1});
      if (!pr.ok()) [[unlikely]] {
        totscnt = tot;
        post_failed(i, pr);
      }
      ++sent;
      ++tot;
    }
    scnt[i] = sent;
    since_signal[i] = since;
    totscnt = tot;
  }

  [[noreturn]] void post_failed(std::size_t i, const PostResult& pr) {
    char qpn[32];
    std::snprintf(qpn, sizeof qpn, "%#x", s.qps[i].qp->qp_num());
    fatal(s, std::string("post on QP ") + qpn + " failed: " + pr.to_status().to_string());
  }

  // Polls one batch; returns how many completions arrived.
  int poll() {
    int n = s.cq->poll({wc, kPollBatch});
    if (n < 0) fatal(s, std::string("completion queue overrun: ") + s.cq->overrun_reason());
    if (n == 0) return 0;
    const std::int64_t t = now_ns();
    for (int k = 0; k < n; ++k) {
      const Completion& c = wc[k];
      if (c.status != WcStatus::kSuccess) fatal(s, completion_error(c));
      const std::size_t i = static_cast<std::size_t>(c.wr_id >> 32);
      const std::uint64_t cnt = c.wr_id & 0xffffffffu;
      if (i >= ccnt.size() || cnt == 0) fatal(s, "unexpected completion (wr_id " + std::to_string(c.wr_id) + ")");
      ccnt[i] += cnt;
      const std::uint64_t prev = totccnt;
      totccnt += cnt;
      if (record) {
        if (!no_peak) {
          for (std::uint64_t j = prev; j < totccnt && j < total; ++j) completed[j] = t;
        } else if (totccnt >= total) {
          completed[0] = t;
        }
      }
    }
    last_completion = t;
    last_progress = t;
    return n;
  }

  void check_stall(std::uint64_t& idle) {
    if (++idle % 4096 != 0) return;
    const std::int64_t t = now_ns();
    keep_alive(s);
    const std::int64_t limit = std::max<std::int64_t>(10000, s.opt.oob_timeout_ms) * 1000000;
    if (t - last_progress > limit) {
      fatal(s, "no completion for " + std::to_string(limit / 1000000000) + " s with " +
                   std::to_string(totscnt - totccnt) + " work requests outstanding");
    }
  }

  BwResult run_iterations() {
    const Options& o = s.opt;
    const std::size_t nq = s.qps.size();
    total = o.iters * nq;
    posted.assign(no_peak ? 1 : total, 0);
    completed.assign(no_peak ? 1 : total, 0);
    last_progress = now_ns();
    std::uint64_t idle = 0;
    const std::uint64_t iters = o.iters;
    const std::uint64_t depth = o.tx_depth;
    const std::uint64_t cq_mod = o.cq_mod;
    while (totscnt < total || totccnt < total) {
      for (std::size_t i = 0; i < nq; ++i) {
        if (list > 1) {
          // Whole lists while they fit the send queue; each signalled at its end.
          while (scnt[i] < o.iters && scnt[i] - ccnt[i] + list <= o.tx_depth) {
            post(i, true, static_cast<std::uint32_t>(std::min<std::uint64_t>(list, o.iters - scnt[i])));
          }
          continue;
        }
        post_singles(i, iters, depth, cq_mod);
      }
      if (totccnt < totscnt && poll() == 0) check_stall(idle);
    }
    return compute_bw(posted, completed, size, total, o.cq_mod, no_peak, o.report_gbits);
  }

  BwResult run_duration() {
    const Options& o = s.opt;
    const std::size_t nq = s.qps.size();
    record = false;
    const std::int64_t start = now_ns();
    const std::int64_t end = start + static_cast<std::int64_t>(o.duration) * 1000000000;
    last_progress = start;
    last_completion = start;
    std::uint64_t idle = 0, spins = 0;
    for (;;) {
      if ((++spins & 63) == 0 && now_ns() >= end) break;
      for (std::size_t i = 0; i < nq; ++i) {
        if (list > 1) {
          while (scnt[i] - ccnt[i] + list <= o.tx_depth) post(i, true, list);
          continue;
        }
        post_singles(i, ~std::uint64_t{0}, o.tx_depth, o.cq_mod);
      }
      if (poll() == 0) check_stall(idle);
    }
    // Stop: cover the unsignalled tail of every QP with one signalled request, then drain.
    for (std::size_t i = 0; i < nq; ++i) {
      if (since_signal[i] == 0) continue;
      while (scnt[i] - ccnt[i] >= o.tx_depth) {
        if (poll() == 0) check_stall(idle);
      }
      post(i, true);
    }
    while (totccnt < totscnt) {
      if (poll() == 0) check_stall(idle);
    }
    return compute_bw_duration(size, totccnt, last_completion - start, o.report_gbits);
  }
};

BwResult convert_units(BwResult r, bool from_gbits, bool to_gbits) {
  if (from_gbits == to_gbits) return r;
  const double k = unit_factor(from_gbits) / unit_factor(to_gbits);
  r.bw_peak *= k;
  r.bw_avg *= k;
  return r;
}

// perftest's flow: the client measures every size without talking to the
// server, then both swap keys (the server waits there for the run to end),
// swap the BW report (the server prints the client's) and close.
void run_bw_perftest(Session& s) {
  const Options& o = s.opt;
  std::vector<BwResult> results;
  BwResult mine;  // in perftest's unit, MiB/s
  if (!o.is_server()) {
    for (std::uint64_t size : o.sizes(s.dev->caps().max_msg_size)) {
      Loop loop(s, size);
      BwResult r = o.duration_mode() ? loop.run_duration() : loop.run_iterations();
      std::printf("%s", format_bw_row(r, o.report_gbits).c_str());
      std::fflush(stdout);
      results.push_back(r);
      mine = convert_units(r, o.report_gbits, false);
    }
  }
  // The server waits for the client's whole run: bounded, generously.
  const auto limit = std::chrono::milliseconds(o.oob_timeout_ms) +
                     std::chrono::seconds(o.duration_mode() ? o.duration * 30 + 60 : 600);
  const wire::Key key = perftest_key(s.qps[0].local);
  if (auto k = s.perftest->keys_after(key, s.perftest_gid, limit); !k.ok()) fatal(s, k.status().message());
  auto theirs = s.perftest->bw_report(mine);
  if (!theirs.ok()) fatal(s, theirs.status().message());
  if (o.is_server()) {
    const BwResult r = convert_units(*theirs, false, o.report_gbits);
    std::printf("%s", format_bw_row(r, o.report_gbits).c_str());
    std::fflush(stdout);
    results.push_back(r);
  }
  if (Status st = s.perftest->close(key, s.perftest_gid); !st.ok()) fatal(s, st.message());
  write_json_file(s, results, {}, {});
}

}  // namespace

void run_bw(Session& s) {
  const Options& o = s.opt;
  std::printf("%s", format_bw_table_header(o.report_gbits).c_str());
  std::fflush(stdout);
  std::vector<BwResult> results;
  if (s.perftest) {
    run_bw_perftest(s);
    return;
  }
  for (std::uint64_t size : o.sizes(s.dev->caps().max_msg_size)) {
    progress_sync(s);
    BwResult r;
    if (o.is_server()) {
      const std::string payload = passive_wait(s, FrameType::kReport);
      const bool their_gbits = !payload.empty() && payload[0] == 'G';
      auto decoded = decode_bw_result(payload.size() > 2 ? payload.substr(2) : std::string());
      if (!decoded.ok()) fatal(s, decoded.status().message());
      r = convert_units(*decoded, their_gbits, o.report_gbits);
    } else {
      Loop loop(s, size);
      r = o.duration_mode() ? loop.run_duration() : loop.run_iterations();
      const std::string payload = std::string(o.report_gbits ? "G " : "M ") + encode_bw_result(r);
      if (Status st = s.oob.send(FrameType::kReport, payload); !st.ok()) fatal(s, st.message());
    }
    std::printf("%s", format_bw_row(r, o.report_gbits).c_str());
    std::fflush(stdout);
    results.push_back(r);
  }
  write_json_file(s, results, {}, {});
}

}  // namespace rma::perftest
