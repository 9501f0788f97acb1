// Host tests of the verbs provider: pure translations, GID choice from fake
// tables, the EndpointAddress codec, and behaviour on a machine without an
// RDMA device (this CI host has none).
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "rma/sdk/config.hpp"
#include "rma/sdk/registry.hpp"
#include "verbs/async_events.hpp"
#include "verbs/discovery.hpp"
#include "verbs/endpoint_address.hpp"
#include "verbs/gid_selection.hpp"
#include "verbs/translate.hpp"

namespace rma::verbs {
namespace {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = ::getenv(name)) {
      had_ = true;
      old_ = old;
    }
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      ::setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_;
  std::string old_;
  bool had_ = false;
};

bool host_has_rdma_device() {
  int n = 0;
  DeviceList l = list_devices(&n);
  return n > 0;
}

Provider* verbs_provider() {
  auto p = ProviderRegistry::global().find("verbs");
  return p.ok() ? *p : nullptr;
}

// ------------------------------------------------------------------ no device

TEST(VerbsNoDevice, QueryDevicesIsEmptyNotAnError) {
  if (host_has_rdma_device()) GTEST_SKIP() << "this machine has an RDMA device";
  Provider* p = verbs_provider();
  ASSERT_NE(p, nullptr);
  auto devices = p->query_devices();
  ASSERT_TRUE(devices.ok()) << devices.status().to_string();
  EXPECT_TRUE(devices->empty());
}

TEST(VerbsNoDevice, OpenDeviceSaysThereIsNone) {
  if (host_has_rdma_device()) GTEST_SKIP() << "this machine has an RDMA device";
  Provider* p = verbs_provider();
  ASSERT_NE(p, nullptr);
  auto d = p->open_device("rxe0");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kNotFound);
  EXPECT_NE(d.status().message().find("no RDMA device"), std::string::npos) << d.status().message();
  EXPECT_NE(d.status().message().find("rxe0"), std::string::npos) << d.status().message();
  auto any = p->open_device("");
  ASSERT_FALSE(any.ok());
  EXPECT_NE(any.status().message().find("no RDMA device"), std::string::npos);
}

TEST(VerbsNoDevice, SelectionFallsThroughToALowerProvider) {
  if (host_has_rdma_device()) GTEST_SKIP() << "this machine has an RDMA device";
  ScopedEnv no_provider("RMA_PROVIDER", nullptr);
  Provider* v = verbs_provider();
  ASSERT_NE(v, nullptr);
  // Verbs outranks every other built-in provider...
  for (Provider* p : ProviderRegistry::global().providers()) {
    if (p != v) {
      EXPECT_GT(v->priority(), p->priority()) << p->name();
    }
  }
  // ...yet without a device the choice falls to the next one that has one.
  auto chosen = ProviderRegistry::global().select();
  ASSERT_TRUE(chosen.ok()) << chosen.status().to_string();
  EXPECT_NE((*chosen)->name(), "verbs");
  // Naming verbs explicitly gives the clear error instead.
  auto opened = ProviderRegistry::global().open("verbs", "rxe0");
  ASSERT_FALSE(opened.ok());
  EXPECT_NE(opened.status().message().find("no RDMA device"), std::string::npos) << opened.status().message();
}

