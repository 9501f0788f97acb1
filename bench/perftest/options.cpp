#include "options.hpp"

#include <algorithm>
#include <charconv>
#include <functional>

#include "rma/sdk/config.hpp"

namespace rma::perftest {
namespace {

Result<std::uint64_t> parse_uint(std::string_view text, const std::string& flag, std::uint64_t min,
                                 std::uint64_t max) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size()) {
    return invalid_argument(flag + ": '" + std::string(text) + "' is not a non-negative integer");
  }
  if (v < min || v > max) {
    return invalid_argument(flag + ": " + std::string(text) + " is outside " + std::to_string(min) + ".." +
                            std::to_string(max));
  }
  return v;
}

struct Flag {
  char short_name;          // 0: long only
  const char* long_name;
  bool has_arg;
  std::function<Status(Options&, const std::string& flag, const std::string& value)> apply;
};

#define RMA_PT_UINT(field, type, min, max)                                            \
  [](Options& o, const std::string& flag, const std::string& v) -> Status {         \
    auto r = parse_uint(v, flag, min, max);                                           \
    if (!r.ok()) return r.status();                                                   \
    o.field = static_cast<type>(*r);                                                  \
    return {};                                                                        \
  }

std::vector<Flag> flags() {
  return {
      {'d', "ib-dev", true,
       [](Options& o, const std::string&, const std::string& v) -> Status {
         o.ib_dev = v;
         return {};
       }},
      {'i', "ib-port", true, RMA_PT_UINT(ib_port, std::uint32_t, 1, 1)},
      {'s', "size", true,
       [](Options& o, const std::string& flag, const std::string& v) -> Status {
         auto r = config::parse_size(v);
         if (!r.ok()) return invalid_argument(flag + ": '" + v + "' is not a size (bytes, K/M/G suffixes allowed)");
         if (*r < 1 || *r > kMaxMsgSize) {
           return invalid_argument(flag + ": message size should be between 1 and " + std::to_string(kMaxMsgSize) +
                                   " (got " + v + ")");
         }
         o.size = *r;
         o.size_given = true;
         return {};
       }},
      {'a', "all", false,
       [](Options& o, const std::string&, const std::string&) -> Status {
         o.all = true;
         return {};
       }},
      {'n', "iters", true,
       [](Options& o, const std::string& flag, const std::string& v) -> Status {
         auto r = parse_uint(v, flag, kMinIters, kMaxIters);
         if (!r.ok()) return r.status();
         o.iters = *r;
         o.iters_given = true;
         return {};
       }},
      {'D', "duration", true, RMA_PT_UINT(duration, std::uint32_t, 1, 86400)},
      {'q', "qp", true, RMA_PT_UINT(num_qps, std::uint32_t, 1, 16384)},
      {'t', "tx-depth", true, RMA_PT_UINT(tx_depth, std::uint32_t, 1, 1u << 20)},
      {'I', "inline_size", true,
       [](Options& o, const std::string& flag, const std::string& v) -> Status {
         auto r = parse_uint(v, flag, 0, 1u << 20);
         if (!r.ok()) return r.status();
         o.inline_size = static_cast<std::uint32_t>(*r);
         o.inline_given = true;
         return {};
       }},
      {'Q', "cq-mod", true, RMA_PT_UINT(cq_mod, std::uint32_t, 1, kMaxCqMod)},
      {'l', "post_list", true, RMA_PT_UINT(post_list, std::uint32_t, 1, kMaxCqMod)},
      {'x', "gid-index", true, RMA_PT_UINT(gid_index, int, 0, 255)},
      {'p', "port", true, RMA_PT_UINT(port, std::uint16_t, 1, 65535)},
      {'F', "CPU-freq", false,
       [](Options& o, const std::string&, const std::string&) -> Status {
         o.cpu_freq_f = true;
         return {};
       }},
      {'A', "atomic_type", true,
       [](Options& o, const std::string& flag, const std::string& v) -> Status {
         if (o.tool.verb != Verb::kAtomic) return invalid_argument(flag + " applies to the atomic tests only");
         if (v == "CMP_AND_SWAP") o.atomic_type = AtomicType::kCmpAndSwap;
         else if (v == "FETCH_AND_ADD") o.atomic_type = AtomicType::kFetchAndAdd;
         else return invalid_argument(flag + ": '" + v + "' is not CMP_AND_SWAP or FETCH_AND_ADD");
         return {};
       }},
      {'m', "mtu", true,
       [](Options& o, const std::string& flag, const std::string& v) -> Status {
         auto r = parse_uint(v, flag, 0, 1u << 20);
         if (!r.ok()) return r.status();
         if (*r != 256 && *r != 512 && *r != 1024 && *r != 2048 && *r != 4096) {
           return invalid_argument(flag + ": " + v + " is not one of 256, 512, 1024, 2048, 4096");
         }
         o.mtu = static_cast<std::uint32_t>(*r);
         return {};
       }},
      {'o', "outs", true, RMA_PT_UINT(outs, std::uint32_t, 1, 65536)},
      {'N', "noPeak", false,
       [](Options& o, const std::string&, const std::string&) -> Status {
         o.no_peak = true;
         return {};
       }},
      {0, "report_gbits", false,
       [](Options& o, const std::string&, const std::string&) -> Status {
         o.report_gbits = true;
         return {};
       }},
      {0, "out_json", false,
       [](Options& o, const std::string&, const std::string&) -> Status {
         o.out_json = true;
         return {};
       }},
      {0, "out_json_file", true,
       [](Options& o, const std::string& flag, const std::string& v) -> Status {
         if (v.empty()) return invalid_argument(flag + " needs a file name");
         o.out_json_file = v;
         o.out_json = true;
         return {};
       }},
      {0, "transport", true,
       [](Options& o, const std::string& flag, const std::string& v) -> Status {
         if (v.empty()) return invalid_argument(flag + " needs a provider name (verbs, softroce, self)");
         o.transport = v;
         return {};
       }},
      {0, "port_type", true,
       [](Options& o, const std::string& flag, const std::string& v) -> Status {
         if (v.empty()) return invalid_argument(flag + " needs a port spec (memif, memif:<name>, af_packet:<if>, ...)");
         o.port_type = v;
         return {};
       }},
      {0, "bind", true,
       [](Options& o, const std::string& flag, const std::string& v) -> Status {
         if (v.empty()) return invalid_argument(flag + " needs an IPv4 address");
         o.bind_addr = v;
         return {};
       }},
      {0, "oob_timeout", true,
       [](Options& o, const std::string& flag, const std::string& v) -> Status {
         auto r = parse_uint(v, flag, 1, 3600000);
         if (!r.ok()) return r.status();
         o.oob_timeout_ms = static_cast<std::uint32_t>(*r);
         return {};
       }},
      {0, "oob_protocol", true,
       [](Options& o, const std::string& flag, const std::string& v) -> Status {
         if (v != "auto" && v != "perftest" && v != "librma") {
           return invalid_argument(flag + " must be auto, perftest or librma, not '" + v + "'");
         }
         o.oob_protocol = v;
         return {};
       }},
      {'h', "help", false,
       [](Options& o, const std::string&, const std::string&) -> Status {
         o.help = true;
         return {};
       }},
  };
}
#undef RMA_PT_UINT

}  // namespace

