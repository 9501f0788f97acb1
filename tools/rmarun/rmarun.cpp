// rmarun -n N prog args...: starts N local ranks of one job and serves their
// bootstrap (rank, size, key-value store with fence, barrier, allgather) on a
// Unix socket in a private directory. If any rank fails (non-zero exit,
// signal, abort, or its bootstrap connection closing without finalize while
// others wait for it), the others are stopped (after --grace seconds in
// which they may end on their own) and rmarun exits non-zero naming the rank.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/collective_round.hpp"
#include "bootstrap/timeout.hpp"
#include "bootstrap/wire_protocol.hpp"
#include "rma/sdk/node.hpp"
#include "rma/sdk/stats.hpp"
#include "rma/version.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using Bytes = std::vector<std::uint8_t>;
namespace wire = rma::bootstrap::wire;
using wire::Op;

void usage(FILE* out) {
  std::fprintf(out,
               "Usage: rmarun -n N [options] program [args...]\n"
               "Starts N ranks of `program` on this machine and serves their bootstrap.\n\n"
               "  -n, --np N        number of ranks (1..1024)\n"
               "      --timeout S   stop the job after S seconds (default: no limit)\n"
               "      --grace S     when a rank fails, give the others up to S seconds to\n"
               "                    notice and end on their own before stopping them (default 0)\n"
               "  -h, --help        this text\n"
               "      --version     librma version\n\n"
               "Each rank gets RMA_RANK, RMA_SIZE, RMA_LOCAL_RANK, RMA_LOCAL_SIZE and\n"
               "RMA_BOOTSTRAP_ADDR. If a rank exits non-zero, is killed, aborts, or leaves\n"
               "without finalizing while others wait for it, the other ranks are stopped\n"
               "(SIGTERM, then SIGKILL) and rmarun exits non-zero naming the rank.\n"
               "RMA_BOOTSTRAP_TIMEOUT (seconds, default 60) bounds every collective.\n");
}

struct Rank {
  pid_t pid = -1;
  int fd = -1;
  wire::Framer framer;
  bool finalized = false;
  bool exited = false;
  std::optional<Clock::time_point> left_at;       // connection closed without finalize
  std::optional<Clock::time_point> finalized_at;
};

class Job {
 public:
  Job(int n, std::chrono::milliseconds collective_timeout, std::chrono::seconds grace)
      : ranks_(static_cast<std::size_t>(n)), round_(n), pending_(static_cast<std::size_t>(n)),
        visible_(static_cast<std::size_t>(n)), timeout_(collective_timeout), grace_(grace) {}
  ~Job() { cleanup(); }

  int run(char** argv, std::optional<std::chrono::seconds> job_limit);

 private:
  bool listen_socket();
  bool spawn(char** argv);
  void reap();
  // A rank was reaped: its shared segments and published counters go (a
  // rank that was killed or crashed never unlinked them).
  void exited(Rank& r);
  void on_readable(std::size_t rank);
  void on_new_connection(int fd);
  void handle(std::size_t rank, const wire::Message& m);
  void reply(std::size_t rank, wire::Writer& w);
  void reply_all(Op op);
  void fail_round(const std::string& why);
  void complete_round();
  void fail_job(const std::string& why, int exit_code);
  void stop_all();
  void cleanup();
  int live_ranks() const;
  int size() const { return static_cast<int>(ranks_.size()); }

  std::vector<Rank> ranks_;
  std::vector<int> unidentified_;  // accepted, no hello yet
  rma::bootstrap::CollectiveRound round_;
  std::optional<Clock::time_point> round_started_;
  std::vector<std::map<std::string, Bytes>> pending_, visible_;
  std::chrono::milliseconds timeout_;
  std::chrono::seconds grace_;  // --grace: how long the others may run on after a failure
  std::string dir_, path_;
  int listen_fd_ = -1, sig_fd_ = -1;
  std::optional<int> failed_;  // exit code once the job failed
};

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int s = WTERMSIG(status);
    return "killed by signal " + std::to_string(s) + " (" + strsignal(s) + ")";
  }
  return "ended (status " + std::to_string(status) + ")";
}

