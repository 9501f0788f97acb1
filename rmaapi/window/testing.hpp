// Entry points for running several ranks of one job as threads of one
// process (unit tests, benchmarks). Not part of the installed API.
#pragma once

#include <memory>
#include <string_view>

#include "rma/sdk/bootstrap.hpp"

namespace rma::api {
class Context;
}

namespace rma::api::testing {

// rma_init for the calling thread: it becomes rank bootstrap->rank() of
// bootstrap's job, using `provider` ("self" by default). Collective over the
// job (every rank's thread calls it). rma_finalize on the same thread ends
// it. Returns an RMA_* code; rma_last_error_message says why on failure.
// `thread_level` is an RMA_THREAD_* level, as rma_init_thread's `required`.
int init_thread(std::unique_ptr<Bootstrap> bootstrap, std::string_view provider = "self",
                int thread_level = 0 /* RMA_THREAD_SINGLE */);

Context* thread_context() noexcept;
// More threads of one rank at RMA_THREAD_MULTIPLE: a thread calls
// share_context(ctx) with the rank's thread_context() to make its calls on
// that rank, and share_context(nullptr) before the owner finalizes.
void share_context(Context* ctx) noexcept;

}  // namespace rma::api::testing
