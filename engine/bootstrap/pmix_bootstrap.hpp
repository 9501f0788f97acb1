// A rank started by a PMIx launcher (Open MPI's mpirun, Slurm's srun
// --mpi=pmix, prterun): rank and size from PMIx, the key-value store and
// fences are PMIx's own, so jobs run across machines with no change.
#pragma once

#include <memory>

#include "rma/sdk/bootstrap.hpp"

namespace rma::bootstrap {

// Whether librma was built with PMIx.
bool pmix_available() noexcept;
Result<std::unique_ptr<Bootstrap>> connect_to_pmix();

}  // namespace rma::bootstrap
