// The job's ranks as threads: the engine's in-process bootstrap group.
#include <cstdio>

#include "thread_group.hpp"

namespace api_test {

std::vector<std::unique_ptr<rma::Bootstrap>> make_group(int n) {
  auto g = rma::make_thread_bootstrap_group(n);
  if (!g.ok()) {
    std::fprintf(stderr, "make_thread_bootstrap_group: %s\n", g.status().to_string().c_str());
    return {};
  }
  return std::move(g).value();
}

}  // namespace api_test
