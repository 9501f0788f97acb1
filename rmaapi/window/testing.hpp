// Entry points for running several ranks of one job as threads of one
// process (unit tests, benchmarks). Not part of the installed API.
#pragma once

#include <memory>
#include <string_view>

#include "rma/bootstrap.hpp"

namespace rma::api::testing {

// rma_init for the calling thread: it becomes rank bootstrap->rank() of
// bootstrap's job, using `provider` ("self" by default). Collective over the
// job (every rank's thread calls it). rma_finalize on the same thread ends
// it. Returns an RMA_* code; rma_last_error_message says why on failure.
int init_thread(std::unique_ptr<Bootstrap> bootstrap, std::string_view provider = "self");

}  // namespace rma::api::testing
