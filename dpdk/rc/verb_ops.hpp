// Small facts about verbs operations that the requester, the completer and
// the posting code of RcQp share.
#pragma once

#include <bit>
#include <cstdint>

#include "rc/types.hpp"

namespace rma::roce::rc {

// READs and atomics: they take a responder resource and a read/atomic credit.
inline bool is_rd_atomic(VerbOp op) noexcept {
  return op == VerbOp::kRdmaRead || op == VerbOp::kAtomicFetchAdd || op == VerbOp::kAtomicCmpSwap;
}
inline bool is_atomic(VerbOp op) noexcept {
  return op == VerbOp::kAtomicFetchAdd || op == VerbOp::kAtomicCmpSwap;
}
// Request packets of a message of `len` bytes at path MTU `mtu`.
// `mtu` is a power of two (256 .. 4096): a shift, not a division.
inline std::uint32_t packets_for(std::uint32_t len, std::uint32_t mtu) noexcept {
  return len == 0 ? 1 : static_cast<std::uint32_t>((std::uint64_t{len} + mtu - 1) >> std::countr_zero(mtu));
}
}  // namespace rma::roce::rc
