// The device's asynchronous events (ibv_get_async_event): a thread waits on
// the context's async fd, marks the CQ or QP an event concerns at once (a
// CQ_ERR makes the CQ's next poll() return -1), acknowledges the event and
// queues a description for Device::poll_async_event().
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "rma/provider.hpp"
#include "rma/status.hpp"

namespace rma::verbs {

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

 private:
  void run() noexcept;
  void handle(const ibv_async_event& ev) noexcept;

  ibv_context* ctx_ = nullptr;
  std::string device_;
  int stop_fd_ = -1;
  std::thread thread_;
  std::mutex mutex_;
  std::deque<AsyncEvent> queue_;  // guarded by mutex_
  std::uint64_t dropped_ = 0;     // guarded by mutex_
};

}  // namespace rma::verbs
