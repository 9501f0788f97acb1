// rma_info: what librma sees on this machine — providers, their devices and
// capabilities, the registration cache's memory monitor, and every RMA_*
// configuration variable with its default, current value and meaning.
#include <chrono>
#include <cstdio>
#include <optional>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "rma/sdk/config.hpp"
#include "rma/sdk/node.hpp"
#include "rma/sdk/provider.hpp"
#include "rma/sdk/registration_cache.hpp"
#include "rma/sdk/registry.hpp"
#include "rma/sdk/stats.hpp"
#include "rma/version.hpp"
#include "rma_info_transports.hpp"

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "Usage: rma_info [options]\n"
               "Shows librma's providers, devices and configuration.\n\n"
               "  -d, --devices   providers and their devices with capabilities\n"
               "  -c, --config    every RMA_* environment variable: default, value, meaning\n"
               "  -m, --monitor   how the registration cache detects memory going away\n"
               "  -v, --version   librma version\n"
               "      --counters  counters of running librma processes started with RMA_STATS=shm\n"
               "      --pid N     with --counters: only process N\n"
               "  -t, --transports  run as every rank of a job (rmarun -n N rma_info -t, or under\n"
               "                  mpirun): connect the job and print which provider serves which\n"
               "                  peer (shm for peers on the same host, a NIC for the others)\n"
               "      --cleanup   remove the shared-memory segments (/dev/shm/rma.*) that exited processes\n"
               "                  of this user left behind, and the counter files (RMA_STATS_DIR/\n"
               "                  librma-stats.<pid>) of processes that died, and print their names\n"
               "  -h, --help      this text\n"
               "With no option, prints devices, monitor, configuration and version.\n");
}

void print_gid(const std::array<std::uint8_t, 16>& gid) {
  for (std::size_t i = 0; i < gid.size(); ++i) std::printf("%s%02x", i == 0 ? "" : ":", gid[i]);
}

int print_devices() {
  auto& registry = rma::ProviderRegistry::global();
  std::printf("# Providers (highest priority first)\n");
  for (rma::Provider* p : registry.providers()) {
    std::printf("provider %-10.*s priority %-4d %.*s\n", static_cast<int>(p->name().size()), p->name().data(),
                p->priority(), static_cast<int>(p->description().size()), p->description().data());
    auto devices = p->query_devices();
    if (!devices.ok()) {
      std::printf("    no devices: %s\n", devices.status().message().c_str());
      continue;
    }
    if (devices->empty()) std::printf("    no devices on this machine\n");
    for (const auto& d : *devices) {
      const auto& c = d.caps;
      std::printf("    device %s\n", d.name.c_str());
      std::printf("        transport        : %s\n", d.transport.c_str());
      std::printf("        link layer       : %s\n", d.link_layer.c_str());
      std::printf("        gid              : ");
      print_gid(d.gid);
      std::printf("\n");
      std::printf("        max_sge          : %u (recv %u)\n", c.max_sge, c.max_recv_sge);
      std::printf("        max_inline_data  : %u\n", c.max_inline_data);
      std::printf("        max_qp_rd_atom   : %u\n", c.max_qp_rd_atom);
      std::printf("        max_qp_wr        : %u\n", c.max_qp_wr);
      std::printf("        max_cqe          : %u\n", c.max_cqe);
      std::printf("        max_qp / max_mr  : %u / %u\n", c.max_qp, c.max_mr);
      std::printf("        max_mr_size      : %llu\n", static_cast<unsigned long long>(c.max_mr_size));
      std::printf("        max_msg_size     : %u\n", c.max_msg_size);
      std::printf("        atomics          : %s\n", c.atomics ? "fetch-add, compare-swap (8 bytes)" : "none");
      std::printf("        path_mtu         : %u\n", c.path_mtu);
      std::printf("        target progress  : %s\n",
                  c.target_needs_polls ? "in the owner's CQ polls" : "without the owner (NIC, kernel or initiator)");
    }
  }
  auto selected = registry.select();
  if (selected.ok()) {
    std::printf("selected by default: %.*s\n", static_cast<int>((*selected)->name().size()),
                (*selected)->name().data());
  } else {
    std::printf("selected by default: none (%s)\n", selected.status().message().c_str());
  }
  return 0;
}

int print_config() {
  // Providers declare their variables when they register.
  (void)rma::ProviderRegistry::global();
  std::printf("# Configuration (environment variables)\n");
  for (const auto& v : rma::config::variables()) {
    const char* env = std::getenv(v.name.c_str());
    std::printf("%s\n    %s\n    default: %s%s%s\n", v.name.c_str(), v.doc.c_str(),
                v.default_value.empty() ? "(empty)" : v.default_value.c_str(), env ? "   set to: " : "",
                env ? env : "");
  }
  return 0;
}