const char* verb_title(Verb v) {
  switch (v) {
    case Verb::kWrite: return "RDMA_Write";
    case Verb::kRead: return "RDMA_Read";
    case Verb::kAtomic: return "Atomic";
  }
  return "?";
}

const char* atomic_type_name(AtomicType t) {
  return t == AtomicType::kCmpAndSwap ? "CMP_AND_SWAP" : "FETCH_AND_ADD";
}

Result<Options> parse_options(const Tool& tool, const std::vector<std::string>& args) {
  Options o;
  o.tool = tool;
  const auto table = flags();
  bool duration_given = false;
  std::vector<std::string> positional;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 2 || a[0] != '-') {
      positional.push_back(a);
      continue;
    }
    const Flag* f = nullptr;
    std::string flag, value;
    bool have_value = false;
    if (a[1] == '-') {
      std::string name = a.substr(2);
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        have_value = true;
      }
      for (const auto& c : table) {
        if (name == c.long_name) f = &c;
      }
      flag = "--" + name;
      if (f == nullptr) return invalid_argument("unknown option '" + a + "' (see --help)");
      if (!f->has_arg && have_value) return invalid_argument("option '" + flag + "' takes no value");
    } else {
      for (const auto& c : table) {
        if (c.short_name != 0 && a[1] == c.short_name) f = &c;
      }
      if (f == nullptr) return invalid_argument("unknown option '" + a + "' (see --help)");
      flag = std::string("-") + a[1] + "/--" + f->long_name;
      if (a.size() > 2) {
        if (!f->has_arg) return invalid_argument("unknown option '" + a + "' (see --help)");
        value = a.substr(2);
        have_value = true;
      }
    }
    if (f->has_arg && !have_value) {
      if (i + 1 >= args.size()) return invalid_argument("option '" + flag + "' needs a value");
      value = args[++i];
    }
    if (f->short_name == 'D') duration_given = true;
    if (Status s = f->apply(o, flag, value); !s.ok()) return s;
  }
  if (o.help) return o;
  if (positional.size() > 1) {
    return invalid_argument("more than one server address given ('" + positional[0] + "', '" + positional[1] + "')");
  }
  if (!positional.empty()) o.host = positional[0];

  const bool bw = tool.test == TestKind::kBw;
  if (duration_given && o.iters_given) {
    return invalid_argument("-D/--duration and -n/--iters cannot be used together: choose a time or a count");
  }
  if (duration_given && o.all) {
    return invalid_argument("-D/--duration cannot be used with -a/--all");
  }
  if (o.all && o.size_given) {
    return invalid_argument("-a/--all sweeps every size from 2 to 8388608; it cannot be combined with -s/--size");
  }
  if (tool.verb == Verb::kAtomic) {
    if (o.all) return invalid_argument("-a/--all is not supported by the atomic tests: atomics are always 8 bytes");
    if (o.size_given && o.size != kDefSizeAtomic) {
      return invalid_argument("message size cannot be changed for atomic tests (atomics are 8 bytes, got -s " +
                              std::to_string(o.size) + ")");
    }
  }
  if (!bw && o.num_qps != 1) {
    return invalid_argument("-q/--qp " + std::to_string(o.num_qps) + ": latency tests use one QP");
  }
  if (tool.verb != Verb::kWrite && o.inline_given && o.inline_size != 0) {
    return invalid_argument("-I/--inline_size: inline data applies to RDMA WRITE only");
  }

  if (!o.size_given) {
    o.size = tool.verb == Verb::kAtomic ? kDefSizeAtomic : (bw ? kDefSizeBw : kDefSizeLat);
  }
  if (!o.iters_given) o.iters = (tool.verb == Verb::kWrite && bw) ? kDefItersWriteBw : kDefIters;
  if (o.tx_depth == 0) o.tx_depth = bw ? kDefTxBw : kDefTxLat;
  if (!o.inline_given) o.inline_size = (tool.verb == Verb::kWrite && !bw) ? kDefInlineWriteLat : 0;
  if (o.post_list > 1) {
    // As perftest: a post list is signalled once, at its end, so CQ
    // moderation is the list's size, and lists fill the send queue exactly.
    if (!bw) return invalid_argument("-l/--post_list applies to the BW tests only");
    if (o.tx_depth % o.post_list != 0) {
      return invalid_argument("-l/--post_list " + std::to_string(o.post_list) + " must divide the tx depth " +
                              std::to_string(o.tx_depth));
    }
    o.cq_mod = o.post_list;
  }
  if (o.cq_mod > o.tx_depth) o.cq_mod = o.tx_depth;  // as perftest
  return o;
}

