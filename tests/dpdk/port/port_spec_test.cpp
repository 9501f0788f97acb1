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
                      BadSpec{"af_packet:averyveryverylongifname", "longer than 15"},
                      BadSpec{"ring:a b", "may contain only"}, BadSpec{"pci:xyz", "not a PCI address"},
                      BadSpec{"pci:0000:3b:00.9", "not a PCI address"}));
