// A capture of a mixed softroce run (RMA_SOFTROCE_PCAP) decoded by tshark.
// Two softroce devices are opened through the provider on the two ends of an
// in-process ring port (path MTU 1024, so messages are segmented), device A
// capturing. The run: RDMA WRITE (1 B .. 20 kB, with and without immediate),
// SEND, RDMA READ (1 B .. 30 kB), FETCH_ADD and CMP_SWAP from A to B, and
// WRITE / READ / FETCH_ADD from B to A. Then, for EVERY captured frame:
//  - tshark (-d udp.port==4791,infiniband) decodes it as eth/ip/udp/infiniband
//    on UDP port 4791, without a malformed-packet or expert-info mark;
//  - our parser (parse_packet, ICRC included) accepts the same bytes;
//  - opcode, destination QPN, PSN, pad count, ICRC and the RETH, AETH,
//    AtomicETH and AtomicAckETH fields are equal in both decodings;
// and against what the test posted: every request's RETH / AtomicETH
// matches exactly one posted work request, destination QPNs are the peers',
// and request PSNs run consecutively from the PSN the responder expects.
// Negative controls prove each check can fail: a truncated frame appended to
// a copy of the capture must be reported malformed, and a PSN rewritten in a
// copy (ICRC recomputed) must break the PSN sequence.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "provider/softroce_device.hpp"
#include "rma/sdk/provider.hpp"
#include "rma/sdk/registry.hpp"
#include "wire/wire.hpp"

