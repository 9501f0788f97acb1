// A job of one process, started without a launcher.
#include <cstdio>
#include <cstdlib>
#include <map>

#include "bootstrap/singleton.hpp"

namespace rma::bootstrap {
namespace {

using Bytes = std::vector<std::uint8_t>;

class Singleton final : public Bootstrap {
 public:
  int rank() const noexcept override { return 0; }
  int size() const noexcept override { return 1; }
  std::string_view kind() const noexcept override { return "singleton"; }
  Status put(std::string_view key, std::span<const std::uint8_t> value) override {
    if (key.empty()) return invalid_argument("bootstrap put: empty key");
    pending_[std::string(key)] = Bytes(value.begin(), value.end());
    return {};
  }
  Status fence() override {
    for (auto& [k, v] : pending_) visible_[k] = std::move(v);
    pending_.clear();
    return {};
  }
  Result<Bytes> get(int rank, std::string_view key) override {
    if (rank != 0) return invalid_argument("bootstrap get: rank " + std::to_string(rank) + " is outside 0..0");
    auto it = visible_.find(key);
    if (it == visible_.end()) {
      return not_found("bootstrap get: rank 0 put nothing under '" + std::string(key) + "' before the last fence");
    }
    return it->second;
  }
  Status barrier() override { return {}; }
  Result<std::vector<Bytes>> allgather(std::span<const std::uint8_t> mine) override {
    return std::vector<Bytes>{Bytes(mine.begin(), mine.end())};
  }
  [[noreturn]] void abort(int exit_code, std::string_view message) noexcept override {
    std::fprintf(stderr, "rma: rank 0 of 1 aborted the job: %.*s\n", static_cast<int>(message.size()), message.data());
    std::fflush(nullptr);
    std::_Exit(exit_code == 0 ? 1 : exit_code);
  }

 private:
  std::map<std::string, Bytes, std::less<>> pending_, visible_;
};

}  // namespace

std::unique_ptr<Bootstrap> make_singleton() { return std::make_unique<Singleton>(); }

}  // namespace rma::bootstrap
