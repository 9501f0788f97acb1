// PcapWriter: the file format read back byte by byte, concurrent writers,
// and (when tshark is installed) Wireshark's own RoCE v2 dissector reading
// the fields we built.
#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "wire/pcap_writer.hpp"
#include "wire/wire.hpp"

namespace rma::roce {
namespace {

using Bytes = std::vector<std::uint8_t>;
using namespace std::chrono_literals;

std::string temp_path(const char* tag) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/rma_wire_" + tag + "_" + std::to_string(::getpid()) + ".pcap";
}

Bytes read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

std::uint32_t u32(const Bytes& b, std::size_t off) {
  std::uint32_t v;
  std::memcpy(&v, b.data() + off, 4);
  return v;
}

struct Record {
  std::uint32_t sec, nsec, orig;
  Bytes data;
};

// Reads a classic pcap written in host byte order with nanosecond stamps.
std::vector<Record> read_pcap(const Bytes& f, std::uint32_t* snaplen = nullptr) {
  std::vector<Record> out;
  EXPECT_GE(f.size(), 24u);
  if (f.size() < 24) return out;
  EXPECT_EQ(u32(f, 0), 0xA1B23C4Du);
  EXPECT_EQ(f[4] | (f[5] << 8), 2);
  EXPECT_EQ(f[6] | (f[7] << 8), 4);
  EXPECT_EQ(u32(f, 20), 1u);  // LINKTYPE_ETHERNET
  if (snaplen) *snaplen = u32(f, 16);
  std::size_t off = 24;
  while (off + 16 <= f.size()) {
    Record r{u32(f, off), u32(f, off + 4), u32(f, off + 12), {}};
    const std::uint32_t incl = u32(f, off + 8);
    off += 16;
    EXPECT_LE(off + incl, f.size());
    if (off + incl > f.size()) break;
    r.data.assign(f.begin() + static_cast<std::ptrdiff_t>(off), f.begin() + static_cast<std::ptrdiff_t>(off + incl));
    off += incl;
    out.push_back(std::move(r));
  }
  EXPECT_EQ(off, f.size());
  return out;
}

struct Built {
  Headers h;
  Bytes head, payload, tail;
  Bytes frame() const {
    Bytes f = head;
    f.insert(f.end(), payload.begin(), payload.end());
    f.insert(f.end(), tail.begin(), tail.end());
    return f;
  }
  TxFrame tx() const { return TxFrame{head, payload, tail}; }
};

Built make(Opcode op, std::size_t payload_len, std::uint32_t qp, std::uint32_t psn) {
  Built b;
  b.h.dst_mac = {0x02, 0, 0, 0, 0, 0x02};
  b.h.src_mac = {0x02, 0, 0, 0, 0, 0x01};
  b.h.src_ip = 0xC0A80A01;
  b.h.dst_ip = 0xC0A80A02;
  b.h.ip_id = static_cast<std::uint16_t>(psn + 1);
  b.h.src_port = udp_source_port(qp, 0x22);
  b.h.opcode = static_cast<std::uint8_t>(op);
  b.h.dest_qp = qp;
  b.h.psn = psn;
  b.h.ack_req = true;
  b.head.resize(header_length(b.h.opcode));
  b.payload.resize(payload_len);
  for (std::size_t i = 0; i < payload_len; ++i) b.payload[i] = static_cast<std::uint8_t>(i);
  return b;
}

void finish(Built& b) {
  std::uint8_t tail[7];
  const std::size_t t = build_packet(b.h, b.head, b.payload, tail);
  ASSERT_NE(t, 0u);
  b.tail.assign(tail, tail + t);
}

TEST(PcapWriter, FileFormat) {
  const std::string path = temp_path("format");
  Built a = make(Opcode::kWriteOnly, 10, 0x12, 7);
  a.h.reth_va = 0x1000;
  finish(a);
  Built c = make(Opcode::kAcknowledge, 0, 0x13, 8);
  finish(c);
  {
    PcapWriter w;
    EXPECT_FALSE(w.is_open());
    w.write(a.frame());  // not open: ignored
    ASSERT_TRUE(w.open(path).ok());
    EXPECT_TRUE(w.is_open());
    EXPECT_FALSE(w.open(path).ok()) << "second open must fail";
    w.write(std::chrono::nanoseconds(1700000000123456789LL), a.frame());
    w.write(std::chrono::nanoseconds(1700000001000000001LL), c.tx());
    EXPECT_EQ(w.frames_written(), 2u);
    EXPECT_EQ(w.write_errors(), 0u);
    ASSERT_TRUE(w.flush().ok());
  }  // destructor closes
  const auto recs = read_pcap(read_file(path));
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].sec, 1700000000u);
  EXPECT_EQ(recs[0].nsec, 123456789u);
  EXPECT_EQ(recs[0].data, a.frame());
  EXPECT_EQ(recs[0].orig, a.frame().size());
  EXPECT_EQ(recs[1].sec, 1700000001u);
  EXPECT_EQ(recs[1].nsec, 1u);
  EXPECT_EQ(recs[1].data, c.frame());
  std::remove(path.c_str());
}

