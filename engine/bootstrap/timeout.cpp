#include "bootstrap/timeout.hpp"

#include "rma/sdk/config.hpp"

namespace rma::bootstrap {

Result<std::chrono::milliseconds> configured_timeout() {
  RMA_ASSIGN_OR_RETURN(std::uint64_t s, config::get_size("RMA_BOOTSTRAP_TIMEOUT"));
  if (s == 0 || s > 86400) {
    return invalid_argument("RMA_BOOTSTRAP_TIMEOUT=" + std::to_string(s) + ": must be 1..86400 seconds");
  }
  return std::chrono::milliseconds(s * 1000);
}

}  // namespace rma::bootstrap
