// The C functions of groups (<rma/rma.h>, MPI 4.x 7.3): groups name
// processes by their rank in RMA_COMM_WORLD. They need no context (MPI
// allows group calls on any thread); errors go to RMA_COMM_WORLD's handler.
#include <algorithm>
#include <string>
#include <vector>

#include "comm/c_call.hpp"
#include "comm/comm.hpp"

namespace rma::api {
namespace {

Status check_rank_list(const rma_group_s* g, int n, const int ranks[], const char* name) {
  if (n < 0) return count_error("n " + std::to_string(n) + " is negative");
  if (ranks == nullptr && n > 0) return arg_error(std::string(name) + " is null but n is " + std::to_string(n));
  const int gs = static_cast<int>(g->ranks.size());
  std::vector<bool> seen(static_cast<std::size_t>(gs), false);
  for (int i = 0; i < n; ++i) {
    if (ranks[i] < 0 || ranks[i] >= gs) {
      return class_error(RMA_ERR_RANK, std::string(name) + "[" + std::to_string(i) + "] = " + std::to_string(ranks[i]) +
                                           " is not a rank of the group (size " + std::to_string(gs) + ")");
    }
    if (seen[static_cast<std::size_t>(ranks[i])]) {
      return class_error(RMA_ERR_RANK, std::string(name) + "[" + std::to_string(i) + "] = " +
                                           std::to_string(ranks[i]) + " appears twice");
    }
    seen[static_cast<std::size_t>(ranks[i])] = true;
  }
  return {};
}

Status check_out(const void* p, const char* name) {
  if (p == nullptr) return arg_error(std::string(name) + " is null");
  return {};
}

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

}  // namespace
}  // namespace rma::api

using namespace rma::api;  // NOLINT
using rma::Status;

extern "C" {

int rma_group_size(rma_Group group, int* size) {
  return world_call("rma_group_size", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_group_handle(group));
    RMA_RETURN_IF_ERROR(check_out(size, "size"));
    *size = static_cast<int>(group->ranks.size());
    return {};
  });
}

int rma_group_rank(rma_Group group, int* rank) {
  return world_call("rma_group_rank", [&]() -> Status {
    Context* c = current_context();
    if (c == nullptr) return not_initialized_error();
    RMA_RETURN_IF_ERROR(check_group_handle(group));
    RMA_RETURN_IF_ERROR(check_out(rank, "rank"));
    auto it = std::find(group->ranks.begin(), group->ranks.end(), c->rank());
    *rank = it == group->ranks.end() ? RMA_UNDEFINED_RANK : static_cast<int>(it - group->ranks.begin());
    return {};
  });
}

int rma_group_incl(rma_Group group, int n, const int ranks[], rma_Group* newgroup) {
  return world_call("rma_group_incl", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_group_handle(group));
    RMA_RETURN_IF_ERROR(check_rank_list(group, n, ranks, "ranks"));
    RMA_RETURN_IF_ERROR(check_out(newgroup, "newgroup"));
    std::vector<int> w;
    for (int i = 0; i < n; ++i) w.push_back(group->ranks[static_cast<std::size_t>(ranks[i])]);
    *newgroup = new_group(std::move(w));
    return {};
  });
}

int rma_group_excl(rma_Group group, int n, const int ranks[], rma_Group* newgroup) {
  return world_call("rma_group_excl", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_group_handle(group));
    RMA_RETURN_IF_ERROR(check_rank_list(group, n, ranks, "ranks"));
    RMA_RETURN_IF_ERROR(check_out(newgroup, "newgroup"));
    std::vector<bool> drop(group->ranks.size(), false);
    for (int i = 0; i < n; ++i) drop[static_cast<std::size_t>(ranks[i])] = true;
    std::vector<int> w;
    for (std::size_t i = 0; i < group->ranks.size(); ++i) {
      if (!drop[i]) w.push_back(group->ranks[i]);
    }
    *newgroup = new_group(std::move(w));
    return {};
  });
}