namespace rma::softroce {
namespace {

using Bytes = std::vector<std::uint8_t>;
using roce::Opcode;  // wire opcodes

bool have_tshark() { return std::system("command -v tshark >/dev/null 2>&1") == 0; }

std::string run(const std::string& cmd) {
  std::string out;
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

std::uint32_t le32(const Bytes& b, std::size_t off) {
  return std::uint32_t{b[off]} | std::uint32_t{b[off + 1]} << 8 | std::uint32_t{b[off + 2]} << 16 |
         std::uint32_t{b[off + 3]} << 24;
}

// Frames of a classic pcap as PcapWriter writes it (host = little endian).
std::vector<Bytes> read_pcap(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const Bytes f((std::istreambuf_iterator<char>(in)), {});
  std::vector<Bytes> out;
  if (f.size() < 24) return out;
  std::size_t off = 24;
  while (off + 16 <= f.size()) {
    const std::uint32_t incl = le32(f, off + 8);
    off += 16;
    if (off + incl > f.size()) break;
    out.emplace_back(f.begin() + static_cast<std::ptrdiff_t>(off), f.begin() + static_cast<std::ptrdiff_t>(off + incl));
    off += incl;
  }
  return out;
}

void write_pcap_copy(const std::string& from, const std::string& to, const Bytes* extra,
                     std::size_t patch_frame = SIZE_MAX, const Bytes* patched = nullptr) {
  std::ifstream in(from, std::ios::binary);
  Bytes f((std::istreambuf_iterator<char>(in)), {});
  Bytes out(f.begin(), f.begin() + 24);
  std::size_t off = 24, i = 0;
  while (off + 16 <= f.size()) {
    const std::uint32_t incl = le32(f, off + 8);
    const Bytes& frame = (i == patch_frame && patched) ? *patched : Bytes(f.begin() + static_cast<std::ptrdiff_t>(off + 16),
                                                                        f.begin() + static_cast<std::ptrdiff_t>(off + 16 + incl));
    out.insert(out.end(), f.begin() + static_cast<std::ptrdiff_t>(off), f.begin() + static_cast<std::ptrdiff_t>(off + 16));
    out.insert(out.end(), frame.begin(), frame.end());
    off += 16 + incl;
    ++i;
  }
  if (extra) {
    std::uint8_t rec[16] = {};
    const auto n = static_cast<std::uint32_t>(extra->size());
    std::memcpy(rec + 8, &n, 4);
    std::memcpy(rec + 12, &n, 4);
    out.insert(out.end(), rec, rec + 16);
    out.insert(out.end(), extra->begin(), extra->end());
  }
  std::ofstream(to, std::ios::binary).write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size()));
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> cols;
  std::size_t start = 0;
  for (;;) {
    const std::size_t bar = line.find('|', start);
    cols.push_back(line.substr(start, bar == std::string::npos ? std::string::npos : bar - start));
    if (bar == std::string::npos) return cols;
    start = bar + 1;
  }
}

std::optional<std::uint64_t> num(const std::string& s) {
  if (s.empty()) return std::nullopt;
  std::size_t used = 0;
  try {
    const unsigned long long v = std::stoull(s, &used, 0);
    if (used != s.size()) return std::nullopt;
    return static_cast<std::uint64_t>(v);
  } catch (...) {
    return std::nullopt;
  }
}

enum Col {
  kProtocols, kUdpDst, kOpcode, kDestQp, kPsn, kPadCnt, kRethVa, kRethRkey, kRethLen, kAethSyndrome, kAethMsn,
  kSwap, kCmp, kOrig, kIcrc, kMalformed, kExpert, kNumCols
};
const char* const kFields[kNumCols] = {
    "frame.protocols", "udp.dstport", "infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn",
    "infiniband.bth.padcnt", "infiniband.reth.va", "infiniband.reth.r_key", "infiniband.reth.dmalen",
    "infiniband.aeth.syndrome", "infiniband.aeth.msn", "infiniband.atomiceth.swapdt", "infiniband.atomiceth.cmpdt",
    "infiniband.atomicacketh.origremdt", "infiniband.invariant.crc", "_ws.malformed", "_ws.expert.severity"};

// What the test posted, as the requester's first packet must carry it.
struct Posted {
  std::uint32_t src_ip;    // requester
  Opcode first;            // opcode of the packet that carries the RETH/AtomicETH
  std::uint64_t va;
  std::uint32_t rkey;
  std::uint64_t len_or_swap;
  std::uint64_t compare = 0;
  bool matched = false;
};

struct Endpoints {
  std::uint32_t ip_a = 0, ip_b = 0;
  std::uint32_t qpn_a = 0, qpn_b = 0;
  std::uint32_t psn_from_a = 0, psn_from_b = 0;  // first PSN each side sends
};

// Every problem found in a capture, one line each ("" = none).
std::vector<std::string> check_capture(const std::string& path, std::vector<Posted> posted, const Endpoints& ep) {
  std::vector<std::string> problems;
  auto bad = [&](std::size_t i, const std::string& what) {
    problems.push_back("frame " + std::to_string(i + 1) + ": " + what);
  };
  const std::vector<Bytes> frames = read_pcap(path);
  std::string cmd = "tshark -n -r '" + path + "' -d udp.port==4791,infiniband -T fields -E separator='|' -E occurrence=a";
  for (const char* f : kFields) cmd += std::string(" -e ") + f;
  cmd += " 2>/dev/null";
  std::vector<std::vector<std::string>> rows;
  {
    std::istringstream in(run(cmd));
    std::string line;
    while (std::getline(in, line)) rows.push_back(split(line));
  }
  if (frames.empty()) problems.push_back("no frames in the capture");
  if (rows.size() != frames.size()) {
    problems.push_back("tshark printed " + std::to_string(rows.size()) + " rows for " + std::to_string(frames.size()) +
                       " frames");
    return problems;
  }
  std::map<std::uint32_t, std::uint32_t> next_psn = {{ep.ip_a, ep.psn_from_a}, {ep.ip_b, ep.psn_from_b}};
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const auto& r = rows[i];
    if (r.size() != kNumCols) {
      bad(i, "tshark row has " + std::to_string(r.size()) + " columns");
      continue;
    }
    if (r[kProtocols].find("eth:ethertype:ip:udp:infiniband") != 0) bad(i, "protocols " + r[kProtocols]);
    if (r[kUdpDst] != "4791") bad(i, "UDP destination port " + r[kUdpDst]);
    if (!r[kMalformed].empty()) bad(i, "tshark: malformed packet");
    if (!r[kExpert].empty()) bad(i, "tshark expert info, severity " + r[kExpert]);
    roce::Packet p;
    const roce::ParseError err = roce::parse_packet(frames[i], p);
    if (err != roce::ParseError::kOk) {
      bad(i, "our parser: " + std::string(roce::parse_error_name(err)));
      continue;
    }
    const roce::Headers& h = p.h;
    const std::string name(roce::opcode_name(h.opcode));
    auto same = [&](Col c, std::uint64_t want, const char* what) {
      if (num(r[c]) != std::optional<std::uint64_t>(want)) {
        bad(i, name + " " + what + ": tshark '" + r[c] + "', parse_packet " + std::to_string(want));
      }
    };
    same(kOpcode, h.opcode, "opcode");
    same(kDestQp, h.dest_qp, "dest QPN");
    same(kPsn, h.psn, "PSN");
    same(kPadCnt, h.pad, "pad count");
    const Bytes& f = frames[i];
    same(kIcrc, std::uint64_t{f[f.size() - 4]} << 24 | std::uint64_t{f[f.size() - 3]} << 16 |
                    std::uint64_t{f[f.size() - 2]} << 8 | f[f.size() - 1], "ICRC");
    const roce::OpcodeTraits t = roce::opcode_traits(h.opcode);
    if (t.headers & roce::kHasReth) {
      same(kRethVa, h.reth_va, "RETH va");
      same(kRethRkey, h.reth_rkey, "RETH r_key");
      same(kRethLen, h.reth_length, "RETH dma_length");
    }
    if (t.headers & roce::kHasAtomicEth) {  // Wireshark shows the AtomicETH VA and R_Key as RETH fields
      same(kRethVa, h.atomic_va, "AtomicETH va");
      same(kRethRkey, h.atomic_rkey, "AtomicETH r_key");
      same(kSwap, h.atomic_swap_add, "AtomicETH swap/add");
      same(kCmp, h.atomic_compare, "AtomicETH compare");
    }
    if (t.headers & roce::kHasAeth) {
      same(kAethSyndrome, h.aeth_syndrome, "AETH syndrome");
      same(kAethMsn, h.aeth_msn, "AETH MSN");
    }
    if (t.headers & roce::kHasAtomicAckEth) same(kOrig, h.atomic_ack_orig, "AtomicAckETH orig");

    // Against what was posted.
    const bool from_a = h.src_ip == ep.ip_a;
    if (!from_a && h.src_ip != ep.ip_b) bad(i, "source IP is neither device's");
    if (h.dest_qp != (from_a ? ep.qpn_b : ep.qpn_a)) bad(i, name + " to QPN " + std::to_string(h.dest_qp) + ", not the peer's");
    if (!t.is_request) continue;
    std::uint32_t& want_psn = next_psn[h.src_ip];
    if (h.psn != want_psn) bad(i, name + " PSN " + std::to_string(h.psn) + ", expected " + std::to_string(want_psn));
    std::uint32_t used = 1;
    if (static_cast<Opcode>(h.opcode) == Opcode::kReadRequest) used = h.reth_length == 0 ? 1 : (h.reth_length + 1023) / 1024;
    want_psn = roce::psn_add(h.psn, used);
    if ((t.headers & (roce::kHasReth | roce::kHasAtomicEth)) == 0) continue;
    bool found = false;
    for (Posted& w : posted) {
      if (w.matched || w.src_ip != h.src_ip) continue;
      const bool atomic = (t.headers & roce::kHasAtomicEth) != 0;
      const bool hit = atomic ? (static_cast<Opcode>(h.opcode) == w.first && h.atomic_va == w.va &&
                                 h.atomic_rkey == w.rkey && h.atomic_swap_add == w.len_or_swap && h.atomic_compare == w.compare)
                              : (static_cast<Opcode>(h.opcode) == w.first && h.reth_va == w.va && h.reth_rkey == w.rkey &&
                                 h.reth_length == w.len_or_swap);
      if (hit) {
        w.matched = found = true;
        break;
      }
    }
    if (!found) bad(i, name + " matches no posted work request");
  }
  for (const Posted& w : posted) {
    if (!w.matched) problems.push_back("posted " + std::string(roce::opcode_name(w.first)) + " of " +
                                       std::to_string(w.len_or_swap) + " never seen on the wire");
  }
  return problems;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += "  " + x + "\n";
  return s;
}