bool Job::listen_socket() {
  char tmpl[] = "/tmp/rmarun.XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    std::fprintf(stderr, "rmarun: cannot create a private directory in /tmp: %s\n", std::strerror(errno));
    return false;
  }
  dir_ = tmpl;
  path_ = dir_ + "/bootstrap.sock";
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, path_.c_str(), sizeof sa.sun_path - 1);
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
      ::listen(listen_fd_, 1024) != 0) {
    std::fprintf(stderr, "rmarun: cannot listen on %s: %s\n", path_.c_str(), std::strerror(errno));
    return false;
  }
  return true;
}

bool Job::spawn(char** argv) {
  sigset_t none;
  sigemptyset(&none);
  for (int r = 0; r < size(); ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      fail_job(std::string("cannot start rank ") + std::to_string(r) + ": fork failed: " + std::strerror(errno), 1);
      return false;
    }
    if (pid == 0) {
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::setenv("RMA_RANK", std::to_string(r).c_str(), 1);
      ::setenv("RMA_SIZE", std::to_string(size()).c_str(), 1);
      ::setenv("RMA_LOCAL_RANK", std::to_string(r).c_str(), 1);
      ::setenv("RMA_LOCAL_SIZE", std::to_string(size()).c_str(), 1);
      ::setenv("RMA_BOOTSTRAP_ADDR", path_.c_str(), 1);
      ::execvp(argv[0], argv);
      std::fprintf(stderr, "rmarun: rank %d: cannot run '%s': %s\n", r, argv[0], std::strerror(errno));
      std::_Exit(127);
    }
    ranks_[static_cast<std::size_t>(r)].pid = pid;
  }
  return true;
}

int Job::live_ranks() const {
  int n = 0;
  for (const auto& r : ranks_) n += r.exited ? 0 : 1;
  return n;
}

void Job::stop_all() {
  for (const auto& r : ranks_) {
    if (!r.exited && r.pid > 0) ::kill(r.pid, SIGTERM);
  }
  const auto deadline = Clock::now() + std::chrono::seconds(3);
  while (live_ranks() > 0 && Clock::now() < deadline) {
    reap();
    if (live_ranks() > 0) ::usleep(10000);
  }
  for (const auto& r : ranks_) {
    if (!r.exited && r.pid > 0) ::kill(r.pid, SIGKILL);
  }
  while (live_ranks() > 0) {
    int status;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) break;
    for (auto& r : ranks_) {
      if (r.pid == pid) exited(r);
    }
  }
}

void Job::fail_job(const std::string& why, int exit_code) {
  if (failed_) return;
  failed_ = exit_code == 0 ? 1 : exit_code;
  const int others = live_ranks();
  if (grace_.count() > 0 && others > 0) {
    // The others may notice the failure (a dead peer's connections fail)
    // and report it themselves; their exits are reported as they come.
    std::fprintf(stderr, "rmarun: %s; giving the %d rank%s still running up to %lld s to end\n", why.c_str(),
                 others, others == 1 ? "" : "s", static_cast<long long>(grace_.count()));
    const auto deadline = Clock::now() + grace_;
    while (live_ranks() > 0 && Clock::now() < deadline) {
      reap();
      if (live_ranks() > 0) ::usleep(10000);
    }
    if (live_ranks() > 0) std::fprintf(stderr, "rmarun: stopping %d rank%s still running\n", live_ranks(),
                                       live_ranks() == 1 ? "" : "s");
  } else {
    std::fprintf(stderr, "rmarun: %s; stopping %d rank%s still running\n", why.c_str(), others,
                 others == 1 ? "" : "s");
  }
  stop_all();
}

void Job::exited(Rank& r) {
  r.exited = true;
  // Reaped, so the pid is free: its segments are stale whoever reuses it.
  for (const std::string& n : rma::node::remove_stale_segments(static_cast<std::uint32_t>(r.pid))) {
    std::fprintf(stderr, "rmarun: removed /dev/shm%s left by pid %d\n", n.c_str(), static_cast<int>(r.pid));
  }
  // And the counters it published (RMA_STATS=shm), which only its own exit
  // removes.
  for (const std::string& f : rma::stats::remove_stale_published(static_cast<int>(r.pid))) {
    std::fprintf(stderr, "rmarun: removed %s left by pid %d\n", f.c_str(), static_cast<int>(r.pid));
  }
}

