// Context: everything one rank of a job owns — its bootstrap, device,
// endpoints, registration cache, scratch memory, request pool and windows.
//
// A process normally has one (rma_init). Tests run several ranks as threads
// of one process, so the C API finds its context through a thread-local
// pointer first (set by rma::api::testing::init_thread) and the process-wide
// one second. A context is driven by one thread at a time, except at
// RMA_THREAD_MULTIPLE, where its API lock serializes the calls
// (window/thread_level.hpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/comm.hpp"
#include "rma/sdk/endpoint_manager.hpp"
#include "rma/sdk/bootstrap.hpp"
#include "rma/rma.h"
#include "rma/sdk/status.hpp"

struct rma_request_s {
  static constexpr std::uint32_t kMagic = 0x52524551;  // "RREQ"
  std::uint32_t magic = kMagic;
  bool active = false;
  int target = -1;  // rank the operation went to
  rma::endpoint::Request req;
};

struct rma_errhandler_s {
  static constexpr std::uint32_t kMagic = 0x52455248;  // "RERH"
  std::uint32_t magic = kMagic;
  rma_Win_errhandler_function* fn = nullptr;
  rma_Comm_errhandler_function* comm_fn = nullptr;  // from rma_comm_create_errhandler
  // The user's handle plus every window using it. Atomic: a handler may be
  // shared by the contexts of several threads (the C++ API's throwing one is).
  std::atomic<int> refs{1};
};

namespace rma::api {

class Mailbox;

struct InitOptions {
  std::string provider;  // "" = RMA_PROVIDER, else the highest priority with a device
  std::string device;
  int thread_level = RMA_THREAD_SINGLE;  // RMA_THREAD_*: see window/thread_level.hpp
  endpoint::EndpointOptions endpoints;
};

class Context {
 public:
  static Result<std::unique_ptr<Context>> create(std::unique_ptr<Bootstrap> bootstrap,
                                                 const InitOptions& options);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  int rank() const noexcept { return rank_; }
  int thread_level() const noexcept { return thread_level_; }
  // Serializes the C calls at RMA_THREAD_MULTIPLE (window/thread_level.hpp).
  std::mutex& api_mutex() noexcept { return api_mutex_; }
  int size() const noexcept { return size_; }
  Bootstrap& bootstrap() noexcept { return *bootstrap_; }
  endpoint::EndpointManager& eps() noexcept { return *eps_; }

  rma_Errhandler comm_errhandler = RMA_ERRORS_ARE_FATAL;  // RMA_COMM_WORLD's

  // Communicators (comm/): this rank's world and self, the live derived
  // ones (owned; deleted by rma_comm_free or with the context), and the
  // mailbox their collectives use.
  rma_comm_s& world_comm() noexcept { return *world_comm_; }
  rma_comm_s& self_comm() noexcept { return *self_comm_; }
  std::vector<rma_comm_s*>& comms() noexcept { return comms_; }
  Mailbox& mailbox() noexcept { return *mailbox_; }
  std::vector<rma_win_s*> windows;  // live windows, creation order

  // Two registered scratch areas of at least `bytes` each (accumulate's
  // get -> compute -> put), 16-byte aligned; valid until the next call.
  struct Scratch {
    std::byte* a = nullptr;
    std::byte* b = nullptr;
    std::uint32_t lkey[endpoint::kMaxRails] = {0, 0};  // by the rail of the endpoint that posts
    std::uint64_t begin = 0, end = 0;  // the registration
  };
  Result<Scratch> scratch(std::size_t bytes);

  // Requests handed to the user (rput, rget, ...): pooled, never freed
  // while the context lives.
  rma_request_s* new_request();
  void release_request(rma_request_s* r) noexcept;
  // rma_request_free of a request still in flight: the endpoint still
  // counts it down, so it returns to the pool only once it completed
  // (checked whenever a new request is taken).
  void detach_request(rma_request_s* r);

 private:
  Context() = default;
  std::unique_ptr<Bootstrap> bootstrap_;
  std::unique_ptr<endpoint::EndpointManager> eps_;
  int rank_ = 0, size_ = 1;
  int thread_level_ = RMA_THREAD_SINGLE;
  std::mutex api_mutex_;
  std::byte* scratch_mem_ = nullptr;
  std::size_t scratch_bytes_ = 0;  // per area
  endpoint::ExposedRegion scratch_reg_;
  std::vector<std::unique_ptr<rma_request_s>> requests_;
  std::vector<rma_request_s*> free_requests_;
  std::vector<rma_request_s*> detached_requests_;
  std::unique_ptr<rma_comm_s> world_comm_, self_comm_;
  std::vector<rma_comm_s*> comms_;
  std::unique_ptr<Mailbox> mailbox_;
};

// Raw pointers current_context() reads (context.cpp owns what they point to):
// a trivially initialised thread_local needs no TLS init guard, and inline
// reads keep the data path's handle check to two loads.
extern constinit thread_local Context* t_current_context;
extern Context* g_current_context;
// The calling thread's context, else the process's; nullptr before rma_init.
inline Context* current_context() noexcept {
  Context* c = t_current_context;
  return c != nullptr ? c : g_current_context;
}
// Installs (or clears) the calling thread's context; the thread owns it.
void set_thread_context(std::unique_ptr<Context> ctx) noexcept;
std::unique_ptr<Context> take_thread_context() noexcept;
void set_process_context(std::unique_ptr<Context> ctx) noexcept;
// Makes the calling thread use `ctx` (owned by another thread) until called
// with nullptr: another thread of the same rank, at RMA_THREAD_MULTIPLE.
void borrow_context(Context* ctx) noexcept;
std::unique_ptr<Context> take_process_context() noexcept;
bool process_finalized() noexcept;

// Configuration variables of the API (declared once, listed by rma_info).
Status declare_api_variables();

}  // namespace rma::api
