// Runs a launcher command line (rmarun, mpirun) and keeps its exit code,
// combined output and wall time, for the multi-process bootstrap tests.
#pragma once

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace rma::testing {

struct JobResult {
  int exit_code = -1;  // -1: the shell itself was killed or could not start
  std::string output;  // stdout and stderr
  double seconds = 0;
};

inline JobResult run_job(const std::string& command) {
  JobResult r;
  const auto t0 = std::chrono::steady_clock::now();
  FILE* f = ::popen((command + " 2>&1").c_str(), "r");
  if (f == nullptr) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) r.output.append(buf, n);
  const int st = ::pclose(f);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace rma::testing