TEST(VerbsConfig, VariablesAreDeclaredForRmaInfo) {
  ASSERT_NE(verbs_provider(), nullptr);  // registration declares them
  std::vector<std::string> names;
  for (const auto& v : config::variables()) names.push_back(v.name);
  for (const char* want : {kGidIndexVar, kIpVar, kPortVar, kOdpVar}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
}

TEST(VerbsConfig, MalformedValuesNameTheVariable) {
  ASSERT_NE(verbs_provider(), nullptr);
  {
    ScopedEnv e(kGidIndexVar, "seven");
    auto o = read_options();
    ASSERT_FALSE(o.ok());
    EXPECT_NE(o.status().message().find(kGidIndexVar), std::string::npos) << o.status().message();
  }
  {
    ScopedEnv e(kGidIndexVar, "70000");
    auto o = read_options();
    ASSERT_FALSE(o.ok());
    EXPECT_NE(o.status().message().find("0..65535"), std::string::npos) << o.status().message();
  }
  {
    ScopedEnv e(kIpVar, "10.0.2");
    auto o = read_options();
    ASSERT_FALSE(o.ok());
    EXPECT_NE(o.status().message().find(kIpVar), std::string::npos) << o.status().message();
    EXPECT_NE(o.status().message().find("10.0.2"), std::string::npos);
  }
  {
    ScopedEnv e(kPortVar, "300");
    EXPECT_FALSE(read_options().ok());
  }
  {
    ScopedEnv a(kGidIndexVar, "3");
    ScopedEnv b(kIpVar, "192.168.7.9");
    ScopedEnv c(kOdpVar, "yes");
    auto o = read_options();
    ASSERT_TRUE(o.ok()) << o.status().to_string();
    EXPECT_EQ(o->gid_index, 3u);
    EXPECT_EQ(o->ipv4, (192u << 24) | (168u << 16) | (7u << 8) | 9u);
    EXPECT_TRUE(o->odp);
    EXPECT_EQ(o->port, 0u);
  }
}

// ------------------------------------------------------------------ translations

TEST(VerbsTranslate, EveryCompletionStatusKeepsItsName) {
  const std::pair<int, const char*> table[] = {
      {IBV_WC_SUCCESS, "SUCCESS"},
      {IBV_WC_LOC_LEN_ERR, "LOC_LEN_ERR"},
      {IBV_WC_LOC_QP_OP_ERR, "LOC_QP_OP_ERR"},
      {IBV_WC_LOC_EEC_OP_ERR, "LOC_EEC_OP_ERR"},
      {IBV_WC_LOC_PROT_ERR, "LOC_PROT_ERR"},
      {IBV_WC_WR_FLUSH_ERR, "WR_FLUSH_ERR"},
      {IBV_WC_MW_BIND_ERR, "MW_BIND_ERR"},
      {IBV_WC_BAD_RESP_ERR, "BAD_RESP_ERR"},
      {IBV_WC_LOC_ACCESS_ERR, "LOC_ACCESS_ERR"},
      {IBV_WC_REM_INV_REQ_ERR, "REM_INV_REQ_ERR"},
      {IBV_WC_REM_ACCESS_ERR, "REM_ACCESS_ERR"},
      {IBV_WC_REM_OP_ERR, "REM_OP_ERR"},
      {IBV_WC_RETRY_EXC_ERR, "RETRY_EXC_ERR"},
      {IBV_WC_RNR_RETRY_EXC_ERR, "RNR_RETRY_EXC_ERR"},
      {IBV_WC_LOC_RDD_VIOL_ERR, "LOC_RDD_VIOL_ERR"},
      {IBV_WC_REM_INV_RD_REQ_ERR, "REM_INV_RD_REQ_ERR"},
      {IBV_WC_REM_ABORT_ERR, "REM_ABORT_ERR"},
      {IBV_WC_INV_EECN_ERR, "INV_EECN_ERR"},
      {IBV_WC_INV_EEC_STATE_ERR, "INV_EEC_STATE_ERR"},
      {IBV_WC_FATAL_ERR, "FATAL_ERR"},
      {IBV_WC_RESP_TIMEOUT_ERR, "RESP_TIMEOUT_ERR"},
      {IBV_WC_GENERAL_ERR, "GENERAL_ERR"},
  };
  for (const auto& [ibv, name] : table) {
    EXPECT_EQ(wc_status_name(wc_status_from_ibv(ibv)), name) << ibv_wc_status_str(static_cast<ibv_wc_status>(ibv));
  }
  // Statuses the contract has no name for are general errors, never success.
  EXPECT_EQ(wc_status_from_ibv(IBV_WC_TM_ERR), WcStatus::kGeneralErr);
  EXPECT_EQ(wc_status_from_ibv(12345), WcStatus::kGeneralErr);
}

TEST(VerbsTranslate, OpcodesFlagsAccessAndMtu) {
  EXPECT_EQ(opcode_from_ibv(IBV_WC_RDMA_WRITE), Opcode::kRdmaWrite);
  EXPECT_EQ(opcode_from_ibv(IBV_WC_RDMA_READ), Opcode::kRdmaRead);
  EXPECT_EQ(opcode_from_ibv(IBV_WC_FETCH_ADD), Opcode::kAtomicFetchAdd);
  EXPECT_EQ(opcode_from_ibv(IBV_WC_COMP_SWAP), Opcode::kAtomicCmpSwap);
  EXPECT_EQ(opcode_from_ibv(IBV_WC_SEND), Opcode::kSend);
  EXPECT_EQ(opcode_from_ibv(IBV_WC_RECV), Opcode::kRecv);
  EXPECT_EQ(opcode_from_ibv(IBV_WC_RECV_RDMA_WITH_IMM), Opcode::kRecvRdmaWithImm);
  EXPECT_FALSE(opcode_from_ibv(IBV_WC_BIND_MW).has_value());

  EXPECT_EQ(wr_opcode_to_ibv(Opcode::kRdmaWrite), IBV_WR_RDMA_WRITE);
  EXPECT_EQ(wr_opcode_to_ibv(Opcode::kRdmaWriteWithImm), IBV_WR_RDMA_WRITE_WITH_IMM);
  EXPECT_EQ(wr_opcode_to_ibv(Opcode::kRdmaRead), IBV_WR_RDMA_READ);
  EXPECT_EQ(wr_opcode_to_ibv(Opcode::kAtomicFetchAdd), IBV_WR_ATOMIC_FETCH_AND_ADD);
  EXPECT_EQ(wr_opcode_to_ibv(Opcode::kAtomicCmpSwap), IBV_WR_ATOMIC_CMP_AND_SWP);
  EXPECT_EQ(wr_opcode_to_ibv(Opcode::kSend), IBV_WR_SEND);
  EXPECT_EQ(wr_opcode_to_ibv(Opcode::kSendWithImm), IBV_WR_SEND_WITH_IMM);

  EXPECT_EQ(send_flags_to_ibv(kWrSignaled | kWrFence | kWrInline | kWrSolicited),
            unsigned{IBV_SEND_SIGNALED | IBV_SEND_FENCE | IBV_SEND_INLINE | IBV_SEND_SOLICITED});
  EXPECT_EQ(send_flags_to_ibv(0), 0u);

  EXPECT_EQ(access_to_ibv(Access::kNone), 0);
  EXPECT_EQ(access_to_ibv(kAllAccess), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                           IBV_ACCESS_REMOTE_ATOMIC);
  EXPECT_EQ(access_to_ibv(Access::kRemoteRead), IBV_ACCESS_REMOTE_READ);

  for (std::uint32_t b : {256u, 512u, 1024u, 2048u, 4096u}) {
    auto m = mtu_from_bytes(b);
    ASSERT_TRUE(m.has_value()) << b;
    EXPECT_EQ(mtu_bytes(*m), b);
  }
  EXPECT_FALSE(mtu_from_bytes(1500).has_value());
  EXPECT_EQ(mtu_bytes(0), 0u);

  EXPECT_EQ(qp_state_from_ibv(IBV_QPS_RTS), QpState::kRts);
  EXPECT_EQ(qp_state_from_ibv(IBV_QPS_SQE), QpState::kError);
  EXPECT_EQ(async_event_from_ibv(IBV_EVENT_PORT_ERR), AsyncEventType::kPortErr);
  EXPECT_EQ(async_event_from_ibv(IBV_EVENT_CQ_ERR), AsyncEventType::kCqErr);
  EXPECT_EQ(async_event_from_ibv(IBV_EVENT_GID_CHANGE), AsyncEventType::kGidChange);
  EXPECT_FALSE(async_event_from_ibv(IBV_EVENT_WQ_FATAL).has_value());
}

TEST(VerbsTranslate, AsyncEventDescriptionsNameWhatHappenedWhere) {
  const std::string port_down = describe_async_event(AsyncEventType::kPortErr, "rxe0", 0, 1);
  EXPECT_NE(port_down.find("rxe0 port 1"), std::string::npos) << port_down;
  EXPECT_NE(port_down.find("down"), std::string::npos) << port_down;
  const std::string fatal = describe_async_event(AsyncEventType::kQpFatal, "mlx5_0", 77, 0);
  EXPECT_NE(fatal.find("QP 77 on mlx5_0"), std::string::npos) << fatal;
  EXPECT_NE(fatal.find("error state"), std::string::npos) << fatal;
  EXPECT_NE(describe_async_event(AsyncEventType::kCqErr, "rxe0", 0, 0).find("overran"), std::string::npos);
}

// ------------------------------------------------------------------ GID choice

Gid v6(const char* text) {
  Gid g{};
  EXPECT_EQ(::inet_pton(AF_INET6, text, g.data()), 1) << text;
  return g;
}
GidEntry entry(std::uint32_t index, const char* text, GidType type) {
  GidEntry e;
  e.index = index;
  e.gid = v6(text);
  e.type = type;
  return e;
}
GidQuery query() {
  GidQuery q;
  q.device = "rxe0";
  q.port = 1;
  q.ethernet = true;
  q.table_len = 1024;
  return q;
}

// What rxe on eth0 with 10.0.2.15 shows.
std::vector<GidEntry> rxe_table() {
  return {entry(0, "fe80::5054:ff:fe12:3456", GidType::kRoceV2), entry(1, "::ffff:10.0.2.15", GidType::kRoceV2)};
}
// A mlx5 port: v1 and v2 GIDs for the link-local and two IPv4 addresses.
std::vector<GidEntry> nic_table() {
  return {entry(0, "fe80::1", GidType::kRoceV1),           entry(1, "fe80::1", GidType::kRoceV2),
          entry(2, "::ffff:192.168.1.5", GidType::kRoceV1), entry(3, "::ffff:192.168.1.5", GidType::kRoceV2),
          entry(4, "::ffff:10.1.1.1", GidType::kRoceV1),    entry(5, "::ffff:10.1.1.1", GidType::kRoceV2),
          entry(6, "2001:db8::5", GidType::kRoceV2)};
}

TEST(VerbsGid, PrefersTheRoceV2Ipv4GidAndNeverALinkLocalOne) {
  auto g = choose_gid(rxe_table(), query());
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->index, 1u);
  auto n = choose_gid(nic_table(), query());
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->index, 3u);
}