void Job::reap() {
  int status;
  pid_t pid;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    for (std::size_t i = 0; i < ranks_.size(); ++i) {
      Rank& r = ranks_[i];
      if (r.pid != pid) continue;
      exited(r);
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (!ok && !failed_) {
        const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        fail_job("rank " + std::to_string(i) + " (pid " + std::to_string(pid) + ") " + describe(status), code);
      } else if (failed_ && grace_.count() > 0) {
        std::fprintf(stderr, "rmarun: rank %zu (pid %d) %s\n", i, static_cast<int>(pid), describe(status).c_str());
      }
    }
  }
}

void Job::reply(std::size_t rank, wire::Writer& w) {
  Rank& r = ranks_[rank];
  if (r.fd < 0) return;
  if (!wire::send_all(r.fd, w.finish(), 5000).ok()) {
    ::close(r.fd);
    r.fd = -1;
  }
}

void Job::reply_all(Op op) {
  for (std::size_t i = 0; i < ranks_.size(); ++i) {
    wire::Writer w(op);
    reply(i, w);
  }
}

void Job::fail_round(const std::string& why) {
  for (std::size_t i = 0; i < ranks_.size(); ++i) {
    if (!round_.has(static_cast<int>(i))) continue;  // only the waiting ranks expect an answer
    wire::Writer w(Op::kError);
    w.str(why);
    reply(i, w);
  }
  round_ = rma::bootstrap::CollectiveRound(size());
  round_started_.reset();
}

void Job::complete_round() {
  const std::string what = round_.in_progress();
  if (what == "fence") {
    for (std::size_t r = 0; r < pending_.size(); ++r) {
      for (auto& [k, v] : pending_[r]) visible_[r][k] = std::move(v);
      pending_[r].clear();
    }
  }
  round_.finish();
  round_started_.reset();
  if (what == "allgather") {
    const auto& parts = round_.result(0);
    for (std::size_t i = 0; i < ranks_.size(); ++i) {
      wire::Writer w(Op::kGathered);
      w.u32(static_cast<std::uint32_t>(parts.size()));
      for (const auto& p : parts) w.bytes(p);
      reply(i, w);
    }
  } else {
    reply_all(Op::kOk);
  }
}

void Job::handle(std::size_t rank, const wire::Message& m) {
  wire::Reader rd(m.body);
  const int r = static_cast<int>(rank);
  auto collective = [&](const char* what, Bytes mine) {
    auto t = round_.arrive(what, r, std::move(mine));
    if (!t.ok()) {
      wire::Writer w(Op::kError);
      w.str(t.status().message());
      reply(rank, w);
      return;
    }
    if (!round_started_) round_started_ = Clock::now();
    if (round_.complete()) complete_round();
  };
  switch (m.op) {
    case Op::kPut: {
      auto key = rd.str();
      auto value = rd.bytes();
      if (key.ok() && value.ok()) pending_[rank][*key] = std::move(*value);
      return;
    }
    case Op::kFence: return collective("fence", {});
    case Op::kBarrier: return collective("barrier", {});
    case Op::kAllgather: {
      auto mine = rd.bytes();
      return collective("allgather", mine.ok() ? std::move(*mine) : Bytes{});
    }
    case Op::kGet: {
      auto from = rd.u32();
      auto key = rd.str();
      if (!from.ok() || !key.ok() || *from >= ranks_.size()) break;
      const auto& m2 = visible_[*from];
      auto it = m2.find(*key);
      if (it != m2.end()) {
        wire::Writer w(Op::kValue);
        w.bytes(it->second);
        reply(rank, w);
      } else {
        wire::Writer w(Op::kNotFound);
        w.str("bootstrap get: rank " + std::to_string(*from) + " put nothing under '" + *key + "' before the last fence");
        reply(rank, w);
      }
      return;
    }
    case Op::kAbort: {
      auto code = rd.u32();
      auto msg = rd.str();
      fail_job("rank " + std::to_string(rank) + " aborted the job: " + (msg.ok() ? *msg : std::string("?")),
               code.ok() ? static_cast<int>(*code) : 1);
      return;
    }
    case Op::kFinalize: {
      ranks_[rank].finalized = true;
      ranks_[rank].finalized_at = Clock::now();
      wire::Writer w(Op::kOk);
      reply(rank, w);
      return;
    }
    default: break;
  }
  fail_job("rank " + std::to_string(rank) + " sent a malformed bootstrap message (op " +
               std::to_string(static_cast<int>(m.op)) + ")",
           1);
}

