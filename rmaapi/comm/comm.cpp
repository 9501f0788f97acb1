#include "comm/comm.hpp"

#include <algorithm>
#include <mutex>
#include <unordered_set>

#include "datatype/errors.hpp"
#include "window/context.hpp"

namespace rma::api {
namespace {

// Live groups of the process. Groups are created and freed by any thread (a
// test's ranks are threads), so the set has a lock; groups are control path.
struct GroupRegistry {
  std::mutex mu;
  std::unordered_set<const rma_group_s*> live;
};
GroupRegistry& groups() {
  static GroupRegistry* r = new GroupRegistry;  // never destroyed: used until exit
  return *r;
}

}  // namespace

Result<rma_comm_s*> resolve_comm(Context& ctx, rma_Comm comm, const char* what) {
  if (comm == RMA_COMM_WORLD) return &ctx.world_comm();
  if (comm == RMA_COMM_SELF) return &ctx.self_comm();
  if (comm == RMA_COMM_NULL) return class_error(RMA_ERR_COMM, std::string(what) + " is RMA_COMM_NULL");
  const auto& live = ctx.comms();
  if (std::find(live.begin(), live.end(), comm) == live.end()) {
    return class_error(RMA_ERR_COMM, std::string(what) +
                                         " is not a live communicator of this rank (freed with rma_comm_free, "
                                         "never created, or another rank's)");
  }
  return comm;
}

rma_group_s* new_group(std::vector<int> world_ranks) {
  auto* g = new rma_group_s;
  g->ranks = std::move(world_ranks);
  GroupRegistry& r = groups();
  std::lock_guard<std::mutex> lock(r.mu);
  r.live.insert(g);
  return g;
}

bool live_group(const rma_group_s* g) noexcept {
  if (g == nullptr) return false;
  GroupRegistry& r = groups();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.live.count(g) != 0;
}

Status check_group_handle(const rma_group_s* g, const char* what) {
  if (g == nullptr) return class_error(RMA_ERR_GROUP, std::string(what) + " is RMA_GROUP_NULL");
  if (!live_group(g)) {
    return class_error(RMA_ERR_GROUP, std::string(what) + " is not a live group (freed with rma_group_free, or corrupt)");
  }
  return {};
}

void free_group(rma_group_s* g) noexcept {
  {
    GroupRegistry& r = groups();
    std::lock_guard<std::mutex> lock(r.mu);
    r.live.erase(g);
  }
  g->magic = 0;
  delete g;
}

std::uint64_t mix_id(std::uint64_t a, std::uint64_t b) noexcept {
  // splitmix64 of a combination: ids only need to differ, not be secret.
  std::uint64_t z = a * 0x9e3779b97f4a7c15ull + b + 0x632be59bd9b4e019ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace rma::api
