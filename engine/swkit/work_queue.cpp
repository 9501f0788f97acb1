#include "swkit/work_queue.hpp"

#include <bit>
#include <cstring>
#include <new>

namespace rma::swkit {

namespace {
template <typename T>
std::unique_ptr<T[]> alloc_array(std::size_t n) noexcept {
  // A zero-sized row (no inline data) still gets a valid pointer.
  return std::unique_ptr<T[]>(new (std::nothrow) T[n == 0 ? 1 : n]());
}
}  // namespace

Status WorkQueueStorage::init(std::uint32_t depth, std::uint32_t max_sge, std::uint32_t max_inline) {
  if (depth == 0) return invalid_argument("create_qp: work queue depth 0");
  const std::size_t rows = std::bit_ceil(std::size_t{depth});
  sge_ = alloc_array<Sge>(rows * max_sge);
  inline_ = alloc_array<std::uint8_t>(rows * max_inline);
  if (!sge_ || !inline_) return resource_exhausted("create_qp: cannot allocate the work queues");
  depth_ = depth;
  mask_ = rows - 1;
  max_sge_ = max_sge;
  max_inline_ = max_inline;
  return {};
}

void WorkQueueStorage::store_inline(std::uint64_t seq, std::span<const Sge> sgl) noexcept {
  std::uint8_t* dst = inline_data(seq);
  for (const Sge& sge : sgl) {
    if (sge.length == 0) continue;
    std::memcpy(dst, reinterpret_cast<const void*>(sge.addr), sge.length);
    dst += sge.length;
  }
}

const char* check_post_send(QpState state, const WorkRequest& wr, const SendLimits& limits, bool queue_full,
                            std::uint64_t* total, StatusCode& code) noexcept {
  code = StatusCode::kFailedPrecondition;
  if (state == QpState::kError) return "QP is in the error state";
  if (state != QpState::kRts) return "QP is not in RTS state";
  if (const char* why = check_send_wr(wr, limits, total, code)) return why;
  code = StatusCode::kResourceExhausted;
  if (queue_full) return "send queue full";
  code = StatusCode::kOk;
  return nullptr;
}

PostResult post_receives(WorkQueue<RecvWqe>& rq, QpState state, std::uint32_t max_sge,
                         std::span<const RecvRequest> wrs) noexcept {
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    StatusCode code;
    if (const char* why = check_post_recv(state, wrs[i], max_sge, rq.full(), code)) {
      return PostResult{code, static_cast<std::uint32_t>(i), why};
    }
    rq.prepare(wrs[i].sgl, false).wr_id = wrs[i].wr_id;
    rq.push();
  }
  return {};
}

const char* check_post_recv(QpState state, const RecvRequest& wr, std::uint32_t max_sge, bool queue_full,
                            StatusCode& code) noexcept {
  code = StatusCode::kFailedPrecondition;
  if (state == QpState::kReset) return "QP is in RESET state";
  if (state == QpState::kError) return "QP is in the error state";
  code = StatusCode::kInvalidArgument;
  if (wr.sgl.size() > max_sge) return "too many SGEs";
  code = StatusCode::kResourceExhausted;
  if (queue_full) return "receive queue full";
  code = StatusCode::kOk;
  return nullptr;
}

}  // namespace rma::swkit