TEST(VerbsGid, TheConfiguredAddressPicksItsNetdevsGid) {
  GidQuery q = query();
  q.ipv4 = (10u << 24) | (1u << 16) | (1u << 8) | 1u;
  auto g = choose_gid(nic_table(), q);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->index, 5u);
  q.ipv4 = (10u << 24) | (9u << 16) | (9u << 8) | 9u;
  auto missing = choose_gid(nic_table(), q);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("rxe0 port 1 has no RoCE v2 GID for 10.9.9.9"), std::string::npos)
      << missing.status().message();
}

TEST(VerbsGid, GlobalIpv6WhenThereIsNoIpv4) {
  std::vector<GidEntry> t = {entry(0, "fe80::1", GidType::kRoceV2), entry(1, "2001:db8::7", GidType::kRoceV2)};
  auto g = choose_gid(t, query());
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->index, 1u);
}

TEST(VerbsGid, NoUsableGidIsAClearError) {
  std::vector<GidEntry> link_local_only = {entry(0, "fe80::5054:ff:fe12:3456", GidType::kRoceV2)};
  auto g = choose_gid(link_local_only, query());
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("rxe0 port 1 has no RoCE v2 GID"), std::string::npos) << g.status().message();
  EXPECT_NE(g.status().message().find("fe80::5054:ff:fe12:3456"), std::string::npos) << g.status().message();

  std::vector<GidEntry> v1_only = {entry(0, "::ffff:10.0.0.1", GidType::kRoceV1)};
  EXPECT_FALSE(choose_gid(v1_only, query()).ok());
  EXPECT_FALSE(choose_gid({}, query()).ok());
}

