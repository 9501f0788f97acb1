#include "session.hpp"

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "rma/sdk/registry.hpp"
#if RMA_PERFTEST_HAVE_VERBS
#include "rma/sdk/verbs.hpp"
#endif

namespace rma::perftest {
namespace {

constexpr std::uint32_t kConnectRetryMs = 5000;

std::string settings_string(const Options& o) {
  std::string s;
  s += "test=" + std::string(o.tool.name);
  s += " size=" + (o.all ? std::string("all") : std::to_string(o.size));
  s += " iters=" + (o.duration_mode() ? std::string("-") : std::to_string(o.iters));
  s += " duration=" + std::to_string(o.duration);
  s += " qps=" + std::to_string(o.num_qps);
  if (o.tool.verb == Verb::kAtomic) s += " atomic=" + std::string(atomic_type_name(o.atomic_type));
  return s;
}

const char* flag_of(const std::string& key) {
  if (key == "test") return "the tool";
  if (key == "size") return "-s/--size (or -a)";
  if (key == "iters") return "-n/--iters";
  if (key == "duration") return "-D/--duration";
  if (key == "qps") return "-q/--qp";
  if (key == "atomic") return "-A/--atomic_type";
  return "a setting";
}

// "" when equal, else which setting differs.
std::string compare_settings(const std::string& mine, const std::string& theirs) {
  auto split = [](const std::string& s) {
    std::vector<std::pair<std::string, std::string>> kv;
    std::size_t pos = 0;
    while (pos < s.size()) {
      std::size_t end = s.find(' ', pos);
      if (end == std::string::npos) end = s.size();
      std::string item = s.substr(pos, end - pos);
      std::size_t eq = item.find('=');
      if (eq != std::string::npos) kv.emplace_back(item.substr(0, eq), item.substr(eq + 1));
      pos = end + 1;
    }
    return kv;
  };
  auto a = split(mine), b = split(theirs);
  for (const auto& [k, v] : a) {
    std::string other = "(unset)";
    for (const auto& [k2, v2] : b) {
      if (k2 == k) other = v2;
    }
    if (other != v) {
      return std::string("the server and the client disagree on ") + flag_of(k) + ": server " + k + "=" + v +
             ", client " + k + "=" + other + "; give both sides the same options";
    }
  }
  if (a.size() != b.size()) return "the server and the client disagree on the test settings ('" + mine + "' vs '" + theirs + "')";
  return {};
}

}  // namespace

Session::~Session() {
  qps.clear();
  reg.reset();
  cache.reset();
  memory.reset();
}

void fatal(Session& s, const std::string& message) {
  // _Exit runs no exit handlers: the buffer's name goes now.
  if (s.memory) s.memory->unlink();
  std::fflush(stdout);
  std::fprintf(stderr, "%s: %s\n", s.opt.tool.name, message.c_str());
  std::fflush(stderr);
  if (s.oob.valid() && !s.perftest) (void)s.oob.send(FrameType::kError, std::string(s.opt.is_server() ? "server" : "client") + ": " + message);
  std::_Exit(1);
}

std::string completion_error(const Completion& c) {
  char qpn[32];
  std::snprintf(qpn, sizeof qpn, "%#x", c.qp_num);
  std::string m = "completion error: " + std::string(wc_status_name(c.status)) + " (" +
                  std::string(wc_status_description(c.status)) + ") on QP " + qpn;
  m += " (" + std::string(opcode_name(c.opcode)) + ", wr_id " + std::to_string(c.wr_id & 0xffffffffu) + ")";
  if (c.vendor_err != 0) {
    char v[32];
    std::snprintf(v, sizeof v, "%#x", c.vendor_err);
    m += std::string(", vendor_err ") + v;
  }
  return m;
}

void resolve_provider(Session& s) {
  const Options& o = s.opt;
  auto& registry = ProviderRegistry::global();
  auto provider = registry.select(o.transport);
  if (!provider.ok()) fatal(s, "--transport: " + provider.status().message());
  s.provider = std::string((*provider)->name());
  if (s.provider == "self") {
    fatal(s, "the 'self' provider is in-process only: it cannot connect two processes (this server and its "
             "client); choose a network provider with --transport=softroce or --transport=verbs"
             " (or change RMA_PROVIDER)");
  }
  if (s.provider == "softroce") {
    if (!o.port_type.empty() || std::getenv("RMA_SOFTROCE_PORT") == nullptr) {
      ::setenv("RMA_SOFTROCE_PORT", softroce_port_spec(o).c_str(), 1);
    }
    // Every wait of these tools drives the NIC itself (perftest's busy
    // polling), so no background progress thread unless the user asks for
    // one: it would compete for the cores, and in the latency tests write
    // the byte the tool spins on from another thread.
    ::setenv("RMA_SOFTROCE_PROGRESS_US", "0", 0);
  } else if (!o.port_type.empty()) {
    fatal(s, "--port_type applies to the softroce provider only (the transport is " + s.provider + ")");
  }
  // perftest's -x: the verbs provider takes the GID index from RMA_GID_INDEX.
  if (s.provider == "verbs" && o.gid_index >= 0) ::setenv("RMA_GID_INDEX", std::to_string(o.gid_index).c_str(), 1);
}

wire::Key perftest_key(const QpInfo& q) {
  wire::Key k;
  k.lid = q.lid;
  k.out_reads = q.out_reads;
  k.qpn = q.qpn;
  k.psn = q.psn;
  k.rkey = q.rkey;
  k.vaddr = q.vaddr;
  k.gid = q.gid;
  return k;
}

void set_perftest_atomic(WorkRequest& wr, Sge& sge, AtomicType type) {
  sge.length = 8;
  if (type == AtomicType::kFetchAndAdd) {
    wr.opcode = Opcode::kAtomicFetchAdd;
    wr.compare_add = 1;
  } else {
    wr.opcode = Opcode::kAtomicCmpSwap;
    wr.compare_add = 0;
    wr.swap = 0;
  }
}

namespace {

#if RMA_PERFTEST_HAVE_VERBS

// The peer's key as a QP record: the verbs address connect() takes.
QpInfo from_perftest_key(Session& s, const wire::Key& k) {
  QpInfo r;
  r.qpn = k.qpn;
  r.psn = k.psn;
  r.rkey = k.rkey;
  r.vaddr = k.vaddr;
  r.out_reads = k.out_reads;
  r.lid = static_cast<std::uint16_t>(k.lid);
  r.gid = k.gid;
  r.size = s.slot;  // perftest sizes its buffer for the same message size
  verbs::QpEndpoint e;
  e.ethernet = s.header.link_layer == "Ethernet";
  e.qpn = k.qpn;
  e.psn = k.psn;
  e.gid = k.gid;
  e.lid = r.lid;
  e.mtu = s.path_mtu;
  e.max_rd_atomic = static_cast<std::uint8_t>(std::min<std::uint32_t>(std::max<std::uint32_t>(k.out_reads, 1), 255));
  auto a = verbs::make_endpoint(e);
  if (!a.ok()) fatal(s, "the perftest peer's key does not make a QP address: " + a.status().message());
  r.address = *a;
  return r;
}

// Our QP's record, with the LID and GID the verbs provider chose.
void describe_for_perftest(Session& s, QpInfo& q) {
  auto e = verbs::describe_endpoint(q.address);
  if (!e.ok()) fatal(s, "cannot read our QP's verbs address: " + e.status().message());
  q.lid = e->lid;
  q.gid = e->gid;
}
#endif

}  // namespace

void setup(Session& s) {
  Options& o = s.opt;
  // 1. The OOB connection: network first, so that an unreachable server or
  //    a port in use is reported whatever the transport.
  if (o.is_server()) {
    auto lfd = oob_listen(o.bind_addr, o.port);
    if (!lfd.ok()) fatal(s, lfd.status().message());
    resolve_provider(s);
    std::printf("%s", format_waiting_banner().c_str());
    std::fflush(stdout);
    auto ch = oob_accept(*lfd, o.oob_timeout_ms);
    ::close(*lfd);
    if (!ch.ok()) fatal(s, ch.status().message());
    s.oob = std::move(ch).value();
  } else {
    auto ch = oob_connect(o.host, o.port, kConnectRetryMs, o.oob_timeout_ms);
    if (!ch.ok()) fatal(s, ch.status().message());
    s.oob = std::move(ch).value();
    resolve_provider(s);
  }
  auto perftest = use_perftest_protocol(o, s.provider);
  if (!perftest.ok()) fatal(s, perftest.status().message());
  if (*perftest) {
#if RMA_PERFTEST_HAVE_VERBS
    s.perftest = std::make_unique<wire::Exchange>(s.oob.fd(), !o.is_server(),
                                                  std::chrono::milliseconds(o.oob_timeout_ms));
    if (Status st = s.perftest->versions(); !st.ok()) fatal(s, st.message());
#else
    fatal(s, "--oob_protocol=perftest: librma was built without the verbs provider");
#endif
  } else if (Status st = s.oob.exchange_version(); !st.ok()) {
    fatal(s, st.message());
  }

  // 2. The symmetric settings (perftest's "(SYMMETRIC)" flags) must agree;
  //    perftest's exchange has no such step.
  const std::string mine = settings_string(o);
  if (s.perftest) {
    // nothing to compare
  } else if (o.is_server()) {
    auto theirs = s.oob.expect(FrameType::kSettings);
    if (!theirs.ok()) fatal(s, theirs.status().message());
    std::string diff = compare_settings(mine, *theirs);
    if (!diff.empty()) fatal(s, diff);
    if (Status st = s.oob.send(FrameType::kOk); !st.ok()) fatal(s, st.message());
  } else {
    if (Status st = s.oob.send(FrameType::kSettings, mine); !st.ok()) fatal(s, st.message());
    auto ok = s.oob.expect(FrameType::kOk);
    if (!ok.ok()) fatal(s, ok.status().message());
  }

  // 3. The device.
  auto& registry = ProviderRegistry::global();
  auto dev = registry.open(s.provider, o.ib_dev);
  if (!dev.ok()) fatal(s, "cannot open device: " + dev.status().message());
  s.dev = *dev;
  const DeviceInfo& info = s.dev->info();
  if (Status st = check_against_device(o, info); !st.ok()) fatal(s, st.message());
  std::uint32_t mtu = o.mtu != 0 ? o.mtu : info.caps.path_mtu;
  if (s.perftest) {
    // perftest: page and cache-line sizes, then the path MTU both use.
    if (Status st = s.perftest->sys_data(static_cast<std::uint32_t>(::sysconf(_SC_PAGESIZE)), 64); !st.ok()) {
      fatal(s, st.message());
    }
    auto agreed = s.perftest->mtu(mtu);
    if (!agreed.ok()) fatal(s, agreed.status().message());
    mtu = *agreed;
  }
  s.path_mtu = mtu;
  s.header = header_info(info, mtu);

  // 4. Memory: one region per QP, two halves of `slot` bytes each.
  const std::uint64_t max_size = o.max_size(info.caps.max_msg_size);
  s.slot = static_cast<std::size_t>(((std::max<std::uint64_t>(max_size, 64) + 4095) / 4096) * 4096);
  s.buffer_bytes = s.slot * 2 * o.num_qps;
  auto memory = node::SharedMemory::allocate(s.buffer_bytes, "bench");
  if (!memory.ok()) {
    fatal(s, "cannot allocate " + std::to_string(s.buffer_bytes) + " bytes of buffer: " + memory.status().message());
  }
  s.memory = std::move(memory).value();
  s.buffer = reinterpret_cast<std::uint8_t*>(s.memory->data());  // zero-filled

  auto pd = s.dev->alloc_pd();
  if (!pd.ok()) fatal(s, "cannot allocate a protection domain: " + pd.status().message());
  s.pd = *pd;
  auto cache = RegistrationCache::create(s.pd);
  if (!cache.ok()) fatal(s, "cannot create the registration cache: " + cache.status().message());
  s.cache = std::move(cache).value();
  auto reg = s.cache->acquire(s.buffer, s.buffer_bytes, kAllAccess);
  if (!reg.ok()) fatal(s, "cannot register " + std::to_string(s.buffer_bytes) + " bytes: " + reg.status().message());
  s.reg = std::move(reg).value();

  std::uint64_t cq_depth = std::uint64_t{o.tx_depth} * o.num_qps + 64;
  if (info.caps.max_cqe != 0 && cq_depth > info.caps.max_cqe) cq_depth = info.caps.max_cqe;
  auto cq = s.dev->create_cq(static_cast<std::uint32_t>(cq_depth));
  if (!cq.ok()) fatal(s, "cannot create a completion queue of depth " + std::to_string(cq_depth) + ": " + cq.status().message());
  s.cq = *cq;

  s.qps.resize(o.num_qps);
  for (std::uint32_t i = 0; i < o.num_qps; ++i) {
    QpCtx& q = s.qps[i];
    QpConfig cfg;
    cfg.send_cq = cfg.recv_cq = s.cq;
    cfg.max_send_wr = o.tx_depth;
    cfg.max_recv_wr = 1;
    cfg.max_inline_data = o.inline_size;
    cfg.max_rd_atomic = o.outs;
    cfg.path_mtu = s.perftest ? s.path_mtu : o.mtu;
    // One thread posts and polls everything (perftest's loops; ucx_perftest
    // runs UCX in its default single-thread mode): providers may leave
    // their locks off the data path.
    cfg.serialized = true;
    auto qp = s.pd->create_qp(cfg);
    if (!qp.ok()) fatal(s, "cannot create QP " + std::to_string(i) + ": " + qp.status().message());
    q.qp = std::move(qp).value();
    q.target = s.buffer + s.slot * 2 * i;
    q.local_buf = q.target + s.slot;
    auto addr = q.qp->local_address();
    if (!addr.ok()) fatal(s, "cannot read the address of QP " + std::to_string(i) + ": " + addr.status().message());
    q.local.address = *addr;
    q.local.qpn = q.qp->qp_num();
    q.local.psn = q.qp->initial_psn();
    q.local.rkey = s.reg.rkey();
    q.local.vaddr = reinterpret_cast<std::uint64_t>(q.target);
    q.local.size = s.slot;
    q.local.out_reads = o.outs;
    q.local.gid = info.gid;
#if RMA_PERFTEST_HAVE_VERBS
    if (s.provider == "verbs") describe_for_perftest(s, q.local);  // the LID and GID
#endif
  }

  // 5. Exchange QP records and connect (perftest prints all local addresses, then the remote ones).
  const bool gid = show_gid(o, s.header);
  std::printf("%s", format_header(o, s.header).c_str());
  for (auto& q : s.qps) std::printf("%s", format_address("local", q.local, o.tool.verb, gid).c_str());
  std::fflush(stdout);
#if RMA_PERFTEST_HAVE_VERBS
  if (s.perftest) {
    // perftest swaps every QP's key, connects, swaps them again, and once
    // more for QP 0 after the QPs reached RTS.
    s.perftest_gid = gid;
    for (auto& q : s.qps) {
      auto k = s.perftest->keys(perftest_key(q.local), gid);
      if (!k.ok()) fatal(s, k.status().message());
      q.remote = from_perftest_key(s, *k);
    }
    for (auto& q : s.qps) std::printf("%s", format_address("remote", q.remote, o.tool.verb, gid).c_str());
    for (std::size_t i = 0; i < s.qps.size(); ++i) {
      if (Status st = s.qps[i].qp->connect(s.qps[i].remote.address); !st.ok()) {
        fatal(s, "cannot connect QP " + std::to_string(i) + " to the peer: " + st.message());
      }
    }
    for (auto& q : s.qps) {
      auto k = s.perftest->keys(perftest_key(q.local), gid);
      if (!k.ok()) fatal(s, k.status().message());
    }
    auto k = s.perftest->keys(perftest_key(s.qps[0].local), gid);
    if (!k.ok()) fatal(s, k.status().message());
    return;
  }
#endif
  for (auto& q : s.qps) {
    if (Status st = s.oob.send(FrameType::kQpInfo, encode_qp_info(q.local)); !st.ok()) fatal(s, st.message());
  }
  for (auto& q : s.qps) {
    auto payload = s.oob.expect(FrameType::kQpInfo);
    if (!payload.ok()) fatal(s, payload.status().message());
    auto info_r = decode_qp_info(*payload);
    if (!info_r.ok()) fatal(s, info_r.status().message());
    q.remote = *info_r;
    if (q.remote.size < std::min<std::uint64_t>(max_size, s.slot)) {
      fatal(s, "the peer's buffer (" + std::to_string(q.remote.size) + " bytes) is smaller than the message size");
    }
  }
  for (auto& q : s.qps) std::printf("%s", format_address("remote", q.remote, o.tool.verb, gid).c_str());
  for (std::size_t i = 0; i < s.qps.size(); ++i) {
    if (Status st = s.qps[i].qp->connect(s.qps[i].remote.address); !st.ok()) {
      fatal(s, "cannot connect QP " + std::to_string(i) + " to the peer: " + st.message());
    }
  }
  // perftest: an additional handshake after the QPs reach RTR/RTS.
  progress_sync(s);
}

void write_json_file(Session& s, const std::vector<BwResult>& bw, const std::vector<LatResult>& lat,
                     const std::vector<LatDurationResult>& lat_dur) {
  if (!s.opt.out_json) return;
  const std::string text = format_json(s.opt, s.header, bw, lat, lat_dur);
  std::FILE* f = std::fopen(s.opt.out_json_file.c_str(), "w");
  if (f == nullptr) fatal(s, "cannot write the JSON report " + s.opt.out_json_file + ": " + std::strerror(errno));
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) fatal(s, "cannot write the JSON report " + s.opt.out_json_file);
}

