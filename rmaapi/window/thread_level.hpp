// Thread support levels (rma_init_thread, MPI 4.x 11.6).
//
// SINGLE, FUNNELED and SERIALIZED need nothing from librma: one thread at a
// time calls it. Under MULTIPLE every C call on a context holds that
// context's API lock (ApiCallLock), so the API's own state — windows and
// their epochs, the request pool, the scratch memory, attachment tables —
// is touched by one thread at a time, and the endpoint manager is created
// thread-safe (it locks on its own, for layers that drive it directly).
// Blocking waits on the NIC keep the lock (they end without any other
// thread's help); waits on other ranks' actions (a lock word, PSCW post and
// complete counters) let go of it between polls (yield_to_other_threads),
// so a thread of this rank whose call another rank is waiting for can run.
// Collective calls (creation, free, fence, barrier) keep it: as in MPI,
// collectives are issued in the same order on every rank.
#pragma once

#include <mutex>

#include "rma/sdk/wait_backoff.hpp"

namespace rma::api {

class Context;

// Holds the calling thread's context's API lock while alive, when that
// context runs at RMA_THREAD_MULTIPLE and this thread does not hold it yet
// (a C call made from inside another, such as from an error handler).
class ApiCallLock {
 public:
  ApiCallLock() noexcept;
  ~ApiCallLock();
  ApiCallLock(const ApiCallLock&) = delete;
  ApiCallLock& operator=(const ApiCallLock&) = delete;

 private:
  std::mutex* held_ = nullptr;
};

// Inside a call waiting for other ranks: lets the other threads of this
// rank make their calls, then takes the API lock back. Just the pause of
// `backoff` (a yield, a sleep once the wait is long) when the lock is not
// held (every level but MULTIPLE).
void yield_to_other_threads(WaitBackoff& backoff) noexcept;

}  // namespace rma::api
