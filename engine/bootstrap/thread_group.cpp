// In-process ranks: make_thread_bootstrap_group(n) gives n Bootstraps that
// share one state, each meant for its own thread (unit tests run a whole job
// of ranks in one process on the self provider).
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

#include "bootstrap/collective_round.hpp"
#include "bootstrap/timeout.hpp"
#include "rma/sdk/bootstrap.hpp"

namespace rma {
namespace {

using Bytes = std::vector<std::uint8_t>;
using bootstrap::CollectiveRound;

struct GroupState {
  explicit GroupState(int n, std::chrono::milliseconds t)
      : size(n), timeout(t), pending(static_cast<std::size_t>(n)), visible(static_cast<std::size_t>(n)), round(n) {}
  const int size;
  const std::chrono::milliseconds timeout;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::map<std::string, Bytes, std::less<>>> pending, visible;
  CollectiveRound round;
  // A round that timed out fails for every rank in it, with one message.
  std::uint64_t failed_ticket = ~std::uint64_t{0};
  std::string failed_why;
};

class ThreadRank final : public Bootstrap {
 public:
  ThreadRank(std::shared_ptr<GroupState> g, int rank) : g_(std::move(g)), rank_(rank) {}
  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return g_->size; }
  std::string_view kind() const noexcept override { return "threads"; }

  Status put(std::string_view key, std::span<const std::uint8_t> value) override {
    if (key.empty()) return invalid_argument("bootstrap put: empty key");
    std::lock_guard lock(g_->mu);
    g_->pending[static_cast<std::size_t>(rank_)][std::string(key)] = Bytes(value.begin(), value.end());
    return {};
  }
  Status fence() override {
    return collective("fence", {}, nullptr, [this] {
      for (int r = 0; r < g_->size; ++r) {
        auto& p = g_->pending[static_cast<std::size_t>(r)];
        for (auto& [k, v] : p) g_->visible[static_cast<std::size_t>(r)][k] = std::move(v);
        p.clear();
      }
    });
  }
  Result<Bytes> get(int rank, std::string_view key) override {
    if (rank < 0 || rank >= g_->size) {
      return invalid_argument("bootstrap get: rank " + std::to_string(rank) + " is outside 0.." +
                              std::to_string(g_->size - 1));
    }
    std::lock_guard lock(g_->mu);
    const auto& m = g_->visible[static_cast<std::size_t>(rank)];
    auto it = m.find(key);
    if (it == m.end()) {
      return not_found("bootstrap get: rank " + std::to_string(rank) + " put nothing under '" + std::string(key) +
                       "' before the last fence");
    }
    return it->second;
  }
  Status barrier() override { return collective("barrier", {}, nullptr, [] {}); }
  Result<std::vector<Bytes>> allgather(std::span<const std::uint8_t> mine) override {
    std::vector<Bytes> out;
    RMA_RETURN_IF_ERROR(collective("allgather", Bytes(mine.begin(), mine.end()), &out, [] {}));
    return out;
  }
  [[noreturn]] void abort(int exit_code, std::string_view message) noexcept override {
    std::fprintf(stderr, "rma: rank %d of %d aborted the job: %.*s\n", rank_, g_->size,
                 static_cast<int>(message.size()), message.data());
    std::fflush(nullptr);
    std::_Exit(exit_code == 0 ? 1 : exit_code);
  }

 private:
  template <typename OnComplete>
  Status collective(const char* what, Bytes contribution, std::vector<Bytes>* gathered, OnComplete on_complete) {
    std::unique_lock lock(g_->mu);
    RMA_ASSIGN_OR_RETURN(std::uint64_t ticket, g_->round.arrive(what, rank_, std::move(contribution)));
    if (g_->round.complete()) {
      on_complete();
      g_->round.finish();
      g_->cv.notify_all();
    } else {
      const bool done = g_->cv.wait_for(lock, g_->timeout, [&] { return g_->round.finished(ticket); });
      if (!done) {
        g_->failed_ticket = ticket;
        g_->failed_why = std::string("bootstrap ") + what + ": timed out after " +
                         std::to_string(g_->timeout.count() / 1000) + " s (RMA_BOOTSTRAP_TIMEOUT) waiting for " +
                         g_->round.missing_ranks();
        g_->round.finish();
        g_->cv.notify_all();
      }
      if (g_->failed_ticket == ticket) return timeout_error(g_->failed_why);
    }
    if (gathered) *gathered = g_->round.result(ticket);
    return {};
  }

  std::shared_ptr<GroupState> g_;
  int rank_;
};

}  // namespace

Result<std::vector<std::unique_ptr<Bootstrap>>> make_thread_bootstrap_group(int size) {
  if (size < 1 || size > 4096) {
    return invalid_argument("thread bootstrap group: size " + std::to_string(size) + " is outside 1..4096");
  }
  RMA_ASSIGN_OR_RETURN(auto timeout, bootstrap::configured_timeout());
  auto state = std::make_shared<GroupState>(size, timeout);
  std::vector<std::unique_ptr<Bootstrap>> ranks;
  for (int r = 0; r < size; ++r) ranks.push_back(std::make_unique<ThreadRank>(state, r));
  return ranks;
}

}  // namespace rma
