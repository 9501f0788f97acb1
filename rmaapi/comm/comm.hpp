// Communicators and groups (MPI 4.x chapter 7, as far as windows need them).
//
// A communicator is an ordered list of world ranks plus an id that every
// member agrees on. RMA_COMM_WORLD and RMA_COMM_SELF are process-wide
// sentinels; resolve_comm() turns them into the calling context's own
// objects (tests run several contexts in one process). Derived communicators
// (dup, split, split_type, create_group) belong to one context, which keeps
// the set of live handles: a freed or foreign handle is recognised without
// reading it. Groups are plain rank lists, registered process-wide for the
// same reason (groups need no context).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rma/rma.h"
#include "rma/sdk/status.hpp"

namespace rma::api {
class Context;
}

struct rma_comm_s {
  static constexpr std::uint32_t kMagic = 0x52434f4d;  // "RCOM"
  enum Kind : int { kWorldSentinel = 0, kSelfSentinel = 1, kCommunicator = 2 };
  std::uint32_t magic = kMagic;
  int kind = kCommunicator;
  bool is_world = false;  // all ranks in world order: collectives use the bootstrap
  rma::api::Context* ctx = nullptr;
  std::vector<int> ranks;  // world ranks, in this communicator's rank order
  int rank = 0;            // this process's rank in it
  std::uint64_t id = 0;    // the same on every member; checked by collectives
  std::uint64_t children = 0;  // communicators created from this one (ids of children)
  rma_Errhandler errhandler = RMA_ERRORS_ARE_FATAL;
  std::string name;
  int size() const noexcept { return static_cast<int>(ranks.size()); }

  static rma_comm_s sentinel(Kind k) {
    rma_comm_s c;
    c.kind = k;
    return c;
  }
};

struct rma_group_s {
  static constexpr std::uint32_t kMagic = 0x52475250;  // "RGRP"
  std::uint32_t magic = kMagic;
  std::vector<int> ranks;  // world ranks, in group order
};

namespace rma::api {

// The context's communicator behind a handle (the sentinels resolve to the
// calling context's world/self); RMA_ERR_COMM naming what is wrong for
// RMA_COMM_NULL, a freed handle or another context's.
Result<rma_comm_s*> resolve_comm(Context& ctx, rma_Comm comm, const char* what = "comm");

// Groups: a new registered group, and whether a handle is a live group.
rma_group_s* new_group(std::vector<int> world_ranks);
bool live_group(const rma_group_s* g) noexcept;
// RMA_ERR_GROUP unless `g` is a live group.
Status check_group_handle(const rma_group_s* g, const char* what = "group");
void free_group(rma_group_s* g) noexcept;

// A 64-bit mix of the inputs, for communicator ids.
std::uint64_t mix_id(std::uint64_t a, std::uint64_t b) noexcept;

}  // namespace rma::api
