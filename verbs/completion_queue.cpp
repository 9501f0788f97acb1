#include "verbs/completion_queue.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "verbs/translate.hpp"

namespace rma::verbs {

Result<std::shared_ptr<CqImpl>> CqImpl::create(std::shared_ptr<DeviceImpl> dev, std::uint32_t depth) {
  const std::uint32_t max = dev->caps().max_cqe;
  if (depth == 0 || depth > max) {
    return invalid_argument("create_cq: depth " + std::to_string(depth) + " is outside 1.." +
                            std::to_string(max));
  }
  std::shared_ptr<CqImpl> cq(new CqImpl(dev));
  cq->cq_.reset(::ibv_create_cq(dev->context(), static_cast<int>(depth), nullptr, nullptr, 0));
  if (!cq->cq_) {
    return resource_exhausted("create_cq: ibv_create_cq(" + dev->name() + ", " + std::to_string(depth) +
                              ") failed: " + errno_text(errno));
  }
  // Lets the async event thread find this object from a CQ_ERR.
  dev->events().watch(cq->cq_.get(), cq.get());
  return cq;
}

// Once unwatched, the async event thread no longer reaches this object;
// ibv_destroy_cq then waits until it has acknowledged every event of the CQ.
CqImpl::~CqImpl() {
  if (cq_) dev_->events().unwatch(cq_.get());
}

void CqImpl::fail(const char* what, int detail) noexcept {
  bool expected = false;
  if (!claimed_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) return;
  if (what == nullptr) {
    std::snprintf(reason_, sizeof reason_,
                  "CQ overrun on %s: more than %d completions were produced before being polled "
                  "(CQ_ERR); completions were lost",
                  dev_->name().c_str(), detail);
  } else {
    std::snprintf(reason_, sizeof reason_, "%s on %s failed (%d): the CQ is unusable", what,
                  dev_->name().c_str(), detail);
  }
  overrun_.store(true, std::memory_order_release);
}

void CqImpl::mark_overrun() noexcept { fail(nullptr, cq_->cqe); }

const char* CqImpl::overrun_reason() const noexcept {
  return overrun_.load(std::memory_order_acquire) ? reason_ : "";
}

void CqImpl::note_use(bool send, bool recv) noexcept {
  if (send) sends_.store(true, std::memory_order_relaxed);
  if (recv) recvs_.store(true, std::memory_order_relaxed);
}

int CqImpl::poll(std::span<Completion> out) noexcept {
  if (overrun_.load(std::memory_order_acquire)) return -1;
  constexpr int kBatch = 16;
  ibv_wc wc[kBatch];
  const bool recv_only = recvs_.load(std::memory_order_relaxed) && !sends_.load(std::memory_order_relaxed);
  std::size_t total = 0;
  while (total < out.size()) {
    const int want = static_cast<int>(std::min<std::size_t>(kBatch, out.size() - total));
    const int n = ::ibv_poll_cq(cq_.get(), want, wc);
    if (n < 0) {
      fail("ibv_poll_cq", n);
      return -1;
    }
    for (int i = 0; i < n; ++i) {
      const ibv_wc& w = wc[i];
      Completion& c = out[total + static_cast<std::size_t>(i)];
      c.wr_id = w.wr_id;
      c.status = wc_status_from_ibv(w.status);
      // ibv_wc.opcode is only defined for successful completions.
      if (w.status == IBV_WC_SUCCESS) {
        c.opcode = opcode_from_ibv(w.opcode).value_or(Opcode::kSend);
      } else if (recv_only) {
        c.opcode = Opcode::kRecv;
      } else {
        c.opcode = opcode_from_ibv(w.opcode).value_or(Opcode::kSend);
      }
      c.has_imm = w.status == IBV_WC_SUCCESS && (w.wc_flags & IBV_WC_WITH_IMM) != 0;
      c.imm_data = c.has_imm ? ntohl(w.imm_data) : 0;
      c.byte_len = w.byte_len;
      c.qp_num = w.qp_num;
      c.vendor_err = w.vendor_err;
    }
    total += static_cast<std::size_t>(n);
    if (n < want) break;
  }
  return static_cast<int>(total);
}

}  // namespace rma::verbs