void Job::on_readable(std::size_t rank) {
  Rank& r = ranks_[rank];
  std::uint8_t buf[65536];
  for (;;) {
    const ssize_t n = ::recv(r.fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      r.framer.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    ::close(r.fd);
    r.fd = -1;
    if (!r.finalized) r.left_at = Clock::now();
    break;
  }
  wire::Message m;
  for (;;) {
    auto got = r.framer.next(m);
    if (!got.ok()) {
      fail_job("rank " + std::to_string(rank) + ": " + got.status().message(), 1);
      return;
    }
    if (!*got) break;
    handle(rank, m);
    if (failed_) return;
  }
}

void Job::on_new_connection(int fd) {
  auto m = wire::receive(fd, 5000);
  auto refuse = [&](const std::string& why) {
    wire::Writer w(Op::kError);
    w.str(why);
    (void)wire::send_all(fd, w.finish(), 1000);
    ::close(fd);
  };
  if (!m.ok() || m->op != Op::kHello) return refuse("expected a hello message");
  wire::Reader rd(m->body);
  auto rank = rd.u32();
  if (!rank.ok() || *rank >= ranks_.size()) return refuse("rank out of range 0.." + std::to_string(size() - 1));
  Rank& r = ranks_[*rank];
  if (r.fd >= 0 || r.finalized) return refuse("rank " + std::to_string(*rank) + " is already connected");
  r.fd = fd;
  r.left_at.reset();
  wire::Writer w(Op::kOk);
  reply(*rank, w);
}

int Job::run(char** argv, std::optional<std::chrono::seconds> job_limit) {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGHUP);
  ::sigprocmask(SIG_BLOCK, &mask, nullptr);
  sig_fd_ = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sig_fd_ < 0 || !listen_socket()) return 1;
  if (!spawn(argv)) return *failed_;
  // No --timeout: a deadline never reached (an optional here made g++ 12
  // warn of an uninitialized read).
  const Clock::time_point job_deadline = job_limit ? Clock::now() + *job_limit : Clock::time_point::max();

  while (!failed_ && live_ranks() > 0) {
    std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}, {sig_fd_, POLLIN, 0}};
    std::vector<std::size_t> owner;
    for (std::size_t i = 0; i < ranks_.size(); ++i) {
      if (ranks_[i].fd >= 0) {
        fds.push_back({ranks_[i].fd, POLLIN, 0});
        owner.push_back(i);
      }
    }
    ::poll(fds.data(), fds.size(), 100);
    if (fds[1].revents & POLLIN) {
      signalfd_siginfo si;
      while (::read(sig_fd_, &si, sizeof si) == sizeof si) {
        if (si.ssi_signo != SIGCHLD) {
          fail_job(std::string("received ") + strsignal(static_cast<int>(si.ssi_signo)), 128 + static_cast<int>(si.ssi_signo));
        }
      }
    }
    reap();
    if (failed_) break;
    if (fds[0].revents & POLLIN) {
      int fd;
      while ((fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC)) >= 0) on_new_connection(fd);
    }
    for (std::size_t k = 0; k < owner.size() && !failed_; ++k) {
      if (fds[k + 2].revents & (POLLIN | POLLHUP | POLLERR)) on_readable(owner[k]);
    }
    if (failed_) break;
    const auto now = Clock::now();
    // A rank that closed its connection without finalizing, and has not
    // exited with an error within 2 s, fails the job if others wait for it.
    for (std::size_t i = 0; i < ranks_.size() && round_.in_progress(); ++i) {
      const Rank& r = ranks_[i];
      // Grace periods: a rank that finalizes or disconnects and then exits
      // non-zero is reported by its exit status, which is more useful.
      if (r.finalized && !r.exited && !round_.has(static_cast<int>(i)) && now - *r.finalized_at > std::chrono::seconds(1)) {
        fail_round("bootstrap " + std::string(round_.in_progress()) + ": rank " + std::to_string(i) +
                   " has finalized and cannot take part");
        fail_job("rank " + std::to_string(i) + " (pid " + std::to_string(r.pid) + ") finalized while other ranks " +
                     "waited for it in a collective",
                 1);
        break;
      }
      if (r.left_at && !r.exited && now - *r.left_at > std::chrono::seconds(2)) {
        fail_round("bootstrap " + std::string(round_.in_progress()) + ": rank " + std::to_string(i) +
                   " left the job without finalizing");
        fail_job("rank " + std::to_string(i) + " (pid " + std::to_string(r.pid) +
                     ") closed its bootstrap connection without finalizing while other ranks waited for it",
                 1);
      }
    }
    if (!failed_ && round_started_ && now - *round_started_ > timeout_) {
      const std::string what = round_.in_progress();
      const std::string missing = round_.missing_ranks();
      fail_round("bootstrap " + what + ": timed out after " + std::to_string(timeout_.count() / 1000) +
                 " s (RMA_BOOTSTRAP_TIMEOUT) waiting for " + missing);
      fail_job(what + " timed out after " + std::to_string(timeout_.count() / 1000) + " s waiting for " + missing, 1);
    }
    if (!failed_ && now > job_deadline) {
      fail_job("the job ran out of time (--timeout " + std::to_string(job_limit->count()) + " s)", 124);
    }
  }
  return failed_.value_or(0);
}