TEST(VerbsGid, ForcedIndexWinsWithinRange) {
  GidQuery q = query();
  q.forced = 0;
  auto ll = choose_gid(rxe_table(), q);  // the user's explicit choice, link-local or not
  ASSERT_TRUE(ll.ok());
  EXPECT_EQ(ll->index, 0u);

  q.forced = 7;
  q.table_len = 2;
  auto out = choose_gid(rxe_table(), q);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("GID index 7 out of range"), std::string::npos) << out.status().message();
  EXPECT_NE(out.status().message().find("2 GIDs"), std::string::npos) << out.status().message();

  q.forced = 2;  // a RoCE v1 GID
  q.table_len = 16;
  auto v1 = choose_gid(nic_table(), q);
  ASSERT_FALSE(v1.ok());
  EXPECT_NE(v1.status().message().find("RoCE v1"), std::string::npos) << v1.status().message();
}

TEST(VerbsGid, InfiniBandUsesThePortGid) {
  GidQuery q = query();
  q.ethernet = false;
  std::vector<GidEntry> t = {entry(0, "fe80::2:c903:1:2", GidType::kIb)};
  auto g = choose_gid(t, q);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->index, 0u);
}

TEST(VerbsGid, AddressHelpers) {
  const Gid g = ipv4_mapped_gid((10u << 24) | (0u << 16) | (2u << 8) | 15u);
  EXPECT_TRUE(gid_is_ipv4_mapped(g));
  EXPECT_FALSE(gid_is_link_local(g));
  EXPECT_EQ(gid_to_string(g), "::ffff:10.0.2.15");
  EXPECT_EQ(ipv4_to_string(gid_ipv4(g)), "10.0.2.15");
  EXPECT_TRUE(gid_is_link_local(v6("fe80::1")));
  EXPECT_TRUE(gid_is_link_local(v6("febf::1")));
  EXPECT_FALSE(gid_is_link_local(v6("fec0::1")));
  EXPECT_FALSE(parse_ipv4("10.0.0.256").ok());
  EXPECT_FALSE(parse_ipv4("").ok());
  EXPECT_EQ(*parse_ipv4("1.2.3.4"), 0x01020304u);
}