int rma_group_range_incl(rma_Group group, int n, int ranges[][3], rma_Group* newgroup) {
  return world_call("rma_group_range_incl", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_group_handle(group));
    if (n < 0) return count_error("n " + std::to_string(n) + " is negative");
    if (ranges == nullptr && n > 0) return arg_error("ranges is null but n is " + std::to_string(n));
    RMA_RETURN_IF_ERROR(check_out(newgroup, "newgroup"));
    const long gs = static_cast<long>(group->ranks.size());
    std::vector<int> picked;
    for (int i = 0; i < n; ++i) {
      const long first = ranges[i][0], last = ranges[i][1], stride = ranges[i][2];
      const std::string which = "ranges[" + std::to_string(i) + "] = {" + std::to_string(first) + ", " +
                                std::to_string(last) + ", " + std::to_string(stride) + "}";
      if (stride == 0) return arg_error(which + " has stride 0");
      if (first < 0 || first >= gs || last < 0 || last >= gs) {
        return class_error(RMA_ERR_RANK, which + " names a rank outside the group (size " + std::to_string(gs) + ")");
      }
      if ((stride > 0 && first > last) || (stride < 0 && first < last)) continue;  // empty, as MPI allows
      for (long r = first; stride > 0 ? r <= last : r >= last; r += stride) picked.push_back(static_cast<int>(r));
    }
    RMA_RETURN_IF_ERROR(check_rank_list(group, static_cast<int>(picked.size()), picked.data(), "the ranges' ranks"));
    std::vector<int> w;
    for (int r : picked) w.push_back(group->ranks[static_cast<std::size_t>(r)]);
    *newgroup = new_group(std::move(w));
    return {};
  });
}

int rma_group_translate_ranks(rma_Group group1, int n, const int ranks1[], rma_Group group2, int ranks2[]) {
  return world_call("rma_group_translate_ranks", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_group_handle(group1, "group1"));
    RMA_RETURN_IF_ERROR(check_group_handle(group2, "group2"));
    if (n < 0) return count_error("n " + std::to_string(n) + " is negative");
    if ((ranks1 == nullptr || ranks2 == nullptr) && n > 0) return arg_error("ranks1 or ranks2 is null");
    const int gs = static_cast<int>(group1->ranks.size());
    for (int i = 0; i < n; ++i) {
      if (ranks1[i] == RMA_PROC_NULL) continue;
      if (ranks1[i] < 0 || ranks1[i] >= gs) {
        return class_error(RMA_ERR_RANK, "ranks1[" + std::to_string(i) + "] = " + std::to_string(ranks1[i]) +
                                             " is not a rank of group1 (size " + std::to_string(gs) + ")");
      }
    }
    for (int i = 0; i < n; ++i) {
      if (ranks1[i] == RMA_PROC_NULL) {
        ranks2[i] = RMA_PROC_NULL;
        continue;
      }
      const int w = group1->ranks[static_cast<std::size_t>(ranks1[i])];
      auto it = std::find(group2->ranks.begin(), group2->ranks.end(), w);
      ranks2[i] = it == group2->ranks.end() ? RMA_UNDEFINED_RANK : static_cast<int>(it - group2->ranks.begin());
    }
    return {};
  });
}

int rma_group_union(rma_Group group1, rma_Group group2, rma_Group* newgroup) {
  return world_call("rma_group_union", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_group_handle(group1, "group1"));
    RMA_RETURN_IF_ERROR(check_group_handle(group2, "group2"));
    RMA_RETURN_IF_ERROR(check_out(newgroup, "newgroup"));
    std::vector<int> w = group1->ranks;  // group1's order, then group2's others
    for (int r : group2->ranks) {
      if (!contains(group1->ranks, r)) w.push_back(r);
    }
    *newgroup = new_group(std::move(w));
    return {};
  });
}

int rma_group_intersection(rma_Group group1, rma_Group group2, rma_Group* newgroup) {
  return world_call("rma_group_intersection", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_group_handle(group1, "group1"));
    RMA_RETURN_IF_ERROR(check_group_handle(group2, "group2"));
    RMA_RETURN_IF_ERROR(check_out(newgroup, "newgroup"));
    std::vector<int> w;  // group1's order
    for (int r : group1->ranks) {
      if (contains(group2->ranks, r)) w.push_back(r);
    }
    *newgroup = new_group(std::move(w));
    return {};
  });
}

int rma_group_compare(rma_Group group1, rma_Group group2, int* result) {
  return world_call("rma_group_compare", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_group_handle(group1, "group1"));
    RMA_RETURN_IF_ERROR(check_group_handle(group2, "group2"));
    RMA_RETURN_IF_ERROR(check_out(result, "result"));
    if (group1->ranks == group2->ranks) {
      *result = RMA_IDENT;
    } else {
      auto x = group1->ranks, y = group2->ranks;
      std::sort(x.begin(), x.end());
      std::sort(y.begin(), y.end());
      *result = x == y ? RMA_SIMILAR : RMA_UNEQUAL;
    }
    return {};
  });
}

int rma_group_free(rma_Group* group) {
  return world_call("rma_group_free", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_out(group, "group"));
    RMA_RETURN_IF_ERROR(check_group_handle(*group));
    free_group(*group);
    *group = RMA_GROUP_NULL;
    return {};
  });
}

}  // extern "C"
