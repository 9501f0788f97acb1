// memif-mesh ports: one memif link to every other rank of a job on this
// machine, composed with loopback into a MeshLink (dpdk/link). Private to
// dpdk/port; open_port() dispatches here for PortKind::kMemifMesh.
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

}  // namespace rma::roce::port