TEST(PcapWriter, Snaplen) {
  const std::string path = temp_path("snap");
  Built a = make(Opcode::kWriteOnly, 200, 1, 1);
  finish(a);
  PcapWriter w;
  ASSERT_TRUE(w.open(path, 100).ok());
  w.write(1s, a.tx());
  w.write(2s, a.frame());
  ASSERT_TRUE(w.close().ok());
  std::uint32_t snap = 0;
  const auto recs = read_pcap(read_file(path), &snap);
  EXPECT_EQ(snap, 100u);
  ASSERT_EQ(recs.size(), 2u);
  const Bytes f = a.frame();
  for (const Record& r : recs) {
    EXPECT_EQ(r.orig, f.size());
    EXPECT_EQ(r.data, Bytes(f.begin(), f.begin() + 100));
  }
  std::remove(path.c_str());
}

TEST(PcapWriter, OpenFailsOnBadPath) {
  PcapWriter w;
  const Status s = w.open("/nonexistent-dir/x/y.pcap");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find("/nonexistent-dir/x/y.pcap"), std::string::npos);
  EXPECT_FALSE(w.is_open());
  EXPECT_TRUE(w.close().ok());
}

TEST(PcapWriter, ConcurrentWritersKeepRecordsWhole) {
  const std::string path = temp_path("threads");
  constexpr int kThreads = 4, kPerThread = 500;
  {
    PcapWriter w;
    ASSERT_TRUE(w.open(path).ok());
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t) {
      ts.emplace_back([&w, t] {
        Built b = make(Opcode::kSendOnly, 64 + static_cast<std::size_t>(t) * 17, static_cast<std::uint32_t>(t), 0);
        for (int i = 0; i < kPerThread; ++i) {
          b.h.psn = static_cast<std::uint32_t>(i);
          finish(b);
          if (i % 2) {
            w.write(b.tx());
          } else {
            w.write(b.frame());
          }
        }
      });
    }
    for (auto& t : ts) t.join();
    EXPECT_EQ(w.frames_written(), static_cast<std::uint64_t>(kThreads * kPerThread));
  }
  const auto recs = read_pcap(read_file(path));
  ASSERT_EQ(recs.size(), static_cast<std::size_t>(kThreads * kPerThread));
  std::array<std::uint32_t, kThreads> next{};
  for (const Record& r : recs) {
    Packet p;
    ASSERT_EQ(parse_packet(r.data, p), ParseError::kOk);
    ASSERT_LT(p.h.dest_qp, static_cast<std::uint32_t>(kThreads));
    EXPECT_EQ(p.h.psn, next[p.h.dest_qp]++) << "per-thread order";
  }
  std::remove(path.c_str());
}

// ---- tshark ----

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

std::vector<std::vector<std::string>> split_lines(const std::string& s) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(s);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cols;
    std::size_t start = 0;
    for (;;) {
      const std::size_t bar = line.find('|', start);
      cols.push_back(line.substr(start, bar == std::string::npos ? std::string::npos : bar - start));
      if (bar == std::string::npos) break;
      start = bar + 1;
    }
    rows.push_back(std::move(cols));
  }
  return rows;
}

// A tshark field value as a number: tshark prints some fields in decimal,
// some in hex ("0x000abc"); nullopt when absent or not a number.
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

