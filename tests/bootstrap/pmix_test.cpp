// The PMIx bootstrap, launched by Debian's Open MPI mpirun: the same rank
// program as the rmarun tests, now expecting PMIx.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "run_job.hpp"

namespace {

using rma::testing::JobResult;

JobResult mpirun(const std::string& args) {
  // Root needs --allow-run-as-root; 2 cores need --oversubscribe. Leak
  // checking is off in the ranks: PMIx and Open MPI keep memory until exit.
  return rma::testing::run_job("ASAN_OPTIONS=detect_leaks=0 timeout 90 " MPIRUN_PATH
                               " --allow-run-as-root --oversubscribe --mca btl self " + args);
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
