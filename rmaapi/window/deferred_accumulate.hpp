// accumulate_ordering=none (MPI 4.x 12.2.1): accumulates from one origin
// to one target may take effect in any order. librma uses that freedom for
// the accumulates that cost the most round trips: those whose 8-byte,
// 8-byte aligned elements are changed by a compare-and-swap loop (every op
// but integer SUM, see operations.cpp). Under the default ordering each
// element's loop runs to its end before the call returns (two round trips
// per element when the first guess is wrong). Under none, a non-fetching,
// non-request call only records its elements here and returns; the next
// synchronization that completes operations (flush, unlock, fence,
// complete, free), a full list, or an accumulate under another ordering
// runs every recorded loop together: one round of compare-and-swaps in
// flight at once, then one more round for those that lost.
//
// Two recorded updates of one location with the same op and type are
// combined into one when the result is exact (integers, logical and bit
// ops, MIN/MAX, MAXLOC/MINLOC, REPLACE); floating SUM and PROD would round
// differently when combined, so such a second update runs the list first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "datatype/datatype.hpp"
#include "rma/sdk/endpoint_manager.hpp"
#include "rma/sdk/status.hpp"
#include "window/reduce.hpp"

struct rma_win_s;

namespace rma::api {

class DeferredAccumulates {
 public:
  static constexpr std::size_t kCapacity = 256;

  DeferredAccumulates();
  ~DeferredAccumulates();
  DeferredAccumulates(const DeferredAccumulates&) = delete;
  DeferredAccumulates& operator=(const DeferredAccumulates&) = delete;

  bool empty() const noexcept { return size_ == 0; }

  // Records `target[addr] = target[addr] op value` for window rank
  // `target`; false (nothing recorded) when the list must run first: it is
  // full, or the location holds an update this one cannot be combined with.
  bool add(int target, std::uint64_t addr, std::uint32_t rkey, OpKind op,
           const rma_datatype_s* elem, std::uint64_t value) noexcept;

  // Runs every recorded loop to its end (the list is empty afterwards,
  // also on error). `call` names the API call that ran it, for errors.
  Status run(rma_win_s* win, const char* call);

  // Compare-and-swaps posted by run() so far (for tests and benchmarks).
  std::uint64_t cas_posted() const noexcept { return cas_posted_; }

 private:
  struct Word;
  // Open addressing on (target, addr): slot -> word index + 1 (0: empty),
  // so that finding an update of the same location costs O(1).
  static constexpr std::size_t kSlots = 2 * kCapacity;
  static_assert((kSlots & (kSlots - 1)) == 0, "kSlots is a power of two");
  std::size_t slot_of(int target, std::uint64_t addr) const noexcept;
  std::unique_ptr<Word[]> words_;
  std::unique_ptr<std::uint16_t[]> slots_;
  std::size_t size_ = 0;
  std::uint64_t cas_posted_ = 0;
};

// Runs `win`'s recorded accumulates, when it has any.
Status run_deferred_accumulates(rma_win_s* win, const char* call);

}  // namespace rma::api
