#include "port/mesh_port.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "link/mesh_link.hpp"
#include "port/dpdk_port.hpp"
#include "port/port.hpp"
#include "port/port_link.hpp"
#include "rma/sdk/log.hpp"

namespace rma::roce::port {

namespace {

// The memif links from rank spec.rank to every other of spec.size ranks
// (see open_memif_mesh), in the order: higher ranks (servers), then lower.
// `learn`: the members' peer MACs are learned, not derived from the rank.
Result<std::vector<MeshMember>> open_members(const PortSpec& spec, bool learn, std::uint32_t& max_frame) {
  const std::string who = spec.canonical();
  std::vector<MeshMember> members;
  members.reserve(spec.size == 0 ? 0 : spec.size - 1);
  auto open_member = [&](std::uint32_t peer) -> Status {
    const std::string member = mesh_member_spec(spec, peer);
    auto link = open_port(member);
    if (!link.ok()) {
      return link.status().with_context(who + ": the link to " + (learn ? "local rank " : "rank ") +
                                        std::to_string(peer) + " (" + member + ")");
    }
    max_frame = std::min(max_frame, (*link)->info().max_frame);
    members.push_back(MeshMember{learn ? MacAddress{} : mesh_mac(peer), std::move(link).value(), learn});
    return {};
  };
  for (std::uint32_t peer = spec.rank + 1; peer < spec.size; ++peer) RMA_RETURN_IF_ERROR(open_member(peer));
  const std::size_t servers = members.size();
  for (std::uint32_t peer = 0; peer < spec.rank; ++peer) RMA_RETURN_IF_ERROR(open_member(peer));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(spec.link_wait_ms);
  const std::string& job = learn ? spec.mesh : spec.name;
  for (std::size_t i = 0; i < servers; ++i) {
    const auto* port = dynamic_cast<const PortLink*>(members[i].link.get());
    if (port == nullptr) continue;
    while (!port->link_up()) {
      const auto peer = static_cast<std::uint32_t>(spec.rank + 1 + i);
      if (std::chrono::steady_clock::now() >= deadline) {
        return timeout_error(who + ": " + (learn ? "local rank " : "rank ") + std::to_string(peer) +
                             " did not connect within " + std::to_string(spec.link_wait_ms) + " ms (memif socket '" +
                             mesh_socket(job, spec.rank, peer) + "'); did every rank of the job start" +
                             (learn ? " on this host?" : "?"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  return members;
}

}  // namespace

Result<std::unique_ptr<Link>> open_memif_mesh(const PortSpec& mesh) {
  std::uint32_t max_frame = mesh.memif_bsize;
  RMA_ASSIGN_OR_RETURN(std::vector<MeshMember> members, open_members(mesh, false, max_frame));
  RMA_LOG_DEBUG("softroce: %s: links to %zu ranks up", mesh.canonical().c_str(), members.size());
  LinkInfo self;
  self.name = mesh.canonical();
  self.mac = mesh_mac(mesh.rank);
  self.ipv4 = mesh_ipv4(mesh.rank);
  self.max_frame = max_frame;
  RMA_ASSIGN_OR_RETURN(std::unique_ptr<MeshLink> link, MeshLink::create(std::move(self), std::move(members)));
  return std::unique_ptr<Link>(std::move(link));
}

Result<std::unique_ptr<Link>> open_bridged_port(const PortSpec& spec) {
  // The interface first: a missing or down interface fails before any
  // sibling is waited for.
  PortSpec iface = spec;
  iface.mesh.clear();
  iface.rank = iface.size = 0;
  RMA_ASSIGN_OR_RETURN(std::unique_ptr<Link> uplink, open_dpdk_port(std::move(iface)));
  std::uint32_t max_frame = uplink->info().max_frame;
  RMA_ASSIGN_OR_RETURN(std::vector<MeshMember> members, open_members(spec, true, max_frame));
  RMA_LOG_DEBUG("softroce: %s: interface up, links to %zu ranks of this host up", spec.canonical().c_str(),
                members.size());
  LinkInfo self;
  self.name = spec.canonical();
  self.mac = *spec.mac;
  self.ipv4 = spec.ipv4;
  self.max_frame = max_frame;
  RMA_ASSIGN_OR_RETURN(std::unique_ptr<MeshLink> link,
                       MeshLink::create(std::move(self), std::move(members), std::move(uplink)));
  return std::unique_ptr<Link>(std::move(link));
}

}  // namespace rma::roce::port