std::vector<std::uint64_t> Options::sizes(std::uint64_t max_msg_size) const {
  if (!all) return {size};
  std::vector<std::uint64_t> out;
  for (std::uint64_t s = 2; s <= kMaxSize && s <= max_msg_size; s *= 2) out.push_back(s);
  return out;
}

std::uint64_t Options::max_size(std::uint64_t max_msg_size) const {
  auto s = sizes(max_msg_size);
  return s.empty() ? size : *std::max_element(s.begin(), s.end());
}

Status check_against_device(Options& o, const DeviceInfo& dev) {
  const DeviceCaps& c = dev.caps;
  const std::string on = " on device " + dev.name;
  if (!o.all && o.size > c.max_msg_size) {
    return invalid_argument("-s/--size " + std::to_string(o.size) + " is larger than the device's max_msg_size " +
                            std::to_string(c.max_msg_size) + on);
  }
  if (o.all && c.max_msg_size < 2) return invalid_argument("the device's max_msg_size is below 2 bytes" + on);
  if (o.tool.verb == Verb::kAtomic && !c.atomics) {
    return invalid_argument("the device does not support atomics" + on);
  }
  if (o.tool.verb == Verb::kWrite) {
    if (o.inline_size > c.max_inline_data) {
      if (o.inline_given) {
        return invalid_argument("-I/--inline_size " + std::to_string(o.inline_size) +
                                " exceeds the device's max_inline_data " + std::to_string(c.max_inline_data) + on);
      }
      o.inline_size = c.max_inline_data;  // perftest clamps its LAT default to what the device takes
    }
  } else {
    o.inline_size = 0;
  }
  if (c.max_qp_wr != 0 && o.tx_depth > c.max_qp_wr) {
    return invalid_argument("-t/--tx-depth " + std::to_string(o.tx_depth) + " exceeds the device's max_qp_wr " +
                            std::to_string(c.max_qp_wr) + on);
  }
  if (c.max_qp != 0 && o.num_qps > c.max_qp) {
    return invalid_argument("-q/--qp " + std::to_string(o.num_qps) + " exceeds the device's max_qp " +
                            std::to_string(c.max_qp) + on);
  }
  if (o.outs == 0) {
    o.outs = std::max<std::uint32_t>(1, c.max_qp_rd_atom);
  } else if (o.outs > c.max_qp_rd_atom) {
    return invalid_argument("-o/--outs " + std::to_string(o.outs) + " exceeds the device's max_qp_rd_atom " +
                            std::to_string(c.max_qp_rd_atom) + on);
  }
  if (o.mtu != 0 && c.path_mtu != 0 && o.mtu > c.path_mtu) {
    return invalid_argument("-m/--mtu " + std::to_string(o.mtu) + " exceeds the device's path MTU " +
                            std::to_string(c.path_mtu) + on);
  }
  return {};
}

