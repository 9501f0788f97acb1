// RMA_STATS for devices opened through the registry: exit printing, publishing
// for running processes and `rma_info --counters`, and bad values.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "rma/sdk/registry.hpp"
#include "rma/sdk/stats.hpp"

namespace rma {
namespace {

// Sets environment variables for one test and restores them after.
class ScopedEnv {
 public:
  ScopedEnv& set(const char* name, const std::string& v) {
    const char* old = std::getenv(name);
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    ::setenv(name, v.c_str(), 1);
    return *this;
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) ::setenv(it->first.c_str(), it->second->c_str(), 1);
      else ::unsetenv(it->first.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

std::string temp_dir() {
  char tmpl[] = "/tmp/rma-stats-test.XXXXXX";
  const char* d = ::mkdtemp(tmpl);
  return d ? d : "";
}

std::string run(const std::string& cmd, int* status) {
  std::string out;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (f == nullptr) return out;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  *status = ::pclose(f);
  return out;
}

TEST(Stats, SnapshotOfAProviderWithoutCountersSaysSo) {
  auto dev = ProviderRegistry::global().open("self").value();
  auto s = stats::snapshot(*dev).value();
  EXPECT_EQ(s.device, "self0");
  EXPECT_NE(stats::format(s).find("keeps no counters"), std::string::npos);
}

TEST(Stats, ExitModePrintsWhenTheDeviceCloses) {
  ScopedEnv env;
  env.set("RMA_STATS", "exit");
  auto dev = ProviderRegistry::global().open("self").value();
  ::testing::internal::CaptureStderr();
  dev.reset();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("librma: counters (pid " + std::to_string(::getpid()) + ") device self0"), std::string::npos)
      << err;
}

TEST(Stats, ShmModePublishesWhileOpenAndForgetsClosedDevices) {
  const std::string dir = temp_dir();
  ASSERT_FALSE(dir.empty());
  ScopedEnv env;
  env.set("RMA_STATS", "shm").set("RMA_STATS_DIR", dir).set("RMA_STATS_INTERVAL_MS", "10");
  auto dev = ProviderRegistry::global().open("self").value();
  std::optional<stats::PublishedCounters> mine;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    auto p = stats::read_published(::getpid());
    if (p.ok() && !p->empty() && (*p)[0].text.find("device self0") != std::string::npos) {
      mine = (*p)[0];
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(mine) << "nothing published under " << dir;
  EXPECT_EQ(mine->pid, ::getpid());
  EXPECT_FALSE(mine->program.empty());
  // Two devices: closing one drops it from the listing; closing the last
  // stops publishing altogether.
  auto second = ProviderRegistry::global().open("self").value();
  dev.reset();
  auto after = stats::read_published(::getpid()).value();
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].text.find("device self0"), after[0].text.rfind("device self0")) << after[0].text;
  second.reset();
  EXPECT_EQ(stats::read_published(::getpid()).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
}

TEST(Stats, FilesOfDeadProcessesAreIgnoredAndRemoved) {
  const std::string dir = temp_dir();
  ScopedEnv env;
  env.set("RMA_STATS_DIR", dir);
  // A pid that cannot be alive: beyond pid_max's largest value.
  const std::string stale = dir + "/librma-stats.4194305";
  FILE* f = std::fopen(stale.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("librma-stats 1\npid 4194305\nprogram ghost\nupdated_unix_ms 1\n\ndevice x (provider y)\n", f);
  std::fclose(f);
  auto all = stats::read_published().value();
  EXPECT_TRUE(all.empty());
  EXPECT_FALSE(std::filesystem::exists(stale));
  auto one = stats::read_published(4194305);
  EXPECT_EQ(one.status().code(), StatusCode::kNotFound);
  EXPECT_NE(one.status().message().find("no such process"), std::string::npos) << one.status().message();
  std::filesystem::remove_all(dir);
}

TEST(Stats, BadValuesAreRejectedNamingTheVariable) {
  {
    ScopedEnv env;
    env.set("RMA_STATS", "exit,bogus");
    auto d = ProviderRegistry::global().open("self");
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.status().message().find("RMA_STATS=exit,bogus: unknown word 'bogus'"), std::string::npos)
        << d.status().message();
  }
  {
    ScopedEnv env;
    env.set("RMA_STATS", "shm").set("RMA_STATS_DIR", "/nonexistent/dir");
    auto d = ProviderRegistry::global().open("self");
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.status().message().find("RMA_STATS_DIR=/nonexistent/dir"), std::string::npos)
        << d.status().message();
  }
}

// rma_info --counters on a live child process that has a device open.
TEST(Stats, RmaInfoPrintsTheCountersOfARunningProcess) {
  const std::string dir = temp_dir();
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::setenv("RMA_STATS", "shm", 1);
    ::setenv("RMA_STATS_DIR", dir.c_str(), 1);
    ::setenv("RMA_STATS_INTERVAL_MS", "10", 1);
    auto dev = ProviderRegistry::global().open("self");
    char c = dev.ok() ? 'y' : 'n';
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // a few publications
    (void)!::write(ready[1], &c, 1);
    std::this_thread::sleep_for(std::chrono::seconds(30));  // killed by the parent long before
    ::_exit(0);
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  EXPECT_EQ(c, 'y');
  int status = 0;
  const std::string info = std::string("RMA_STATS_DIR=") + dir + " " + RMA_INFO_PATH;
  std::string out = run(info + " --counters --pid " + std::to_string(child) + " 2>&1", &status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("process " + std::to_string(child)), std::string::npos) << out;
  EXPECT_NE(out.find("device self0"), std::string::npos) << out;
  out = run(info + " --counters 2>&1", &status);
  EXPECT_NE(out.find("process " + std::to_string(child)), std::string::npos) << out;
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  // The killed child left its file: rma_info names the cause and cleans up.
  out = run(info + " --counters --pid " + std::to_string(child) + " 2>&1", &status);
  EXPECT_NE(status, 0);
  EXPECT_NE(out.find("publishes no librma counters (no such process)"), std::string::npos) << out;
  out = run(info + " --pid 12 2>&1", &status);
  EXPECT_NE(status, 0);
  EXPECT_NE(out.find("--pid goes with --counters"), std::string::npos) << out;
  out = run(info + " --counters --pid abc 2>&1", &status);
  EXPECT_NE(out.find("--pid 'abc' is not a process id"), std::string::npos) << out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rma
