// Counters of open devices, as users and tools see them: a snapshot of one
// device (Device::read_counters plus every QP's), its text form, and the
// counters that running processes publish (RMA_STATS=shm) for
// `rma_info --counters` to read.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/status.hpp"

// librma is built with hidden visibility: what this header declares is
// part of its exported interface.
#pragma GCC visibility push(default)

namespace rma::stats {

struct DeviceSnapshot {
  std::string device;    // "softroce0"
  std::string provider;  // "softroce"
  std::vector<CounterSample> counters;
  std::vector<QpCounters> qps;
};

// Reads every counter of `device` now (control path; any thread).
Result<DeviceSnapshot> snapshot(const Device& device);

// "device softroce0 (provider softroce)\n  tx_frames  12\n ... qp 17\n ..."
std::string format(const DeviceSnapshot& s);

// What one running process published: its pid, program name, when it last
// refreshed, and its devices' counters as format() writes them.
struct PublishedCounters {
  int pid = 0;
  std::string program;
  std::uint64_t updated_unix_ms = 0;
  std::string text;
};

// The counters published under RMA_STATS_DIR by live processes (all, or only
// `pid`). Files left by processes that died are removed. kNotFound when
// `pid` is given and publishes nothing (it names RMA_STATS=shm as the cause).
Result<std::vector<PublishedCounters>> read_published(std::optional<int> pid = std::nullopt);

// Removes the files under RMA_STATS_DIR that processes which died left
// (rma_info --cleanup; a launcher, for the pid of a child it reaped);
// returns their paths.
std::vector<std::string> remove_stale_published(std::optional<int> pid = std::nullopt);

}  // namespace rma::stats

#pragma GCC visibility pop
