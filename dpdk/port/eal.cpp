// ensure_eal(): the DPDK EAL, once per process.
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "port/eal.hpp"
#include "port/port.hpp"
#include "port/port_link.hpp"
#include "rma/sdk/config.hpp"
#include "rma/sdk/log.hpp"

namespace rma::roce {
namespace {

constexpr const char* kEalVar = "RMA_SOFTROCE_EAL_ARGS";
constexpr unsigned kMemMb = 256;

}  // namespace

Status declare_port_variables() {
  return config::declare({kEalVar, "",
                         "DPDK EAL arguments for the softroce provider (whitespace separated); empty = "
                         "--no-pci --no-huge -m 256 --no-shconf --no-telemetry --log-level=*:warning -l <core> "
                         "(--in-memory instead of --no-huge/--no-shconf when HugePages_Free covers -m)"});
}

namespace {

// Free hugepage memory in MB, from /proc/meminfo.
std::uint64_t free_hugepage_mb() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t free_pages = 0, page_kb = 0;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::uint64_t v = 0;
    ls >> key >> v;
    if (key == "HugePages_Free:") free_pages = v;
    if (key == "Hugepagesize:") page_kb = v;
  }
  return free_pages * page_kb / 1024;
}

// A core this process may run on; spread processes by pid so that two
// processes on one machine tend to get different cores.
int pick_core() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  if (cpus.empty()) return 0;
  return cpus[static_cast<std::size_t>(getpid()) % cpus.size()];
}

struct EalArgs {
  std::vector<std::string> args;
  bool defaults = true;
};

EalArgs build_args() {
  (void)declare_port_variables();
  EalArgs out;
  auto env = config::get_string(kEalVar);
  std::string text = env.ok() ? *env : std::string();
  std::istringstream ss(text);
  std::string tok;
  while (ss >> tok) out.args.push_back(tok);
  if (!out.args.empty()) {
    out.defaults = false;
    return out;
  }
  out.args = {"--no-pci"};
  if (free_hugepage_mb() >= kMemMb) {
    out.args.push_back("--in-memory");
  } else {
    out.args.push_back("--no-huge");
    out.args.push_back("--no-shconf");
  }
  out.args.insert(out.args.end(), {"-m", std::to_string(kMemMb), "--no-telemetry",
                                   "--log-level=*:warning", "-l", std::to_string(pick_core())});
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& a : v) {
    if (!s.empty()) s += ' ';
    s += a;
  }
  return s;
}

Status g_status;
std::atomic<bool> g_ready{false};
std::string g_args_text;

void init_once() {
  EalArgs ea = build_args();
  g_args_text = join(ea.args);
  std::vector<std::string> storage;
  storage.push_back("librma");
  storage.insert(storage.end(), ea.args.begin(), ea.args.end());
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);

  // EAL pins the calling thread to its main lcore; with our defaults we give
  // the application its thread back afterwards.
  cpu_set_t saved;
  CPU_ZERO(&saved);
  const bool have_saved = pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved) == 0;

  RMA_LOG_DEBUG("softroce: rte_eal_init %s", g_args_text.c_str());
  int rc = rte_eal_init(static_cast<int>(argv.size() - 1), argv.data());
  if (rc < 0) {
    int err = rte_errno;
    if (err == EALREADY) {
      RMA_LOG_INFO("softroce: DPDK EAL already initialised by the application; using it");
      g_status = Status();
      g_ready = true;
      return;
    }
    g_status = unavailable("DPDK EAL initialisation failed (rte_errno " + std::to_string(err) + ": " +
                           rte_strerror(err) + ") with arguments '" + g_args_text +
                           "'; set " + kEalVar + " to change them (DPDK cannot retry in this process)");
    RMA_LOG_ERROR("softroce: %s", g_status.message().c_str());
    return;
  }
  if (ea.defaults && have_saved) pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
  g_status = Status();
  g_ready = true;
}

std::once_flag g_once;

}  // namespace

Status ensure_eal() {
  std::call_once(g_once, init_once);
  return g_status;
}

std::string default_port_spec() { return "memif:server:rma-softroce"; }

namespace port {
bool eal_ready() noexcept { return g_ready.load(); }

std::string eal_arguments() {
  if (!g_args_text.empty()) return g_args_text;
  return join(build_args().args);
}
}  // namespace port

}  // namespace rma::roce
