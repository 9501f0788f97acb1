#include "port/mesh_port.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "link/mesh_link.hpp"
#include "port/port.hpp"
#include "port/port_link.hpp"
#include "rma/sdk/log.hpp"

namespace rma::roce::port {

Result<std::unique_ptr<Link>> open_memif_mesh(const PortSpec& mesh) {
  const std::string who = mesh.canonical();
  std::vector<MeshMember> members;
  members.reserve(mesh.size == 0 ? 0 : mesh.size - 1);
  std::uint32_t max_frame = mesh.memif_bsize;
  auto open_member = [&](std::uint32_t peer) -> Status {
    const std::string spec = mesh_member_spec(mesh, peer);
    auto link = open_port(spec);
    if (!link.ok()) {
      return link.status().with_context(who + ": the link to rank " + std::to_string(peer) + " (" + spec + ")");
    }
    max_frame = std::min(max_frame, (*link)->info().max_frame);
    members.push_back(MeshMember{mesh_mac(peer), std::move(link).value()});
    return {};
  };
  for (std::uint32_t peer = mesh.rank + 1; peer < mesh.size; ++peer) RMA_RETURN_IF_ERROR(open_member(peer));
  const std::size_t servers = members.size();
  for (std::uint32_t peer = 0; peer < mesh.rank; ++peer) RMA_RETURN_IF_ERROR(open_member(peer));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(mesh.link_wait_ms);
  for (std::size_t i = 0; i < servers; ++i) {
    const auto* port = dynamic_cast<const PortLink*>(members[i].link.get());
    if (port == nullptr) continue;
    while (!port->link_up()) {
      if (std::chrono::steady_clock::now() >= deadline) {
        return timeout_error(who + ": rank " + std::to_string(mesh.rank + 1 + i) + " did not connect within " +
                             std::to_string(mesh.link_wait_ms) + " ms (memif socket '" +
                             mesh_socket(mesh.name, mesh.rank, static_cast<std::uint32_t>(mesh.rank + 1 + i)) +
                             "'); did every rank of the job start?");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  RMA_LOG_DEBUG("softroce: %s: links to %zu ranks up", who.c_str(), members.size());
  LinkInfo self;
  self.name = who;
  self.mac = mesh_mac(mesh.rank);
  self.ipv4 = mesh_ipv4(mesh.rank);
  self.max_frame = max_frame;
  RMA_ASSIGN_OR_RETURN(std::unique_ptr<MeshLink> link, MeshLink::create(std::move(self), std::move(members)));
  return std::unique_ptr<Link>(std::move(link));
}

}  // namespace rma::roce::port