struct Dev {
  std::shared_ptr<Device> dev;
  std::shared_ptr<ProtectionDomain> pd;
  std::shared_ptr<CompletionQueue> cq;
  std::unique_ptr<QueuePair> qp;
  std::vector<std::uint8_t> mem;
  std::unique_ptr<MemoryRegion> mr;
  std::uint8_t* p = nullptr;
};

void open_dev(Dev& d, const std::string& spec, const char* pcap) {
  ::setenv("RMA_SOFTROCE_PORT", spec.c_str(), 1);
  ::setenv("RMA_SOFTROCE_MTU", "1024", 1);
  // Progress threads that run almost all the time: frames then cross
  // threads through the ring pair, which ThreadSanitizer checks against the
  // port's mbuf hand-over annotations (dpdk/port/mbuf_handoff.hpp).
  ::setenv("RMA_SOFTROCE_PROGRESS_US", "1", 1);
  if (pcap) ::setenv("RMA_SOFTROCE_PCAP", pcap, 1);
  else ::unsetenv("RMA_SOFTROCE_PCAP");
  auto dev = ProviderRegistry::global().open("softroce");
  ::unsetenv("RMA_SOFTROCE_PCAP");
  ASSERT_TRUE(dev.ok()) << dev.status().to_string();
  d.dev = *dev;
  d.pd = d.dev->alloc_pd().value();
  d.cq = d.dev->create_cq(256).value();
  d.mem.assign(256 * 1024 + 64, 0);
  d.p = d.mem.data() + (64 - reinterpret_cast<std::uintptr_t>(d.mem.data()) % 64) % 64;
  auto mr = d.pd->register_memory(d.p, 256 * 1024, kAllAccess);
  ASSERT_TRUE(mr.ok()) << mr.status().to_string();
  d.mr = std::move(mr).value();
  QpConfig c;
  c.send_cq = d.cq;
  c.recv_cq = d.cq;
  c.max_send_wr = 64;
  c.max_recv_wr = 16;
  c.max_rd_atomic = 4;
  c.timeout = 20;  // 4.3 s: no retransmission on the lossless ring, even on a loaded machine
  auto qp = d.pd->create_qp(c);
  ASSERT_TRUE(qp.ok()) << qp.status().to_string();
  d.qp = std::move(qp).value();
}

