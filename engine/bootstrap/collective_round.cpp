#include "bootstrap/collective_round.hpp"

#include <cstring>

namespace rma::bootstrap {

CollectiveRound::CollectiveRound(int size)
    : size_(size), here_(static_cast<std::size_t>(size), false), in_(static_cast<std::size_t>(size)) {}

Result<std::uint64_t> CollectiveRound::arrive(const char* what, int rank, Bytes contribution) {
  const auto r = static_cast<std::size_t>(rank);
  if (rank < 0 || rank >= size_) return invalid_argument("collective: rank " + std::to_string(rank) + " out of range");
  if (here_[r]) {
    return failed_precondition(std::string(what) + ": rank " + std::to_string(rank) + " is already in this " + what_);
  }
  if (arrived_ > 0 && std::strcmp(what, what_) != 0) {
    return failed_precondition(std::string("bootstrap ") + what + ": rank " + std::to_string(rank) + " called " +
                               what + " while other ranks are in " + what_ +
                               " (every rank must call the same collectives in the same order)");
  }
  if (arrived_ == 0) what_ = what;
  here_[r] = true;
  in_[r] = std::move(contribution);
  ++arrived_;
  return generation_;
}

void CollectiveRound::finish() {
  last_.swap(in_);
  in_.assign(static_cast<std::size_t>(size_), Bytes{});
  here_.assign(static_cast<std::size_t>(size_), false);
  arrived_ = 0;
  ++generation_;
}

std::string CollectiveRound::missing_ranks() const {
  std::string s;
  int n = 0;
  for (int r = 0; r < size_; ++r) {
    if (here_[static_cast<std::size_t>(r)]) continue;
    s += (n++ ? ", " : "") + std::to_string(r);
  }
  return (n == 1 ? "rank " : "ranks ") + s + " (of " + std::to_string(size_) + ")";
}

}  // namespace rma::bootstrap
