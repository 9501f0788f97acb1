#include "stats/device_tracker.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "rma/sdk/config.hpp"
#include "rma/sdk/log.hpp"
#include "rma/sdk/stats.hpp"

namespace rma::stats {

std::string published_path(const std::string& dir, int pid) {
  return dir + "/" + kPublishedPrefix + std::to_string(pid);
}

namespace {

struct Mode {
  bool at_exit = false;
  bool shm = false;
};

Result<Mode> configured_mode() {
  RMA_ASSIGN_OR_RETURN(std::string text, config::get_string("RMA_STATS"));
  Mode m;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string word = text.substr(pos, comma - pos);
    if (word == "exit") {
      m.at_exit = true;
    } else if (word == "shm") {
      m.shm = true;
    } else if (!word.empty()) {
      return invalid_argument("RMA_STATS=" + text + ": unknown word '" + word +
                              "'; use 'exit', 'shm' or 'exit,shm'");
    }
    pos = comma + 1;
  }
  return m;
}

std::string program_name() {
  char buf[64] = {};
  if (FILE* f = std::fopen("/proc/self/comm", "r")) {
    if (std::fgets(buf, sizeof buf, f) == nullptr) buf[0] = '\0';
    std::fclose(f);
  }
  std::string s(buf);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.empty() ? "?" : s;
}

std::uint64_t unix_ms() {
  using namespace std::chrono;
  return static_cast<std::uint64_t>(duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count());
}

class Holder;

// Process-wide: the tracked devices and the publishing thread.
class Service {
 public:
  static Service& get() {
    // Leaked on purpose: holders may outlive static destruction; the exit
    // work happens in the atexit handler below instead.
    static Service* s = [] {
      auto* svc = new Service;
      pthread_atfork(
          [] {
            get().lifecycle_.lock();
            get().mu_.lock();
          },
          [] {
            get().mu_.unlock();
            get().lifecycle_.unlock();
          },
          [] { get().after_fork_child(); });
      std::atexit([] { get().at_exit(); });
      return svc;
    }();
    return *s;
  }

  Status add(Holder* h, const Mode& mode);
  void remove(Holder* h) noexcept;

 private:
  void run();
  void publish_locked();
  void at_exit() noexcept;
  void after_fork_child() noexcept {
    // The child did not open these devices and has no publishing thread;
    // it starts over (a device it opens starts a new thread under its pid).
    mu_.unlock();
    lifecycle_.unlock();
    holders_.clear();
    thread_.release();  // the thread does not exist in the child: never join it
    stop_ = false;
    path_.clear();
  }

  // lifecycle_ serialises starting and stopping the thread (taken before
  // mu_, never by the thread); mu_ guards the rest and is what the thread takes.
  std::mutex lifecycle_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Holder*> holders_;
  std::unique_ptr<std::thread> thread_;
  bool stop_ = false;
  bool exited_ = false;
  std::string dir_, path_;
  std::chrono::milliseconds interval_{100};
};

// Owns the provider's device; users hold aliases of it. Its destruction is
// the moment the user closed the device.
class Holder {
 public:
  Holder(std::shared_ptr<Device> d, Mode m) : device_(std::move(d)), mode_(m) {}
  ~Holder() {
    Service::get().remove(this);
    print_once();
  }
  Device& device() const noexcept { return *device_; }
  const Mode& mode() const noexcept { return mode_; }
  // Tracking failed: the device is handed back closed, nothing to report.
  void disarm() noexcept { printed_ = true; }
  // Exit printing happens once: at close, or at process exit if still open.
  void print_once() noexcept {
    if (!mode_.at_exit || printed_.exchange(true)) return;
    auto snap = snapshot(*device_);
    if (!snap.ok()) {
      std::fprintf(stderr, "librma: counters of %s: %s\n", device_->info().name.c_str(),
                   snap.status().message().c_str());
      return;
    }
    std::string text = "librma: counters (pid " + std::to_string(getpid()) + ") " + format(*snap);
    std::fwrite(text.data(), 1, text.size(), stderr);
  }

