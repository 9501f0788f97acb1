// Which bootstrap this process was started under (RMA_BOOTSTRAP).
#include <cstdlib>

#include "bootstrap/launcher_client.hpp"
#include "bootstrap/pmix_bootstrap.hpp"
#include "bootstrap/singleton.hpp"
#include "rma/sdk/config.hpp"

namespace rma {

Result<std::unique_ptr<Bootstrap>> open_bootstrap() {
  RMA_ASSIGN_OR_RETURN(std::string how, config::get_choice("RMA_BOOTSTRAP", {"auto", "rmarun", "pmix", "singleton"}));
  if (how == "singleton") return bootstrap::make_singleton();
  const char* addr = std::getenv("RMA_BOOTSTRAP_ADDR");
  const bool under_rmarun = addr != nullptr && *addr != '\0';
  const bool under_pmix = std::getenv("PMIX_RANK") != nullptr || std::getenv("PMIX_NAMESPACE") != nullptr;
  Result<std::unique_ptr<Bootstrap>> b = std::unique_ptr<Bootstrap>();
  if (how == "rmarun" || (how == "auto" && under_rmarun)) {
    b = bootstrap::connect_to_launcher();
  } else if (how == "pmix" || (how == "auto" && under_pmix)) {
    b = bootstrap::connect_to_pmix();
  } else {
    return bootstrap::make_singleton();
  }
  if (!b.ok()) return b.status().with_context("RMA_BOOTSTRAP=" + how);
  return b;
}

}  // namespace rma
