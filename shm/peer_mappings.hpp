// The peers' shared segments this process maps to reach their regions
// with loads, stores and CPU atomics: one mapping per segment, keyed by its
// name, shared by every QP that reaches a region in it; the last holder
// unmaps it.
#pragma once

#include <memory>

#include "rma/sdk/node.hpp"

namespace rma::shm {

// The mapping of `ref`, made on first use (node::SharedMemory::attach
// checks the name, the owner's uid, the size and the nonce); nullptr when
// it cannot be mapped (freed, its owner gone, not a librma segment): the
// caller then reaches the region as memory outside any segment. A mapping
// whose owner freed the segment is dropped and made again. Allocates and
// maps on a miss only: once per segment and process.
std::shared_ptr<node::SharedMemory> map_peer_segment(const node::SegmentRef& ref) noexcept;

}  // namespace rma::shm
