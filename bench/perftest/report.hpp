// Output of the perftest-compatible tools: the header block, the address
// lines, the BW and LAT tables (perftest's printf formats, byte for byte)
// and the --out_json report; plus the arithmetic that turns timestamps into
// the numbers perftest reports.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "oob.hpp"
#include "options.hpp"
#include "rma/sdk/provider.hpp"

namespace rma::perftest {

// RESULT_LINE: 87 dashes and a newline.
extern const char* const kResultLine;

// What the transport did behind the table, from the device's counters
// (Device::read_counters): retransmitted packets, retry timeouts, NAKs sent
// and received (sequence, access, ...), RNR NAKs. One line per direction
// that saw any, so a user sees why a run was slow; "no retransmissions or
// NAKs" when the counters are all zero; nothing when the provider reports
// none of these counters (e.g. a NIC whose driver exposes no such counters).
std::string format_transport_summary(const std::vector<CounterSample>& counters);

struct BwResult {
  std::uint64_t size = 0;
  std::uint64_t iters = 0;   // messages counted (all QPs)
  double bw_peak = 0;        // MiB/s or Gb/s per the unit chosen
  double bw_avg = 0;
  double msg_rate = 0;       // Mpps
};

struct LatResult {
  std::uint64_t size = 0;
  std::uint64_t iters = 0;
  double t_min = 0, t_max = 0, t_typical = 0, t_avg = 0, t_stdev = 0, p99 = 0, p999 = 0;  // usec
};

struct LatDurationResult {
  std::uint64_t size = 0;
  std::uint64_t iters = 0;
  double t_avg = 0;      // usec
  double tps = 0;        // transactions per second
};

// What the header block needs besides the options.
struct HeaderInfo {
  std::string device;        // DeviceInfo::name
  std::string transport;     // DeviceInfo::transport
  std::string link_layer;    // DeviceInfo::link_layer
  std::uint32_t mtu = 0;     // bytes in use
};
HeaderInfo header_info(const DeviceInfo& dev, std::uint32_t mtu);

// "RDMA_Write BW Test", "Atomic FETCH_AND_ADD Latency Test".
std::string test_title(const Options& o);
// "RDMA_Write_BW_Test" (the JSON "test" value).
std::string test_json_name(const Options& o);
// The block from the first separator through the one closing the settings.
std::string format_header(const Options& o, const HeaderInfo& h);
// The server's "Waiting for client to connect..." banner.
std::string format_waiting_banner();
// " local address: LID 0000 QPN 0x0108 PSN ..." plus the GID line when shown.
std::string format_address(const char* side, const QpInfo& q, Verb verb, bool show_gid);
// Whether perftest would print GID lines: a GID index was given or the link is Ethernet (RoCE).
bool show_gid(const Options& o, const HeaderInfo& h);

// RESULT_LINE + the BW column header (MiB/sec or Gb/sec) + newline.
std::string format_bw_table_header(bool gbits);
// One REPORT_FMT row + newline (REPORT_FMT_EXT when Gb/s averages are < 0.1, as perftest).
std::string format_bw_row(const BwResult& r, bool gbits);
std::string format_lat_table_header(bool duration);
std::string format_lat_row(const LatResult& r);
std::string format_lat_duration_row(const LatDurationResult& r);

// BW from per-message post timestamps and per-message completion timestamps
// (nanoseconds, as perftest's tposted/tcompleted in cycles at 1 GHz).
// With no_peak only posted[0] and completed[0] are read and the peak is 0.
BwResult compute_bw(const std::vector<std::int64_t>& posted, const std::vector<std::int64_t>& completed,
                    std::uint64_t size, std::uint64_t total_iters, std::uint32_t cq_mod, bool no_peak, bool gbits);
// BW for duration mode: messages completed in `elapsed_ns`; peak 0 (as perftest).
BwResult compute_bw_duration(std::uint64_t size, std::uint64_t messages, std::int64_t elapsed_ns, bool gbits);
// LAT from consecutive iteration start stamps (ns): iters-1 samples, sorted,
// the 2 highest dropped (LAT_MEASURE_TAIL), divided by rtt_factor.
LatResult compute_lat(const std::vector<std::int64_t>& stamps, std::uint64_t size, int rtt_factor);
LatDurationResult compute_lat_duration(std::uint64_t size, std::uint64_t iters, std::int64_t elapsed_ns, int rtt_factor);

// --out_json: perftest's layout ({"test_info": {...}, "results": {...}});
// with several sizes (-a) "results" is an array of those objects.
std::string format_json(const Options& o, const HeaderInfo& h, const std::vector<BwResult>& bw,
                        const std::vector<LatResult>& lat, const std::vector<LatDurationResult>& lat_dur);

// Results travel from the active side to the passive one as text.
std::string encode_bw_result(const BwResult& r);
Result<BwResult> decode_bw_result(const std::string& s);
std::string encode_lat_result(const LatResult& r);
Result<LatResult> decode_lat_result(const std::string& s);
std::string encode_lat_duration_result(const LatDurationResult& r);
Result<LatDurationResult> decode_lat_duration_result(const std::string& s);

}  // namespace rma::perftest
