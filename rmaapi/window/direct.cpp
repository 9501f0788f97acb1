// Datatype copies on the load/store path (direct.hpp).
#include "window/direct.hpp"

#include <cstring>
#include <span>

#include "datatype/pack.hpp"
#include "datatype/transfer_planner.hpp"

namespace rma::api::direct {
namespace {
constexpr std::uint32_t kSges = 64;
}  // namespace

Status copy(const PeerWindow& p, const void* origin, std::int64_t ocount, const TypeLayout& ol,
            std::uint64_t target_base, std::int64_t tcount, const TypeLayout& tl, bool to_target) {
  if (ol.is_dense() && tl.is_dense()) {
    const auto bytes = static_cast<std::size_t>(ol.size * ocount);
    std::byte* there = p.local(target_base);
    if (to_target) {
      copy_mapped(there, origin, bytes);
    } else {
      copy_mapped(const_cast<void*>(origin), there, bytes);
    }
    return {};
  }
  // The same pairing the NIC path posts as work requests: each step is one
  // contiguous target range and the origin blocks that fill it. No lkeys:
  // SGEs are only addresses here, and never limited by a registration.
  RMA_ASSIGN_OR_RETURN(TransferPlanner planner,
                       TransferPlanner::create(Buffer{reinterpret_cast<std::uint64_t>(origin), ocount, &ol},
                                               Buffer{target_base, tcount, &tl}, PlanLimits{kSges, 0x80000000u}));
  Sge sges[kSges];
  TargetRange tr;
  while (planner.next(std::span<Sge>(sges, kSges), tr)) {
    std::byte* there = p.local(tr.addr);
    for (std::uint32_t i = 0; i < tr.num_sge; ++i) {
      auto* here = reinterpret_cast<std::byte*>(sges[i].addr);
      if (to_target) {
        copy_mapped(there, here, sges[i].length);
      } else {
        copy_mapped(here, there, sges[i].length);
      }
      there += sges[i].length;
    }
  }
  return {};
}

}  // namespace rma::api::direct
