// Port spec parsing (no EAL).
#include <gtest/gtest.h>

#include "port/port.hpp"
#include "port/spec.hpp"

using namespace rma::roce;
using namespace rma::roce::port;

TEST(PortSpec, ParsesEveryKind) {
  auto m = parse_port_spec("memif:server:rma-softroce");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->kind, PortKind::kMemif);
  EXPECT_TRUE(m->memif_server);
  EXPECT_EQ(m->name, "rma-softroce");
  EXPECT_EQ(m->canonical(), "memif:server:rma-softroce");

  auto c = parse_port_spec("memif:client:x/y,rsize=8,bsize=4096,wait=0");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_FALSE(c->memif_server);
  EXPECT_EQ(c->memif_rsize, 8u);
  EXPECT_EQ(c->memif_bsize, 4096u);
  EXPECT_EQ(c->link_wait_ms, 0u);

  auto r = parse_port_spec("ring:a,ip=10.0.0.1,mac=02:00:00:00:00:0a");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->kind, PortKind::kRing);
  EXPECT_EQ(r->ipv4, 0x0a000001u);
  ASSERT_TRUE(r->mac.has_value());
  EXPECT_EQ((*r->mac)[5], 0x0a);

  auto a = parse_port_spec("af_packet:veth0,framesz=8192,blocksz=16384,framecnt=512");
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(a->kind, PortKind::kAfPacket);
  EXPECT_EQ(a->framecnt, 512u);

  auto x = parse_port_spec("af_xdp:veth0,ip=10.0.0.2");
  ASSERT_TRUE(x.ok()) << x.status().to_string();
  EXPECT_EQ(x->kind, PortKind::kAfXdp);
  EXPECT_EQ(x->name, "veth0");

  EXPECT_TRUE(parse_port_spec("tap:rmatap0").ok());
  auto p = parse_port_spec("pci:0000:3b:00.1");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->name, "0000:3b:00.1");
  EXPECT_TRUE(parse_port_spec("pci:3b:00.0").ok());
  EXPECT_EQ(default_port_spec(), "memif:server:rma-softroce");
  EXPECT_TRUE(parse_port_spec(default_port_spec()).ok());
}

struct BadSpec {
  const char* spec;
  const char* message_part;
};

class PortSpecBad : public ::testing::TestWithParam<BadSpec> {};