Result<bool> use_perftest_protocol(const Options& o, const std::string& provider) {
  const bool bw_write_read = o.tool.test == TestKind::kBw && o.tool.verb != Verb::kAtomic;
  if (o.oob_protocol == "librma") return false;
  if (o.oob_protocol == "auto") return bw_write_read && provider == "verbs";
  if (!bw_write_read) {
    return invalid_argument(std::string("--oob_protocol=perftest: only rma_write_bw and rma_read_bw speak perftest's "
                                        "exchange; ") + o.tool.name + " needs --oob_protocol=librma");
  }
  if (provider != "verbs") {
    return invalid_argument("--oob_protocol=perftest needs the verbs transport (perftest's keys carry no MAC "
                            "address for the " + provider + " provider)");
  }
  return true;
}

std::string softroce_port_spec(const Options& o) {
  // The two ends of the memif link get their own addresses (RoCE v2 needs an
  // IPv4 address and distinct MACs); they exist only on that virtual link.
  // memif:<name>[,options]: whichever of the two the options leave out
  // (a user who adds rsize= still gets them).
  const bool server = o.is_server();
  const std::string role = server ? "server" : "client";
  const std::string ip = server ? ",ip=10.255.255.1" : ",ip=10.255.255.2";
  const std::string mac = server ? ",mac=02:00:0a:ff:ff:01" : ",mac=02:00:0a:ff:ff:02";
  std::string spec = o.port_type.empty() ? "memif" : o.port_type;
  if (spec == "memif") return "memif:" + role + ":rma-perftest-" + std::to_string(o.port) + ip + mac;
  if (spec.rfind("memif:", 0) == 0 && spec.rfind("memif:server:", 0) != 0 && spec.rfind("memif:client:", 0) != 0) {
    const std::string rest = spec.substr(6);
    std::string out = "memif:" + role + ":" + rest;
    if (rest.find(",ip=") == std::string::npos) out += ip;
    if (rest.find(",mac=") == std::string::npos) out += mac;
    return out;
  }
  return spec;
}

