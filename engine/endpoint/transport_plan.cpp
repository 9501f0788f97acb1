// The transport plan (include/rma/sdk/endpoint_manager.hpp): which device
// serves which peer. Every rank learns every rank's host identity, so the
// choice for a pair is made from the same facts at both ends and agrees.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "rma/sdk/config.hpp"
#include "rma/sdk/endpoint_manager.hpp"
#include "rma/sdk/log.hpp"
#include "rma/sdk/node.hpp"
#include "rma/sdk/registry.hpp"

namespace rma::endpoint {
namespace {

// A word every librma process has at a known address: a peer reads it by
// cross-memory attach to learn whether it may (node::probe_cross_memory_attach).
constexpr std::uint64_t kProbeMagic = 0x626f72702d616d72ull;  // "rma-prob"
alignas(8) const volatile std::uint64_t g_probe_word = kProbeMagic;

// What a rank publishes about itself (the same layout on every rank).
struct RankFacts {
  char host[128];
  std::uint32_t pid;
  std::uint8_t node_ok;  // it opened the node provider
  std::uint8_t pad[3];
  std::uint64_t probe_addr;
};

// What a rank learnt probing each peer of its host, one byte per rank.
enum ProbeResult : std::uint8_t {
  kNotProbed = 0,
  kProbeOk = 1,
  kProbeDenied = 2,   // EPERM: another user, Yama
  kProbeFailed = 3,   // anything else (gone, no CMA, another value)
};

std::string ranks_text(const std::vector<int>& ranks) {
  std::string s;
  const std::size_t shown = std::min<std::size_t>(ranks.size(), 8);
  for (std::size_t i = 0; i < shown; ++i) s += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
  if (ranks.size() > shown) s += ", ... (" + std::to_string(ranks.size()) + " ranks)";
  return s;
}

std::string device_text(const Device& d) { return d.info().provider + " (" + d.name() + ")"; }

Result<std::string> fallback_choice() {
  return config::get_choice("RMA_SHM_FALLBACK", {"error", "network"});
}

// "shm (shm0) for 3 peers on this host, softroce (softroce0) for 4 peers on 1 other host".
std::string summarize(const TransportPlan& plan, int me) {
  std::uint32_t count[kMaxRails] = {0, 0};
  std::vector<std::int32_t> hosts;
  for (std::size_t p = 0; p < plan.rail_of.size(); ++p) {
    ++count[plan.rail_of[p]];
    if (plan.rail_of[p] == kNetworkRail && plan.host_of[p] != plan.host_of[static_cast<std::size_t>(me)] &&
        std::find(hosts.begin(), hosts.end(), plan.host_of[p]) == hosts.end()) {
      hosts.push_back(plan.host_of[p]);
    }
  }
  std::string s;
  if (count[kNodeRail] != 0) {
    s = device_text(*plan.devices[kNodeRail]) + " for " + std::to_string(count[kNodeRail]) +
        " peers on this host (this rank included)";
  }
  if (count[kNetworkRail] != 0) {
    if (!s.empty()) s += ", ";
    s += device_text(*plan.devices[kNetworkRail]) + " for " + std::to_string(count[kNetworkRail]) + " peers";
    if (plan.forced) {
      s += " (forced)";
    } else if (!hosts.empty()) {
      s += " on " + std::to_string(hosts.size()) + " other host" + (hosts.size() == 1 ? "" : "s");
    }
  }
  return s;
}

// The provider `named`, else the best one of `reach`, on `device`; "" =
// RMA_DEVICE for the network provider (the device a user names is a NIC's),
// the first device for the others.
Result<std::shared_ptr<Device>> open_for_rail(ProviderReach reach, const std::string& named,
                                              const std::string& device) {
  ProviderRegistry& reg = ProviderRegistry::global();
  Provider* p = nullptr;
  if (named.empty()) {
    RMA_ASSIGN_OR_RETURN(p, reg.select_by_reach(reach));
  } else {
    RMA_ASSIGN_OR_RETURN(p, reg.find(named));
  }
  std::string name = device;
  if (name.empty() && reach != ProviderReach::kNetwork) {
    RMA_ASSIGN_OR_RETURN(std::vector<DeviceInfo> devices, p->query_devices());
    if (!devices.empty()) name = devices.front().name;
  }
  return reg.open(p->name(), name);
}

}  // namespace

Result<TransportPlan> plan_transports(Bootstrap& bootstrap, const PlanRequest& request) {
  const int n = bootstrap.size();
  const int me = bootstrap.rank();
  if (n <= 0 || me < 0 || me >= n) {
    return invalid_argument("transport plan: bootstrap gives rank " + std::to_string(me) + " of " + std::to_string(n));
  }
  ProviderRegistry& reg = ProviderRegistry::global();
  TransportPlan plan;

  // A forced provider serves every peer; otherwise this rank opens the node
  // provider now, since its own loopback peer is always on this host.
  std::string forced_name = request.provider;
  if (forced_name.empty() && !request.device_object) {
    RMA_ASSIGN_OR_RETURN(forced_name, config::get_string("RMA_PROVIDER"));
  }
  std::shared_ptr<Device> forced_device = request.device_object;
  if (!forced_device && !forced_name.empty()) {
    RMA_ASSIGN_OR_RETURN(forced_device, reg.open(forced_name, request.device));
  }
  plan.forced = forced_device != nullptr;
  std::shared_ptr<Device> node_device;
  std::string node_error;
  if (!plan.forced) {
    auto d = open_for_rail(ProviderReach::kHost, request.node_provider, "");
    if (d.ok()) {
      node_device = std::move(d).value();
    } else {
      node_error = d.status().message();
      RMA_LOG_INFO("no shared-memory transport: %s; peers on this host use the network provider", node_error.c_str());
    }
  }

  RankFacts mine{};
  const std::string host = request.host_identity.empty() ? node::host_identity() : request.host_identity;
  std::memcpy(mine.host, host.data(), std::min(host.size(), sizeof mine.host - 1));
  mine.pid = static_cast<std::uint32_t>(::getpid());
  mine.node_ok = node_device ? 1 : 0;
  mine.probe_addr = reinterpret_cast<std::uint64_t>(&g_probe_word);
  auto gathered = bootstrap.allgather({reinterpret_cast<const std::uint8_t*>(&mine), sizeof mine});
  if (!gathered.ok()) return gathered.status().with_context("exchanging host identities");
  std::vector<RankFacts> facts(static_cast<std::size_t>(n));
  std::map<std::string, std::int32_t> host_index;
  plan.host_of.resize(static_cast<std::size_t>(n));
  for (int p = 0; p < n; ++p) {
    const auto& b = (*gathered)[static_cast<std::size_t>(p)];
    if (b.size() != sizeof(RankFacts)) {
      return invalid_argument("rank " + std::to_string(p) + " published " + std::to_string(b.size()) +
                              " bytes of host facts, expected " + std::to_string(sizeof(RankFacts)) +
                              " (another librma version?)");
    }
    RankFacts& f = facts[static_cast<std::size_t>(p)];
    std::memcpy(&f, b.data(), sizeof f);
    f.host[sizeof f.host - 1] = '\0';
    const auto it = host_index.emplace(f.host, static_cast<std::int32_t>(host_index.size())).first;
    plan.host_of[static_cast<std::size_t>(p)] = it->second;
  }
  const auto same_host = [&](int p) {
    return plan.host_of[static_cast<std::size_t>(p)] == plan.host_of[static_cast<std::size_t>(me)];
  };
  plan.rail_of.assign(static_cast<std::size_t>(n), kNetworkRail);

  if (plan.forced) {
    plan.devices[kNetworkRail] = forced_device;
    const std::string& prov = forced_device->info().provider;
    auto p = reg.find(prov);
    if (p.ok() && (*p)->reach() == ProviderReach::kHost) {
      std::vector<int> away;
      for (int q = 0; q < n; ++q) {
        if (!same_host(q)) away.push_back(q);
      }
      if (!away.empty()) {
        return Status(StatusCode::kFailedPrecondition,
                      "provider " + prov + " reaches only the processes of one host, but rank" +
                          (away.size() == 1 ? " " : "s ") + ranks_text(away) + " of this job run on another host " +
                          "(host identity " + std::string(facts[static_cast<std::size_t>(away[0])].host) +
                          ", here " + host + "); unset RMA_PROVIDER to use a network provider for them");
      }
    }
    plan.summary = summarize(plan, me);
    return plan;
  }

  // Probe the peers of this host that could use shared memory, then share
  // what each rank found, so both ends of every pair decide alike.
  std::vector<std::uint8_t> probes(static_cast<std::size_t>(n), kNotProbed);
  std::vector<std::string> probe_errors(static_cast<std::size_t>(n));
  for (int p = 0; p < n; ++p) {
    const RankFacts& f = facts[static_cast<std::size_t>(p)];
    if (p == me || !same_host(p) || !node_device || f.node_ok == 0) continue;
    const Status s = request.probe ? request.probe(p, f.pid, f.probe_addr, kProbeMagic)
                                   : node::probe_cross_memory_attach(f.pid, f.probe_addr, kProbeMagic);
    probes[static_cast<std::size_t>(p)] = s.ok() ? kProbeOk
                                          : s.code() == StatusCode::kPermissionDenied ? kProbeDenied
                                                                                       : kProbeFailed;
    if (!s.ok()) probe_errors[static_cast<std::size_t>(p)] = s.message();
  }
  auto all_probes = bootstrap.allgather(probes);
  if (!all_probes.ok()) return all_probes.status().with_context("exchanging shared-memory probes");
  for (int p = 0; p < n; ++p) {
    if ((*all_probes)[static_cast<std::size_t>(p)].size() != static_cast<std::size_t>(n)) {
      return invalid_argument("rank " + std::to_string(p) + " published a probe table of " +
                              std::to_string((*all_probes)[static_cast<std::size_t>(p)].size()) + " bytes, expected " +
                              std::to_string(n));
    }
  }
  const auto probe = [&](int from, int to) { return (*all_probes)[static_cast<std::size_t>(from)][static_cast<std::size_t>(to)]; };

  // Every rank checks every pair of every host, so a refusal stops all
  // ranks with one message instead of leaving the others waiting.
  std::string fallback;
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a == b || plan.host_of[static_cast<std::size_t>(a)] != plan.host_of[static_cast<std::size_t>(b)]) continue;
      if (facts[static_cast<std::size_t>(a)].node_ok == 0 || facts[static_cast<std::size_t>(b)].node_ok == 0) continue;
      const std::uint8_t r = probe(a, b);
      if (r == kProbeOk) continue;
      if (fallback.empty()) {
        RMA_ASSIGN_OR_RETURN(fallback, fallback_choice());
      }
      if (fallback == "network") continue;
      std::string cause = a == me ? probe_errors[static_cast<std::size_t>(b)]
                                  : (r == kProbeDenied ? "permission denied (another user, or kernel.yama.ptrace_scope)"
                                                       : "the probe failed");
      return Status(StatusCode::kPermissionDenied,
                    "ranks " + std::to_string(a) + " and " + std::to_string(b) +
                        " share a host, but rank " + std::to_string(a) + " cannot reach rank " + std::to_string(b) +
                        "'s memory by cross-memory attach: " + cause +
                        "; allow it (sysctl kernel.yama.ptrace_scope=0, or run the ranks as one user), or set "
                        "RMA_SHM_FALLBACK=network to use the network provider between them");
    }
  }

  bool need_network = false;
  for (int p = 0; p < n; ++p) {
    const RankFacts& f = facts[static_cast<std::size_t>(p)];
    const bool node = same_host(p) && node_device && f.node_ok != 0 &&
                      (p == me || (probe(me, p) == kProbeOk && probe(p, me) == kProbeOk));
    plan.rail_of[static_cast<std::size_t>(p)] = node ? kNodeRail : kNetworkRail;
    need_network = need_network || !node;
    if (!node && same_host(p) && node_device && f.node_ok != 0 && p != me) {
      RMA_LOG_WARN("rank %d shares this host but cannot be reached by cross-memory attach; "
                   "RMA_SHM_FALLBACK=network: using the network provider for it", p);
    }
  }
  if (node_device) plan.devices[kNodeRail] = node_device;
  if (need_network) {
    auto d = open_for_rail(ProviderReach::kNetwork, request.network_provider, request.device);
    if (!d.ok()) {
      std::vector<int> away;
      for (int p = 0; p < n; ++p) {
        if (plan.rail_of[static_cast<std::size_t>(p)] == kNetworkRail) away.push_back(p);
      }
      std::string why = node_device ? "" : " (no shared-memory transport here: " + node_error + ")";
      return d.status().with_context("rank" + std::string(away.size() == 1 ? " " : "s ") + ranks_text(away) +
                                     " need a network provider" + why);
    }
    plan.devices[kNetworkRail] = std::move(d).value();
  }
  plan.summary = summarize(plan, me);
  return plan;
}

}  // namespace rma::endpoint
