// rma_softroce_mp_peer: the second process of the two-process softroce tests.
// Opens the softroce provider on RMA_SOFTROCE_PORT (set by the test), runs
// the mixed flow against the test process (mixed_flow.hpp) over the
// out-of-band socket given as --oob-fd, and exits 0 when every operation
// completed once and verified.
//
//   rma_softroce_mp_peer --oob-fd N --seed S --ops N [--timeout-ms T]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "mixed_flow.hpp"
#include "rma/sdk/registry.hpp"

using namespace rma::softroce::mp;

int main(int argc, char** argv) {
  int oob = -1, timeout_ms = 60000;
  std::uint64_t seed = 2, ops = 1000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--oob-fd") oob = std::atoi(v);
    else if (k == "--seed") seed = std::strtoull(v, nullptr, 10);
    else if (k == "--ops") ops = std::strtoull(v, nullptr, 10);
    else if (k == "--timeout-ms") timeout_ms = std::atoi(v);
    else {
      std::fprintf(stderr, "mp_peer: unknown argument %s\n", k.c_str());
      return 2;
    }
  }
  if (oob < 0) {
    std::fprintf(stderr, "mp_peer: --oob-fd is required\n");
    return 2;
  }
  int rc = 0;
  {
    auto dev = rma::ProviderRegistry::global().open("softroce");
    if (!dev.ok()) {
      std::fprintf(stderr, "mp_peer: open softroce: %s\n", dev.status().to_string().c_str());
      return 3;
    }
    Side s;
    if (std::string e = make_side(s, *dev); !e.empty()) {
      std::fprintf(stderr, "mp_peer: %s\n", e.c_str());
      return 3;
    }
    RunResult r = run_side(s, oob, seed, ops, timeout_ms);
    const auto& st = r.stats;
    std::printf("mp_peer: %llu operations in %.2f s (writes %llu, reads %llu, read-backs %llu, fetch-add %llu, "
                "cmp-swap %llu; %.1f MB written, %.1f MB read)\n",
                static_cast<unsigned long long>(st.completed), r.seconds, static_cast<unsigned long long>(st.writes),
                static_cast<unsigned long long>(st.reads), static_cast<unsigned long long>(st.readbacks),
                static_cast<unsigned long long>(st.fetch_adds), static_cast<unsigned long long>(st.cmp_swaps),
                static_cast<double>(st.bytes_written) / 1e6, static_cast<double>(st.bytes_read) / 1e6);
    if (!r.error.empty()) {
      std::fprintf(stderr, "mp_peer: FAILED: %s\n", r.error.c_str());
      rc = 1;
    }
    std::fflush(stdout);
  }  // the device closes its port here (memif: FIN handshake)
  ::close(oob);
  return rc;
}
