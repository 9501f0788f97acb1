// The port the softroce provider takes from a job across hosts with nothing
// configured (dpdk/provider/job_port.hpp, uplink_interface.hpp): which
// interface, which addresses for each rank, which ring options, and the
// errors that name RMA_SOFTROCE_PORT when the launcher or the host leaves
// the choice open. The whole job is run in two network namespaces by
// tests/multihost.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include "port/spec.hpp"
#include "provider/job_port.hpp"
#include "provider/uplink_interface.hpp"

namespace rma::softroce {
namespace {

InterfaceFacts iface(const std::string& name, bool usable = true) {
  InterfaceFacts f;
  f.name = name;
  f.up = f.running = f.ethernet = f.has_ipv4 = usable;
  f.mtu = 1500;
  return f;
}

TEST(UplinkChoice, TheOneUsableInterfaceElseTheDefaultRoutesElseAnErrorNamingThePortVariable) {
  InterfaceFacts lo = iface("lo");
  lo.loopback = true;
  InterfaceFacts down = iface("eth1");
  down.up = false;
  InterfaceFacts no_carrier = iface("docker0");
  no_carrier.running = false;
  InterfaceFacts tun = iface("wg0");
  tun.ethernet = false;
  InterfaceFacts no_ip = iface("eth2");
  no_ip.has_ipv4 = false;
  InterfaceFacts veth = iface("veth-a");
  veth.mtu = 9000;
  auto one = choose_uplink({lo, down, no_carrier, tun, no_ip, veth}, "");
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  EXPECT_EQ(one->name, "veth-a");
  EXPECT_EQ(one->mtu, 9000);

  auto by_route = choose_uplink({lo, iface("eth0"), iface("eth3")}, "eth3");
  ASSERT_TRUE(by_route.ok()) << by_route.status().to_string();
  EXPECT_EQ(by_route->name, "eth3");

  auto open = choose_uplink({lo, iface("eth0"), iface("eth3")}, "wg0");
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.status().message().find("2 interfaces of this host could reach them"), std::string::npos)
      << open.status().message();
  EXPECT_NE(open.status().message().find("RMA_SOFTROCE_PORT=af_packet:"), std::string::npos);
  EXPECT_NE(open.status().message().find("wg0"), std::string::npos);

