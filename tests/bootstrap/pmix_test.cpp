// The PMIx bootstrap, launched by Debian's Open MPI mpirun: the same rank
// program as the rmarun tests, now expecting PMIx.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace {

struct JobResult {
  int exit_code = -1;
  std::string output;
};

JobResult mpirun(const std::string& args, const std::string& env = "") {
  JobResult r;
  // Root needs --allow-run-as-root; 2 cores need --oversubscribe. Leak
  // checking is off in the ranks: PMIx and Open MPI keep memory until exit.
  const std::string cmd = env + " ASAN_OPTIONS=detect_leaks=0 timeout 90 " MPIRUN_PATH
                          " --allow-run-as-root --oversubscribe --mca btl self " + args + " 2>&1";
  FILE* f = ::popen(cmd.c_str(), "r");
  if (f == nullptr) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) r.output.append(buf, n);
  const int st = ::pclose(f);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

class Pmix : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(MPIRUN_PATH).empty() || ::access(MPIRUN_PATH, X_OK) != 0) {
      GTEST_SKIP() << "mpirun.openmpi not found: install openmpi-bin to run the PMIx bootstrap tests";
    }
  }
};

TEST_F(Pmix, FourRanksExchangeThroughPmix) {
  JobResult r = mpirun("-n 4 " RANK_PROGRAM " ok pmix");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (int i = 0; i < 4; ++i) {
    EXPECT_NE(r.output.find("rank " + std::to_string(i) + " of 4: ok"), std::string::npos) << r.output;
  }
}

TEST_F(Pmix, AbortEndsTheJobWithTheMessage) {
  JobResult r = mpirun("-n 3 " RANK_PROGRAM " abort pmix");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("rank 1 aborted the job: rank 1 found the data inconsistent"), std::string::npos)
      << r.output;
}

TEST_F(Pmix, ARankExitingNonZeroFailsTheJob) {
  JobResult r = mpirun("-n 3 " RANK_PROGRAM " exit3 pmix");
  EXPECT_NE(r.exit_code, 0) << r.output;
}

}  // namespace
