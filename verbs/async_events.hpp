// The device's asynchronous events (ibv_get_async_event): a thread waits on
// the context's async fd, marks the CQ or QP an event concerns at once (a
// CQ_ERR makes the CQ's next poll() return -1), acknowledges the event and
// queues a description for Device::poll_async_event().
//
// CQs and QPs are found through a registry the creating thread fills under
// the pump's mutex, not through ibv_cq.cq_context / ibv_qp.qp_context: the
// kernel hands the event over without any synchronisation the C++ memory
// model (or ThreadSanitizer) can see, so the object's fields would be read
// without a happens-before edge to their initialisation.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/status.hpp"

namespace rma::verbs {

class CqImpl;
class QpImpl;

// What the event says, in words a user can act on. Pure; unit-tested.
std::string describe_async_event(AsyncEventType type, const std::string& device, std::uint32_t qp_num,
                                 std::uint8_t port);

class AsyncEventPump {
 public:
  static constexpr std::size_t kMaxQueued = 1024;  // older events are dropped beyond this

  AsyncEventPump() = default;
  AsyncEventPump(const AsyncEventPump&) = delete;
  AsyncEventPump& operator=(const AsyncEventPump&) = delete;
  ~AsyncEventPump() { stop(); }

  Status start(ibv_context* ctx, std::string device_name);
  void stop() noexcept;
  std::optional<AsyncEvent> pop();

  // Called by CqImpl/QpImpl after creating and before destroying their
  // ibv object. Never fails: a registry that cannot grow only loses the
  // marking of that object, and the event itself is still reported.
  void watch(const ibv_cq* cq, CqImpl* owner) noexcept;
  void unwatch(const ibv_cq* cq) noexcept;
  void watch(const ibv_qp* qp, QpImpl* owner, std::uint32_t qp_num) noexcept;
  void unwatch(const ibv_qp* qp) noexcept;

 private:
  struct WatchedQp {
    QpImpl* owner;
    std::uint32_t qp_num;
  };
  void run() noexcept;
  void handle(const ibv_async_event& ev) noexcept;

  ibv_context* ctx_ = nullptr;
  std::string device_;
  int stop_fd_ = -1;
  std::thread thread_;
  std::mutex mutex_;
  std::deque<AsyncEvent> queue_;  // guarded by mutex_
  std::uint64_t dropped_ = 0;     // guarded by mutex_
  std::mutex watch_mutex_;        // held while an event marks its object
  std::unordered_map<const ibv_cq*, CqImpl*> cqs_;   // guarded by watch_mutex_
  std::unordered_map<const ibv_qp*, WatchedQp> qps_;  // guarded by watch_mutex_
};

}  // namespace rma::verbs
