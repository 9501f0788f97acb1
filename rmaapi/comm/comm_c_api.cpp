// The C functions of communicators (<rma/rma.h>, MPI 4.x chapter 7 as far
// as windows need it): rank/size, barrier, dup, split, split_type,
// create_group, free, compare, names and error handlers.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "comm/c_call.hpp"
#include "comm/collectives.hpp"
#include "comm/comm.hpp"

struct rma_comm_s rma_comm_world_ = rma_comm_s::sentinel(rma_comm_s::kWorldSentinel);
struct rma_comm_s rma_comm_self_ = rma_comm_s::sentinel(rma_comm_s::kSelfSentinel);

namespace rma::api {
namespace {

// A new communicator of this context with `ranks` (world ranks, in order),
// which include the caller; inherits the parent's error handler (MPI 4.x 9.3).
rma_comm_s* add_comm(Context& ctx, const rma_comm_s& parent, std::vector<int> ranks, std::uint64_t id) {
  auto c = std::make_unique<rma_comm_s>();
  c->ctx = &ctx;
  c->ranks = std::move(ranks);
  c->rank = static_cast<int>(std::find(c->ranks.begin(), c->ranks.end(), ctx.rank()) - c->ranks.begin());
  c->id = id;
  c->is_world = false;
  c->errhandler = parent.is_world ? ctx.comm_errhandler : parent.errhandler;
  retain_errhandler(c->errhandler);
  ctx.comms().reserve(ctx.comms().size() + 1);
  rma_comm_s* raw = c.release();
  ctx.comms().push_back(raw);
  return raw;
}

void remove_comm(Context& ctx, rma_comm_s* c) noexcept {
  auto& v = ctx.comms();
  v.erase(std::remove(v.begin(), v.end(), c), v.end());
  release_errhandler(c->errhandler);
  c->magic = 0;
  delete c;
}

struct SplitEntry {
  std::int32_t color;
  std::int32_t key;
  std::uint64_t host;
};

Result<std::vector<SplitEntry>> gather_split(Context& ctx, const rma_comm_s& comm, const SplitEntry& mine) {
  RMA_ASSIGN_OR_RETURN(auto all, comm_allgather(ctx, comm, {reinterpret_cast<const std::uint8_t*>(&mine), sizeof(mine)}));
  std::vector<SplitEntry> out(all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].size() != sizeof(SplitEntry)) {
      return class_error(RMA_ERR_INTERN, "rank " + std::to_string(i) + " sent a split entry of " +
                                             std::to_string(all[i].size()) + " bytes");
    }
    std::memcpy(&out[i], all[i].data(), sizeof(SplitEntry));
  }
  return out;
}

// The members of `color`, ordered by (key, rank in comm), as world ranks.
std::vector<int> members_of(const rma_comm_s& comm, const std::vector<SplitEntry>& e, std::int32_t color,
                            bool by_host, std::uint64_t host) {
  std::vector<int> idx;
  for (int i = 0; i < static_cast<int>(e.size()); ++i) {
    const auto& x = e[static_cast<std::size_t>(i)];
    if (by_host ? (x.color != RMA_UNDEFINED && x.host == host) : x.color == color) idx.push_back(i);
  }
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) {
    return e[static_cast<std::size_t>(a)].key < e[static_cast<std::size_t>(b)].key;
  });
  std::vector<int> world;
  world.reserve(idx.size());
  for (int i : idx) world.push_back(comm.ranks[static_cast<std::size_t>(i)]);
  return world;
}

// Which host this rank is on, as the transport plan decided it from every
// rank's host identity (boot id, pid and network namespace, RMA_HOST_ID):
// the ranks that can share memory (rma_win_allocate_shared), which is what
// MPI's COMM_TYPE_SHARED means. The same index on every rank of one host.
std::uint64_t host_of(Context& ctx) {
  return static_cast<std::uint64_t>(ctx.eps().plan().host_of[static_cast<std::size_t>(ctx.rank())]);
}

Status check_out(const void* p, const char* name) {
  if (p == nullptr) return arg_error(std::string(name) + " is null");
  return {};
}

}  // namespace
}  // namespace rma::api

