#include "datatype/transfer_planner.hpp"

#include <algorithm>
#include <string>

#include "datatype/errors.hpp"

namespace rma::api {
namespace {
Status check_buffer(const Buffer& b, const char* side) {
  if (b.type == nullptr) return type_error(std::string(side) + " datatype is null");
  if (b.count < 0) {
    return count_error(std::string(side) + " count " + std::to_string(b.count) + " is negative");
  }
  std::int64_t bytes = 0;
  if (__builtin_mul_overflow(b.count, b.type->size, &bytes)) {
    return count_error(std::string(side) + " count " + std::to_string(b.count) +
                       " times the type size overflows 64 bits");
  }
  // The whole footprint must be addressable.
  if (b.count > 0 && b.type->size > 0) {
    std::int64_t span = 0;
    if (__builtin_mul_overflow(b.count - 1, b.type->extent(), &span)) {
      return count_error(std::string(side) + " count " + std::to_string(b.count) +
                         " times the type extent overflows 64 bits");
    }
  }
  return Status();
}
}  // namespace

Result<TransferPlanner> TransferPlanner::create(const Buffer& origin, const Buffer& target,
                                                PlanLimits limits, LkeyLookup lookup) {
  RMA_RETURN_IF_ERROR(check_buffer(origin, "origin"));
  RMA_RETURN_IF_ERROR(check_buffer(target, "target"));
  const std::int64_t ob = origin.count * origin.type->size;
  const std::int64_t tb = target.count * target.type->size;
  if (ob != tb) {
    return type_error("origin and target type signatures differ in size: origin moves " +
                      std::to_string(ob) + " bytes, target " + std::to_string(tb));
  }
  if (limits.max_sge == 0) return arg_error("max_sge is 0");
  if (limits.max_msg_size == 0) limits.max_msg_size = 0x80000000u;
  TransferPlanner p;
  p.origin_ = BlockCursor(*origin.type, origin.count);
  p.target_ = BlockCursor(*target.type, target.count);
  p.origin_base_ = origin.addr;
  p.target_base_ = target.addr;
  p.limits_ = limits;
  p.lookup_ = lookup;
  p.total_ = static_cast<std::uint64_t>(ob);
  p.state_ = ob > 0 ? State::kActive : State::kDone;
  return p;
}

bool TransferPlanner::next(std::span<Sge> sges_out, TargetRange& out) noexcept {
  if (state_ != State::kActive) return false;
  Block t;
  if (!target_.peek(t)) {
    state_ = State::kDone;
    return false;
  }
  const std::size_t max_sge = std::min<std::size_t>(limits_.max_sge, sges_out.size());
  if (max_sge == 0) return false;
  const std::uint64_t budget = std::min<std::uint64_t>(static_cast<std::uint64_t>(t.length),
                                                       limits_.max_msg_size);
  std::uint64_t len = 0;
  std::uint32_t n = 0;
  Block o;
  while (len < budget && origin_.peek(o)) {
    std::uint64_t addr = origin_base_ + static_cast<std::uint64_t>(o.offset);
    std::uint64_t take = std::min<std::uint64_t>(static_cast<std::uint64_t>(o.length), budget - len);
    std::uint32_t lkey = 0;
    if (lookup_.fn != nullptr) {
      if (!have_cached_ || addr < cached_.begin || addr >= cached_.end) {
        LocalKey k;
        if (!lookup_.fn(lookup_.ctx, addr, take, &k) || addr < k.begin || addr >= k.end) {
          state_ = State::kLkeyFailed;
          failed_addr_ = addr;
          break;
        }
        cached_ = k;
        have_cached_ = true;
      }
      take = std::min<std::uint64_t>(take, cached_.end - addr);
      lkey = cached_.lkey;
    }
    if (n > 0 && sges_out[n - 1].addr + sges_out[n - 1].length == addr &&
        sges_out[n - 1].lkey == lkey) {
      sges_out[n - 1].length += static_cast<std::uint32_t>(take);
    } else {
      if (n == max_sge) break;
      sges_out[n++] = Sge{addr, static_cast<std::uint32_t>(take), lkey};
    }
    origin_.consume(static_cast<std::int64_t>(take));
    len += take;
  }
  if (state_ == State::kLkeyFailed) return false;
  if (len == 0) {
    if (state_ == State::kActive) state_ = State::kDone;  // unreachable when sizes match
    return false;
  }
  target_.consume(static_cast<std::int64_t>(len));
  planned_ += len;
  out.addr = target_base_ + static_cast<std::uint64_t>(t.offset);
  out.length = static_cast<std::uint32_t>(len);
  out.num_sge = n;
  if (planned_ == total_ && state_ == State::kActive) state_ = State::kDone;
  return true;
}

}  // namespace rma::api
