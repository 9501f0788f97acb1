// Option parsing of the perftest-compatible tools: every flag, the defaults
// of each tool, and every error message.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "options.hpp"

namespace rma::perftest {
namespace {

Options parse_ok(const Tool& tool, std::vector<std::string> args) {
  auto r = parse_options(tool, args);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? *r : Options{};
}

std::string parse_err(const Tool& tool, std::vector<std::string> args) {
  auto r = parse_options(tool, args);
  EXPECT_FALSE(r.ok());
  return r.ok() ? std::string() : r.status().message();
}

DeviceInfo device(std::uint32_t max_msg = 1u << 31) {
  DeviceInfo d;
  d.name = "test0";
  d.transport = "RoCE v2";
  d.link_layer = "Ethernet";
  d.caps.max_msg_size = max_msg;
  d.caps.max_inline_data = 256;
  d.caps.max_qp_wr = 4096;
  d.caps.max_qp = 64;
  d.caps.max_qp_rd_atom = 16;
  d.caps.max_cqe = 65536;
  d.caps.atomics = true;
  d.caps.path_mtu = 4096;
  return d;
}

TEST(PerftestOptions, DefaultsWriteBw) {
  Options o = parse_ok(kWriteBw, {});
  EXPECT_TRUE(o.is_server());
  EXPECT_EQ(o.size, 65536u);
  EXPECT_EQ(o.iters, 5000u);
  EXPECT_EQ(o.tx_depth, 128u);
  EXPECT_EQ(o.cq_mod, 100u);
  EXPECT_EQ(o.inline_size, 0u);
  EXPECT_EQ(o.port, 18515);
  EXPECT_EQ(o.num_qps, 1u);
  EXPECT_EQ(o.gid_index, -1);
  EXPECT_EQ(o.ib_port, 1u);
  EXPECT_FALSE(o.all);
  EXPECT_FALSE(o.duration_mode());
  EXPECT_EQ(o.out_json_file, "perftest_out.json");
}

TEST(PerftestOptions, DefaultsPerTool) {
  Options rb = parse_ok(kReadBw, {});
  EXPECT_EQ(rb.size, 65536u);
  EXPECT_EQ(rb.iters, 1000u);
  EXPECT_EQ(rb.tx_depth, 128u);
  Options ab = parse_ok(kAtomicBw, {});
  EXPECT_EQ(ab.size, 8u);
  EXPECT_EQ(ab.iters, 1000u);
  EXPECT_EQ(ab.atomic_type, AtomicType::kFetchAndAdd);
  Options wl = parse_ok(kWriteLat, {});
  EXPECT_EQ(wl.size, 2u);
  EXPECT_EQ(wl.iters, 1000u);
  EXPECT_EQ(wl.tx_depth, 1u);
  EXPECT_EQ(wl.cq_mod, 1u);  // clamped to tx-depth as perftest does
  EXPECT_EQ(wl.inline_size, 220u);
  Options rl = parse_ok(kReadLat, {});
  EXPECT_EQ(rl.size, 2u);
  EXPECT_EQ(rl.inline_size, 0u);
  Options al = parse_ok(kAtomicLat, {});
  EXPECT_EQ(al.size, 8u);
  EXPECT_EQ(al.tx_depth, 1u);
}

TEST(PerftestOptions, EveryFlagShortAndLong) {
  Options o = parse_ok(kWriteBw, {"-d", "softroce0", "-i", "1", "-s", "4096", "-n", "200", "-q", "2", "-t", "64",
                                  "-I", "128", "-Q", "16", "-x", "3", "-p", "20000", "-F", "-m", "1024", "-o", "4",
                                  "-N", "--report_gbits", "--out_json", "--transport=softroce",
                                  "--port_type=memif:abc", "--bind=127.0.0.1", "--oob_timeout=500", "127.0.0.1"});
  EXPECT_EQ(o.host, "127.0.0.1");
  EXPECT_FALSE(o.is_server());
  EXPECT_EQ(o.ib_dev, "softroce0");
  EXPECT_EQ(o.size, 4096u);
  EXPECT_EQ(o.iters, 200u);
  EXPECT_EQ(o.num_qps, 2u);
  EXPECT_EQ(o.tx_depth, 64u);
  EXPECT_EQ(o.inline_size, 128u);
  EXPECT_EQ(o.cq_mod, 16u);
  EXPECT_EQ(o.gid_index, 3);
  EXPECT_EQ(o.port, 20000);
  EXPECT_TRUE(o.cpu_freq_f);
  EXPECT_EQ(o.mtu, 1024u);
  EXPECT_EQ(o.outs, 4u);
  EXPECT_TRUE(o.no_peak);
  EXPECT_TRUE(o.report_gbits);
  EXPECT_TRUE(o.out_json);
  EXPECT_EQ(o.transport, "softroce");
  EXPECT_EQ(o.port_type, "memif:abc");
  EXPECT_EQ(o.bind_addr, "127.0.0.1");
  EXPECT_EQ(o.oob_timeout_ms, 500u);

  Options l = parse_ok(kWriteBw, {"--ib-dev=x", "--ib-port=1", "--size=1K", "--iters", "10", "--qp=3",
                                  "--tx-depth=8", "--inline_size=0", "--cq-mod=4", "--gid-index=0", "--port=1234",
                                  "--CPU-freq", "--mtu=256", "--outs=1", "--noPeak", "--out_json_file=/tmp/x.json"});
  EXPECT_EQ(l.ib_dev, "x");
  EXPECT_EQ(l.size, 1024u);
  EXPECT_EQ(l.iters, 10u);
  EXPECT_EQ(l.num_qps, 3u);
  EXPECT_EQ(l.tx_depth, 8u);
  EXPECT_EQ(l.cq_mod, 4u);
  EXPECT_EQ(l.port, 1234);
  EXPECT_EQ(l.mtu, 256u);
  EXPECT_TRUE(l.out_json);
  EXPECT_EQ(l.out_json_file, "/tmp/x.json");

  Options attached = parse_ok(kWriteBw, {"-s65536", "-n100"});
  EXPECT_EQ(attached.size, 65536u);
  EXPECT_EQ(attached.iters, 100u);
}

TEST(PerftestOptions, PostListSetsCqModerationAndMustDivideTheDepth) {
  Options o = parse_ok(kWriteBw, {"-l", "32", "-Q", "100"});
  EXPECT_EQ(o.post_list, 32u);
  EXPECT_EQ(o.cq_mod, 32u);  // as perftest: one completion per list
  EXPECT_EQ(parse_ok(kReadBw, {"--post_list=16", "-t", "64"}).cq_mod, 16u);
  EXPECT_EQ(parse_ok(kWriteBw, {}).post_list, 1u);
  EXPECT_EQ(parse_err(kWriteBw, {"-l", "48"}), "-l/--post_list 48 must divide the tx depth 128");
  EXPECT_EQ(parse_err(kWriteLat, {"-l", "2"}), "-l/--post_list applies to the BW tests only");
}

TEST(PerftestOptions, AllDurationAtomicHelp) {
  Options a = parse_ok(kReadBw, {"-a"});
  EXPECT_TRUE(a.all);
  auto sizes = a.sizes(1u << 31);
  ASSERT_EQ(sizes.size(), 23u);
  EXPECT_EQ(sizes.front(), 2u);
  EXPECT_EQ(sizes.back(), 8388608u);
  EXPECT_EQ(a.max_size(1u << 31), 8388608u);
  EXPECT_EQ(a.sizes(4096).back(), 4096u);  // the sweep stops at the device's max_msg_size

  Options d = parse_ok(kWriteBw, {"--duration", "3"});
  EXPECT_TRUE(d.duration_mode());
  EXPECT_EQ(d.duration, 3u);

  Options cas = parse_ok(kAtomicBw, {"-A", "CMP_AND_SWAP"});
  EXPECT_EQ(cas.atomic_type, AtomicType::kCmpAndSwap);
  Options faa = parse_ok(kAtomicLat, {"--atomic_type=FETCH_AND_ADD", "-s", "8"});
  EXPECT_EQ(faa.atomic_type, AtomicType::kFetchAndAdd);

  EXPECT_TRUE(parse_ok(kWriteBw, {"-h"}).help);
  EXPECT_NE(usage(kAtomicBw).find("--atomic_type"), std::string::npos);
  EXPECT_EQ(usage(kWriteBw).find("--atomic_type"), std::string::npos);
  EXPECT_NE(usage(kWriteBw).find("--transport=<provider>"), std::string::npos);
}

TEST(PerftestOptions, Errors) {
  EXPECT_EQ(parse_err(kWriteBw, {"--bogus"}), "unknown option '--bogus' (see --help)");
  EXPECT_EQ(parse_err(kWriteBw, {"-Z"}), "unknown option '-Z' (see --help)");
  EXPECT_EQ(parse_err(kWriteBw, {"-Fx"}), "unknown option '-Fx' (see --help)");
  EXPECT_EQ(parse_err(kWriteBw, {"-s"}), "option '-s/--size' needs a value");
  EXPECT_EQ(parse_err(kWriteBw, {"--noPeak=1"}), "option '--noPeak' takes no value");
  EXPECT_EQ(parse_err(kWriteBw, {"-s", "0"}), "-s/--size: message size should be between 1 and 2147483647 (got 0)");
  EXPECT_EQ(parse_err(kWriteBw, {"--size=4G"}),
            "--size: message size should be between 1 and 2147483647 (got 4G)");
  EXPECT_EQ(parse_err(kWriteBw, {"-s", "abc"}), "-s/--size: 'abc' is not a size (bytes, K/M/G suffixes allowed)");
  EXPECT_EQ(parse_err(kWriteBw, {"-n", "4"}), "-n/--iters: 4 is outside 5..4294967296");
  EXPECT_EQ(parse_err(kWriteBw, {"-n", "x"}), "-n/--iters: 'x' is not a non-negative integer");
  EXPECT_EQ(parse_err(kWriteBw, {"-n", "-5"}), "-n/--iters: '-5' is not a non-negative integer");
  EXPECT_EQ(parse_err(kWriteBw, {"-D", "5", "-n", "100"}),
            "-D/--duration and -n/--iters cannot be used together: choose a time or a count");
  EXPECT_EQ(parse_err(kWriteBw, {"-D", "0"}), "-D/--duration: 0 is outside 1..86400");
  EXPECT_EQ(parse_err(kWriteBw, {"-D", "2", "-a"}), "-D/--duration cannot be used with -a/--all");
  EXPECT_EQ(parse_err(kWriteBw, {"-a", "-s", "64"}),
            "-a/--all sweeps every size from 2 to 8388608; it cannot be combined with -s/--size");
  EXPECT_EQ(parse_err(kAtomicBw, {"-s", "16"}),
            "message size cannot be changed for atomic tests (atomics are 8 bytes, got -s 16)");
  EXPECT_EQ(parse_err(kAtomicLat, {"-a"}),
            "-a/--all is not supported by the atomic tests: atomics are always 8 bytes");
  EXPECT_EQ(parse_err(kAtomicBw, {"-A", "SWAP"}), "-A/--atomic_type: 'SWAP' is not CMP_AND_SWAP or FETCH_AND_ADD");
  EXPECT_EQ(parse_err(kWriteBw, {"-A", "CMP_AND_SWAP"}), "-A/--atomic_type applies to the atomic tests only");
  EXPECT_EQ(parse_err(kWriteBw, {"-m", "1000"}), "-m/--mtu: 1000 is not one of 256, 512, 1024, 2048, 4096");
  EXPECT_EQ(parse_err(kWriteBw, {"-i", "2"}), "-i/--ib-port: 2 is outside 1..1");
  EXPECT_EQ(parse_err(kWriteBw, {"-q", "0"}), "-q/--qp: 0 is outside 1..16384");
  EXPECT_EQ(parse_err(kWriteLat, {"-q", "2"}), "-q/--qp 2: latency tests use one QP");
  EXPECT_EQ(parse_err(kWriteBw, {"-t", "0"}), "-t/--tx-depth: 0 is outside 1..1048576");
  EXPECT_EQ(parse_err(kWriteBw, {"-Q", "2000"}), "-Q/--cq-mod: 2000 is outside 1..1024");
  EXPECT_EQ(parse_err(kWriteBw, {"-p", "70000"}), "-p/--port: 70000 is outside 1..65535");
  EXPECT_EQ(parse_err(kWriteBw, {"-x", "-1"}), "-x/--gid-index: '-1' is not a non-negative integer");
  EXPECT_EQ(parse_err(kReadBw, {"-I", "64"}), "-I/--inline_size: inline data applies to RDMA WRITE only");
  EXPECT_EQ(parse_err(kWriteBw, {"--transport="}), "--transport needs a provider name (verbs, softroce, self)");
  EXPECT_EQ(parse_err(kWriteBw, {"--port_type="}),
            "--port_type needs a port spec (memif, memif:<name>, af_packet:<if>, ...)");
  EXPECT_EQ(parse_err(kWriteBw, {"--out_json_file="}), "--out_json_file needs a file name");
  EXPECT_EQ(parse_err(kWriteBw, {"--bind="}), "--bind needs an IPv4 address");
  EXPECT_EQ(parse_err(kWriteBw, {"--oob_timeout=0"}), "--oob_timeout: 0 is outside 1..3600000");
  EXPECT_EQ(parse_err(kWriteBw, {"host1", "host2"}), "more than one server address given ('host1', 'host2')");
  EXPECT_EQ(parse_err(kWriteBw, {"--bogus", "--help"}), "unknown option '--bogus' (see --help)");
}

TEST(PerftestOptions, CheckAgainstDevice) {
  Options o = parse_ok(kWriteBw, {"-s", "8192"});
  DeviceInfo d = device(4096);
  Status s = check_against_device(o, d);
  EXPECT_EQ(s.message(), "-s/--size 8192 is larger than the device's max_msg_size 4096 on device test0");

  Options inl = parse_ok(kWriteBw, {"-I", "512"});
  EXPECT_EQ(check_against_device(inl, device()).message(),
            "-I/--inline_size 512 exceeds the device's max_inline_data 256 on device test0");

  Options lat = parse_ok(kWriteLat, {});
  DeviceInfo small = device();
  small.caps.max_inline_data = 64;
  EXPECT_TRUE(check_against_device(lat, small).ok());
  EXPECT_EQ(lat.inline_size, 64u);  // the LAT default is capped, as perftest does

  Options depth = parse_ok(kWriteBw, {"-t", "8192"});
  EXPECT_EQ(check_against_device(depth, device()).message(),
            "-t/--tx-depth 8192 exceeds the device's max_qp_wr 4096 on device test0");
  Options qps = parse_ok(kWriteBw, {"-q", "100"});
  EXPECT_EQ(check_against_device(qps, device()).message(),
            "-q/--qp 100 exceeds the device's max_qp 64 on device test0");
  Options outs = parse_ok(kReadBw, {"-o", "32"});
  EXPECT_EQ(check_against_device(outs, device()).message(),
            "-o/--outs 32 exceeds the device's max_qp_rd_atom 16 on device test0");
  Options outs_default = parse_ok(kReadBw, {});
  EXPECT_TRUE(check_against_device(outs_default, device()).ok());
  EXPECT_EQ(outs_default.outs, 16u);
  Options mtu = parse_ok(kWriteBw, {"-m", "4096"});
  DeviceInfo m1k = device();
  m1k.caps.path_mtu = 1024;
  EXPECT_EQ(check_against_device(mtu, m1k).message(), "-m/--mtu 4096 exceeds the device's path MTU 1024 on device test0");
  Options atom = parse_ok(kAtomicBw, {});
  DeviceInfo no_atomics = device();
  no_atomics.caps.atomics = false;
  EXPECT_EQ(check_against_device(atom, no_atomics).message(), "the device does not support atomics on device test0");
  Options all = parse_ok(kWriteBw, {"-a"});
  EXPECT_TRUE(check_against_device(all, device(4096)).ok());
}

TEST(PerftestOptions, SoftrocePortSpec) {
  Options server = parse_ok(kWriteBw, {"-p", "20001"});
  EXPECT_EQ(softroce_port_spec(server), "memif:server:rma-perftest-20001,ip=10.255.255.1,mac=02:00:0a:ff:ff:01");
  Options client = parse_ok(kWriteBw, {"-p", "20001", "127.0.0.1"});
  EXPECT_EQ(softroce_port_spec(client), "memif:client:rma-perftest-20001,ip=10.255.255.2,mac=02:00:0a:ff:ff:02");
  Options named = parse_ok(kWriteBw, {"--port_type=memif:t1", "127.0.0.1"});
  EXPECT_EQ(softroce_port_spec(named), "memif:client:t1,ip=10.255.255.2,mac=02:00:0a:ff:ff:02");
  // Options of the user's own, and the addresses they leave out.
  Options ring = parse_ok(kWriteBw, {"--port_type=memif:t1,rsize=8", "127.0.0.1"});
  EXPECT_EQ(softroce_port_spec(ring), "memif:client:t1,rsize=8,ip=10.255.255.2,mac=02:00:0a:ff:ff:02");
  Options own_ip = parse_ok(kWriteBw, {"--port_type=memif:t1,ip=10.9.9.9"});
  EXPECT_EQ(softroce_port_spec(own_ip), "memif:server:t1,ip=10.9.9.9,mac=02:00:0a:ff:ff:01");
  Options both = parse_ok(kWriteBw, {"--port_type=memif:t1,mac=02:00:00:00:00:07,ip=10.9.9.9"});
  EXPECT_EQ(softroce_port_spec(both), "memif:server:t1,mac=02:00:00:00:00:07,ip=10.9.9.9");
  Options full = parse_ok(kWriteBw, {"--port_type=memif:server:x"});
  EXPECT_EQ(softroce_port_spec(full), "memif:server:x");
  Options af = parse_ok(kWriteBw, {"--port_type=af_packet:eth0"});
  EXPECT_EQ(softroce_port_spec(af), "af_packet:eth0");
}

}  // namespace
}  // namespace rma::perftest