std::string usage(const Tool& tool) {
  const bool bw = tool.test == TestKind::kBw;
  std::string u;
  u += "Usage:\n";
  u += std::string("  ") + tool.name + "            start a server and wait for connection\n";
  u += std::string("  ") + tool.name + " <host>     connect to server at <host>\n\n";
  u += "Options:\n";
  u += "  -a, --all                    Run sizes from 2 till 2^23\n";
  if (tool.verb == Verb::kAtomic) {
    u += "  -A, --atomic_type=<type>     type of atomic operation from {CMP_AND_SWAP,FETCH_AND_ADD} (default FETCH_AND_ADD)\n";
  }
  u += "  -d, --ib-dev=<dev>           Use IB device <dev> (default first device found)\n";
  u += "  -D, --duration               Run test for a customized period of seconds.\n";
  u += "  -F, --CPU-freq               Do not show a warning even if cpufreq_ondemand module is loaded\n";
  u += "  -h, --help                   Show this help screen.\n";
  u += "  -i, --ib-port=<port>         Use port <port> of IB device (default 1)\n";
  if (tool.verb == Verb::kWrite) {
    u += std::string("  -I, --inline_size=<size>     Max size of message to be sent in inline (default ") +
         (bw ? "0" : "220, capped at the device's max_inline_data") + ")\n";
  }
  u += "  -m, --mtu=<mtu>              MTU size : 256 - 4096 (default port mtu)\n";
  u += std::string("  -n, --iters=<iters>          Number of exchanges (at least 5, default ") +
       ((tool.verb == Verb::kWrite && bw) ? "5000" : "1000") + ")\n";
  u += "  -N, --noPeak                 Cancel peak-bw calculation (default with peak up to iters=20000)\n";
  u += "  -o, --outs=<num>             num of outstanding read/atom (default max of device)\n";
  u += "  -p, --port=<port>            Listen on/connect to port <port> (default 18515)\n";
  if (bw) u += "  -q, --qp=<num of qp's>       Num of qp's (default 1)\n";
  u += "  -Q, --cq-mod                 Generate Cqe only after <--cq-mod> completion (default 100)\n";
  if (bw) u += "  -l, --post_list=<list size>  Post list of WQEs of <list size> size (instead of single post)\n";
  u += std::string("  -s, --size=<size>            Size of message to exchange (default ") +
       (tool.verb == Verb::kAtomic ? "8" : (bw ? "65536" : "2")) + ")\n";
  u += std::string("  -t, --tx-depth=<dep>         Size of tx queue (default ") + (bw ? "128" : "1") + ")\n";
  u += "  -x, --gid-index=<index>      Test uses GID with GID index\n";
  u += "      --out_json               Save the report in a json file\n";
  u += "      --out_json_file=<file>   Name of the report json file (default perftest_out.json; implies --out_json)\n";
  u += "      --report_gbits           Report Max/Average BW of test in Gbit/sec (instead of MiB/sec)\n";
  u += "\nlibrma options:\n";
  u += "      --transport=<provider>   librma provider: verbs, softroce, ... (default RMA_PROVIDER, else the\n"
       "                               highest-priority provider with a device); 'self' is in-process only\n";
  u += "      --port_type=<spec>       softroce port (sets RMA_SOFTROCE_PORT): memif (default; the socket is\n"
       "                               rma-perftest-<port>, the ends 10.255.255.1 (server) and .2 (client)),\n"
       "                               memif:<name>[,options] (the ends' ip= and mac= added where the options\n"
       "                               leave them out), or a full spec: memif:server:<sock>,ip=..., af_packet:<if>,ip=...\n"
       "                               Without --port_type, a set RMA_SOFTROCE_PORT is used as it is.\n";
  u += "      --bind=<addr>            server: IPv4 address the OOB TCP socket listens on (default 0.0.0.0)\n";
  u += "      --oob_timeout=<ms>       limit of every OOB TCP read (default 10000)\n";
  u += "      --oob_protocol=<p>       the OOB exchange: perftest (linux-rdma perftest's, to run against\n"
       "                               ib_write_bw/ib_read_bw; verbs transport, write/read BW tools), librma\n"
       "                               (every tool and transport), or auto (default): perftest's for\n"
       "                               rma_write_bw/rma_read_bw on the verbs transport, else librma's\n";
  return u;
}

}  // namespace rma::perftest
