// Which bootstrap this process was started under (RMA_BOOTSTRAP).
#include <cstdlib>

#include "bootstrap/launcher_client.hpp"
#include "bootstrap/singleton.hpp"
#include "rma/config.hpp"

namespace rma {

Result<std::unique_ptr<Bootstrap>> open_bootstrap() {
  RMA_ASSIGN_OR_RETURN(std::string how, config::get_choice("RMA_BOOTSTRAP", {"auto", "rmarun", "singleton"}));
  if (how == "singleton") return bootstrap::make_singleton();
  const char* addr = std::getenv("RMA_BOOTSTRAP_ADDR");
  const bool under_rmarun = addr != nullptr && *addr != '\0';
  if (how == "rmarun" || under_rmarun) {
    auto b = bootstrap::connect_to_launcher();
    if (!b.ok()) return b.status().with_context("RMA_BOOTSTRAP=" + how);
    return b;
  }
  if (std::getenv("PMIX_RANK") != nullptr || std::getenv("PMIX_NAMESPACE") != nullptr) {
    return unavailable("this process was started by a PMIx launcher (PMIX_RANK is set), but librma has no PMIx "
                       "bootstrap yet; start it with rmarun, or set RMA_BOOTSTRAP=singleton to run it alone");
  }
  return bootstrap::make_singleton();
}

}  // namespace rma
