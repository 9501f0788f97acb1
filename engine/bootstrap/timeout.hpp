// RMA_BOOTSTRAP_TIMEOUT: how long any bootstrap call waits for other ranks.
#pragma once

#include <chrono>

#include "rma/sdk/status.hpp"

namespace rma::bootstrap {

Result<std::chrono::milliseconds> configured_timeout();

}  // namespace rma::bootstrap