TEST(PcapTshark, DissectsWhatWeBuilt) {
  if (!have_tshark()) GTEST_SKIP() << "tshark not installed (apt-get install tshark)";
  const std::string path = temp_path("tshark");

  std::vector<Built> pkts;
  Built wf = make(Opcode::kWriteFirst, 256, 0x000ABC, 0x123456);
  wf.h.reth_va = 0x00007F1234567000ull;
  wf.h.reth_rkey = 0xC0FFEE01;
  wf.h.reth_length = 8192;
  finish(wf);
  pkts.push_back(wf);
  Built rr = make(Opcode::kReadRequest, 0, 0x000ABD, 0xFFFFFF);
  rr.h.reth_va = 0x10000;
  rr.h.reth_rkey = 0x1234;
  rr.h.reth_length = 1 << 20;
  finish(rr);
  pkts.push_back(rr);
  Built ack = make(Opcode::kAcknowledge, 0, 0x000001, 0x000010);
  ack.h.aeth_syndrome = make_syndrome(AckType::kAck, kAckUnlimitedCredits);
  ack.h.aeth_msn = 0x000321;
  finish(ack);
  pkts.push_back(ack);
  Built aa = make(Opcode::kAtomicAcknowledge, 0, 0x000002, 0x000011);
  aa.h.aeth_syndrome = 0x1F;
  aa.h.aeth_msn = 5;
  aa.h.atomic_ack_orig = 0x0123456789ABCDEFull;
  finish(aa);
  pkts.push_back(aa);
  Built cs = make(Opcode::kCompareSwap, 0, 0x000003, 0x000012);
  cs.h.atomic_va = 0x00007F0000000008ull;
  cs.h.atomic_rkey = 0xAABBCCDD;
  cs.h.atomic_swap_add = 0x1111111122222222ull;
  cs.h.atomic_compare = 0x3333333344444444ull;
  finish(cs);
  pkts.push_back(cs);
  Built sl = make(Opcode::kSendLastImm, 13, 0x000004, 0x000013);  // pad 3
  sl.h.imm = 0xFEEDF00D;
  finish(sl);
  pkts.push_back(sl);
  {
    PcapWriter w;
    ASSERT_TRUE(w.open(path).ok());
    for (std::size_t i = 0; i < pkts.size(); ++i) {
      if (i % 2) {
        w.write(pkts[i].tx());
      } else {
        w.write(pkts[i].frame());
      }
    }
    // Negative control: a COMPARE_SWAP cut inside its AtomicETH must be
    // reported as malformed, so the empty-column checks below mean something.
    const Bytes cut = cs.frame();
    w.write(std::span<const std::uint8_t>(cut.data(), 60));
    ASSERT_TRUE(w.close().ok());
  }

  const std::string fields[] = {"infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn",
                                "infiniband.reth.va", "infiniband.reth.r_key", "infiniband.reth.dmalen",
                                "infiniband.aeth.msn", "infiniband.atomicacketh.origremdt",
                                "infiniband.atomiceth.swapdt", "infiniband.atomiceth.cmpdt",
                                "infiniband.bth.padcnt", "infiniband.invariant.crc", "_ws.malformed",
                                "_ws.expert.severity"};
  std::string cmd = "tshark -n -r '" + path + "' -T fields -E separator='|' -E occurrence=a";
  for (const auto& f : fields) cmd += " -e " + f;
  cmd += " 2>/dev/null";
  const auto rows = split_lines(run(cmd));
  ASSERT_EQ(rows.size(), pkts.size() + 1) << "tshark output for " << path;
  ASSERT_EQ(rows.back().size(), std::size(fields));
  EXPECT_NE(rows.back()[12], "") << "truncated frame not reported as malformed";
  for (std::size_t i = 0; i < pkts.size(); ++i) {
    const auto& r = rows[i];
    const Headers& h = pkts[i].h;
    SCOPED_TRACE(std::string(opcode_name(h.opcode)));
    ASSERT_EQ(r.size(), std::size(fields));
    EXPECT_EQ(num(r[0]), std::optional<std::uint64_t>(h.opcode)) << r[0];
    EXPECT_EQ(num(r[1]), std::optional<std::uint64_t>(h.dest_qp)) << r[1];
    EXPECT_EQ(num(r[2]), std::optional<std::uint64_t>(h.psn)) << r[2];
    const OpcodeTraits t = opcode_traits(h.opcode);
    if (t.headers & kHasReth) {
      EXPECT_EQ(num(r[3]), std::optional<std::uint64_t>(h.reth_va)) << r[3];
      EXPECT_EQ(num(r[4]), std::optional<std::uint64_t>(h.reth_rkey)) << r[4];
      EXPECT_EQ(num(r[5]), std::optional<std::uint64_t>(h.reth_length)) << r[5];
    }
    if (t.headers & kHasAtomicEth) {
      // Wireshark shows the AtomicETH VA and R_Key with the RETH fields.
      EXPECT_EQ(num(r[3]), std::optional<std::uint64_t>(h.atomic_va)) << r[3];
      EXPECT_EQ(num(r[4]), std::optional<std::uint64_t>(h.atomic_rkey)) << r[4];
      EXPECT_EQ(num(r[8]), std::optional<std::uint64_t>(h.atomic_swap_add)) << r[8];
      EXPECT_EQ(num(r[9]), std::optional<std::uint64_t>(h.atomic_compare)) << r[9];
    }
    if (t.headers & kHasAeth) {
      EXPECT_EQ(num(r[6]), std::optional<std::uint64_t>(h.aeth_msn)) << r[6];
    }
    if (t.headers & kHasAtomicAckEth) {
      EXPECT_EQ(num(r[7]), std::optional<std::uint64_t>(h.atomic_ack_orig)) << r[7];
    }
    EXPECT_EQ(num(r[10]), std::optional<std::uint64_t>(pkts[i].tail.size() - 4)) << r[10] << "pad count";
    // Wireshark 4.0 shows the ICRC but does not verify it: check that it
    // found the ICRC where we put it (big-endian read of the last 4 bytes).
    const Bytes f = pkts[i].frame();
    char want[16];
    std::snprintf(want, sizeof want, "0x%02x%02x%02x%02x", f[f.size() - 4], f[f.size() - 3], f[f.size() - 2],
                  f[f.size() - 1]);
    EXPECT_EQ(r[11], want);
    EXPECT_EQ(r[12], "") << "malformed packet";
    EXPECT_EQ(r[13], "") << "expert info";
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace rma::roce
