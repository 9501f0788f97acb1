// librma built without PMIx (pkg-config found no pmix).
#include "bootstrap/pmix_bootstrap.hpp"

namespace rma::bootstrap {

bool pmix_available() noexcept { return false; }

Result<std::unique_ptr<Bootstrap>> connect_to_pmix() {
  return unavailable("this librma was built without PMIx (install libpmix-dev and rebuild); start the program "
                     "with rmarun instead");
}

}  // namespace rma::bootstrap