void Job::cleanup() {
  for (auto& r : ranks_) {
    if (r.fd >= 0) ::close(r.fd);
    r.fd = -1;
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
  if (!path_.empty()) ::unlink(path_.c_str());
  if (!dir_.empty()) ::rmdir(dir_.c_str());
  path_.clear();
  dir_.clear();
}

std::optional<long> parse_number(const char* s, long lo, long hi) {
  if (s == nullptr || *s == '\0') return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return std::nullopt;
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  long n = 0;
  std::optional<std::chrono::seconds> limit;
  std::chrono::seconds grace{0};
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "rmarun: %s needs a value\n", flag);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-n" || a == "--np" || a == "-np") {
      const char* v = value(a.c_str());
      auto p = parse_number(v, 1, 1024);
      if (!p) {
        std::fprintf(stderr, "rmarun: %s %s: the number of ranks must be 1..1024\n", a.c_str(), v);
        return 2;
      }
      n = *p;
    } else if (a == "--timeout") {
      const char* v = value("--timeout");
      auto p = parse_number(v, 1, 7 * 86400);
      if (!p) {
        std::fprintf(stderr, "rmarun: --timeout %s: must be 1..604800 seconds\n", v);
        return 2;
      }
      limit = std::chrono::seconds(*p);
    } else if (a == "--grace") {
      const char* v = value("--grace");
      auto p = parse_number(v, 0, 3600);
      if (!p) {
        std::fprintf(stderr, "rmarun: --grace %s: must be 0..3600 seconds\n", v);
        return 2;
      }
      grace = std::chrono::seconds(*p);
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (a == "--version") {
      std::printf("rmarun (librma %s)\n", rma::version_string());
      return 0;
    } else if (a == "--") {
      ++i;
      break;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "rmarun: unknown option '%s'\n", a.c_str());
      usage(stderr);
      return 2;
    } else {
      break;
    }
  }
  if (n == 0) {
    std::fprintf(stderr, "rmarun: say how many ranks to start with -n N\n");
    return 2;
  }
  if (i >= argc) {
    std::fprintf(stderr, "rmarun: no program to run\n");
    return 2;
  }
  auto timeout = rma::bootstrap::configured_timeout();
  if (!timeout.ok()) {
    std::fprintf(stderr, "rmarun: %s\n", timeout.status().message().c_str());
    return 2;
  }
  Job job(static_cast<int>(n), *timeout, grace);
  return job.run(argv + i, limit);
}
