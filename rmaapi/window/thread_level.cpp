#include "window/thread_level.hpp"

#include "rma/rma.h"
#include "window/context.hpp"

namespace rma::api {
namespace {
// The API lock this thread holds, if any (one context per thread at a time).
thread_local std::mutex* t_held = nullptr;
}  // namespace

ApiCallLock::ApiCallLock() noexcept {
  if (t_held != nullptr) return;
  Context* c = current_context();
  if (c == nullptr || c->thread_level() != RMA_THREAD_MULTIPLE) return;
  held_ = &c->api_mutex();
  held_->lock();
  t_held = held_;
}

ApiCallLock::~ApiCallLock() {
  if (held_ == nullptr) return;
  t_held = nullptr;
  held_->unlock();
}

void yield_to_other_threads(WaitBackoff& backoff) noexcept {
  std::mutex* m = t_held;
  if (m == nullptr) {
    backoff.pause();
    return;
  }
  m->unlock();
  backoff.pause();
  m->lock();
}

}  // namespace rma::api
