// perftest's own OOB exchange (bench/perftest/perftest_wire.hpp) over a
// socketpair: the key message byte for byte, the order of each symmetric
// exchange (client writes first), version, MTU and report handling, and the
// errors for a bad key, an old peer and a silent peer.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>
#include <string>

#include "perftest_wire.hpp"

namespace rma::perftest::wire {
namespace {

using namespace std::chrono_literals;

Key sample_key() {
  Key k;
  k.lid = 0x12;
  k.out_reads = 0x80;
  k.qpn = 0x11;
  k.psn = 0xabcdef;
  k.rkey = 0x1234;
  k.vaddr = 0x55d0a0b0c000ull;
  for (int i = 0; i < 16; ++i) k.gid[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(i * 17);
  return k;
}

TEST(PerftestWire, KeyMessagesHavePerftestsSizesAndFields) {
  const Key k = sample_key();
  const std::string plain = format_key(k, false);
  ASSERT_EQ(plain.size(), 59u);
  EXPECT_EQ(std::string(plain.c_str()), "0012:0080:000011:abcdef:00001234:000055d0a0b0c000:00000000");
  const std::string with_gid = format_key(k, true);
  ASSERT_EQ(with_gid.size(), 108u);
  EXPECT_EQ(with_gid.back(), '\0');
  EXPECT_EQ(std::string(with_gid.c_str()).substr(0, 41), "0012:0080:000011:abcdef:00001234:000055d0");
  for (bool gid : {false, true}) {
    auto back = parse_key(format_key(k, gid), gid);
    ASSERT_TRUE(back.ok()) << back.status().to_string();
    EXPECT_EQ(back->qpn, k.qpn);
    EXPECT_EQ(back->psn, k.psn);
    EXPECT_EQ(back->rkey, k.rkey);
    EXPECT_EQ(back->vaddr, k.vaddr);
    EXPECT_EQ(back->out_reads, k.out_reads);
    if (gid) {
      EXPECT_EQ(back->gid, k.gid);
    }
  }
}

TEST(PerftestWire, BadKeysAreRejectedNamingTheField) {
  auto wrong_kind = parse_key(format_key(sample_key(), false), true);
  ASSERT_FALSE(wrong_kind.ok());
  EXPECT_NE(wrong_kind.status().message().find("-x"), std::string::npos) << wrong_kind.status().message();
  std::string bad = format_key(sample_key(), false);
  bad.replace(10, 6, "zz0011");
  auto r = parse_key(bad, false);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("QPN"), std::string::npos) << r.status().message();
}

TEST(PerftestWire, MtuCodes) {
  EXPECT_EQ(mtu_code(1024), 3);
  EXPECT_EQ(mtu_code(4096), 5);
  EXPECT_EQ(mtu_code(1500), 0);
  EXPECT_EQ(mtu_bytes(1), 256u);
  EXPECT_EQ(mtu_bytes(5), 4096u);
  EXPECT_EQ(mtu_bytes(6), 0u);
}

struct Sockets {
  int fd[2] = {-1, -1};
  Sockets() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fd), 0); }
  ~Sockets() {
    ::close(fd[0]);
    ::close(fd[1]);
  }
};

TEST(PerftestWire, AFullExchangeBetweenClientAndServer) {
  Sockets s;
  Exchange client(s.fd[0], true, 2000ms), server(s.fd[1], false, 2000ms);
  auto srv = std::async(std::launch::async, [&]() -> std::string {
    if (!server.versions().ok()) return "versions";
    if (!server.sys_data(4096, 64).ok()) return "sys";
    auto m = server.mtu(1024);
    if (!m.ok() || *m != 1024) return "mtu";
    Key mine = sample_key();
    mine.qpn = 0x22;
    auto k = server.keys(mine, true);
    if (!k.ok() || k->qpn != 0x11) return "keys";
    BwResult nothing;
    auto rep = server.bw_report(nothing);
    if (!rep.ok() || rep->size != 65536 || rep->iters != 300 || rep->bw_avg != 30.5) return "report";
    if (!server.close(mine, true).ok()) return "close";
    return "";
  });
  ASSERT_TRUE(client.versions().ok());
  EXPECT_EQ(client.peer_version(), kVersion);
  ASSERT_TRUE(client.sys_data(4096, 64).ok());
  auto m = client.mtu(4096);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m, 1024u) << "the smaller MTU wins";
  auto k = client.keys(sample_key(), true);
  ASSERT_TRUE(k.ok()) << k.status().to_string();
  EXPECT_EQ(k->qpn, 0x22u);
  BwResult mine;
  mine.size = 65536;
  mine.iters = 300;
  mine.bw_peak = 54.25;
  mine.bw_avg = 30.5;
  mine.msg_rate = 0.000495;
  ASSERT_TRUE(client.bw_report(mine).ok());
  ASSERT_TRUE(client.close(sample_key(), true).ok());
  EXPECT_EQ(srv.get(), "");
  char done[5] = {};
  ASSERT_EQ(::recv(s.fd[0], done, 5, 0), 5);
  EXPECT_STREQ(done, "done");
}

TEST(PerftestWire, AnOldPeerIsRefused) {
  Sockets s;
  Exchange client(s.fd[0], true, 2000ms);
  auto peer = std::async(std::launch::async, [&] {
    char in[16], out[16] = "5.60";
    (void)::recv(s.fd[1], in, 16, MSG_WAITALL);
    (void)::send(s.fd[1], out, 16, 0);
  });
  Status st = client.versions();
  peer.get();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("5.60"), std::string::npos) << st.message();
}

TEST(PerftestWire, ASilentPeerTimesOut) {
  Sockets s;
  Exchange server(s.fd[1], false, 200ms);
  const auto t0 = std::chrono::steady_clock::now();
  Status st = server.versions();
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kTimeout) << st.to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
}

}  // namespace
}  // namespace rma::perftest::wire
