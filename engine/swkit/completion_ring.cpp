#include "swkit/completion_ring.hpp"

#include <bit>
#include <cinttypes>
#include <cstdio>
#include <new>
#include <string>

namespace rma::swkit {

Status CompletionRing::init(std::uint32_t depth, std::uint32_t max_cqe) {
  if (depth == 0 || depth > max_cqe) {
    return invalid_argument("create_cq: depth " + std::to_string(depth) + " is outside 1.." + std::to_string(max_cqe));
  }
  const std::uint32_t slots = std::bit_ceil(depth);
  ring_.reset(new (std::nothrow) CqEntry[slots]);
  if (!ring_) return resource_exhausted("create_cq: cannot allocate " + std::to_string(depth) + " entries");
  depth_ = depth;
  mask_ = slots - 1;
  return {};
}

bool CompletionRing::lose(const CqEntry& lost) noexcept {
  std::snprintf(reason_, sizeof reason_,
                "completion queue overrun (depth %u): a completion of QP %u (wr_id %" PRIu64
                ") was lost; poll faster or make the CQ deeper",
                depth_, lost.wc.qp_num, lost.wc.wr_id);
  overrun_.store(true, std::memory_order_release);
  return false;
}

}  // namespace rma::swkit