int print_monitor() {
  std::printf("# Registration cache memory monitor\n");
  auto dev = rma::ProviderRegistry::global().open("self");
  if (!dev.ok()) {
    std::printf("cannot open the self provider: %s\n", dev.status().message().c_str());
    return 1;
  }
  auto pd = (*dev)->alloc_pd();
  if (!pd.ok()) {
    std::printf("cannot allocate a protection domain: %s\n", pd.status().message().c_str());
    return 1;
  }
  auto cache = rma::RegistrationCache::create(*pd);
  if (!cache.ok()) {
    std::printf("registration cache unavailable: %s\n", cache.status().message().c_str());
    return 1;
  }
  std::printf("monitor in effect (RMA_RCACHE_MONITOR): %.*s\n",
              static_cast<int>(rma::memory_monitor_name((*cache)->monitor()).size()),
              rma::memory_monitor_name((*cache)->monitor()).data());
  return 0;
}

// Counters that running processes publish under RMA_STATS_DIR.
int print_counters(std::optional<int> pid) {
  auto published = rma::stats::read_published(pid);
  if (!published.ok()) {
    std::fprintf(stderr, "rma_info: %s\n", published.status().message().c_str());
    return 1;
  }
  std::printf("# Counters of running librma processes (RMA_STATS=shm)\n");
  if (published->empty()) {
    std::printf("no running librma process publishes counters (start one with RMA_STATS=shm)\n");
    return 0;
  }
  const auto now_ms = static_cast<unsigned long long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  for (const auto& p : *published) {
    const unsigned long long age = now_ms > p.updated_unix_ms ? now_ms - p.updated_unix_ms : 0;
    std::printf("process %d (%s), updated %llu ms ago\n%s", p.pid, p.program.c_str(), age,
                p.text.empty() ? "  no open devices\n" : p.text.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool devices = false, config = false, monitor = false, version = false, counters = false, transports = false, cleanup = false;
  std::optional<int> pid;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--counters") counters = true;
    else if (a == "-t" || a == "--transports") transports = true;
    else if (a == "--cleanup") cleanup = true;
    else if (a == "--pid" || a.rfind("--pid=", 0) == 0) {
      std::string v;
      if (a == "--pid") {
        if (i + 1 >= argc) {
          std::fprintf(stderr, "rma_info: --pid needs a process id\n");
          return 2;
        }
        v = argv[++i];
      } else {
        v = a.substr(6);
      }
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n <= 0 || n > 4194304) {
        std::fprintf(stderr, "rma_info: --pid '%s' is not a process id\n", v.c_str());
        return 2;
      }
      pid = static_cast<int>(n);
    } else if (a == "-d" || a == "--devices") devices = true;
    else if (a == "-c" || a == "--config") config = true;
    else if (a == "-m" || a == "--monitor") monitor = true;
    else if (a == "-v" || a == "--version") version = true;
    else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "rma_info: unknown option '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  if (pid && !counters) {
    std::fprintf(stderr, "rma_info: --pid goes with --counters\n");
    return 2;
  }
  if (cleanup) {
    if (devices || config || monitor || version || counters || transports) {
      std::fprintf(stderr, "rma_info: --cleanup does not combine with other options\n");
      return 2;
    }
    const std::vector<std::string> removed = rma::node::remove_stale_segments();
    for (const std::string& n : removed) std::printf("removed /dev/shm%s\n", n.c_str());
    // Counters published with RMA_STATS=shm by processes that were killed.
    const std::vector<std::string> counters_removed = rma::stats::remove_stale_published();
    for (const std::string& path : counters_removed) std::printf("removed %s\n", path.c_str());
    const std::size_t n = removed.size() + counters_removed.size();
    std::printf("%zu stale segment%s removed\n", n, n == 1 ? "" : "s");
    return 0;
  }
  if (counters) {
    if (devices || config || monitor || version || transports) {
      std::fprintf(stderr, "rma_info: --counters does not combine with other options\n");
      return 2;
    }
    return print_counters(pid);
  }
  if (transports) {
    if (devices || config || monitor || version) {
      std::fprintf(stderr, "rma_info: --transports does not combine with other options\n");
      return 2;
    }
    return rma_info::print_transports();
  }
  if (!devices && !config && !monitor && !version) devices = config = monitor = version = true;
  int rc = 0;
  if (version) std::printf("librma %s\n", rma::version_string());
  if (devices) rc |= print_devices();
  if (monitor) rc |= print_monitor();
  if (config) rc |= print_config();
  return rc;
}
