#include "verbs/discovery.hpp"

#include <net/if.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "rma/sdk/config.hpp"
#include "rma/sdk/log.hpp"
#include "rma/sdk/text.hpp"
#include "verbs/translate.hpp"

namespace rma::verbs {
namespace {

Result<std::optional<std::uint32_t>> optional_number(const char* var, std::uint64_t max) {
  RMA_ASSIGN_OR_RETURN(std::string text, config::get_string(var));
  if (text.empty()) return std::optional<std::uint32_t>{};
  RMA_ASSIGN_OR_RETURN(std::uint64_t v, config::get_size(var));
  if (v > max) return invalid_argument(std::string(var) + "=" + text + ": must be 0.." + dec(max));
  return std::optional<std::uint32_t>{static_cast<std::uint32_t>(v)};
}

// The largest inline payload a QP of this device accepts: providers do not
// report it in ibv_query_device, only through the capabilities a created
// QP gets, so ask for decreasing sizes until one is granted.
std::uint32_t probe_max_inline(ibv_context* ctx) {
  IbvPdPtr pd(::ibv_alloc_pd(ctx));
  if (!pd) return 0;
  IbvCqPtr cq(::ibv_create_cq(ctx, 1, nullptr, nullptr, 0));
  if (!cq) return 0;
  for (std::uint32_t want : {1024u, 512u, 256u, 128u, 64u, 32u, 0u}) {
    ibv_qp_init_attr a{};
    a.send_cq = cq.get();
    a.recv_cq = cq.get();
    a.qp_type = IBV_QPT_RC;
    a.cap.max_send_wr = 1;
    a.cap.max_recv_wr = 1;
    a.cap.max_send_sge = 1;
    a.cap.max_recv_sge = 1;
    a.cap.max_inline_data = want;
    IbvQpPtr qp(::ibv_create_qp(pd.get(), &a));
    if (qp) return a.cap.max_inline_data;
  }
  return 0;
}

std::array<std::uint8_t, 6> netdev_mac(std::uint32_t ifindex) {
  std::array<std::uint8_t, 6> mac{};
  char name[IF_NAMESIZE] = {};
  if (ifindex == 0 || ::if_indextoname(ifindex, name) == nullptr) return mac;
  std::ifstream f(std::string("/sys/class/net/") + name + "/address");
  std::string text;
  if (!(f >> text)) return mac;
  unsigned v[6];
  if (std::sscanf(text.c_str(), "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) == 6) {
    for (int i = 0; i < 6; ++i) mac[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v[i]);
  }
  return mac;
}

GidType gid_type_from_ibv(std::uint32_t t) {
  switch (t) {
    case IBV_GID_TYPE_IB: return GidType::kIb;
    case IBV_GID_TYPE_ROCE_V1: return GidType::kRoceV1;
    default: return GidType::kRoceV2;
  }
}

}  // namespace

Status declare_variables() {
  RMA_RETURN_IF_ERROR(config::declare({kGidIndexVar, "",
                                       "verbs: source GID index of every QP; empty = the RoCE v2 "
                                       "IPv4 GID of RMA_VERBS_IP's netdev, else the first RoCE v2 "
                                       "IPv4 GID (index 0 on InfiniBand)"}));
  RMA_RETURN_IF_ERROR(config::declare({kIpVar, "",
                                       "verbs: IPv4 address whose RoCE v2 GID QPs use (the netdev "
                                       "carrying it); empty = the first RoCE v2 IPv4 GID"}));
  RMA_RETURN_IF_ERROR(config::declare({kPortVar, "0",
                                       "verbs: device port (1-based); 0 = the first ACTIVE port"}));
  RMA_RETURN_IF_ERROR(config::declare({kOdpVar, "no",
                                       "verbs: register memory with on-demand paging (no pinning); "
                                       "opening a device without RC ODP support then fails"}));
  return {};
}

Result<VerbsOptions> read_options() {
  VerbsOptions o;
  RMA_ASSIGN_OR_RETURN(o.gid_index, optional_number(kGidIndexVar, 0xffff));
  RMA_ASSIGN_OR_RETURN(std::string ip, config::get_string(kIpVar));
  if (!ip.empty()) {
    auto parsed = parse_ipv4(ip);
    if (!parsed.ok()) return parsed.status().with_context(kIpVar);
    o.ipv4 = *parsed;
  }
  RMA_ASSIGN_OR_RETURN(std::uint64_t port, config::get_size(kPortVar));
  if (port > 255) return invalid_argument(std::string(kPortVar) + "=" + dec(port) + ": must be 0..255");
  o.port = static_cast<std::uint32_t>(port);
  RMA_ASSIGN_OR_RETURN(o.odp, config::get_bool(kOdpVar));
  return o;
}

DeviceList list_devices(int* count) {
  *count = 0;
  DeviceList list(::ibv_get_device_list(count));
  if (!list) *count = 0;  // ENOSYS: no kernel support; treated as "no device"
  return list;
}

Result<std::vector<GidEntry>> read_gid_table(ibv_context* ctx, std::uint8_t port, std::uint32_t table_len) {
  const std::string dev = ::ibv_get_device_name(ctx->device);
  ibv_device_attr attr{};
  if (int rc = ::ibv_query_device(ctx, &attr); rc != 0) {
    return unavailable("ibv_query_device on " + dev + " failed: " + errno_text(rc));
  }
  std::vector<ibv_gid_entry> raw(std::size_t{table_len} * attr.phys_port_cnt + 1);
  std::vector<GidEntry> out;
  const ssize_t n = ::ibv_query_gid_table(ctx, raw.data(), raw.size(), 0);
  if (n >= 0) {
    for (ssize_t i = 0; i < n; ++i) {
      const ibv_gid_entry& e = raw[static_cast<std::size_t>(i)];
      if (e.port_num != port) continue;
      GidEntry g;
      g.index = e.gid_index;
      std::memcpy(g.gid.data(), e.gid.raw, 16);
      g.type = gid_type_from_ibv(e.gid_type);
      g.ndev_ifindex = e.ndev_ifindex;
      out.push_back(g);
    }
    return out;
  }
  // Kernels without the GID table query: one entry at a time.
  for (std::uint32_t i = 0; i < table_len; ++i) {
    ibv_gid_entry e{};
    if (::ibv_query_gid_ex(ctx, port, i, &e, 0) != 0) continue;  // empty slot
    GidEntry g;
    g.index = i;
    std::memcpy(g.gid.data(), e.gid.raw, 16);
    g.type = gid_type_from_ibv(e.gid_type);
    g.ndev_ifindex = e.ndev_ifindex;
    if (!gid_is_zero(g.gid)) out.push_back(g);
  }
  return out;
}

Result<DeviceInfo> describe_device(ibv_context* ctx, const VerbsOptions& options, PortSetup* setup) {
  const std::string name = ::ibv_get_device_name(ctx->device);
  ibv_device_attr_ex attrx{};
  ibv_device_attr attr{};
  bool have_ex = ::ibv_query_device_ex(ctx, nullptr, &attrx) == 0;
  if (have_ex) {
    attr = attrx.orig_attr;
  } else if (int rc = ::ibv_query_device(ctx, &attr); rc != 0) {
    return unavailable("ibv_query_device on " + name + " failed: " + errno_text(rc));
  }
  if (attr.phys_port_cnt == 0) return unavailable(name + " has no ports");

  // The port: the configured one, else the first ACTIVE one, else port 1.
  std::uint8_t port = 0;
  ibv_port_attr pattr{};
  if (options.port != 0) {
    if (options.port > attr.phys_port_cnt) {
      return invalid_argument(std::string(kPortVar) + "=" + dec(options.port) + ": " + name +
                              " has ports 1.." + dec(attr.phys_port_cnt));
    }
    port = static_cast<std::uint8_t>(options.port);
  } else {
    for (std::uint8_t p = 1; p <= attr.phys_port_cnt; ++p) {
      ibv_port_attr a{};
      if (::ibv_query_port(ctx, p, &a) == 0 && a.state == IBV_PORT_ACTIVE) {
        port = p;
        break;
      }
    }
    if (port == 0) port = 1;
  }
  if (int rc = ::ibv_query_port(ctx, port, &pattr); rc != 0) {
    return unavailable("ibv_query_port(" + name + ", port " + dec(port) + ") failed: " + errno_text(rc));
  }
  if (pattr.state != IBV_PORT_ACTIVE) {
    RMA_LOG_WARN("verbs: %s port %u is %s, not ACTIVE: connections through it will time out",
                 name.c_str(), static_cast<unsigned>(port), std::string(port_state_name(pattr.state)).c_str());
  }
  const bool ethernet = pattr.link_layer == IBV_LINK_LAYER_ETHERNET;

  RMA_ASSIGN_OR_RETURN(std::vector<GidEntry> table, read_gid_table(ctx, port, pattr.gid_tbl_len));
  GidQuery q;
  q.device = name;
  q.port = port;
  q.ethernet = ethernet;
  q.table_len = static_cast<std::uint32_t>(pattr.gid_tbl_len);
  q.ipv4 = options.ipv4;
  q.forced = options.gid_index;
  auto gid = choose_gid(table, q);
  if (!gid.ok()) {
    return options.gid_index ? gid.status().with_context(kGidIndexVar) : gid.status();
  }

  DeviceInfo d;
  d.name = name;
  d.provider = kProviderName;
  d.transport = ethernet ? "RoCE v2" : "InfiniBand";
  d.link_layer = std::string(link_layer_name(pattr.link_layer));
  d.gid = gid->gid;
  if (ethernet) d.mac = netdev_mac(gid->ndev_ifindex);
  DeviceCaps& c = d.caps;
  c.max_sge = std::min<std::uint32_t>(static_cast<std::uint32_t>(attr.max_sge), kMaxSgePerWr);
  c.max_recv_sge = c.max_sge;
  c.max_inline_data = probe_max_inline(ctx);
  c.max_qp_rd_atom = static_cast<std::uint32_t>(attr.max_qp_init_rd_atom);
  c.max_qp_wr = static_cast<std::uint32_t>(attr.max_qp_wr);
  c.max_cqe = static_cast<std::uint32_t>(attr.max_cqe);
  c.max_qp = static_cast<std::uint32_t>(attr.max_qp);
  c.max_mr = static_cast<std::uint32_t>(attr.max_mr);
  c.max_mr_size = attr.max_mr_size;
  c.max_msg_size = pattr.max_msg_sz;
  c.atomics = attr.atomic_cap != IBV_ATOMIC_NONE;
  c.path_mtu = mtu_bytes(pattr.active_mtu);
  c.target_needs_polls = false;  // the NIC (or the kernel's rxe) places them

  if (setup != nullptr) {
    setup->port = port;
    setup->ethernet = ethernet;
    setup->lid = pattr.lid;
    setup->active_mtu = pattr.active_mtu;
    setup->gid = *gid;
    setup->max_qp_init_rd_atom = c.max_qp_rd_atom;
    setup->max_qp_rd_atom = static_cast<std::uint32_t>(attr.max_qp_rd_atom);
    if (have_ex) {
      const std::uint32_t need = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
                                 IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC;
      setup->odp_rc = (attrx.odp_caps.general_caps & IBV_ODP_SUPPORT) != 0 &&
                      (attrx.odp_caps.per_transport_caps.rc_odp_caps & need) == need;
    }
  }
  return d;
}

}  // namespace rma::verbs
