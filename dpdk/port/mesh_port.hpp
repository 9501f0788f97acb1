// Ports made of several links, composed into one MeshLink (dpdk/link):
//   memif-mesh   one memif link to every other rank of a job on this
//                machine, plus loopback;
//   bridged      a kernel interface (af_packet, af_xdp with mesh=) that the
//                ranks of one host share to reach the other hosts, plus a
//                memif link to every other rank of this host, plus loopback.
// Private to dpdk/port; open_port() dispatches here.
#pragma once

#include <memory>

#include "link/link.hpp"
#include "port/spec.hpp"
#include "rma/sdk/status.hpp"

namespace rma::roce::port {

// Rank r first starts the servers of its links to every higher rank (they
// listen at once, nobody waits), then connects as client to every lower
// rank (each retries until that rank's server listens, which it does as
// soon as that rank starts), then waits for its servers' links to come up.
// No rank waits on another's progress through the mesh, so it comes up
// whatever order and pace the ranks start in. A rank that never arrives
// fails the open after `wait` ms, naming it.
Result<std::unique_ptr<Link>> open_memif_mesh(const PortSpec& mesh);

// The interface port (the uplink: frames to a MAC no member owns, and
// broadcasts) and the memif links to the other ranks of this host, opened
// as a memif mesh is (mesh_size ranks, local rank mesh_rank, sockets named
// after mesh=), each member's peer MAC learned from the first frame it
// delivers (the siblings' addresses are theirs to choose). Every rank of
// the host must open it within the mesh's wait. Peers, siblings included,
// are found by ARP (LinkInfo::neighbours_by_arp).
Result<std::unique_ptr<Link>> open_bridged_port(const PortSpec& spec);

}  // namespace rma::roce::port
