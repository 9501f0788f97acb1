// A rank started by rmarun: rank and size from RMA_RANK / RMA_SIZE, the
// bootstrap served by rmarun over the Unix socket in RMA_BOOTSTRAP_ADDR.
#pragma once

#include <memory>

#include "rma/sdk/bootstrap.hpp"

namespace rma::bootstrap {

Result<std::unique_ptr<Bootstrap>> connect_to_launcher();

}  // namespace rma::bootstrap
