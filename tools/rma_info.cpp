// rma_info: what librma sees on this machine — providers, their devices and
// capabilities, the registration cache's memory monitor, and every RMA_*
// configuration variable with its default, current value and meaning.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "rma/config.hpp"
#include "rma/provider.hpp"
#include "rma/registration_cache.hpp"
#include "rma/registry.hpp"
#include "rma/version.hpp"

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "Usage: rma_info [options]\n"
               "Shows librma's providers, devices and configuration.\n\n"
               "  -d, --devices   providers and their devices with capabilities\n"
               "  -c, --config    every RMA_* environment variable: default, value, meaning\n"
               "  -m, --monitor   how the registration cache detects memory going away\n"
               "  -v, --version   librma version\n"
               "  -h, --help      this text\n"
               "With no option, prints all of the above.\n");
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

}  // namespace

int main(int argc, char** argv) {
  bool devices = false, config = false, monitor = false, version = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-d" || a == "--devices") devices = true;
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
  if (!devices && !config && !monitor && !version) devices = config = monitor = version = true;
  int rc = 0;
  if (version) std::printf("librma %s\n", rma::version_string());
  if (devices) rc |= print_devices();
  if (monitor) rc |= print_monitor();
  if (config) rc |= print_config();
  return rc;
}