using namespace rma::api;  // NOLINT
using rma::Status;

extern "C" {

int rma_comm_rank(rma_Comm comm, int* rank) {
  return comm_call(comm, "rma_comm_rank", [&](Context&, rma_comm_s& c) -> Status {
    RMA_RETURN_IF_ERROR(check_out(rank, "rank"));
    *rank = c.rank;
    return {};
  });
}

int rma_comm_size(rma_Comm comm, int* size) {
  return comm_call(comm, "rma_comm_size", [&](Context&, rma_comm_s& c) -> Status {
    RMA_RETURN_IF_ERROR(check_out(size, "size"));
    *size = c.size();
    return {};
  });
}

int rma_barrier(rma_Comm comm) {
  return comm_call(comm, "rma_barrier", [&](Context& ctx, rma_comm_s& c) -> Status {
    if (c.size() == 1) return {};
    // Progress on both sides of the barrier, as rma_win_sync does: a
    // software NIC reads and writes windows on its own thread under the
    // device lock, and these make this rank's stores before the barrier
    // visible to it and its writes visible to loads after. (MPI asks for
    // rma_win_sync here; doing it anyway costs two polls.)
    if (ctx.eps().progress() < 0) return class_error(RMA_ERR_OTHER, "the completion queue overran");
    RMA_RETURN_IF_ERROR(comm_barrier(ctx, c));
    if (ctx.eps().progress() < 0) return class_error(RMA_ERR_OTHER, "the completion queue overran");
    return {};
  });
}

int rma_comm_dup(rma_Comm comm, rma_Comm* newcomm) {
  return comm_call(comm, "rma_comm_dup", [&](Context& ctx, rma_comm_s& c) -> Status {
    RMA_RETURN_IF_ERROR(check_out(newcomm, "newcomm"));
    const std::uint64_t id = mix_id(c.id, ++c.children);
    rma_comm_s* n = add_comm(ctx, c, c.ranks, id);
    // Collective: every member takes part (and a member that made another
    // call is reported here, by the id check).
    Status b = comm_barrier(ctx, *n);
    if (!b.ok()) {
      remove_comm(ctx, n);
      return b;
    }
    *newcomm = n;
    return {};
  });
}

int rma_comm_split(rma_Comm comm, int color, int key, rma_Comm* newcomm) {
  return comm_call(comm, "rma_comm_split", [&](Context& ctx, rma_comm_s& c) -> Status {
    RMA_RETURN_IF_ERROR(check_out(newcomm, "newcomm"));
    // Checked after the exchange, so that every rank fails together instead
    // of the others waiting for this one.
    const bool bad_color = color < 0 && color != RMA_UNDEFINED;
    RMA_ASSIGN_OR_RETURN(auto e, gather_split(ctx, c, SplitEntry{bad_color ? -1 : color, key, 0}));
    const std::uint64_t seq = ++c.children;
    for (std::size_t i = 0; i < e.size(); ++i) {
      if (e[i].color == -1) {
        return arg_error(i == static_cast<std::size_t>(c.rank)
                             ? "color " + std::to_string(color) + " is negative and not RMA_UNDEFINED"
                             : "rank " + std::to_string(i) + " of comm passed a negative color that is not RMA_UNDEFINED");
      }
    }
    if (color == RMA_UNDEFINED) {
      *newcomm = RMA_COMM_NULL;
      return {};
    }
    std::vector<int> world = members_of(c, e, color, false, 0);
    *newcomm = add_comm(ctx, c, std::move(world), mix_id(mix_id(c.id, seq), static_cast<std::uint32_t>(color)));
    return {};
  });
}

int rma_comm_split_type(rma_Comm comm, int split_type, int key, rma_Info info, rma_Comm* newcomm) {
  return comm_call(comm, "rma_comm_split_type", [&](Context& ctx, rma_comm_s& c) -> Status {
    RMA_RETURN_IF_ERROR(check_out(newcomm, "newcomm"));
    if (info != RMA_INFO_NULL && info == nullptr) return class_error(RMA_ERR_INFO, "info is not an info object");
    const bool bad = split_type != RMA_COMM_TYPE_SHARED && split_type != RMA_UNDEFINED;
    const std::uint64_t host = host_of(ctx);
    RMA_ASSIGN_OR_RETURN(auto e, gather_split(ctx, c, SplitEntry{bad ? -1 : split_type, key, host}));
    const std::uint64_t seq = ++c.children;
    for (std::size_t i = 0; i < e.size(); ++i) {
      if (e[i].color == -1) {
        return arg_error(i == static_cast<std::size_t>(c.rank)
                             ? "split_type " + std::to_string(split_type) +
                                   " is neither RMA_COMM_TYPE_SHARED nor RMA_UNDEFINED"
                             : "rank " + std::to_string(i) + " of comm passed an invalid split_type");
      }
    }
    if (split_type == RMA_UNDEFINED) {
      *newcomm = RMA_COMM_NULL;
      return {};
    }
    std::vector<int> world = members_of(c, e, 0, true, host);
    *newcomm = add_comm(ctx, c, std::move(world), mix_id(mix_id(c.id, seq), host));
    return {};
  });
}

int rma_comm_create_group(rma_Comm comm, rma_Group group, int tag, rma_Comm* newcomm) {
  return comm_call(comm, "rma_comm_create_group", [&](Context& ctx, rma_comm_s& c) -> Status {
    RMA_RETURN_IF_ERROR(check_out(newcomm, "newcomm"));
    RMA_RETURN_IF_ERROR(check_group_handle(group));
    if (tag < 0) return arg_error("tag " + std::to_string(tag) + " is negative");
    for (int w : group->ranks) {
      if (std::find(c.ranks.begin(), c.ranks.end(), w) == c.ranks.end()) {
        return class_error(RMA_ERR_GROUP, "the group has process " + std::to_string(w) +
                                              " (rank in RMA_COMM_WORLD), which is not in comm");
      }
    }
    if (std::find(group->ranks.begin(), group->ranks.end(), ctx.rank()) == group->ranks.end()) {
      return class_error(RMA_ERR_GROUP, "the calling rank is not in the group (only members call rma_comm_create_group)");
    }
    // Every member computes the same id from what they all pass.
    std::uint64_t id = mix_id(c.id, 0x43475250u + static_cast<std::uint64_t>(tag));
    for (int w : group->ranks) id = mix_id(id, static_cast<std::uint64_t>(w));
    rma_comm_s* n = add_comm(ctx, c, group->ranks, id);
    Status b = comm_barrier(ctx, *n);
    if (!b.ok()) {
      remove_comm(ctx, n);
      return b;
    }
    *newcomm = n;
    return {};
  });
}

int rma_comm_free(rma_Comm* comm) {
  if (comm == nullptr) return world_call("rma_comm_free", [] { return arg_error("comm is null"); });
  return comm_call(*comm, "rma_comm_free", [&](Context& ctx, rma_comm_s& c) -> Status {
    if (*comm == RMA_COMM_WORLD || *comm == RMA_COMM_SELF) {
      return class_error(RMA_ERR_COMM, "RMA_COMM_WORLD and RMA_COMM_SELF cannot be freed");
    }
    remove_comm(ctx, &c);
    *comm = RMA_COMM_NULL;
    return {};
  });
}

int rma_comm_compare(rma_Comm comm1, rma_Comm comm2, int* result) {
  return world_call("rma_comm_compare", [&]() -> Status {
    Context* ctx = current_context();
    if (ctx == nullptr) return not_initialized_error();
    RMA_ASSIGN_OR_RETURN(rma_comm_s * a, resolve_comm(*ctx, comm1, "comm1"));
    RMA_ASSIGN_OR_RETURN(rma_comm_s * b, resolve_comm(*ctx, comm2, "comm2"));
    RMA_RETURN_IF_ERROR(check_out(result, "result"));
    if (a == b) {
      *result = RMA_IDENT;
    } else if (a->ranks == b->ranks) {
      *result = RMA_CONGRUENT;
    } else {
      auto x = a->ranks, y = b->ranks;
      std::sort(x.begin(), x.end());
      std::sort(y.begin(), y.end());
      *result = x == y ? RMA_SIMILAR : RMA_UNEQUAL;
    }
    return {};
  });
}

int rma_comm_set_name(rma_Comm comm, const char* comm_name) {
  return comm_call(comm, "rma_comm_set_name", [&](Context&, rma_comm_s& c) -> Status {
    RMA_RETURN_IF_ERROR(check_out(comm_name, "comm_name"));
    const std::size_t n = std::strlen(comm_name);
    if (n >= RMA_MAX_OBJECT_NAME) {
      return arg_error("comm_name has " + std::to_string(n) + " characters; at most " +
                       std::to_string(RMA_MAX_OBJECT_NAME - 1) + " fit");
    }
    c.name = comm_name;
    return {};
  });
}

int rma_comm_get_name(rma_Comm comm, char* comm_name, int* resultlen) {
  return comm_call(comm, "rma_comm_get_name", [&](Context&, rma_comm_s& c) -> Status {
    RMA_RETURN_IF_ERROR(check_out(comm_name, "comm_name"));
    RMA_RETURN_IF_ERROR(check_out(resultlen, "resultlen"));
    std::memcpy(comm_name, c.name.c_str(), c.name.size() + 1);
    *resultlen = static_cast<int>(c.name.size());
    return {};
  });
}

int rma_comm_group(rma_Comm comm, rma_Group* group) {
  return comm_call(comm, "rma_comm_group", [&](Context&, rma_comm_s& c) -> Status {
    RMA_RETURN_IF_ERROR(check_out(group, "group"));
    *group = new_group(c.ranks);
    return {};
  });
}

int rma_comm_create_errhandler(rma_Comm_errhandler_function* function, rma_Errhandler* errhandler) {
  return world_call("rma_comm_create_errhandler", [&]() -> Status {
    RMA_RETURN_IF_ERROR(check_out(reinterpret_cast<const void*>(function), "function"));
    RMA_RETURN_IF_ERROR(check_out(errhandler, "errhandler"));
    auto* eh = new rma_errhandler_s;
    eh->comm_fn = function;
    *errhandler = eh;
    return {};
  });
}

int rma_comm_set_errhandler(rma_Comm comm, rma_Errhandler errhandler) {
  return comm_call(comm, "rma_comm_set_errhandler", [&](Context& ctx, rma_comm_s& c) -> Status {
    if (!valid_errhandler(errhandler)) return arg_error("errhandler is not an error handler");
    if (!predefined_errhandler(errhandler) && errhandler->comm_fn == nullptr) {
      return arg_error("errhandler was made by rma_win_create_errhandler; communicators take one from "
                       "rma_comm_create_errhandler");
    }
    retain_errhandler(errhandler);
    rma_Errhandler& slot = c.is_world ? ctx.comm_errhandler : c.errhandler;
    release_errhandler(slot);
    slot = errhandler;
    return {};
  });
}

int rma_comm_get_errhandler(rma_Comm comm, rma_Errhandler* errhandler) {
  return comm_call(comm, "rma_comm_get_errhandler", [&](Context& ctx, rma_comm_s& c) -> Status {
    RMA_RETURN_IF_ERROR(check_out(errhandler, "errhandler"));
    rma_Errhandler eh = c.is_world ? ctx.comm_errhandler : c.errhandler;
    retain_errhandler(eh);
    *errhandler = eh;
    return {};
  });
}

int rma_comm_call_errhandler(rma_Comm comm, int errorcode) {
  Context* ctx = current_context();
  rma_comm_s* c = nullptr;
  if (ctx != nullptr) {
    auto r = resolve_comm(*ctx, comm);
    if (!r.ok()) return raise_comm(nullptr, "rma_comm_call_errhandler", r.status());
    c = *r;
  }
  return raise_comm(c, "rma_comm_call_errhandler",
                    class_error(errorcode, "raised by the program with error code " + std::to_string(errorcode)));
}

}  // extern "C"
