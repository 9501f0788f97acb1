// Reading what running processes publish (RMA_STATS=shm).
#include <dirent.h>
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "rma/sdk/config.hpp"
#include "rma/sdk/stats.hpp"
#include "stats/device_tracker.hpp"

namespace rma::stats {
namespace {

bool process_alive(int pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

// The pid of a published file's name ("librma-stats.<pid>"), or 0.
int published_pid(const std::string& name) {
  const std::string prefix = kPublishedPrefix;
  if (name.rfind(prefix, 0) != 0) return 0;
  const std::string digits = name.substr(prefix.size());
  if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return 0;
  return std::atoi(digits.c_str());
}

// Parses one published file; nullopt when it is not ours or is incomplete.
std::optional<PublishedCounters> parse_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string line;
  if (!std::getline(in, line) || line != kPublishedMagic) return std::nullopt;
  PublishedCounters p;
  while (std::getline(in, line) && !line.empty()) {
    const auto sp = line.find(' ');
    if (sp == std::string::npos) return std::nullopt;
    const std::string key = line.substr(0, sp), value = line.substr(sp + 1);
    if (key == "pid") p.pid = std::atoi(value.c_str());
    if (key == "program") p.program = value;
    if (key == "updated_unix_ms") p.updated_unix_ms = std::strtoull(value.c_str(), nullptr, 10);
  }
  if (p.pid <= 0) return std::nullopt;
  std::stringstream rest;
  rest << in.rdbuf();
  p.text = rest.str();
  return p;
}

}  // namespace

Result<std::vector<PublishedCounters>> read_published(std::optional<int> pid) {
  RMA_ASSIGN_OR_RETURN(std::string dir, config::get_string("RMA_STATS_DIR"));
  std::vector<PublishedCounters> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    return not_found("cannot read RMA_STATS_DIR=" + dir + ": " + std::strerror(errno));
  }
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    const int file_pid = published_pid(name);
    if (file_pid <= 0) continue;
    if (pid && *pid != file_pid) continue;
    const std::string path = dir + "/" + name;
    if (!process_alive(file_pid)) {
      ::unlink(path.c_str());  // left behind by a process that was killed
      continue;
    }
    if (auto p = parse_file(path)) out.push_back(std::move(*p));
  }
  ::closedir(d);
  if (pid && out.empty()) {
    return not_found("process " + std::to_string(*pid) + " publishes no librma counters" +
                     (process_alive(*pid) ? std::string(" (start it with RMA_STATS=shm)")
                                          : std::string(" (no such process)")));
  }
  return out;
}

std::vector<std::string> remove_stale_published(std::optional<int> pid) {
  std::vector<std::string> removed;
  auto dir = config::get_string("RMA_STATS_DIR");
  if (!dir.ok()) return removed;
  DIR* d = ::opendir(dir->c_str());
  if (d == nullptr) return removed;  // nothing was published there
  while (dirent* e = ::readdir(d)) {
    const int file_pid = published_pid(e->d_name);
    if (file_pid <= 0 || (pid && *pid != file_pid) || process_alive(file_pid)) continue;
    const std::string path = *dir + "/" + e->d_name;
    if (::unlink(path.c_str()) == 0) removed.push_back(path);
  }
  ::closedir(d);
  return removed;
}

}  // namespace rma::stats