  auto none = choose_uplink({lo, down, no_carrier, tun, no_ip}, "eth1");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no interface that could reach them"), std::string::npos)
      << none.status().message();
  EXPECT_NE(none.status().message().find("docker0 (up, no carrier, IPv4)"), std::string::npos)
      << none.status().message();
  EXPECT_NE(none.status().message().find("RMA_SOFTROCE_PORT"), std::string::npos);
}

TEST(UplinkChoice, ReadsThisNamespacesInterfaces) {
  auto facts = read_interfaces();
  ASSERT_TRUE(facts.ok()) << facts.status().to_string();
  bool lo = false;
  for (const InterfaceFacts& f : *facts) {
    if (f.loopback) lo = true;
  }
  EXPECT_TRUE(lo) << "every namespace has a loopback interface";
}

TEST(JobPort, EveryRankOfAJobGetsItsOwnAddresses) {
  std::set<std::uint32_t> ips;
  std::set<roce::MacAddress> macs;
  constexpr std::uint32_t kRanks = 5000;
  for (std::uint32_t r = 0; r < kRanks; ++r) {
    const std::uint32_t ip = job_rank_ipv4("prterun-host-1234@1", r);
    EXPECT_EQ(ip >> 16, 0xA9FEu) << "169.254/16";
    const std::uint32_t third = (ip >> 8) & 255;
    EXPECT_TRUE(third >= 1 && third <= 254 && third != 169) << r << ": 169.254." << third << ".x";
    ips.insert(ip);
    const roce::MacAddress m = job_rank_mac("prterun-host-1234@1", r);
    EXPECT_EQ(m[0], 0x06) << "locally administered unicast";
    macs.insert(m);
  }
  EXPECT_EQ(ips.size(), kRanks);
  EXPECT_EQ(macs.size(), kRanks);
  EXPECT_NE(job_rank_ipv4("job-a", 0), job_rank_ipv4("job-b", 0)) << "another job starts elsewhere";
  EXPECT_NE(job_rank_mac("job-a", 0), job_rank_mac("job-b", 0));
}

TEST(JobPort, CrossHostSpecIsABridgedAfPacketPortSizedForTheMtu) {
  CrossHostRank r;
  r.job = "prterun-vm-77@1";
  r.rank = 3;
  r.size = 4;
  r.local_rank = 1;
  r.local_size = 2;
  auto spec = cross_host_spec(r, UplinkInterface{"veth-b", 1500}, "hostb|boot/1/2");
  ASSERT_TRUE(spec.ok()) << spec.status().to_string();
  auto p = roce::port::parse_port_spec(*spec);
  ASSERT_TRUE(p.ok()) << *spec << ": " << p.status().to_string();
  EXPECT_EQ(p->kind, roce::port::PortKind::kAfPacket);
  EXPECT_TRUE(roce::port::is_bridged(*p));
  EXPECT_EQ(p->name, "veth-b");
  EXPECT_EQ(p->ipv4, job_rank_ipv4(r.job, 3));
  EXPECT_EQ(*p->mac, job_rank_mac(r.job, 3));
  EXPECT_EQ(p->rank, 1u);
  EXPECT_EQ(p->size, 2u);
  EXPECT_EQ(p->framesz, 2048u) << "a 1500-byte MTU fits 2 KiB slots";
  EXPECT_EQ(static_cast<std::uint64_t>(p->framesz) * p->framecnt, kAfPacketRingBytes);
  // The same job on another host meets on other sockets.
  auto other = cross_host_spec(r, UplinkInterface{"veth-b", 1500}, "hosta|boot/1/3");
  ASSERT_TRUE(other.ok());
  EXPECT_NE(roce::port::parse_port_spec(*other)->mesh, p->mesh);

  EXPECT_EQ(af_packet_ring_for_mtu(9000).framesz, 8192u);
  EXPECT_EQ(af_packet_ring_for_mtu(4000).framesz, 4096u);
  EXPECT_EQ(af_packet_ring_for_mtu(4003).framesz, 8192u);
  EXPECT_EQ(af_packet_ring_for_mtu(1954).framesz, 2048u);
  EXPECT_EQ(af_packet_ring_for_mtu(1955).framesz, 4096u);
  EXPECT_EQ(af_packet_ring_for_mtu(0).framesz, 8192u) << "unknown MTU: the largest";

  CrossHostRank bad = r;
  bad.local_rank = 2;
  EXPECT_FALSE(cross_host_spec(bad, UplinkInterface{"veth-b", 1500}, "h").ok());
  bad = r;
  bad.size = kMaxCrossHostRanks + 1;
  bad.rank = 0;
  auto too_big = cross_host_spec(bad, UplinkInterface{"veth-b", 1500}, "h");
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.status().message().find("RMA_SOFTROCE_PORT"), std::string::npos);
}

TEST(JobPort, SlurmTasksPerNode) {
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 0), 2u);
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 2), 2u);
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 3), 1u);
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 4), std::nullopt);
  EXPECT_EQ(slurm_tasks_on_node("4", 0), 4u);
  for (const char* bad : {"", "x", "2(x", "2(x0)", "2(3)", "2(x3", "2,,1", "-1"}) {
    EXPECT_EQ(slurm_tasks_on_node(bad, 0), std::nullopt) << bad;
  }
}

