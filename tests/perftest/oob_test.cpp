// The OOB TCP exchange of the perftest-compatible tools, over socketpairs
// and loopback: framing, version check, QP records, timeouts, peer errors.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "oob.hpp"

namespace rma::perftest {
namespace {

struct Pair {
  OobChannel a, b;
};

Pair make_pair(std::uint32_t timeout_ms = 2000) {
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  return Pair{OobChannel(fds[0], timeout_ms), OobChannel(fds[1], timeout_ms)};
}

std::uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  ::close(fd);
  return ntohs(sa.sin_port);
}

TEST(PerftestOob, FramesAndHeartbeats) {
  Pair p = make_pair();
  ASSERT_TRUE(p.a.send(FrameType::kHeartbeat).ok());
  ASSERT_TRUE(p.a.send(FrameType::kReport, "M 1 2 3").ok());
  auto f = p.b.recv();  // the heartbeat is skipped
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->type, FrameType::kReport);
  EXPECT_EQ(f->payload, "M 1 2 3");

  Frame none;
  auto polled = p.b.poll_frame(none);
  ASSERT_TRUE(polled.ok());
  EXPECT_FALSE(*polled);
  ASSERT_TRUE(p.a.send(FrameType::kHeartbeat).ok());
  ASSERT_TRUE(p.a.send(FrameType::kDone).ok());
  Frame got;
  polled = p.b.poll_frame(got);
  ASSERT_TRUE(polled.ok());
  EXPECT_TRUE(*polled);
  EXPECT_EQ(got.type, FrameType::kDone);

  ASSERT_TRUE(p.a.send(FrameType::kSync).ok());
  auto wrong = p.b.expect(FrameType::kQpInfo);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message(), "OOB protocol error: expected QP info from the peer, got sync");
}

TEST(PerftestOob, VersionExchange) {
  Pair p = make_pair();
  std::thread t([&] { EXPECT_TRUE(p.a.exchange_version().ok()); });
  EXPECT_TRUE(p.b.exchange_version().ok());
  t.join();
}

TEST(PerftestOob, VersionMismatch) {
  Pair p = make_pair();
  std::thread t([&] { (void)p.a.exchange_version("rma-perftest 0"); });
  Status s = p.b.exchange_version();
  t.join();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "version mismatch: this side speaks 'rma-perftest 1', the peer 'rma-perftest 0'; run the same librma build "
            "on both sides");
}

TEST(PerftestOob, NotOurProtocol) {
  Pair p = make_pair();
  // What perftest's ib_write_bw sends first: its version text, unframed.
  const char text[] = "6.22\0\0\0\0\0\0\0\0\0";
  ASSERT_EQ(::write(p.a.fd(), text, sizeof text), static_cast<ssize_t>(sizeof text));
  Status s = p.b.exchange_version();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("does not speak the rma-perftest 1 protocol"), std::string::npos) << s.message();
}

TEST(PerftestOob, ReadTimeout) {
  Pair p = make_pair(200);
  auto start = std::chrono::steady_clock::now();
  auto f = p.b.recv();
  auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kTimeout);
  EXPECT_EQ(f.status().message(), "the peer sent nothing for 0.2 s (OOB read timeout); is it still running?");
  EXPECT_GE(waited, std::chrono::milliseconds(190));
  EXPECT_LT(waited, std::chrono::seconds(3));
}

TEST(PerftestOob, PeerClosedAndPeerError) {
  Pair p = make_pair();
  ASSERT_TRUE(p.a.send(FrameType::kError, "server: bad things").ok());
  auto e = p.b.recv();
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(), "the peer reported: server: bad things");
  p.a = OobChannel();
  auto c = p.b.recv();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "the peer closed the OOB connection");
  Frame f;
  EXPECT_FALSE(p.b.poll_frame(f).ok());
}

TEST(PerftestOob, QpInfoRoundTrip) {
  QpInfo q;
  const std::string blob = "softroce-address-bytes";
  for (std::size_t i = 0; i < blob.size(); ++i) q.address.bytes[i] = static_cast<std::uint8_t>(blob[i]);
  q.address.size = static_cast<std::uint32_t>(blob.size());
  q.qpn = 0x1a2;
  q.psn = 0x123456;
  q.rkey = 0xdeadbeef;
  q.vaddr = 0x7f0012345000ULL;
  q.size = 1 << 23;
  q.out_reads = 16;
  q.gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 127, 0, 0, 1};
  auto d = decode_qp_info(encode_qp_info(q));
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->address.size, q.address.size);
  EXPECT_EQ(d->address.bytes, q.address.bytes);
  EXPECT_EQ(d->qpn, q.qpn);
  EXPECT_EQ(d->psn, q.psn);
  EXPECT_EQ(d->rkey, q.rkey);
  EXPECT_EQ(d->vaddr, q.vaddr);
  EXPECT_EQ(d->size, q.size);
  EXPECT_EQ(d->out_reads, q.out_reads);
  EXPECT_EQ(d->gid, q.gid);
  std::string bad = encode_qp_info(q);
  bad.pop_back();
  EXPECT_FALSE(decode_qp_info(bad).ok());
  EXPECT_FALSE(decode_qp_info(std::string(1, '\xff')).ok());
}

TEST(PerftestOob, LoopbackListenConnectSync) {
  const std::uint16_t port = free_port();
  auto lfd = oob_listen("127.0.0.1", port);
  ASSERT_TRUE(lfd.ok()) << lfd.status().to_string();
  auto second = oob_listen("127.0.0.1", port);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().message(), "cannot listen on 127.0.0.1:" + std::to_string(port) +
                                           ": port already in use (another server running? pick one with -p)");
  std::thread client([&] {
    auto c = oob_connect("127.0.0.1", port, 2000, 2000);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_TRUE(c->exchange_version().ok());
    EXPECT_TRUE(c->sync().ok());
  });
  auto s = oob_accept(*lfd, 2000, 5000);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_TRUE(s->exchange_version().ok());
  EXPECT_TRUE(s->sync().ok());
  client.join();
  ::close(*lfd);
}

TEST(PerftestOob, ConnectRefusedRetriesThenFails) {
  const std::uint16_t port = free_port();
  auto start = std::chrono::steady_clock::now();
  auto c = oob_connect("127.0.0.1", port, 300, 1000);
  auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "cannot reach server 127.0.0.1:" + std::to_string(port) + ": Connection refused (retried for 0.3 s)");
  EXPECT_GE(waited, std::chrono::milliseconds(250));
  EXPECT_LT(waited, std::chrono::seconds(3));
}

TEST(PerftestOob, ConnectLateServer) {
  const std::uint16_t port = free_port();
  std::thread server([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    auto lfd = oob_listen("127.0.0.1", port);
    ASSERT_TRUE(lfd.ok());
    auto s = oob_accept(*lfd, 2000, 5000);
    ASSERT_TRUE(s.ok());
    EXPECT_TRUE(s->exchange_version().ok());
    ::close(*lfd);
  });
  auto c = oob_connect("127.0.0.1", port, 5000, 2000);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_TRUE(c->exchange_version().ok());
  server.join();
}

TEST(PerftestOob, AcceptTimeoutAndBadBind) {
  const std::uint16_t port = free_port();
  auto lfd = oob_listen("127.0.0.1", port);
  ASSERT_TRUE(lfd.ok());
  auto s = oob_accept(*lfd, 1000, 100);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kTimeout);
  ::close(*lfd);
  auto bad = oob_listen("not-an-ip", port);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "--bind: 'not-an-ip' is not an IPv4 address");
}

}  // namespace
}  // namespace rma::perftest
