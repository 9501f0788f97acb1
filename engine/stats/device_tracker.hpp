// RMA_STATS for devices opened through the provider registry: a device is
// wrapped so that its counters are printed when it closes (RMA_STATS=exit)
// and published while it is open (RMA_STATS=shm) by a background control
// thread that snapshots every tracked device each RMA_STATS_INTERVAL_MS. The
// thread only calls Device::read_counters(), never the data path, so polling
// threads pay nothing but the device lock for a snapshot every interval.
#pragma once

#include <memory>
#include <string>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/status.hpp"

namespace rma::stats {

// `device` itself when RMA_STATS is empty; otherwise a handle to the same
// device whose last release prints its counters (exit) and which is
// published while alive (shm). Fails on a bad RMA_STATS value.
Result<std::shared_ptr<Device>> track_device(std::shared_ptr<Device> device);

// Where process `pid` publishes its counters, under `dir`.
std::string published_path(const std::string& dir, int pid);
constexpr const char* kPublishedPrefix = "librma-stats.";
constexpr const char* kPublishedMagic = "librma-stats 1";

}  // namespace rma::stats