TEST(SoftroceTshark, EveryFrameOfAMixedRunDecodesAsSent) {
  if (!have_tshark()) GTEST_SKIP() << "tshark not installed (apt-get install tshark): capture decode not checked";
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = tmp && *tmp ? tmp : "/tmp";
  const std::string pcap = dir + "/rma_softroce_tshark_" + std::to_string(::getpid()) + ".pcap";
  const std::string ring = "tshark" + std::to_string(::getpid());
  Dev a, b;
  ASSERT_NO_FATAL_FAILURE(open_dev(a, "ring:" + ring + ",ip=10.99.0.1", pcap.c_str()));
  ASSERT_NO_FATAL_FAILURE(open_dev(b, "ring:" + ring + ",ip=10.99.0.2", nullptr));
  ::unsetenv("RMA_SOFTROCE_PORT");
  ::unsetenv("RMA_SOFTROCE_MTU");
  ::unsetenv("RMA_SOFTROCE_PROGRESS_US");
  auto aa = a.qp->local_address().value();
  auto ba = b.qp->local_address().value();
  ASSERT_TRUE(a.qp->connect(ba).ok());
  ASSERT_TRUE(b.qp->connect(aa).ok());
  Endpoints ep;
  {
    auto fa = decode_endpoint(aa).value();
    auto fb = decode_endpoint(ba).value();
    ep.ip_a = fa.ipv4;
    ep.ip_b = fb.ipv4;
    ep.qpn_a = fa.qpn;
    ep.qpn_b = fb.qpn;
    ep.psn_from_a = fa.psn;
    ep.psn_from_b = fb.psn;
  }
  for (std::size_t i = 0; i < 256 * 1024; ++i) {
    a.p[i] = static_cast<std::uint8_t>(i * 7 + 1);
    b.p[i] = static_cast<std::uint8_t>(i * 13 + 5);
  }

  std::vector<Posted> posted;
  std::uint64_t id = 0;
  // One request from `from` to `to`, waited for (both devices driven).
  auto one = [&](Dev& from, Dev& to, rma::Opcode op, std::uint32_t loff, std::uint32_t len, std::uint32_t roff,
                 std::uint64_t cmp_add = 0, std::uint64_t swap = 0) {
    Sge sge{reinterpret_cast<std::uint64_t>(from.p + loff), len, from.mr->lkey()};
    WorkRequest w;
    w.wr_id = ++id;
    w.opcode = op;
    w.sgl = {&sge, 1};
    w.remote_addr = reinterpret_cast<std::uint64_t>(to.p + roff);
    w.rkey = to.mr->rkey();
    w.compare_add = cmp_add;
    w.swap = swap;
    w.imm_data = 0xC0DE0000u + static_cast<std::uint32_t>(id);
    const std::uint32_t src = &from == &a ? ep.ip_a : ep.ip_b;
    switch (op) {
      case rma::Opcode::kRdmaWrite:
      case rma::Opcode::kRdmaWriteWithImm: {
        const bool imm = op == rma::Opcode::kRdmaWriteWithImm;
        const Opcode first = len > 1024 ? Opcode::kWriteFirst : (imm ? Opcode::kWriteOnlyImm : Opcode::kWriteOnly);
        posted.push_back({src, first, w.remote_addr, w.rkey, len});
        break;
      }
      case rma::Opcode::kRdmaRead: posted.push_back({src, Opcode::kReadRequest, w.remote_addr, w.rkey, len}); break;
      case rma::Opcode::kAtomicFetchAdd: posted.push_back({src, Opcode::kFetchAdd, w.remote_addr, w.rkey, cmp_add, 0}); break;
      case rma::Opcode::kAtomicCmpSwap: posted.push_back({src, Opcode::kCompareSwap, w.remote_addr, w.rkey, swap, cmp_add}); break;
      default: break;
    }
    ASSERT_TRUE(from.qp->post({&w, 1}).ok());
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    Completion c[4];
    int got = 0;
    while (got == 0 && std::chrono::steady_clock::now() < end) {
      (void)to.cq->poll({c, 4});  // drives the responder (receive completions are checked below)
      got = from.cq->poll({c, 1});
    }
    ASSERT_EQ(got, 1) << "no completion for " << rma::opcode_name(op) << " of " << len;
    EXPECT_EQ(c[0].status, WcStatus::kSuccess) << wc_status_name(c[0].status);
  };
  // Receives for the SEND and the WRITE with immediate.
  for (int k = 0; k < 2; ++k) {
    Sge rs{reinterpret_cast<std::uint64_t>(b.p + 200000 + k * 8192), 8192, b.mr->lkey()};
    RecvRequest rr{static_cast<std::uint64_t>(100 + k), {&rs, 1}};
    ASSERT_TRUE(b.qp->post_recv({&rr, 1}).ok());
  }
  for (std::uint32_t len : {1u, 3u, 100u, 1024u, 1025u, 5000u, 20000u}) {
    ASSERT_NO_FATAL_FAILURE(one(a, b, rma::Opcode::kRdmaWrite, 1000, len, 7 + len % 64));
  }
  ASSERT_NO_FATAL_FAILURE(one(a, b, rma::Opcode::kRdmaWriteWithImm, 0, 3000, 50000));
  ASSERT_NO_FATAL_FAILURE(one(a, b, rma::Opcode::kSend, 0, 2500, 0));
  for (std::uint32_t len : {1u, 7u, 1024u, 4097u, 30000u}) {
    ASSERT_NO_FATAL_FAILURE(one(a, b, rma::Opcode::kRdmaRead, 100000, len, 3 + len % 32));
  }
  ASSERT_NO_FATAL_FAILURE(one(a, b, rma::Opcode::kAtomicFetchAdd, 150000, 8, 160000, 0x1234));
  ASSERT_NO_FATAL_FAILURE(one(a, b, rma::Opcode::kAtomicCmpSwap, 150008, 8, 160008, 0, 0xABCDEF));
  ASSERT_NO_FATAL_FAILURE(one(b, a, rma::Opcode::kRdmaWrite, 0, 3000, 4000));
  ASSERT_NO_FATAL_FAILURE(one(b, a, rma::Opcode::kRdmaRead, 10000, 2100, 20000));
  ASSERT_NO_FATAL_FAILURE(one(b, a, rma::Opcode::kAtomicFetchAdd, 30000, 8, 40000, 5));
  {
    Completion c[4];
    const int n = b.cq->poll({c, 4});  // the two receives may already have been taken while driving B
    EXPECT_LE(n, 2);
  }
  const std::size_t nposted = posted.size();
  // Close A's capture: the device flushes it when it goes away.
  for (Dev* d : {&a, &b}) {
    d->qp.reset();
    d->mr.reset();
    d->cq.reset();
    d->pd.reset();
    d->dev.reset();
  }

  std::vector<std::string> problems = check_capture(pcap, posted, ep);
  const auto frames = read_pcap(pcap);
  EXPECT_GE(frames.size(), 60u) << "too few frames for the run";
  std::printf("[ tshark ] %zu frames captured and decoded; %zu posted requests matched on the wire\n", frames.size(),
              nposted);
  EXPECT_TRUE(problems.empty()) << problems.size() << " problem(s) in " << pcap << ":\n" << joined(problems);

  // Negative control 1: a frame cut inside its RETH is reported malformed.
  const std::string cut_path = pcap + ".cut.pcap";
  {
    std::size_t k = 0;
    while (k < frames.size() && frames[k].size() < 100) ++k;
    ASSERT_LT(k, frames.size());
    const Bytes cut(frames[k].begin(), frames[k].begin() + 50);
    write_pcap_copy(pcap, cut_path, &cut);
    const auto p2 = check_capture(cut_path, posted, ep);
    bool flagged = false;
    for (const auto& s : p2) flagged |= s.find("frame " + std::to_string(frames.size() + 1) + ":") == 0;
    EXPECT_TRUE(flagged) << "a truncated frame went unnoticed:\n" << joined(p2);
  }
  // Negative control 2: a request's PSN changed (ICRC recomputed, so both
  // decoders accept it) must break the comparison with what was sent.
  const std::string psn_path = pcap + ".psn.pcap";
  {
    std::size_t k = 0;
    for (; k < frames.size(); ++k) {
      roce::Packet p;
      if (roce::parse_packet(frames[k], p) == roce::ParseError::kOk && roce::opcode_traits(p.h.opcode).is_request) break;
    }
    ASSERT_LT(k, frames.size());
    Bytes f = frames[k];
    const std::size_t bth = roce::kOuterHeadersLen;
    f[bth + 11] = static_cast<std::uint8_t>(f[bth + 11] + 1);  // PSN low byte
    const std::uint32_t icrc = roce::compute_icrc(std::span<const std::uint8_t>(f.data(), f.size() - 4));
    std::memcpy(f.data() + f.size() - 4, &icrc, 4);
    roce::Packet p;
    if (roce::parse_packet(f, p) != roce::ParseError::kOk) {  // the other byte order, then
      for (int j = 0; j < 4; ++j) f[f.size() - 4 + j] = static_cast<std::uint8_t>(icrc >> (24 - 8 * j));
    }
    ASSERT_EQ(roce::parse_packet(f, p), roce::ParseError::kOk);
    write_pcap_copy(pcap, psn_path, nullptr, k, &f);
    const auto p3 = check_capture(psn_path, posted, ep);
    EXPECT_FALSE(p3.empty()) << "a wrong PSN went unnoticed";
  }
  EXPECT_GE(nposted, 17u);
  if (!::testing::Test::HasFailure()) {
    std::remove(pcap.c_str());
    std::remove(cut_path.c_str());
    std::remove(psn_path.c_str());
  }
}

}  // namespace
}  // namespace rma::softroce