// The environment of a rank, set for one test and restored after it.
class LauncherEnvironment : public ::testing::Test {
 protected:
  void set(const char* name, const char* value) {
    if (!saved_.count(name)) {
      const char* old = std::getenv(name);
      saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
    }
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  void SetUp() override {
    for (const char* v : {"RMA_RANK", "RMA_SIZE", "RMA_BOOTSTRAP_ADDR", "PMIX_NAMESPACE", "PMIX_RANK",
                          "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                          "MPI_LOCALNRANKS", "MPI_LOCALRANKID", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "PMI_SIZE",
                          "SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_LOCALID", "SLURM_STEP_TASKS_PER_NODE",
                          "SLURM_TASKS_PER_NODE", "SLURM_NODEID"}) {
      set(v, nullptr);
    }
  }
  void TearDown() override {
    for (auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST_F(LauncherEnvironment, NoLauncherNoJobPort) {
  auto p = job_port();
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_FALSE(p->has_value());
}

TEST_F(LauncherEnvironment, OneHostJobsKeepTheirMemifMesh) {
  set("PMIX_NAMESPACE", "prterun-vm-1@1");
  set("PMIX_RANK", "2");
  set("OMPI_COMM_WORLD_SIZE", "4");
  set("OMPI_COMM_WORLD_LOCAL_SIZE", "4");
  set("OMPI_COMM_WORLD_LOCAL_RANK", "2");
  auto p = job_port();
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  ASSERT_TRUE(p->has_value());
  EXPECT_EQ((*p)->spec.rfind("memif-mesh:rma-pmix-", 0), 0u) << (*p)->spec;
  EXPECT_NE((*p)->spec.find(",rank=2,size=4"), std::string::npos) << (*p)->spec;
}

TEST_F(LauncherEnvironment, AJobAcrossHostsTakesAnInterfaceAndALongerAckTimeout) {
  set("PMIX_NAMESPACE", "prterun-vm-2@1");
  set("PMIX_RANK", "3");
  set("OMPI_COMM_WORLD_SIZE", "4");
  set("OMPI_COMM_WORLD_LOCAL_SIZE", "2");
  set("OMPI_COMM_WORLD_LOCAL_RANK", "1");
  auto p = job_port();
  auto uplink = choose_uplink_interface();
  if (!uplink.ok()) {  // this host has no (single) interface to the others: the same refusal
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().message(), uplink.status().message());
    return;
  }
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  ASSERT_TRUE(p->has_value());
  auto spec = roce::port::parse_port_spec((*p)->spec);
  ASSERT_TRUE(spec.ok()) << (*p)->spec;
  EXPECT_TRUE(roce::port::is_bridged(*spec));
  EXPECT_EQ(spec->name, uplink->name);
  EXPECT_EQ(spec->ipv4, job_rank_ipv4("prterun-vm-2@1", 3));
  EXPECT_EQ(spec->rank, 1u);
  EXPECT_EQ(spec->size, 2u);
  EXPECT_EQ((*p)->ack_timeout, std::optional<std::uint8_t>(kCrossHostAckTimeout));
  EXPECT_NE((*p)->why.find("on several hosts (2 on this one): af_packet on " + uplink->name), std::string::npos)
      << (*p)->why;
}

TEST_F(LauncherEnvironment, AJobAcrossHostsWhoseLauncherHidesTheLocalRanksIsRefused) {
  set("PMIX_NAMESPACE", "slurm.pmix.12.0");
  set("PMIX_RANK", "1");
  set("SLURM_NTASKS", "4");
  set("SLURM_NNODES", "2");
  auto p = job_port();
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("does not say which of them share this one"), std::string::npos)
      << p.status().message();
  EXPECT_NE(p.status().message().find("RMA_SOFTROCE_PORT"), std::string::npos);

  set("OMPI_COMM_WORLD_SIZE", "4");
  set("OMPI_COMM_WORLD_LOCAL_SIZE", "2");
  set("OMPI_COMM_WORLD_LOCAL_RANK", "two");
  p = job_port();
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("OMPI_COMM_WORLD_LOCAL_RANK=two, which is not a number"), std::string::npos)
      << p.status().message();
}

}  // namespace
}  // namespace rma::softroce