TEST_P(PortSpecBad, RejectedWithMessage) {
  auto r = parse_port_spec(GetParam().spec);
  ASSERT_FALSE(r.ok()) << GetParam().spec;
  EXPECT_EQ(r.status().code(), rma::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(GetParam().message_part), std::string::npos) << r.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    All, PortSpecBad,
    ::testing::Values(BadSpec{"", "no kind"}, BadSpec{"memif", "no kind"},
                      BadSpec{"ethernet:eth0", "unknown kind 'ethernet'"},
                      BadSpec{"foo:bar", "valid port specs"}, BadSpec{"ring:", "missing name"},
                      BadSpec{"tap:", "missing name"}, BadSpec{"memif:server:", "missing name"},
                      BadSpec{"memif:peer:x", "role"}, BadSpec{"memif:x", "role"},
                      BadSpec{"ring:a,b", "not key=value"}, BadSpec{"ring:a,speed=10", "unknown option 'speed'"},
                      BadSpec{"ring:a,framesz=8192", "unknown option 'framesz' for ring"},
                      BadSpec{"ring:a,ip=10.0.0", "not an IPv4"}, BadSpec{"ring:a,ip=10.0.0.256", "not an IPv4"},
                      BadSpec{"ring:a,ip=1.2.3.4x", "not an IPv4"}, BadSpec{"ring:a,mac=02:00:00:00:00", "not a MAC"},
                      BadSpec{"ring:a,mac=02:00:00:00:00:zz", "not a MAC"},
                      BadSpec{"ring:a,mac=01:00:5e:00:00:01", "multicast"},
                      BadSpec{"memif:server:x,rsize=20", "rsize"}, BadSpec{"memif:server:x,wait=abc", "wait"},
                      BadSpec{"af_packet:eth0,framesz=3000", "power of two"},
                      // Issue 15: options DPDK's driver or the kernel would refuse at open are
                      // refused here, naming the port, the option and the cause.
                      BadSpec{"af_packet:eth0,framesz=3", "af_packet:eth0,framesz=3': option framesz='3' must be"},
                      BadSpec{"af_packet:eth0,framesz=16384,blocksz=16384",
                              "option framesz=16384 is larger than 8192: DPDK's af_packet driver copies"},
                      BadSpec{"af_packet:eth0,framesz=8192,blocksz=65536,framecnt=65536",
                              "options framecnt=65536 and framesz=8192 make a ring of 512 MiB, more than 256 MiB"},
                      BadSpec{"af_packet:averyveryverylongifname", "longer than 15"},
                      BadSpec{"af_xdp:averyveryverylongifname", "longer than 15"},
                      BadSpec{"af_xdp:veth0,framesz=4096", "unknown option 'framesz' for af_xdp"},
                      BadSpec{"ring:a b", "may contain only"}, BadSpec{"pci:xyz", "not a PCI address"},
                      BadSpec{"pci:0000:3b:00.9", "not a PCI address"},
                      BadSpec{"memif-mesh:job", "needs rank=R and size=N"},
                      BadSpec{"memif-mesh:job,rank=0", "needs rank=R and size=N"},
                      BadSpec{"memif-mesh:job,rank=3,size=3", "rank 3 is not below size 3"},
                      BadSpec{"memif-mesh:job,rank=0,size=65", "size"},
                      BadSpec{"memif-mesh:job,rank=0,size=2,ip=10.0.0.1", "derives each rank's ip"},
                      BadSpec{"memif-mesh:job,rank=0,size=2,mac=02:00:00:00:00:01", "derives each rank's mac"},
                      BadSpec{"memif-mesh:job,rank=0,size=2,framesz=4096", "unknown option 'framesz'"},
                      // A kernel interface shared by the ranks of a host (issue 15).
                      BadSpec{"af_packet:eth0,mesh=j,ip=169.254.1.1,mac=06:00:00:00:00:01",
                              "mesh=<job>, mesh_rank=R and mesh_size=N go together"},
                      BadSpec{"af_packet:eth0,mesh_rank=0,mesh_size=2,ip=169.254.1.1,mac=06:00:00:00:00:01",
                              "go together"},
                      BadSpec{"af_packet:eth0,mesh=j,mesh_rank=2,mesh_size=2,ip=169.254.1.1,mac=06:00:00:00:00:01",
                              "mesh_rank 2 is not below mesh_size 2"},
                      BadSpec{"af_packet:eth0,mesh=j,mesh_rank=0,mesh_size=65,ip=169.254.1.1,mac=06:00:00:00:00:01",
                              "option mesh_size='65' must be an integer in [1, 64]"},
                      BadSpec{"af_packet:eth0,mesh=j,mesh_rank=0,mesh_size=2", "needs this rank's own ip= and mac="},
                      BadSpec{"af_xdp:eth0,mesh=j,mesh_rank=0,mesh_size=2,ip=169.254.1.1",
                              "needs this rank's own ip= and mac="},
                      BadSpec{"af_packet:eth0,mesh=a b,mesh_rank=0,mesh_size=1,ip=169.254.1.1,mac=06:00:00:00:00:01",
                              "option mesh='a b' may contain only"},
                      BadSpec{"tap:t0,mesh=j", "unknown option 'mesh' for tap"},
                      BadSpec{"memif:server:x,mesh=j", "unknown option 'mesh' for memif"}));

