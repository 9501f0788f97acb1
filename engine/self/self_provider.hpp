// The in-process ("self") provider: the whole provider contract inside one
// process, with RDMA semantics, so upper layers can be built and tested
// before any network transport exists.
#pragma once

#include "rma/sdk/registry.hpp"
#include "rma/sdk/status.hpp"

namespace rma::providers {

// Adds the provider named "self" (priority 10) to `registry`.
Status register_self(ProviderRegistry& registry);

}  // namespace rma::providers
