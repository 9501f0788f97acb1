// Device snapshots and their text form.
#include <algorithm>
#include <cstdio>

#include "rma/sdk/stats.hpp"

namespace rma::stats {

Result<DeviceSnapshot> snapshot(const Device& device) {
  DeviceSnapshot s;
  s.device = device.info().name;
  s.provider = device.info().provider;
  RMA_ASSIGN_OR_RETURN(s.counters, device.read_counters());
  RMA_ASSIGN_OR_RETURN(s.qps, device.read_qp_counters());
  return s;
}

namespace {
void append_samples(std::string& out, const std::vector<CounterSample>& samples, const char* indent) {
  std::size_t width = 0;
  for (const auto& c : samples) width = std::max(width, c.name.size());
  char line[160];
  for (const auto& c : samples) {
    std::snprintf(line, sizeof line, "%s%-*s %llu\n", indent, static_cast<int>(width), c.name.c_str(),
                  static_cast<unsigned long long>(c.value));
    out += line;
  }
}
}  // namespace

std::string format(const DeviceSnapshot& s) {
  std::string out = "device " + s.device + " (provider " + s.provider + ")\n";
  if (s.counters.empty()) out += "  (this provider keeps no counters)\n";
  append_samples(out, s.counters, "  ");
  for (const auto& q : s.qps) {
    out += "  qp " + std::to_string(q.qp_num) + "\n";
    append_samples(out, q.counters, "    ");
  }
  return out;
}

}  // namespace rma::stats
