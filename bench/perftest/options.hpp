// Command-line options of the perftest-compatible tools (rma_write_bw, ...):
// the flags, defaults and limits of linux-rdma/perftest, plus librma's
// --transport and --port_type. Parsing is pure (no device, no network) so it
// can be tested; the checks that need the opened device are in
// check_against_device().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/status.hpp"

namespace rma::perftest {

enum class Verb { kWrite, kRead, kAtomic };
enum class TestKind { kBw, kLat };
enum class AtomicType { kCmpAndSwap, kFetchAndAdd };

// perftest's constants (perftest_parameters.h).
inline constexpr std::uint64_t kMaxSize = 8388608;          // MAX_SIZE: -a sweeps 2 .. 2^23
inline constexpr std::uint64_t kMaxMsgSize = 2147483647;    // UINT_MAX / 2
inline constexpr std::uint64_t kDefSizeBw = 65536;
inline constexpr std::uint64_t kDefSizeLat = 2;
inline constexpr std::uint64_t kDefSizeAtomic = 8;
inline constexpr std::uint64_t kDefItersWriteBw = 5000;
inline constexpr std::uint64_t kDefIters = 1000;
inline constexpr std::uint64_t kMinIters = 5;
inline constexpr std::uint64_t kMaxIters = 4294967296ULL;
inline constexpr std::uint32_t kDefTxBw = 128;
inline constexpr std::uint32_t kDefTxLat = 1;
inline constexpr std::uint32_t kDefCqMod = 100;
inline constexpr std::uint32_t kMaxCqMod = 1024;
inline constexpr std::uint32_t kDefInlineWriteLat = 220;
inline constexpr std::uint16_t kDefPort = 18515;
inline constexpr std::uint32_t kDefDuration = 5;

struct Tool {
  Verb verb = Verb::kWrite;
  TestKind test = TestKind::kBw;
  const char* name = "rma_write_bw";
};
inline constexpr Tool kWriteBw{Verb::kWrite, TestKind::kBw, "rma_write_bw"};
inline constexpr Tool kReadBw{Verb::kRead, TestKind::kBw, "rma_read_bw"};
inline constexpr Tool kAtomicBw{Verb::kAtomic, TestKind::kBw, "rma_atomic_bw"};
inline constexpr Tool kWriteLat{Verb::kWrite, TestKind::kLat, "rma_write_lat"};
inline constexpr Tool kReadLat{Verb::kRead, TestKind::kLat, "rma_read_lat"};
inline constexpr Tool kAtomicLat{Verb::kAtomic, TestKind::kLat, "rma_atomic_lat"};

struct Options {
  Tool tool;
  bool help = false;

  std::string host;              // empty: server (passive side)
  std::string ib_dev;            // -d: "" = the provider's first device
  std::uint32_t ib_port = 1;     // -i
  std::uint64_t size = 0;        // -s (default per tool)
  bool size_given = false;
  bool all = false;              // -a
  std::uint64_t iters = 0;       // -n (default per tool)
  bool iters_given = false;
  std::uint32_t duration = 0;    // -D seconds; 0 = iterations mode
  std::uint32_t num_qps = 1;     // -q
  std::uint32_t tx_depth = 0;    // -t (default per tool)
  std::uint32_t inline_size = 0; // -I
  bool inline_given = false;
  std::uint32_t cq_mod = kDefCqMod;  // -Q
  std::uint32_t post_list = 1;   // -l: work requests per post (BW tests); > 1 sets cq_mod to it
  int gid_index = -1;            // -x
  std::uint16_t port = kDefPort; // -p
  bool cpu_freq_f = false;       // -F
  AtomicType atomic_type = AtomicType::kFetchAndAdd;  // -A
  std::uint32_t mtu = 0;         // -m; 0 = the device's
  std::uint32_t outs = 0;        // -o; 0 = the device's max_qp_rd_atom
  bool no_peak = false;          // -N
  bool report_gbits = false;
  bool out_json = false;
  std::string out_json_file = "perftest_out.json";
  std::string transport;         // --transport: "" = the registry's choice
  std::string port_type;         // --port_type: softroce port spec ("" = memif)
  std::string bind_addr = "0.0.0.0";  // --bind: server's listening address
  std::uint32_t oob_timeout_ms = 10000;  // --oob_timeout: every OOB read's limit
  std::string oob_protocol = "auto";     // --oob_protocol: auto, perftest or librma

  bool is_server() const { return host.empty(); }
  bool duration_mode() const { return duration != 0; }
  // Message sizes this run measures, in order.
  std::vector<std::uint64_t> sizes(std::uint64_t max_msg_size) const;
  // Largest message size of the run (buffer size).
  std::uint64_t max_size(std::uint64_t max_msg_size) const;
};

// Parses argv[1..]. Errors carry the message the tool prints (without the
// tool's name); the tool exits 1 on them.
Result<Options> parse_options(const Tool& tool, const std::vector<std::string>& args);

// The settings that need the device: size vs max_msg_size, inline data,
// depth, outstanding reads, MTU, QP count. Fills in device defaults (outs,
// clamped LAT inline size).
Status check_against_device(Options& o, const DeviceInfo& dev);

// The --help text.
std::string usage(const Tool& tool);

const char* verb_title(Verb v);              // "RDMA_Write", "RDMA_Read", "Atomic"
const char* atomic_type_name(AtomicType t);  // "CMP_AND_SWAP", "FETCH_AND_ADD"

// Whether this run speaks perftest's own exchange (perftest_wire.hpp) with
// its peer: --oob_protocol=perftest, or auto with the verbs transport in
// rma_write_bw / rma_read_bw (the tools that interoperate with ib_write_bw
// and ib_read_bw). An error for combinations it cannot serve.
Result<bool> use_perftest_protocol(const Options& o, const std::string& provider);

// The softroce port spec for --port_type on this side: "memif" (default) and
// "memif:<name>" pick the memif role from the side (server listens); any other
// spec is used as given.
std::string softroce_port_spec(const Options& o);

}  // namespace rma::perftest
