// TransferPlanner: pairs an origin buffer description with a target one and
// cuts the transfer into RDMA work requests.
//
// Each plan is one contiguous target range plus an origin SGE list of the
// same total length (at most max_sge entries, adjacent pieces merged). A plan
// ends where the target range breaks, where the SGE list is full, or at the
// maximum message size. Both sides are walked lazily (BlockCursor), so a
// vector of a million blocks costs no memory, and next() never allocates.
//
// lkeys come from the caller's lookup, which names the registration covering
// an address (the window layer registers page-granular ranges through the
// registration cache, never per element); an SGE never crosses the end of
// the registration its lkey came from. The last registration found is
// remembered, so a lookup runs only when a block leaves it.
#pragma once

#include <cstdint>
#include <span>

#include "datatype/block_cursor.hpp"
#include "datatype/layout.hpp"
#include "rma/sdk/provider.hpp"
#include "rma/sdk/status.hpp"

namespace rma::api {

// The registration covering an address: [begin, end) and its lkey.
struct LocalKey {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  std::uint32_t lkey = 0;
};

// Fills `out` with the registration containing `addr` (at least its first
// byte; `len` says how much the planner would like). Returns false when no
// registration covers addr: the planner then stops with kLkeyFailed.
using LkeyLookupFn = bool (*)(void* ctx, std::uint64_t addr, std::uint64_t len,
                              LocalKey* out) noexcept;
struct LkeyLookup {
  LkeyLookupFn fn = nullptr;  // nullptr: every lkey is 0 and SGEs are unbounded
  void* ctx = nullptr;
};

struct PlanLimits {
  std::uint32_t max_sge = 1;                  // DeviceCaps::max_sge
  std::uint32_t max_msg_size = 0x80000000u;   // DeviceCaps::max_msg_size (0: 2^31)
  static PlanLimits from_caps(const DeviceCaps& caps) noexcept {
    return PlanLimits{caps.max_sge == 0 ? 1u : caps.max_sge,
                      caps.max_msg_size == 0 ? 0x80000000u : caps.max_msg_size};
  }
};

// One work request's target side.
struct TargetRange {
  std::uint64_t addr = 0;     // target_base + displacement of the range
  std::uint32_t length = 0;   // bytes == sum of the SGE lengths
  std::uint32_t num_sge = 0;  // SGEs written to the caller's span
};

struct Buffer {
  std::uint64_t addr = 0;         // origin: local address; target: base address or offset
  std::int64_t count = 0;
  const TypeLayout* type = nullptr;
};

class TransferPlanner {
 public:
  enum class State : std::uint8_t { kActive, kDone, kLkeyFailed };

  TransferPlanner() = default;
  // Checks counts, types and that both sides move the same number of bytes
  // (the type signatures must match in size): RMA_ERR_TYPE otherwise. The
  // layouts must outlive the planner.
  static Result<TransferPlanner> create(const Buffer& origin, const Buffer& target,
                                        PlanLimits limits, LkeyLookup lookup = {});

  // Writes the next work request: SGEs into sges_out (at most
  // min(max_sge, sges_out.size()) of them) and the target range into out.
  // Returns false when nothing is left, or when a lookup failed: state() is
  // then kLkeyFailed, the partial request is not returned and the planner
  // cannot continue (the operation fails).
  bool next(std::span<Sge> sges_out, TargetRange& out) noexcept;

  State state() const noexcept { return state_; }
  std::uint64_t total_bytes() const noexcept { return total_; }
  std::uint64_t planned_bytes() const noexcept { return planned_; }
  // Where the failed lookup was (state() == kLkeyFailed).
  std::uint64_t failed_addr() const noexcept { return failed_addr_; }

 private:
  BlockCursor origin_;
  BlockCursor target_;
  std::uint64_t origin_base_ = 0;
  std::uint64_t target_base_ = 0;
  PlanLimits limits_;
  LkeyLookup lookup_;
  LocalKey cached_{};
  bool have_cached_ = false;
  State state_ = State::kDone;
  std::uint64_t total_ = 0;
  std::uint64_t planned_ = 0;
  std::uint64_t failed_addr_ = 0;
};

}  // namespace rma::api
