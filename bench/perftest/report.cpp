#include "report.hpp"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <sstream>

namespace rma::perftest {

const char* const kResultLine =
    "---------------------------------------------------------------------------------------\n";

namespace {

// perftest_parameters.h formats.
constexpr const char* kResultFmt = " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]";
constexpr const char* kResultFmtG = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]";
constexpr const char* kResultFmtLat =
    " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% "
    "percentile[usec]   99.9% percentile[usec] ";
constexpr const char* kResultFmtLatDur = " #bytes        #iterations       t_avg[usec]    tps average";
#define RMA_PT_REPORT_FMT " %-7lu    %-10" PRIu64 "       %-7.2lf            %-7.2lf\t\t     %-7.6lf"
#define RMA_PT_REPORT_FMT_EXT " %-7lu    %" PRIu64 "           %-7.6lf            %-7.6lf            %-7.6lf"
#define RMA_PT_REPORT_FMT_LAT \
  " %-7lu %" PRIu64 "          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f"
// t_typical and t_avg with four decimals below kFineAverageBelow (1 us):
// perftest's two are 10 ns steps, which can hide a fifth of a shm
// operation's time (a 24 ns median printed 0.02 read as faster than
// ucx_perftest's 0.021); the median is a whole nanosecond and over a
// million iterations the average is good to far less. (perftest likewise
// prints bandwidth with more decimals below 0.1.)
#define RMA_PT_REPORT_FMT_LAT_FINE \
  " %-7lu %" PRIu64 "          %-7.2f        %-7.2f      %-7.4f  \t       %-7.4f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f"
constexpr double kFineAverageBelow = 1.0;
#define RMA_PT_REPORT_FMT_LAT_DUR " %-7lu       %" PRIu64 "            %-7.2f        %-7.2f"

__attribute__((format(printf, 1, 2))) std::string fmt(const char* f, ...) {
  va_list ap;
  va_start(ap, f);
  va_list ap2;
  va_copy(ap2, ap);
  int n = std::vsnprintf(nullptr, 0, f, ap);
  va_end(ap);
  std::string s(static_cast<std::size_t>(n), '\0');
  std::vsnprintf(s.data(), s.size() + 1, f, ap2);
  va_end(ap2);
  return s;
}

double format_factor(bool gbits) { return gbits ? 125000000.0 : static_cast<double>(0x100000); }

std::string transport_str(const std::string& t) {
  if (t == "RoCE v2" || t == "InfiniBand" || t == "IB") return "IB";
  return t.empty() ? "Unknown" : t;
}

std::string link_layer_str(const std::string& l) {
  if (l == "InfiniBand" || l == "IB") return "IB";
  if (l == "Ethernet") return "Ethernet";
  return l.empty() ? "Unknown" : l;
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt("\\u%04x", c);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

HeaderInfo header_info(const DeviceInfo& dev, std::uint32_t mtu) {
  HeaderInfo h;
  h.device = dev.name;
  h.transport = dev.transport;
  h.link_layer = dev.link_layer;
  h.mtu = mtu;
  return h;
}

std::string test_title(const Options& o) {
  std::string t = std::string(verb_title(o.tool.verb)) + " ";
  if (o.tool.verb == Verb::kAtomic) t += std::string(atomic_type_name(o.atomic_type)) + " ";
  if (o.post_list > 1) t += "Post List ";
  t += o.tool.test == TestKind::kBw ? "BW " : "Latency ";
  return t + "Test";
}

std::string test_json_name(const Options& o) {
  std::string t = std::string(verb_title(o.tool.verb)) + "_";
  if (o.tool.verb == Verb::kAtomic) t += std::string(atomic_type_name(o.atomic_type)) + "_";
  t += o.tool.test == TestKind::kBw ? "BW_" : "Latency_";
  return t + "Test";
}

std::string format_transport_summary(const std::vector<CounterSample>& counters) {
  std::uint64_t retransmitted = 0, timeouts = 0, naks_sent = 0, naks_received = 0, rnr_sent = 0, rnr_received = 0;
  std::string sent_kinds, received_kinds;
  bool known = false;
  auto kind_list = [](std::string& list, const std::string& kind, std::uint64_t v) {
    list += (list.empty() ? "" : ", ") + kind + " " + std::to_string(v);
  };
  for (const CounterSample& c : counters) {
    const std::string_view n = c.name;
    if (n == "retransmitted_packets") { retransmitted = c.value; known = true; }
    else if (n == "retry_timeouts") { timeouts = c.value; known = true; }
    else if (n == "rnr_naks_sent") { rnr_sent = c.value; known = true; }
    else if (n == "rnr_naks_received") { rnr_received = c.value; known = true; }
    else if (n.starts_with("naks_sent_")) {
      known = true;
      naks_sent += c.value;
      if (c.value != 0) kind_list(sent_kinds, std::string(n.substr(10)), c.value);
    } else if (n.starts_with("naks_received_")) {
      known = true;
      naks_received += c.value;
      if (c.value != 0) kind_list(received_kinds, std::string(n.substr(14)), c.value);
    }
  }
  if (!known) return "";
  if (retransmitted + timeouts + naks_sent + naks_received + rnr_sent + rnr_received == 0) {
    return " Transport      : no retransmissions or NAKs\n";
  }
  std::string s = fmt(" Transport      : %llu packets retransmitted, %llu retry timeouts\n",
                      static_cast<unsigned long long>(retransmitted), static_cast<unsigned long long>(timeouts));
  if (naks_sent + rnr_sent != 0) {
    s += fmt(" NAKs sent      : %llu", static_cast<unsigned long long>(naks_sent));
    if (!sent_kinds.empty()) s += " (" + sent_kinds + ")";
    s += fmt(", RNR NAKs %llu\n", static_cast<unsigned long long>(rnr_sent));
  }
  if (naks_received + rnr_received != 0) {
    s += fmt(" NAKs received  : %llu", static_cast<unsigned long long>(naks_received));
    if (!received_kinds.empty()) s += " (" + received_kinds + ")";
    s += fmt(", RNR NAKs %llu\n", static_cast<unsigned long long>(rnr_received));
  }
  return s;
}

std::string format_waiting_banner() {
  return "\n************************************\n"
         "* Waiting for client to connect... *\n"
         "************************************\n";
}

std::string format_header(const Options& o, const HeaderInfo& h) {
  const bool bw = o.tool.test == TestKind::kBw;
  std::string s = kResultLine;
  s += "                    " + test_title(o) + "\n";
  s += fmt(" Dual-port       : %s\t\tDevice         : %s\n", "OFF", h.device.c_str());
  s += fmt(" Number of qps   : %u\t\tTransport type : %s\n", o.num_qps, transport_str(h.transport).c_str());
  s += fmt(" Connection type : %s\t\tUsing SRQ      : %s\n", "RC", "OFF");
  s += fmt(" PCIe relax order: %s\t\tLock-free      : %s\n", "Unsupported", "OFF");
  s += fmt(" ibv_wr* API     : %s\t\tUsing Enhanced Reorder      : %s\n", "OFF", "OFF");
  if (!o.is_server()) s += fmt(" TX depth        : %u\n", o.tx_depth);
  if (bw) {
    s += fmt(" CQ Moderation   : %u\n", o.cq_mod);
    s += fmt(" CQE Poll Batch  : %u\n", 16u);
  }
  s += fmt(" Mtu             : %u[B]\n", h.mtu);
  s += fmt(" Link type       : %s\n", link_layer_str(h.link_layer).c_str());
  if (o.gid_index >= 0) s += fmt(" GID index       : %d\n", o.gid_index);
  if (o.tool.verb == Verb::kWrite) {
    s += fmt(" Max inline data : %u[B]\n", o.inline_size);
  } else {
    s += fmt(" Outstand reads  : %u\n", o.outs);
  }
  s += " rdma_cm QPs\t : OFF\n";
  s += " Data ex. method : Ethernet\n";
  s += kResultLine;
  return s;
}

bool show_gid(const Options& o, const HeaderInfo& h) { return o.gid_index >= 0 || h.link_layer == "Ethernet"; }

std::string format_address(const char* side, const QpInfo& q, Verb verb, bool gid) {
  std::string s = fmt(" %s address: LID %#04x QPN %#06x PSN %#06x", side, q.lid, q.qpn, q.psn);
  // perftest's switch falls through from READ to WRITE; atomics print neither.
  if (verb == Verb::kRead) s += fmt(" OUT %#04x", q.out_reads);
  if (verb == Verb::kRead || verb == Verb::kWrite) {
    s += fmt(" RKey %#08x VAddr %#016llx", q.rkey, static_cast<unsigned long long>(q.vaddr));
  }
  s += "\n";
  if (gid) {
    const auto& g = q.gid;
    s += fmt(" %s: %02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d\n", "GID", g[0],
             g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15]);
  }
  return s;
}

std::string format_bw_table_header(bool gbits) {
  return std::string(kResultLine) + (gbits ? kResultFmtG : kResultFmt) + "\n";
}

std::string format_bw_row(const BwResult& r, bool gbits) {
  const bool inc_accuracy = r.bw_avg < 0.1 && gbits;
  if (inc_accuracy) {
    return fmt(RMA_PT_REPORT_FMT_EXT, static_cast<unsigned long>(r.size), r.iters, r.bw_peak, r.bw_avg, r.msg_rate) +
           "\n";
  }
  return fmt(RMA_PT_REPORT_FMT, static_cast<unsigned long>(r.size), r.iters, r.bw_peak, r.bw_avg, r.msg_rate) + "\n";
}

std::string format_lat_table_header(bool duration) {
  return std::string(kResultLine) + (duration ? kResultFmtLatDur : kResultFmtLat) + "\n";
}

std::string format_lat_row(const LatResult& r) {
  return fmt(r.t_avg < kFineAverageBelow ? RMA_PT_REPORT_FMT_LAT_FINE : RMA_PT_REPORT_FMT_LAT,
             static_cast<unsigned long>(r.size), r.iters, r.t_min, r.t_max, r.t_typical, r.t_avg, r.t_stdev, r.p99,
             r.p999) +
         "\n";
}

std::string format_lat_duration_row(const LatDurationResult& r) {
  return fmt(RMA_PT_REPORT_FMT_LAT_DUR, static_cast<unsigned long>(r.size), r.iters, r.t_avg, r.tps) + "\n";
}

BwResult compute_bw(const std::vector<std::int64_t>& posted, const std::vector<std::int64_t>& completed,
                    std::uint64_t size, std::uint64_t total_iters, std::uint32_t cq_mod, bool no_peak, bool gbits) {
  BwResult r;
  r.size = size;
  r.iters = total_iters;
  if (total_iters == 0 || posted.empty() || completed.empty()) return r;
  const double units = 1e9;  // timestamps are nanoseconds
  const double ff = format_factor(gbits);
  const std::size_t last = no_peak ? 0 : static_cast<std::size_t>(total_iters - 1);
  double opt_delta = static_cast<double>(completed[last] - posted[0]);
  if (!no_peak) {
    const std::uint64_t n = total_iters;
    const std::uint64_t mod = std::max<std::uint32_t>(cq_mod, 1);
    for (std::uint64_t i = 0; i < n; ++i) {
      // perftest: j runs over the signalled completions at or after i.
      for (std::uint64_t j = ((i + 1 + mod - 1) / mod) * mod - 1; j < n; j += mod) {
        double t = static_cast<double>((completed[j] - posted[i]) / static_cast<std::int64_t>(j - i + 1));
        if (t < opt_delta) opt_delta = t;
      }
      if (n % mod) {
        std::uint64_t j = n - 1;
        double t = static_cast<double>((completed[j] - posted[i]) / static_cast<std::int64_t>(j - i + 1));
        if (t < opt_delta) opt_delta = t;
      }
    }
  }
  double sum = static_cast<double>(completed[last] - posted[0]);
  if (sum <= 0) sum = 1;
  r.bw_avg = static_cast<double>(size) * static_cast<double>(total_iters) * units / (sum * ff);
  r.msg_rate = static_cast<double>(total_iters) * units / (sum * 1000000.0);
  if (!no_peak) r.bw_peak = opt_delta > 0 ? static_cast<double>(size) * units / (opt_delta * ff) : 0.0;
  return r;
}

BwResult compute_bw_duration(std::uint64_t size, std::uint64_t messages, std::int64_t elapsed_ns, bool gbits) {
  BwResult r;
  r.size = size;
  r.iters = messages;
  double sum = elapsed_ns > 0 ? static_cast<double>(elapsed_ns) : 1.0;
  r.bw_avg = static_cast<double>(size) * static_cast<double>(messages) * 1e9 / (sum * format_factor(gbits));
  r.msg_rate = static_cast<double>(messages) * 1e9 / (sum * 1000000.0);
  return r;
}

LatResult compute_lat(const std::vector<std::int64_t>& stamps, std::uint64_t size, int rtt_factor) {
  LatResult r;
  r.size = size;
  r.iters = stamps.size();
  if (stamps.size() < 4) return r;
  std::vector<std::int64_t> delta(stamps.size() - 1);
  for (std::size_t i = 0; i + 1 < stamps.size(); ++i) delta[i] = stamps[i + 1] - stamps[i];
  std::sort(delta.begin(), delta.end());
  const std::size_t measure_cnt = delta.size() - 2;  // LAT_MEASURE_TAIL
  const double q = 1000.0 * rtt_factor;              // ns -> usec, RTT -> one way
  // perftest's get_median
  std::int64_t median = ((measure_cnt - 1) % 2) ? (delta[measure_cnt / 2] + delta[measure_cnt / 2 - 1]) / 2
                                                : delta[measure_cnt / 2];
  double sum = 0;
  for (std::size_t i = 0; i < measure_cnt; ++i) sum += static_cast<double>(delta[i]) / q;
  const double avg = sum / static_cast<double>(measure_cnt);
  double var = 0;
  for (std::size_t i = 0; i < measure_cnt; ++i) {
    double d = avg - static_cast<double>(delta[i]) / q;
    var += d * d;
  }
  const auto i99 = static_cast<std::size_t>(std::ceil(static_cast<double>(measure_cnt) * 0.99));
  const auto i999 = static_cast<std::size_t>(std::ceil(static_cast<double>(measure_cnt) * 0.999));
  r.t_min = static_cast<double>(delta[0]) / q;
  r.t_max = static_cast<double>(delta[measure_cnt]) / q;  // as perftest: index measure_cnt
  r.t_typical = static_cast<double>(median) / q;
  r.t_avg = avg;
  r.t_stdev = std::sqrt(var / static_cast<double>(measure_cnt));
  r.p99 = static_cast<double>(delta[std::min(i99, delta.size() - 1)]) / q;
  r.p999 = static_cast<double>(delta[std::min(i999, delta.size() - 1)]) / q;
  return r;
}

LatDurationResult compute_lat_duration(std::uint64_t size, std::uint64_t iters, std::int64_t elapsed_ns,
                                       int rtt_factor) {
  LatDurationResult r;
  r.size = size;
  r.iters = iters;
  if (iters == 0 || elapsed_ns <= 0) return r;
  const double usec = static_cast<double>(elapsed_ns) / 1000.0;
  r.t_avg = usec / rtt_factor / static_cast<double>(iters);
  r.tps = static_cast<double>(iters) / (usec / 1000000.0);
  return r;
}

std::string format_json(const Options& o, const HeaderInfo& h, const std::vector<BwResult>& bw,
                        const std::vector<LatResult>& lat, const std::vector<LatDurationResult>& lat_dur) {
  std::string s = "{\n\"test_info\": {\n";
  s += "\"test\": \"" + test_json_name(o) + "\",\n";
  s += fmt("\"Dual_port\": \"%s\",\n\"Device\": \"%s\",\n", "OFF", json_escape(h.device).c_str());
  s += fmt("\"Number_of_qps\": %u,\n\"Transport_type\": \"%s\",\n", o.num_qps,
           json_escape(transport_str(h.transport)).c_str());
  s += fmt("\"Connection_type\": \"%s\",\n\"Using_SRQ\": \"%s\",\n", "RC", "OFF");
  s += fmt(" \"PCIe_relax_order\": \"%s\",\n", "Unsupported");
  s += fmt("\"ibv_wr_API\": \"%s\",\n", "OFF");
  if (!o.is_server()) s += fmt("\"TX_depth\": %u,\n", o.tx_depth);
  if (o.tool.test == TestKind::kBw) s += fmt("\"CQ_Moderation\": %u,\n", o.cq_mod);
  s += fmt("\"Mtu\": %u,\n", h.mtu);
  s += fmt("\"Link_type\": \"%s\",\n", json_escape(link_layer_str(h.link_layer)).c_str());
  if (o.gid_index >= 0) s += fmt("\"GID_index\": %d,\n", o.gid_index);
  if (o.tool.verb == Verb::kWrite) {
    s += fmt("\"Max_inline_data\": %u,\n", o.inline_size);
  } else {
    s += fmt("\"Outstand_reads\": %u,\n", o.outs);
  }
  s += "\"rdma_cm_QPs\": \"OFF\",\n";
  s += "\"Use_ROCm_memory\": \"OFF\",\n";
  s += "\"Use_MUSA_memory\": \"OFF\",\n";
  s += "\"Data_ex_method\": \"Ethernet\"";
  s += "\n},\n";

  std::vector<std::string> results;
  for (const auto& r : bw) {
    const bool inc = r.bw_avg < 0.1 && o.report_gbits;
    if (inc) {
      results.push_back(fmt("\"MsgSize\": %lu,\n\"n_iterations\": %" PRIu64
                            ",\n\"BW_peak\": %.6lf,\n\"BW_average\": %.6lf,\n\"MsgRate\": %.6lf",
                            static_cast<unsigned long>(r.size), r.iters, r.bw_peak, r.bw_avg, r.msg_rate));
    } else {
      results.push_back(fmt("\"MsgSize\": %lu,\n\"n_iterations\": %" PRIu64
                            ",\n\"BW_peak\": %.2lf,\n\"BW_average\": %.2lf,\n\"MsgRate\": %.6lf",
                            static_cast<unsigned long>(r.size), r.iters, r.bw_peak, r.bw_avg, r.msg_rate));
    }
  }
  for (const auto& r : lat) {
    results.push_back(fmt("\"MsgSize\": %lu,\n\"n_iterations\": %" PRIu64
                          ",\n\"t_min\": %.2f,\n\"t_max\": %.2f,\n\"t_typical\": %.*f,\n\"t_avg\": %.*f,\n"
                          "\"t_stdev\": %.2f,\n\"percentile_99\": %.2f,\n\"percentile_99.9\": %.2f",
                          static_cast<unsigned long>(r.size), r.iters, r.t_min, r.t_max,
                          r.t_avg < kFineAverageBelow ? 4 : 2, r.t_typical, r.t_avg < kFineAverageBelow ? 4 : 2,
                          r.t_avg, r.t_stdev, r.p99, r.p999));
  }
  for (const auto& r : lat_dur) {
    results.push_back(fmt("\"MsgSize\": %lu,\n\"n_iterations\": %" PRIu64 ",\n\"t_avg\": %.2f,\n\"tps_average\": %.2f",
                          static_cast<unsigned long>(r.size), r.iters, r.t_avg, r.tps));
  }
  if (results.size() == 1) {
    s += "\"results\": {\n" + results[0] + "\n}\n";
  } else {
    s += "\"results\": [\n";
    for (std::size_t i = 0; i < results.size(); ++i) {
      s += "{\n" + results[i] + "\n}" + (i + 1 < results.size() ? ",\n" : "\n");
    }
    s += "]\n";
  }
  s += "}\n";
  return s;
}

std::string encode_bw_result(const BwResult& r) {
  return fmt("%" PRIu64 " %" PRIu64 " %.17g %.17g %.17g", r.size, r.iters, r.bw_peak, r.bw_avg, r.msg_rate);
}

Result<BwResult> decode_bw_result(const std::string& s) {
  BwResult r;
  std::istringstream in(s);
  if (!(in >> r.size >> r.iters >> r.bw_peak >> r.bw_avg >> r.msg_rate)) {
    return invalid_argument("malformed BW report from the peer: '" + s + "'");
  }
  return r;
}

std::string encode_lat_result(const LatResult& r) {
  return fmt("%" PRIu64 " %" PRIu64 " %.17g %.17g %.17g %.17g %.17g %.17g %.17g", r.size, r.iters, r.t_min, r.t_max,
             r.t_typical, r.t_avg, r.t_stdev, r.p99, r.p999);
}

Result<LatResult> decode_lat_result(const std::string& s) {
  LatResult r;
  std::istringstream in(s);
  if (!(in >> r.size >> r.iters >> r.t_min >> r.t_max >> r.t_typical >> r.t_avg >> r.t_stdev >> r.p99 >> r.p999)) {
    return invalid_argument("malformed latency report from the peer: '" + s + "'");
  }
  return r;
}

std::string encode_lat_duration_result(const LatDurationResult& r) {
  return fmt("%" PRIu64 " %" PRIu64 " %.17g %.17g", r.size, r.iters, r.t_avg, r.tps);
}

Result<LatDurationResult> decode_lat_duration_result(const std::string& s) {
  LatDurationResult r;
  std::istringstream in(s);
  if (!(in >> r.size >> r.iters >> r.t_avg >> r.tps)) {
    return invalid_argument("malformed latency report from the peer: '" + s + "'");
  }
  return r;
}

}  // namespace rma::perftest
