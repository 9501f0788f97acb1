#include "verbs/async_events.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

#include "rma/sdk/log.hpp"
#include "verbs/completion_queue.hpp"
#include "verbs/queue_pair.hpp"
#include "verbs/translate.hpp"

namespace rma::verbs {

std::string describe_async_event(AsyncEventType type, const std::string& device, std::uint32_t qp_num,
                                 std::uint8_t port) {
  const std::string qp = "QP " + std::to_string(qp_num) + " on " + device;
  const std::string where = device + " port " + std::to_string(port);
  switch (type) {
    case AsyncEventType::kCqErr:
      return "a completion queue on " + device + " overran: completions were lost and its poll() now fails; "
             "size CQs for every outstanding signaled request and receive";
    case AsyncEventType::kQpFatal:
      return qp + " hit an error no work request reports and is now in the error state";
    case AsyncEventType::kQpReqErr:
      return qp + " received an invalid request from its peer (bad opcode or sequence) and is now in the error state";
    case AsyncEventType::kQpAccessErr:
      return qp + ": a request from its peer violated access rights and the QP is now in the error state";
    case AsyncEventType::kCommEst:
      return qp + " received its first packet while in RTR";
    case AsyncEventType::kSqDrained:
      return qp + ": its send queue drained";
    case AsyncEventType::kPathMig:
      return qp + " migrated to its alternate path";
    case AsyncEventType::kPathMigErr:
      return qp + " could not migrate to its alternate path";
    case AsyncEventType::kDeviceFatal:
      return device + " failed and is unusable: close every object of it and open it again";
    case AsyncEventType::kPortActive:
      return where + " is ACTIVE (link up)";
    case AsyncEventType::kPortErr:
      return where + " went down (link or netdev down): QPs using it will fail with RETRY_EXC_ERR "
             "unless it comes back";
    case AsyncEventType::kLidChange:
      return where + ": its LID changed";
    case AsyncEventType::kPkeyChange:
      return where + ": its P_Key table changed";
    case AsyncEventType::kSmChange:
      return where + ": the subnet manager changed";
    case AsyncEventType::kSrqErr:
      return "a shared receive queue on " + device + " failed";
    case AsyncEventType::kSrqLimitReached:
      return "a shared receive queue on " + device + " reached its limit";
    case AsyncEventType::kQpLastWqeReached:
      return qp + ": last work request reached";
    case AsyncEventType::kClientReregister:
      return where + ": the subnet manager asks clients to re-register";
    case AsyncEventType::kGidChange:
      return where + ": its GID table changed (an address was added or removed); new QPs use the "
             "GID chosen when the device was opened";
  }
  return device + ": unknown asynchronous event";
}

Status AsyncEventPump::start(ibv_context* ctx, std::string device_name) {
  ctx_ = ctx;
  device_ = std::move(device_name);
  const int flags = ::fcntl(ctx->async_fd, F_GETFL);
  if (flags < 0 || ::fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return io_error("verbs: cannot make the async event fd of " + device_ + " non-blocking", errno);
  }
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd_ < 0) return io_error("verbs: eventfd for the async event thread", errno);
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error& e) {
    ::close(stop_fd_);
    stop_fd_ = -1;
    return resource_exhausted("verbs: cannot start the async event thread of " + device_ + ": " + e.what());
  }
  return {};
}

void AsyncEventPump::stop() noexcept {
  if (thread_.joinable()) {
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(stop_fd_, &one, sizeof one);
    thread_.join();
  }
  if (stop_fd_ >= 0) {
    ::close(stop_fd_);
    stop_fd_ = -1;
  }
}

std::optional<AsyncEvent> AsyncEventPump::pop() {
  std::lock_guard lock(mutex_);
  if (queue_.empty()) return std::nullopt;
  AsyncEvent e = std::move(queue_.front());
  queue_.pop_front();
  return e;
}

