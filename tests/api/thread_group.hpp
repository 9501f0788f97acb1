// The ranks of one in-process job, one Bootstrap per thread.
#pragma once

#include <memory>
#include <vector>

#include "rma/sdk/bootstrap.hpp"

namespace api_test {
// Empty on failure (the reason is printed).
std::vector<std::unique_ptr<rma::Bootstrap>> make_group(int n);
}  // namespace api_test
