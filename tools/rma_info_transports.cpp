// rma_info --transports: run as every rank of a job (rmarun -n N rma_info
// --transports, or under mpirun), it plans the job's transports as any
// librma program would, connects every endpoint, and rank 0 prints which
// provider serves which peer, host by host.
#include "rma_info_transports.hpp"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "rma/sdk/bootstrap.hpp"
#include "rma/sdk/endpoint_manager.hpp"

namespace rma_info {

int print_transports() {
  auto boot = rma::open_bootstrap();
  if (!boot.ok()) {
    std::fprintf(stderr, "rma_info: %s\n", boot.status().message().c_str());
    return 1;
  }
  rma::Bootstrap& b = **boot;
  auto plan = rma::endpoint::plan_transports(b);
  if (!plan.ok()) {
    std::fprintf(stderr, "rma_info: rank %d: %s\n", b.rank(), plan.status().message().c_str());
    return 1;
  }
  // Connecting proves the plan: a transport that cannot reach a peer fails here.
  auto mgr = rma::endpoint::EndpointManager::create(b, *plan);
  if (!mgr.ok()) {
    std::fprintf(stderr, "rma_info: rank %d: %s\n", b.rank(), mgr.status().message().c_str());
    return 1;
  }
  // Each rank's row: "<summary>\n<host index>\n<provider of peer 0>\n...".
  std::string row = plan->summary + "\n" + std::to_string(plan->host_of[static_cast<std::size_t>(b.rank())]) + "\n";
  for (int p = 0; p < b.size(); ++p) row += (*mgr)->transport_of(p) + "\n";
  auto rows = b.allgather({reinterpret_cast<const std::uint8_t*>(row.data()), row.size()});
  if (!rows.ok()) {
    std::fprintf(stderr, "rma_info: rank %d: %s\n", b.rank(), rows.status().message().c_str());
    return 1;
  }
  if (b.rank() == 0) {
    std::printf("# Transports of a %d-rank job (bootstrap %.*s)\n", b.size(), static_cast<int>(b.kind().size()),
                b.kind().data());
    for (int r = 0; r < b.size(); ++r) {
      const auto& raw = (*rows)[static_cast<std::size_t>(r)];
      std::vector<std::string> lines;
      std::string cur;
      for (std::uint8_t c : raw) {
        if (c == '\n') {
          lines.push_back(cur);
          cur.clear();
        } else {
          cur.push_back(static_cast<char>(c));
        }
      }
      if (lines.size() != static_cast<std::size_t>(b.size()) + 2) {
        std::printf("rank %d: malformed report (%zu lines)\n", r, lines.size());
        continue;
      }
      std::printf("rank %d on host %s: %s\n", r, lines[1].c_str(), lines[0].c_str());
      for (int p = 0; p < b.size(); ++p) {
        std::printf("    to rank %-4d %s\n", p, lines[static_cast<std::size_t>(p) + 2].c_str());
      }
    }
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace rma_info
