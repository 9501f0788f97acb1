// The shared-memory provider ("shm"): the provider contract between
// processes of one host, over a shared segment per device and cross-memory
// attach (see README.md).
#pragma once

#include "rma/sdk/registry.hpp"
#include "rma/sdk/status.hpp"

namespace rma::providers {

// Adds the provider named "shm" (priority 5) to `registry`.
Status register_shm(ProviderRegistry& registry);

}  // namespace rma::providers
