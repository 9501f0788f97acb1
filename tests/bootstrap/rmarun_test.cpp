// rmarun with real processes: jobs of 2..8 ranks exchanging through the
// bootstrap, and every way a rank can fail.
#include <gtest/gtest.h>

#include <string>

#include "run_job.hpp"

namespace {

using rma::testing::JobResult;

JobResult rmarun(const std::string& args, const std::string& env = "") {
  return rma::testing::run_job(env + " timeout 60 " RMARUN_PATH " " + args);
}

const std::string kRank = RANK_PROGRAM;

TEST(Rmarun, JobsOfTwoToEightRanksExchangeThroughTheBootstrap) {
  for (int n : {2, 3, 8}) {
    JobResult r = rmarun("-n " + std::to_string(n) + " " + kRank + " ok");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    for (int i = 0; i < n; ++i) {
      EXPECT_NE(r.output.find("rank " + std::to_string(i) + " of " + std::to_string(n) + ": ok"), std::string::npos)
          << r.output;
    }
  }
}

TEST(Rmarun, ARankExitingNonZeroStopsTheJobNamingIt) {
  JobResult r = rmarun("-n 4 " + kRank + " exit3");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("rmarun: rank 1 (pid"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("exited with status 3; stopping"), std::string::npos) << r.output;
  EXPECT_LT(r.seconds, 20);
}

TEST(Rmarun, ARankKilledBySignalStopsTheJobNamingIt) {
  JobResult r = rmarun("-n 3 " + kRank + " kill");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("rank 1 (pid"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("killed by signal 9"), std::string::npos) << r.output;
}

TEST(Rmarun, ARankThatNeverArrivesTimesOutNamingIt) {
  JobResult r = rmarun("-n 3 " + kRank + " hang", "RMA_BOOTSTRAP_TIMEOUT=2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("barrier timed out after 2 s waiting for rank 1 (of 3)"), std::string::npos) << r.output;
  EXPECT_LT(r.seconds, 30);
}

TEST(Rmarun, AbortStopsTheJobWithTheRanksMessageAndCode) {
  JobResult r = rmarun("-n 3 " + kRank + " abort");
  EXPECT_EQ(r.exit_code, 5) << r.output;
  EXPECT_NE(r.output.find("rank 1 aborted the job: rank 1 found the data inconsistent"), std::string::npos)
      << r.output;
}

TEST(Rmarun, ARankThatFinalizedEarlyFailsTheCollectiveItIsMissingFrom) {
  JobResult r = rmarun("-n 2 " + kRank + " leave");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("rank 1 (pid"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("finalized while other ranks waited for it"), std::string::npos) << r.output;
  EXPECT_LT(r.seconds, 20);
}

TEST(Rmarun, JobTimeoutStopsEveryRank) {
  JobResult r = rmarun("-n 2 --timeout 1 " + kRank + " hang", "RMA_BOOTSTRAP_TIMEOUT=60");
  EXPECT_EQ(r.exit_code, 124) << r.output;
  EXPECT_NE(r.output.find("the job ran out of time (--timeout 1 s)"), std::string::npos) << r.output;
}

TEST(Rmarun, BadArguments) {
  JobResult r = rmarun("");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("-n N"), std::string::npos) << r.output;
  r = rmarun("-n 0 /bin/true");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("-n 0: the number of ranks must be 1..1024"), std::string::npos) << r.output;
  r = rmarun("-n 2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("no program to run"), std::string::npos) << r.output;
  r = rmarun("--bogus -n 2 /bin/true");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown option '--bogus'"), std::string::npos) << r.output;
  r = rmarun("-n 2 /nonexistent/program");
  EXPECT_EQ(r.exit_code, 127) << r.output;
  EXPECT_NE(r.output.find("cannot run '/nonexistent/program'"), std::string::npos) << r.output;
  r = rmarun("-n 2 /bin/true");
  EXPECT_EQ(r.exit_code, 0) << r.output;  // a program that never uses the bootstrap is fine
}

}  // namespace