// ------------------------------------------------------------------ endpoint address

EndpointFields sample_fields() {
  EndpointFields f;
  f.ethernet = true;
  f.qpn = 0x11;
  f.psn = 0xabcdef;
  f.gid = ipv4_mapped_gid(0x0a00020f);
  f.lid = 0;
  f.mtu = 1024;
  f.gid_index = 1;
  f.max_rd_atomic = 16;
  return f;
}

TEST(VerbsEndpointAddress, RoundTripsAndStartsWithTheProviderName) {
  const EndpointAddress a = encode_endpoint(sample_fields());
  EXPECT_EQ(a.size, kEndpointAddressSize);
  EXPECT_EQ(std::memcmp(a.bytes.data(), "verbs", 5), 0);
  auto hex = EndpointAddress::from_hex(a.to_hex());
  ASSERT_TRUE(hex.ok());
  auto f = decode_endpoint(*hex);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->qpn, 0x11u);
  EXPECT_EQ(f->psn, 0xabcdefu);
  EXPECT_EQ(f->gid, sample_fields().gid);
  EXPECT_EQ(f->mtu, 1024u);
  EXPECT_EQ(f->gid_index, 1u);
  EXPECT_EQ(f->max_rd_atomic, 16u);
  EXPECT_TRUE(f->ethernet);
}

TEST(VerbsEndpointAddress, BadBytesAreRejectedWithTheReason) {
  auto reason = [](const EndpointAddress& a) {
    auto f = decode_endpoint(a);
    EXPECT_FALSE(f.ok());
    return f.ok() ? std::string() : f.status().message();
  };
  const EndpointAddress good = encode_endpoint(sample_fields());

  EndpointAddress other = good;
  std::memcpy(other.bytes.data(), "softroce", 8);
  EXPECT_NE(reason(other).find("not made by the verbs provider"), std::string::npos);

  EndpointAddress empty;
  EXPECT_NE(reason(empty).find("not made by the verbs provider"), std::string::npos);

  EndpointAddress truncated = good;
  truncated.size -= 1;
  EXPECT_NE(reason(truncated).find("truncated"), std::string::npos);

  EndpointAddress oversize = good;
  oversize.size = EndpointAddress::kMaxSize + 1;
  EXPECT_NE(reason(oversize).find("exceeds"), std::string::npos);

  EndpointAddress version = good;
  version.bytes[5] = 9;
  EXPECT_NE(reason(version).find("version 9"), std::string::npos);

  EndpointAddress link = good;
  link.bytes[6] = 3;
  EXPECT_NE(reason(link).find("link layer"), std::string::npos);

  EndpointFields f = sample_fields();
  f.qpn = 0;
  EXPECT_NE(reason(encode_endpoint(f)).find("QPN 0"), std::string::npos);
  f = sample_fields();
  f.qpn = 1u << 24;
  EXPECT_NE(reason(encode_endpoint(f)).find("QPN"), std::string::npos);
  f = sample_fields();
  f.psn = 1u << 24;
  EXPECT_NE(reason(encode_endpoint(f)).find("PSN"), std::string::npos);
  f = sample_fields();
  f.mtu = 1500;
  EXPECT_NE(reason(encode_endpoint(f)).find("MTU 1500"), std::string::npos);
  f = sample_fields();
  f.gid = Gid{};
  EXPECT_NE(reason(encode_endpoint(f)).find("no GID"), std::string::npos);
  f = sample_fields();
  f.ethernet = false;
  f.gid = Gid{};
  f.lid = 0;
  EXPECT_NE(reason(encode_endpoint(f)).find("neither LID nor GID"), std::string::npos);
  f.lid = 5;
  EXPECT_TRUE(decode_endpoint(encode_endpoint(f)).ok());
}

}  // namespace
}  // namespace rma::verbs