void keep_alive(Session& s) {
  if (s.perftest) return;  // perftest's exchange has no heartbeats: its peer would read them as keys
  // The socket is polled every 10 ms at most: a poll() is a system call of
  // 1.2 us in a guest (PVM), and the latency loops call this every 1024
  // iterations of 20-30 ns, where it added 1-2 ns to the average.
  const std::int64_t t = now_ns();
  if (t - s.last_keep_alive_ns < 10'000'000) return;
  s.last_keep_alive_ns = t;
  s.oob.heartbeat_if_due();
  Frame f;
  auto r = s.oob.poll_frame(f);
  if (!r.ok()) fatal(s, r.status().message());
  if (*r) {
    fatal(s, std::string("OOB protocol error: unexpected ") + frame_type_name(f.type) + " from the peer during the test");
  }
}

std::string passive_wait(Session& s, FrameType type) {
  Completion wc[16];
  std::uint64_t spins = 0;
  // A passive side whose device needs no polls of its own (shm: mapped
  // requests need nothing from it, and the device's progress thread, woken
  // by the doorbell, serves its ring; verbs: the NIC) waits in the kernel
  // for the peer's frame between CQ polls (1 ms at most), as perftest's and
  // ucx_perftest's servers sleep, instead of spinning on a CPU the active
  // side needs. softroce's receive path runs in the polls: it spins.
  const bool sleeps = s.dev && !s.dev->caps().target_needs_polls;
  for (;;) {
    int n = s.cq ? s.cq->poll({wc, 16}) : 0;
    if (n < 0) fatal(s, std::string("completion queue overrun: ") + s.cq->overrun_reason());
    for (int k = 0; k < n; ++k) {
      if (wc[k].status != WcStatus::kSuccess) fatal(s, completion_error(wc[k]));
    }
    if (sleeps) {
      ++spins;
      pollfd pfd{s.oob.fd(), POLLIN, 0};
      (void)::poll(&pfd, 1, 1);
    } else if ((++spins & 0x3f) != 0) {
      continue;
    }
    Frame f;
    auto r = s.oob.poll_frame(f);
    if (!r.ok()) fatal(s, r.status().message());
    if (*r) {
      if (f.type != type) {
        fatal(s, std::string("OOB protocol error: expected ") + frame_type_name(type) + " from the peer, got " +
                     frame_type_name(f.type));
      }
      return f.payload;
    }
    if ((spins & 0xfff) == 0 &&
        std::chrono::steady_clock::now() - s.oob.last_rx() > std::chrono::milliseconds(s.opt.oob_timeout_ms)) {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%g", s.opt.oob_timeout_ms / 1000.0);
      fatal(s, std::string("the peer sent nothing for ") + secs + " s (OOB read timeout); is it still running?");
    }
  }
}