 private:
  std::shared_ptr<Device> device_;
  Mode mode_;
  std::atomic<bool> printed_{false};
};

Status Service::add(Holder* h, const Mode& mode) {
  std::lock_guard life(lifecycle_);
  std::lock_guard lock(mu_);
  holders_.push_back(h);
  if (!mode.shm || thread_) return {};
  RMA_ASSIGN_OR_RETURN(std::uint64_t ms, config::get_size("RMA_STATS_INTERVAL_MS"));
  if (ms == 0 || ms > 3'600'000) {
    holders_.pop_back();
    return invalid_argument("RMA_STATS_INTERVAL_MS=" + std::to_string(ms) + ": must be 1..3600000");
  }
  RMA_ASSIGN_OR_RETURN(dir_, config::get_string("RMA_STATS_DIR"));
  if (access(dir_.c_str(), W_OK) != 0) {
    holders_.pop_back();
    return failed_precondition("RMA_STATS=shm: cannot write to RMA_STATS_DIR=" + dir_ + ": " +
                               std::strerror(errno));
  }
  interval_ = std::chrono::milliseconds(ms);
  path_ = published_path(dir_, getpid());
  stop_ = false;
  thread_ = std::make_unique<std::thread>([this] { run(); });
  return {};
}

// The process publishes only while it has a device open under RMA_STATS=shm:
// the last one closing stops the thread and removes the file.
void Service::remove(Holder* h) noexcept {
  std::lock_guard life(lifecycle_);
  std::unique_ptr<std::thread> t;
  {
    std::lock_guard lock(mu_);
    std::erase(holders_, h);
    const bool any_shm = std::any_of(holders_.begin(), holders_.end(), [](Holder* x) { return x->mode().shm; });
    if (any_shm && !path_.empty()) {
      publish_locked();  // the closed device disappears from the listing now
      return;
    }
    if (!thread_) return;
    stop_ = true;
    t = std::move(thread_);
  }
  cv_.notify_all();
  t->join();
  std::lock_guard lock(mu_);
  ::unlink(path_.c_str());
  path_.clear();
}

void Service::run() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    publish_locked();
    cv_.wait_for(lock, interval_, [this] { return stop_; });
  }
}

// Writes every shm-tracked device's snapshot to a temporary file and renames
// it over the published one, so readers never see half a file.
void Service::publish_locked() {
  std::string text = std::string(kPublishedMagic) + "\npid " + std::to_string(getpid()) + "\nprogram " +
                     program_name() + "\nupdated_unix_ms " + std::to_string(unix_ms()) + "\n\n";
  for (Holder* h : holders_) {
    if (!h->mode().shm) continue;
    auto snap = snapshot(h->device());
    text += snap.ok() ? format(*snap) : "device " + h->device().info().name + ": " + snap.status().message() + "\n";
  }
  const std::string tmp = path_ + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path_.c_str()) != 0) ::unlink(tmp.c_str());
}

void Service::at_exit() noexcept {
  std::lock_guard life(lifecycle_);
  std::unique_ptr<std::thread> t;
  std::vector<Holder*> still_open;
  {
    std::lock_guard lock(mu_);
    if (exited_) return;
    exited_ = true;
    stop_ = true;
    t = std::move(thread_);
    still_open = holders_;
  }
  cv_.notify_all();
  if (t && t->joinable()) t->join();
  {
    std::lock_guard lock(mu_);
    if (!path_.empty()) ::unlink(path_.c_str());
    path_.clear();
  }
  // Devices the program never closed: print them now, while they still work.
  for (Holder* h : still_open) h->print_once();
}

}  // namespace

Result<std::shared_ptr<Device>> track_device(std::shared_ptr<Device> device) {
  RMA_ASSIGN_OR_RETURN(Mode mode, configured_mode());
  if (!mode.at_exit && !mode.shm) return device;
  auto holder = std::make_shared<Holder>(std::move(device), mode);
  if (Status st = Service::get().add(holder.get(), mode); !st.ok()) {
    holder->disarm();
    return st;
  }
  Device* raw = &holder->device();
  return std::shared_ptr<Device>(std::move(holder), raw);
}

}  // namespace rma::stats
