// Output of the perftest-compatible tools against golden strings written
// from perftest's printf formats (perftest_parameters.h, perftest_communication.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "options.hpp"
#include "report.hpp"

namespace rma::perftest {
namespace {

Options opts(const Tool& tool, std::vector<std::string> args) {
  auto r = parse_options(tool, args);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? *r : Options{};
}

HeaderInfo roce() {
  HeaderInfo h;
  h.device = "softroce0";
  h.transport = "RoCE v2";
  h.link_layer = "Ethernet";
  h.mtu = 4096;
  return h;
}

const std::string kLine(87, '-');

TEST(PerftestReport, ResultLineIs87Dashes) { EXPECT_EQ(std::string(kResultLine), kLine + "\n"); }

TEST(PerftestReport, HeaderWriteBwClient) {
  Options o = opts(kWriteBw, {"127.0.0.1"});
  const std::string expected = kLine + "\n" +
                               "                    RDMA_Write BW Test\n"
                               " Dual-port       : OFF\t\tDevice         : softroce0\n"
                               " Number of qps   : 1\t\tTransport type : IB\n"
                               " Connection type : RC\t\tUsing SRQ      : OFF\n"
                               " PCIe relax order: Unsupported\t\tLock-free      : OFF\n"
                               " ibv_wr* API     : OFF\t\tUsing Enhanced Reorder      : OFF\n"
                               " TX depth        : 128\n"
                               " CQ Moderation   : 100\n"
                               " CQE Poll Batch  : 16\n"
                               " Mtu             : 4096[B]\n"
                               " Link type       : Ethernet\n"
                               " Max inline data : 0[B]\n"
                               " rdma_cm QPs\t : OFF\n"
                               " Data ex. method : Ethernet\n" +
                               kLine + "\n";
  EXPECT_EQ(format_header(o, roce()), expected);
}

TEST(PerftestReport, HeaderReadLatServerWithGidIndex) {
  Options o = opts(kReadLat, {"-x", "3"});
  o.outs = 16;
  const std::string expected = kLine + "\n" +
                               "                    RDMA_Read Latency Test\n"
                               " Dual-port       : OFF\t\tDevice         : softroce0\n"
                               " Number of qps   : 1\t\tTransport type : IB\n"
                               " Connection type : RC\t\tUsing SRQ      : OFF\n"
                               " PCIe relax order: Unsupported\t\tLock-free      : OFF\n"
                               " ibv_wr* API     : OFF\t\tUsing Enhanced Reorder      : OFF\n"
                               " Mtu             : 4096[B]\n"
                               " Link type       : Ethernet\n"
                               " GID index       : 3\n"
                               " Outstand reads  : 16\n"
                               " rdma_cm QPs\t : OFF\n"
                               " Data ex. method : Ethernet\n" +
                               kLine + "\n";
  EXPECT_EQ(format_header(o, roce()), expected);
}

TEST(PerftestReport, Titles) {
  EXPECT_EQ(test_title(opts(kAtomicBw, {})), "Atomic FETCH_AND_ADD BW Test");
  EXPECT_EQ(test_title(opts(kAtomicLat, {"-A", "CMP_AND_SWAP"})), "Atomic CMP_AND_SWAP Latency Test");
  EXPECT_EQ(test_title(opts(kWriteLat, {})), "RDMA_Write Latency Test");
  EXPECT_EQ(test_title(opts(kWriteBw, {"-l", "4"})), "RDMA_Write Post List BW Test");
  EXPECT_EQ(test_title(opts(kReadBw, {})), "RDMA_Read BW Test");
  EXPECT_EQ(test_json_name(opts(kWriteBw, {})), "RDMA_Write_BW_Test");
  EXPECT_EQ(test_json_name(opts(kAtomicLat, {})), "Atomic_FETCH_AND_ADD_Latency_Test");
}

QpInfo sample_qp() {
  QpInfo q;
  q.lid = 0;
  q.qpn = 0x108;
  q.psn = 0x63ad7d;
  q.rkey = 0x17eedf;
  q.vaddr = 0x7f760c947000ULL;
  q.out_reads = 16;
  q.gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 10, 255, 255, 5};
  return q;
}

TEST(PerftestReport, AddressLines) {
  QpInfo q = sample_qp();
  EXPECT_EQ(format_address("local", q, Verb::kWrite, true),
            " local address: LID 0000 QPN 0x0108 PSN 0x63ad7d RKey 0x17eedf VAddr 0x007f760c947000\n"
            " GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:255:255:05\n");
  EXPECT_EQ(format_address("remote", q, Verb::kRead, false),
            " remote address: LID 0000 QPN 0x0108 PSN 0x63ad7d OUT 0x10 RKey 0x17eedf VAddr 0x007f760c947000\n");
  // perftest prints neither OUT nor RKey/VAddr for atomics.
  EXPECT_EQ(format_address("local", q, Verb::kAtomic, false), " local address: LID 0000 QPN 0x0108 PSN 0x63ad7d\n");
  q.qpn = 0x11;
  q.psn = 0;
  EXPECT_EQ(format_address("local", q, Verb::kAtomic, false), " local address: LID 0000 QPN 0x0011 PSN 000000\n");
}

TEST(PerftestReport, ShowGid) {
  Options o = opts(kWriteBw, {});
  EXPECT_TRUE(show_gid(o, roce()));
  HeaderInfo ib = roce();
  ib.link_layer = "InfiniBand";
  EXPECT_FALSE(show_gid(o, ib));
  EXPECT_TRUE(show_gid(opts(kWriteBw, {"-x", "0"}), ib));
}

TEST(PerftestReport, BwTable) {
  EXPECT_EQ(format_bw_table_header(false),
            kLine + "\n #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n");
  EXPECT_EQ(format_bw_table_header(true),
            kLine + "\n #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n");
  BwResult r{65536, 5000, 11234.56, 11200.5, 0.179208};
  EXPECT_EQ(format_bw_row(r, false), " 65536      5000             11234.56            11200.50\t\t     0.179208\n");
  BwResult slow{2, 1000, 0.01, 0.02, 1.5};
  // Gb/s below 0.1: perftest's REPORT_FMT_EXT with 6 decimals.
  EXPECT_EQ(format_bw_row(slow, true), " 2          1000           0.010000            0.020000            1.500000\n");
}

TEST(PerftestReport, LatTable) {
  EXPECT_EQ(format_lat_table_header(false),
            kLine +
                "\n #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
                "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n");
  EXPECT_EQ(format_lat_table_header(true), kLine + "\n #bytes        #iterations       t_avg[usec]    tps average\n");
  LatResult r{2, 1000, 1.23, 4.56, 1.5, 1.61, 0.2, 3.1, 4.0};
  EXPECT_EQ(format_lat_row(r),
            " 2       1000          1.23           4.56         1.50     \t       1.61        \t0.20   \t\t3.10    "
            "\t\t4.00   \n");
  LatDurationResult d{2, 12345, 1.25, 400000.0};
  EXPECT_EQ(format_lat_duration_row(d), " 2             12345            1.25           400000.00\n");
}

TEST(PerftestReport, LatTypicalAndAverageBelowOneMicrosecondHaveFourDecimals) {
  // Only t_typical and t_avg: the other columns keep perftest's two decimals.
  LatResult fast{8, 1000000, 0.01, 93.58, 0.02, 0.0187, 0.37, 0.05, 1.87};
  EXPECT_EQ(format_lat_row(fast),
            " 8       1000000          0.01           93.58        0.0200   \t       0.0187      \t0.37   \t\t0.05    "
            "\t\t1.87   \n");
  LatResult one{8, 1000, 1, 2, 1, 1.0, 0, 1, 1};  // 1 us itself: two
  EXPECT_NE(format_lat_row(one).find("\t       1.00    "), std::string::npos) << format_lat_row(one);
  const std::string json = format_json(opts(kReadLat, {}), roce(), {}, {fast}, {});
  EXPECT_NE(json.find("\"t_typical\": 0.0200,\n\"t_avg\": 0.0187,\n\"t_stdev\": 0.37,"), std::string::npos) << json;
}

TEST(PerftestReport, ComputeBwPeakAndAverage) {
  // 10 messages of 1 MiB, cq_mod 5: posted every 100 us, completions at the signalled ones.
  std::vector<std::int64_t> posted, completed;
  for (int i = 0; i < 10; ++i) posted.push_back(i * 100000);
  for (int i = 0; i < 10; ++i) completed.push_back(i < 5 ? 500000 : 1000000);
  BwResult r = compute_bw(posted, completed, 1 << 20, 10, 5, false, false);
  EXPECT_EQ(r.size, 1u << 20);
  EXPECT_EQ(r.iters, 10u);
  // average: 10 MiB in 1 ms = 10000 MiB/s; 10 msgs / 1 ms = 0.01 Mpps
  EXPECT_NEAR(r.bw_avg, 10000.0, 1e-6);
  EXPECT_NEAR(r.msg_rate, 0.01, 1e-12);
  // peak: best (completed[j]-posted[i])/(j-i+1): i=5, j=9: 600000/5 = 120 us/msg? i=0,j=4: 500000/5 = 100 us.
  // and i=5..9 with j=9: (1000000-900000)/1 = 100 us; so 1 MiB per 100 us = 10000 MiB/s.
  EXPECT_NEAR(r.bw_peak, 10000.0, 1e-6);

  BwResult np = compute_bw({0}, {2000000}, 1000, 100, 100, true, true);
  EXPECT_EQ(np.bw_peak, 0.0);
  // 100 * 1000 bytes in 2 ms = 50e6 B/s = 0.4 Gb/s
  EXPECT_NEAR(np.bw_avg, 0.4, 1e-9);

  BwResult dur = compute_bw_duration(4096, 1000, 1000000000, false);
  EXPECT_EQ(dur.bw_peak, 0.0);
  EXPECT_NEAR(dur.bw_avg, 4096.0 * 1000 / 1048576.0, 1e-9);
  EXPECT_NEAR(dur.msg_rate, 0.001, 1e-12);
}

TEST(PerftestReport, ComputeLat) {
  // 11 stamps -> 10 deltas: 8 of 2 us, one of 3 us, one of 50 us (RTT); the 2 highest are dropped.
  std::vector<std::int64_t> stamps{0};
  std::vector<std::int64_t> deltas{2000, 2000, 2000, 3000, 2000, 50000, 2000, 2000, 2000, 2000};
  for (auto d : deltas) stamps.push_back(stamps.back() + d);
  LatResult r = compute_lat(stamps, 2, 2);  // WRITE: RTT/2
  EXPECT_EQ(r.size, 2u);
  EXPECT_DOUBLE_EQ(r.t_min, 1.0);
  // measure_cnt = 8; perftest reports delta[measure_cnt] (the 9th smallest) as t_max.
  EXPECT_DOUBLE_EQ(r.t_max, 1.5);
  EXPECT_DOUBLE_EQ(r.t_typical, 1.0);
  EXPECT_DOUBLE_EQ(r.t_avg, 1.0);
  EXPECT_DOUBLE_EQ(r.t_stdev, 0.0);
  EXPECT_DOUBLE_EQ(r.p99, 1.5);
  EXPECT_DOUBLE_EQ(r.p999, 1.5);
  LatResult rtt = compute_lat(stamps, 2, 1);  // READ/ATOMIC: full RTT
  EXPECT_DOUBLE_EQ(rtt.t_min, 2.0);

  LatDurationResult d = compute_lat_duration(8, 1000, 2000000, 1);  // 1000 ops in 2 ms
  EXPECT_DOUBLE_EQ(d.t_avg, 2.0);
  EXPECT_DOUBLE_EQ(d.tps, 500000.0);
}

TEST(PerftestReport, JsonSingleAndSweep) {
  Options o = opts(kWriteBw, {"127.0.0.1"});
  BwResult r{65536, 5000, 100.5, 99.25, 0.0015};
  const std::string json = format_json(o, roce(), {r}, {}, {});
  const std::string expected =
      "{\n\"test_info\": {\n\"test\": \"RDMA_Write_BW_Test\",\n\"Dual_port\": \"OFF\",\n\"Device\": \"softroce0\",\n"
      "\"Number_of_qps\": 1,\n\"Transport_type\": \"IB\",\n\"Connection_type\": \"RC\",\n\"Using_SRQ\": \"OFF\",\n"
      " \"PCIe_relax_order\": \"Unsupported\",\n\"ibv_wr_API\": \"OFF\",\n\"TX_depth\": 128,\n"
      "\"CQ_Moderation\": 100,\n\"Mtu\": 4096,\n\"Link_type\": \"Ethernet\",\n\"Max_inline_data\": 0,\n"
      "\"rdma_cm_QPs\": \"OFF\",\n\"Use_ROCm_memory\": \"OFF\",\n\"Use_MUSA_memory\": \"OFF\",\n"
      "\"Data_ex_method\": \"Ethernet\"\n},\n"
      "\"results\": {\n\"MsgSize\": 65536,\n\"n_iterations\": 5000,\n\"BW_peak\": 100.50,\n\"BW_average\": 99.25,\n"
      "\"MsgRate\": 0.001500\n}\n}\n";
  EXPECT_EQ(json, expected);

  Options lat = opts(kReadLat, {"-a"});
  lat.outs = 16;
  LatResult a{2, 1000, 1, 2, 1.5, 1.25, 0.1, 1.9, 2};
  LatResult b{4, 1000, 1, 2, 1.5, 1.25, 0.1, 1.9, 2};
  const std::string sweep = format_json(lat, roce(), {}, {a, b}, {});
  EXPECT_NE(sweep.find("\"Outstand_reads\": 16,\n"), std::string::npos);
  EXPECT_NE(sweep.find("\"results\": [\n{\n\"MsgSize\": 2,\n\"n_iterations\": 1000,\n\"t_min\": 1.00,\n\"t_max\": 2.00,\n"
                       "\"t_typical\": 1.50,\n\"t_avg\": 1.25,\n\"t_stdev\": 0.10,\n\"percentile_99\": 1.90,\n"
                       "\"percentile_99.9\": 2.00\n},\n{\n\"MsgSize\": 4,"),
            std::string::npos)
      << sweep;
  EXPECT_EQ(sweep.substr(sweep.size() - 6), "}\n]\n}\n");
  EXPECT_EQ(sweep.find("TX_depth"), std::string::npos);  // a server prints no TX depth

  LatDurationResult d{8, 500, 2.5, 400000};
  const std::string dj = format_json(opts(kAtomicLat, {"-D", "2", "127.0.0.1"}), roce(), {}, {}, {d});
  EXPECT_NE(dj.find("\"results\": {\n\"MsgSize\": 8,\n\"n_iterations\": 500,\n\"t_avg\": 2.50,\n\"tps_average\": "
                    "400000.00\n}\n}\n"),
            std::string::npos)
      << dj;
}

TEST(PerftestReport, ResultsRoundTrip) {
  BwResult b{65536, 5000, 1234.5678901234, 1000.25, 0.016};
  auto bd = decode_bw_result(encode_bw_result(b));
  ASSERT_TRUE(bd.ok());
  EXPECT_EQ(bd->size, b.size);
  EXPECT_EQ(bd->iters, b.iters);
  EXPECT_DOUBLE_EQ(bd->bw_peak, b.bw_peak);
  EXPECT_DOUBLE_EQ(bd->msg_rate, b.msg_rate);
  LatResult l{2, 1000, 1, 2, 3, 4, 5, 6, 7};
  auto ld = decode_lat_result(encode_lat_result(l));
  ASSERT_TRUE(ld.ok());
  EXPECT_DOUBLE_EQ(ld->p999, 7);
  LatDurationResult d{8, 9, 1.5, 2.5};
  auto dd = decode_lat_duration_result(encode_lat_duration_result(d));
  ASSERT_TRUE(dd.ok());
  EXPECT_DOUBLE_EQ(dd->tps, 2.5);
  EXPECT_FALSE(decode_bw_result("garbage").ok());
  EXPECT_FALSE(decode_lat_result("1 2 3").ok());
}

TEST(TransportSummary, NamesRetransmissionsAndNakKindsFromTheCounters) {
  const std::vector<CounterSample> c = {
      {"tx_frames", 1000},           {"retransmitted_packets", 12}, {"retry_timeouts", 2},
      {"naks_sent_psn_seq_err", 3},  {"naks_sent_rem_access_err", 0}, {"naks_received_psn_seq_err", 4},
      {"naks_received_rem_access_err", 1}, {"rnr_naks_sent", 0},  {"rnr_naks_received", 5}};
  EXPECT_EQ(format_transport_summary(c),
            " Transport      : 12 packets retransmitted, 2 retry timeouts\n"
            " NAKs sent      : 3 (psn_seq_err 3), RNR NAKs 0\n"
            " NAKs received  : 5 (psn_seq_err 4, rem_access_err 1), RNR NAKs 5\n");
}

TEST(TransportSummary, QuietRunSaysSoAndUnknownCountersSayNothing) {
  EXPECT_EQ(format_transport_summary({{"retransmitted_packets", 0}, {"naks_sent_psn_seq_err", 0}}),
            " Transport      : no retransmissions or NAKs\n");
  EXPECT_EQ(format_transport_summary({{"port_rcv_packets", 7}}), "");
  EXPECT_EQ(format_transport_summary({}), "");
}

}  // namespace
}  // namespace rma::perftest