// The ranks of one host sharing an interface (issue 15): the port names its
// local rank and the host's ranks; its memif members carry the port's own
// addresses and meet on sockets named after mesh=.
TEST(PortSpec, BridgedKernelPortLinksTheRanksOfItsHost) {
  auto p = parse_port_spec("af_packet:veth0,framesz=2048,blocksz=65536,framecnt=8192,ip=169.254.7.9,"
                           "mac=06:aa:bb:cc:00:05,mesh=rma-host-1,mesh_rank=1,mesh_size=3")
               .value();
  EXPECT_TRUE(is_bridged(p));
  EXPECT_EQ(p.kind, PortKind::kAfPacket);
  EXPECT_EQ(p.name, "veth0");
  EXPECT_EQ(p.rank, 1u);
  EXPECT_EQ(p.size, 3u);
  EXPECT_EQ(p.framecnt, 8192u);
  EXPECT_EQ(p.canonical(), "af_packet:veth0,mesh=rma-host-1,mesh_rank=1,mesh_size=3");
  EXPECT_EQ(p.link_wait_ms, 30000u) << "the host's ranks start in any order";
  const std::string to0 = mesh_member_spec(p, 0), to2 = mesh_member_spec(p, 2);
  EXPECT_EQ(to0.rfind("memif:client:rma-host-1.0.1,", 0), 0u) << to0;
  EXPECT_EQ(to2.rfind("memif:server:rma-host-1.1.2,", 0), 0u) << to2;
  auto member = parse_port_spec(to2).value();
  EXPECT_EQ(*member.mac, *p.mac) << "one NIC, one MAC on every link";
  EXPECT_EQ(member.ipv4, p.ipv4);
  EXPECT_FALSE(is_bridged(parse_port_spec("af_packet:veth0").value()));
  EXPECT_FALSE(is_bridged(parse_port_spec("memif-mesh:x,rank=0,size=2").value()));
}

TEST(PortSpec, MemifMeshGivesEveryRankItsAddressesAndLinks) {
  auto m = parse_port_spec("memif-mesh:rma-job-1,rank=2,size=4,rsize=8,wait=500").value();
  EXPECT_EQ(m.kind, PortKind::kMemifMesh);
  EXPECT_EQ(m.name, "rma-job-1");
  EXPECT_EQ(m.rank, 2u);
  EXPECT_EQ(m.size, 4u);
  EXPECT_EQ(m.memif_rsize, 8u);
  EXPECT_EQ(m.link_wait_ms, 500u);
  EXPECT_EQ(m.canonical(), "memif-mesh:rma-job-1,rank=2,size=4");
  ASSERT_TRUE(m.mac.has_value());
  EXPECT_EQ(*m.mac, mesh_mac(2));
  EXPECT_EQ(m.ipv4, mesh_ipv4(2));
  EXPECT_EQ(mesh_ipv4(0), 0x0A520001u);  // 10.82.0.1
  EXPECT_NE(mesh_mac(1), mesh_mac(257));
  EXPECT_EQ(mesh_mac(5)[0] & 1, 0);  // unicast
  EXPECT_EQ(mesh_socket("j", 3, 1), "j.1.3");
  EXPECT_EQ(mesh_socket("j", 1, 3), "j.1.3");
  // The lower rank serves; both ends name one socket; the member spec parses.
  const std::string to1 = mesh_member_spec(m, 1), to3 = mesh_member_spec(m, 3);
  EXPECT_EQ(to1.rfind("memif:client:rma-job-1.1.2,", 0), 0u) << to1;
  EXPECT_EQ(to3.rfind("memif:server:rma-job-1.2.3,", 0), 0u) << to3;
  auto member = parse_port_spec(to3).value();
  EXPECT_EQ(member.memif_rsize, 8u);
  EXPECT_EQ(member.link_wait_ms, 0u);  // a server does not wait in open_port
  EXPECT_EQ(parse_port_spec(to1).value().link_wait_ms, 500u);
  EXPECT_EQ(*member.mac, mesh_mac(2));
  EXPECT_EQ(member.ipv4, mesh_ipv4(2));
  // Defaults: smaller rings, a longer wait than a single memif port.
  auto d = parse_port_spec("memif-mesh:x,rank=0,size=1").value();
  EXPECT_EQ(d.memif_rsize, 9u);
  EXPECT_EQ(d.link_wait_ms, 30000u);
}
