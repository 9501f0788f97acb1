#include "rma/sdk/config.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>

namespace rma::config {
namespace {

struct Table {
  std::mutex mutex;
  std::map<std::string, Variable, std::less<>> vars;
};

// The engine's own variables; providers and layers declare theirs when they
// register.
void declare_engine_variables(Table& t) {
  const Variable builtin[] = {
      {"RMA_PROVIDER", "",
       "one provider for every peer (self, shm, verbs, softroce); empty = per peer: shm for the peers on "
       "this host, the best network provider (verbs, else softroce) for the others"},
      {"RMA_DEVICE", "", "device to open within RMA_PROVIDER; empty = its first"},
      {"RMA_HOST_ID", "",
       "host identity that decides which ranks share a host (and so shared memory); empty = kernel boot id, "
       "pid namespace and network namespace"},
      {"RMA_SHM_FALLBACK", "error",
       "when ranks of one host cannot reach each other's memory by cross-memory attach (another user, "
       "kernel.yama.ptrace_scope): error (stop with the cause) or network (use the network provider between them)"},
      {"RMA_LOG_LEVEL", "warn", "log threshold: error, warn, info, debug or trace"},
      {"RMA_RCACHE_MAX_BYTES", "inf",
       "registration cache: bytes cached before unused registrations are evicted (K/M/G suffixes, inf)"},
      {"RMA_RCACHE_MAX_REGIONS", "65536",
       "registration cache: registrations cached before unused ones are evicted, least recent first"},
      {"RMA_RCACHE_MONITOR", "auto",
       "how the cache learns memory went away: auto, userfaultfd, hooks or none"},
      {"RMA_BOOTSTRAP", "auto",
       "how ranks find each other: auto (rmarun's or a PMIx launcher's environment, else a singleton), "
       "rmarun, pmix or singleton"},
      {"RMA_BOOTSTRAP_TIMEOUT", "60",
       "seconds a bootstrap call (fence, barrier, allgather, get) waits for the other ranks"},
      {"RMA_STATS", "",
       "counters of every opened device: 'exit' prints them to stderr when the device closes or "
       "the process exits, 'shm' publishes them for `rma_info --counters`; both: 'exit,shm'"},
      {"RMA_STATS_INTERVAL_MS", "100", "how often published counters (RMA_STATS=shm) are refreshed, in ms"},
      {"RMA_STATS_DIR", "/dev/shm", "where RMA_STATS=shm publishes counters (rma_info --counters reads it)"},
  };
  for (const auto& v : builtin) t.vars.emplace(v.name, v);
}

Table& table() {
  static Table* t = [] {
    auto* tab = new Table;  // never destroyed: used from atexit paths and threads
    declare_engine_variables(*tab);
    return tab;
  }();
  return *t;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

Status declare(Variable var) {
  if (var.name.rfind("RMA_", 0) != 0) {
    return invalid_argument("configuration variable '" + var.name + "' must start with RMA_");
  }
  Table& t = table();
  std::lock_guard lock(t.mutex);
  auto [it, inserted] = t.vars.emplace(var.name, var);
  if (!inserted && it->second.default_value != var.default_value) {
    return already_exists("configuration variable " + var.name + " declared twice with defaults '" +
                          it->second.default_value + "' and '" + var.default_value + "'");
  }
  return {};
}

std::vector<Variable> variables() {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  std::vector<Variable> out;
  out.reserve(t.vars.size());
  for (const auto& [name, v] : t.vars) out.push_back(v);
  return out;
}

Result<std::string> get_string(std::string_view name) {
  Table& t = table();
  std::string def;
  {
    std::lock_guard lock(t.mutex);
    auto it = t.vars.find(name);
    if (it == t.vars.end()) {
      return not_found("configuration variable " + std::string(name) + " was never declared");
    }
    def = it->second.default_value;
  }
  const char* env = std::getenv(std::string(name).c_str());
  if (env != nullptr) return std::string(env);
  return def;
}

Result<std::uint64_t> parse_size(std::string_view text) {
  std::string s = lower(text);
  if (s == "inf" || s == "infinity" || s == "unlimited") {
    return std::numeric_limits<std::uint64_t>::max();
  }
  if (s.empty()) return invalid_argument("empty value where a size was expected");
  std::uint64_t value = 0;
  size_t i = 0;
  for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
    std::uint64_t digit = static_cast<std::uint64_t>(s[i] - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) {
      return invalid_argument("'" + std::string(text) + "' is too large");
    }
    value = value * 10 + digit;
  }
  if (i == 0) return invalid_argument("'" + std::string(text) + "' is not a size (examples: 4096, 64K, 1G, inf)");
  std::string suffix = s.substr(i);
  if (suffix == "b") suffix.clear();
  unsigned shift = 0;
  if (suffix.empty()) shift = 0;
  else if (suffix == "k" || suffix == "kb" || suffix == "kib") shift = 10;
  else if (suffix == "m" || suffix == "mb" || suffix == "mib") shift = 20;
  else if (suffix == "g" || suffix == "gb" || suffix == "gib") shift = 30;
  else if (suffix == "t" || suffix == "tb" || suffix == "tib") shift = 40;
  else return invalid_argument("'" + std::string(text) + "' has an unknown suffix '" + suffix + "' (use K, M, G or T)");
  if (shift != 0 && value > (std::numeric_limits<std::uint64_t>::max() >> shift)) {
    return invalid_argument("'" + std::string(text) + "' is too large");
  }
  return value << shift;
}

Result<bool> parse_bool(std::string_view text) {
  std::string s = lower(text);
  if (s == "y" || s == "yes" || s == "on" || s == "true" || s == "1") return true;
  if (s == "n" || s == "no" || s == "off" || s == "false" || s == "0") return false;
  return invalid_argument("'" + std::string(text) + "' is not a boolean (use yes or no)");
}

Result<std::uint64_t> get_size(std::string_view name) {
  RMA_ASSIGN_OR_RETURN(std::string text, get_string(name));
  auto v = parse_size(text);
  if (!v.ok()) return v.status().with_context(name);
  return v;
}

Result<bool> get_bool(std::string_view name) {
  RMA_ASSIGN_OR_RETURN(std::string text, get_string(name));
  auto v = parse_bool(text);
  if (!v.ok()) return v.status().with_context(name);
  return v;
}

Result<std::string> get_choice(std::string_view name, const std::vector<std::string>& choices) {
  RMA_ASSIGN_OR_RETURN(std::string text, get_string(name));
  std::string v = lower(text);
  for (const auto& c : choices) {
    if (v == c) return c;
  }
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
  return invalid_argument(std::string(name) + ": '" + text + "' is not one of: " + list);
}

}  // namespace rma::config
