#include "window/context.hpp"

#include <cstdlib>
#include <mutex>

#include "comm/c_call.hpp"
#include "comm/collectives.hpp"
#include "rma/sdk/config.hpp"
#include "rma/sdk/registry.hpp"
#include "window/window.hpp"

namespace rma::api {

constinit thread_local Context* t_current_context = nullptr;
Context* g_current_context = nullptr;

namespace {
constexpr const char* kTimeoutVar = "RMA_WAIT_TIMEOUT_MS";
constexpr const char* kSqDepthVar = "RMA_SQ_DEPTH";

thread_local std::unique_ptr<Context> t_context;
std::unique_ptr<Context> g_context;
bool g_finalized = false;

// Declared at load time so that rma_info lists them without an rma_init.
const bool kDeclared = declare_api_variables().ok();
}  // namespace

Status declare_api_variables() {
  RMA_RETURN_IF_ERROR(config::declare(
      {kTimeoutVar, "60000",
       "milliseconds a blocking RMA call (flush, lock, fence, start, wait...) waits for the NIC "
       "or for other ranks before failing with RMA_ERR_OTHER"}));
  RMA_RETURN_IF_ERROR(config::declare(
      {kSqDepthVar, "128", "send-queue slots per peer QP of the RMA API (credits; 2..device max)"}));
  return {};
}

Result<std::unique_ptr<Context>> Context::create(std::unique_ptr<Bootstrap> bootstrap,
                                                 const InitOptions& options) {
  (void)kDeclared;
  if (!bootstrap) return invalid_argument("no bootstrap");
  RMA_RETURN_IF_ERROR(declare_api_variables());
  RMA_ASSIGN_OR_RETURN(std::uint64_t timeout_ms, config::get_size(kTimeoutVar));
  RMA_ASSIGN_OR_RETURN(std::uint64_t sq_depth, config::get_size(kSqDepthVar));
  if (timeout_ms == 0) return invalid_argument(std::string(kTimeoutVar) + "=0: must be positive");
  if (sq_depth < 2 || sq_depth > 65536) {
    return invalid_argument(std::string(kSqDepthVar) + "=" + std::to_string(sq_depth) +
                            ": must be 2..65536");
  }
  std::unique_ptr<Context> c(new Context());
  if (options.thread_level < RMA_THREAD_SINGLE || options.thread_level > RMA_THREAD_MULTIPLE) {
    return invalid_argument("thread level " + std::to_string(options.thread_level) +
                            " is not RMA_THREAD_SINGLE, _FUNNELED, _SERIALIZED or _MULTIPLE");
  }
  c->thread_level_ = options.thread_level;
  c->rank_ = bootstrap->rank();
  c->size_ = bootstrap->size();
  c->bootstrap_ = std::move(bootstrap);
  endpoint::PlanRequest want;
  want.provider = options.provider;
  want.device = options.device;
  RMA_ASSIGN_OR_RETURN(endpoint::TransportPlan plan, endpoint::plan_transports(*c->bootstrap_, want));
  endpoint::EndpointOptions eo = options.endpoints;
  eo.timeout = std::chrono::milliseconds(
      timeout_ms > 86400000ull * 365 ? 86400000ull * 365 : timeout_ms);
  eo.sq_depth = static_cast<std::uint32_t>(sq_depth);
  eo.thread_safe = options.thread_level == RMA_THREAD_MULTIPLE;
  RMA_ASSIGN_OR_RETURN(c->eps_, endpoint::EndpointManager::create(*c->bootstrap_, plan, eo));
  c->world_comm_ = std::make_unique<rma_comm_s>();
  c->world_comm_->is_world = true;
  c->world_comm_->ctx = c.get();
  c->world_comm_->id = 1;
  c->world_comm_->rank = c->rank_;
  c->world_comm_->name = "RMA_COMM_WORLD";
  for (int r = 0; r < c->size_; ++r) c->world_comm_->ranks.push_back(r);
  c->self_comm_ = std::make_unique<rma_comm_s>();
  c->self_comm_->ctx = c.get();
  c->self_comm_->id = mix_id(2, static_cast<std::uint64_t>(c->rank_));
  c->self_comm_->ranks = {c->rank_};
  c->self_comm_->name = "RMA_COMM_SELF";
  RMA_ASSIGN_OR_RETURN(c->mailbox_, Mailbox::create(*c->bootstrap_, *c->eps_));
  return c;
}

Context::~Context() {
  // Windows the program never freed (no rma_finalize): release their
  // registrations before the cache goes, locally; nobody may use them now.
  for (rma_win_s* w : windows) {
    release_window_memory(w);
    w->magic = 0;
    delete w;
  }
  windows.clear();
  for (rma_comm_s* comm : comms_) {
    release_errhandler(comm->errhandler);
    comm->magic = 0;
    delete comm;
  }
  if (self_comm_) release_errhandler(self_comm_->errhandler);
  release_errhandler(comm_errhandler);
  comms_.clear();
  mailbox_.reset();
  scratch_reg_.reset();
  eps_.reset();
  std::free(scratch_mem_);
}

Result<Context::Scratch> Context::scratch(std::size_t bytes) {
  if (bytes == 0) bytes = 16;
  bytes = (bytes + 15) & ~std::size_t{15};
  if (bytes > scratch_bytes_) {
    scratch_reg_.reset();
    std::free(scratch_mem_);
    scratch_mem_ = nullptr;
    scratch_bytes_ = 0;
    std::size_t want = 4096;
    while (want < bytes) want *= 2;
    auto* mem = static_cast<std::byte*>(std::aligned_alloc(4096, 2 * want));
    if (mem == nullptr) {
      return resource_exhausted("cannot allocate " + std::to_string(2 * want) +
                                " bytes of accumulate scratch memory");
    }
    auto reg = eps_->expose(mem, 2 * want, Access::kLocalWrite);
    if (!reg.ok()) {
      std::free(mem);
      return reg.status().with_context("registering accumulate scratch memory");
    }
    scratch_mem_ = mem;
    scratch_bytes_ = want;
    scratch_reg_ = std::move(reg).value();
  }
  Scratch s;
  s.a = scratch_mem_;
  s.b = scratch_mem_ + scratch_bytes_;
  for (int r = 0; r < endpoint::kMaxRails; ++r) s.lkey[r] = scratch_reg_.lkey(r);
  s.begin = reinterpret_cast<std::uint64_t>(scratch_mem_);
  s.end = s.begin + 2 * scratch_bytes_;
  return s;
}

void Context::detach_request(rma_request_s* r) {
  r->active = false;  // no longer a handle the program holds
  detached_requests_.push_back(r);
}

rma_request_s* Context::new_request() {
  if (!detached_requests_.empty()) [[unlikely]] {
    auto& d = detached_requests_;
    for (std::size_t i = 0; i < d.size();) {
      if (d[i]->req.done()) {
        release_request(d[i]);
        d[i] = d.back();
        d.pop_back();
      } else {
        ++i;
      }
    }
  }
  if (free_requests_.empty()) {
    requests_.push_back(std::make_unique<rma_request_s>());
    // release_request() must not allocate: room for every request.
    free_requests_.reserve(requests_.size());
    free_requests_.push_back(requests_.back().get());
  }
  rma_request_s* r = free_requests_.back();
  free_requests_.pop_back();
  r->magic = rma_request_s::kMagic;
  r->active = true;
  r->target = -1;
  r->req = endpoint::Request{};
  return r;
}

void Context::release_request(rma_request_s* r) noexcept {
  r->active = false;
  free_requests_.push_back(r);  // never reallocates: see new_request()
}

void borrow_context(Context* ctx) noexcept { t_current_context = ctx != nullptr ? ctx : t_context.get(); }
void set_thread_context(std::unique_ptr<Context> ctx) noexcept {
  t_context = std::move(ctx);
  t_current_context = t_context.get();
}
std::unique_ptr<Context> take_thread_context() noexcept {
  t_current_context = nullptr;
  return std::move(t_context);
}
void set_process_context(std::unique_ptr<Context> ctx) noexcept {
  g_context = std::move(ctx);
  g_current_context = g_context.get();
  g_finalized = false;
}
std::unique_ptr<Context> take_process_context() noexcept {
  if (g_context) g_finalized = true;
  g_current_context = nullptr;
  return std::move(g_context);
}
bool process_finalized() noexcept { return g_finalized; }

}  // namespace rma::api
