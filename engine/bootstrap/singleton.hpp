#pragma once

#include <memory>

#include "rma/sdk/bootstrap.hpp"

namespace rma::bootstrap {

// Rank 0 of 1: a program started without a launcher.
std::unique_ptr<Bootstrap> make_singleton();

}  // namespace rma::bootstrap