void progress_sync(Session& s) {
  if (Status st = s.oob.send(FrameType::kSync); !st.ok()) fatal(s, st.message());
  (void)passive_wait(s, FrameType::kSync);
}

// After the table: what the transport did (retransmissions, NAKs), from the
// device's counters, so a slow run says why.
void print_transport_summary(const Session& s) {
  if (!s.dev) return;
  auto counters = s.dev->read_counters();
  if (!counters.ok()) return;
  std::printf("%s", format_transport_summary(*counters).c_str());
}

void finish(Session& s) {
  if (s.perftest) {
    // The report exchange and the close are part of run_bw.
    std::printf("%s", kResultLine);
    print_transport_summary(s);
    std::fflush(stdout);
    return;
  }
  if (s.opt.is_server()) {
    (void)passive_wait(s, FrameType::kDone);
    (void)s.oob.send(FrameType::kDone);
  } else {
    if (Status st = s.oob.send(FrameType::kDone); !st.ok()) fatal(s, st.message());
    (void)passive_wait(s, FrameType::kDone);
  }
  std::printf("%s", kResultLine);
  print_transport_summary(s);
  std::fflush(stdout);
}

int run_tool(const Tool& tool, int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto parsed = parse_options(tool, args);
  if (!parsed.ok()) {
    std::fprintf(stderr, "%s: %s\n", tool.name, parsed.status().message().c_str());
    return 1;
  }
  if (parsed->help) {
    std::printf("%s", usage(tool).c_str());
    return 0;
  }
  Session s;
  s.opt = *parsed;
  calibrate_clock();
  setup(s);
  if (tool.test == TestKind::kBw) {
    run_bw(s);
  } else {
    run_lat(s);
  }
  finish(s);
  return 0;
}

}  // namespace rma::perftest