void AsyncEventPump::watch(const ibv_cq* cq, CqImpl* owner) noexcept {
  try {
    std::lock_guard lock(watch_mutex_);
    cqs_[cq] = owner;
  } catch (...) {
  }
}

void AsyncEventPump::unwatch(const ibv_cq* cq) noexcept {
  std::lock_guard lock(watch_mutex_);
  cqs_.erase(cq);
}

void AsyncEventPump::watch(const ibv_qp* qp, QpImpl* owner, std::uint32_t qp_num) noexcept {
  try {
    std::lock_guard lock(watch_mutex_);
    qps_[qp] = WatchedQp{owner, qp_num};
  } catch (...) {
  }
}

void AsyncEventPump::unwatch(const ibv_qp* qp) noexcept {
  std::lock_guard lock(watch_mutex_);
  qps_.erase(qp);
}

void AsyncEventPump::run() noexcept {
  for (;;) {
    pollfd fds[2] = {{ctx_->async_fd, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      RMA_LOG_ERROR("verbs: polling the async events of %s failed; no more events are reported", device_.c_str());
      return;
    }
    if ((fds[1].revents & POLLIN) != 0) return;
    ibv_async_event ev;
    while (::ibv_get_async_event(ctx_, &ev) == 0) {
      handle(ev);
      // Acknowledged after handle(): destroying the CQ or QP waits for the
      // acknowledgement, so the objects handle() touched were alive.
      ::ibv_ack_async_event(&ev);
    }
  }
}

void AsyncEventPump::handle(const ibv_async_event& ev) noexcept {
  const auto type = async_event_from_ibv(ev.event_type);
  if (!type) return;
  AsyncEvent out;
  out.type = *type;
  {
    // The lock keeps the object alive while it is marked: its destructor
    // unwatches it (taking the lock) before destroying the ibv object.
    std::lock_guard lock(watch_mutex_);
    auto qp_num_of = [&](const ibv_qp* qp) -> std::uint32_t {
      const auto it = qps_.find(qp);
      return it == qps_.end() ? 0 : it->second.qp_num;
    };
    switch (*type) {
      case AsyncEventType::kCqErr:
        if (const auto it = cqs_.find(ev.element.cq); it != cqs_.end()) it->second->mark_overrun();
        break;
      case AsyncEventType::kQpFatal:
      case AsyncEventType::kQpReqErr:
      case AsyncEventType::kQpAccessErr:
        if (const auto it = qps_.find(ev.element.qp); it != qps_.end()) it->second.owner->mark_error();
        out.qp_num = qp_num_of(ev.element.qp);
        break;
      case AsyncEventType::kCommEst:
      case AsyncEventType::kSqDrained:
      case AsyncEventType::kPathMig:
      case AsyncEventType::kPathMigErr:
      case AsyncEventType::kQpLastWqeReached:
        out.qp_num = qp_num_of(ev.element.qp);
        break;
      case AsyncEventType::kPortActive:
      case AsyncEventType::kPortErr:
      case AsyncEventType::kLidChange:
      case AsyncEventType::kPkeyChange:
      case AsyncEventType::kSmChange:
      case AsyncEventType::kClientReregister:
      case AsyncEventType::kGidChange:
        out.port = static_cast<std::uint8_t>(ev.element.port_num);
        break;
      default:
        break;
    }
  }
  try {
    out.description = describe_async_event(out.type, device_, out.qp_num, out.port);
    RMA_LOG_INFO("verbs: async event %s: %s", std::string(async_event_name(out.type)).c_str(),
                 out.description.c_str());
    std::lock_guard lock(mutex_);
    if (queue_.size() >= kMaxQueued) {
      queue_.pop_front();
      ++dropped_;
    }
    queue_.push_back(std::move(out));
  } catch (...) {
    // Out of memory: the event is lost, its effect (CQ/QP marked) is not.
  }
}

}  // namespace rma::verbs
