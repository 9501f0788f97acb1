// One collective at a time among `size` ranks (fence, barrier, allgather):
// who has arrived, what they brought, and the result of finished rounds.
// Shared by the in-process thread group and the rmarun server; the caller
// serialises access. A rank arriving with another collective than the one in
// progress is an error that names both, as mismatched collectives would
// otherwise deadlock.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rma/sdk/status.hpp"

namespace rma::bootstrap {

class CollectiveRound {
 public:
  using Bytes = std::vector<std::uint8_t>;
  explicit CollectiveRound(int size);

  // Records `rank`'s arrival; returns the round's ticket.
  Result<std::uint64_t> arrive(const char* what, int rank, Bytes contribution);
  bool complete() const noexcept { return arrived_ == size_; }
  // Closes the round: its contributions become the result.
  void finish();
  bool finished(std::uint64_t ticket) const noexcept { return generation_ > ticket; }
  // The contributions of the round `ticket` (valid until the next finish()).
  const std::vector<Bytes>& result(std::uint64_t ticket) const noexcept { (void)ticket; return last_; }
  // "ranks 2, 3 (of 4)".
  std::string missing_ranks() const;
  bool has(int rank) const noexcept { return rank >= 0 && rank < size_ && here_[static_cast<std::size_t>(rank)]; }
  const char* in_progress() const noexcept { return arrived_ > 0 ? what_ : nullptr; }

 private:
  int size_;
  int arrived_ = 0;
  const char* what_ = "";
  std::uint64_t generation_ = 0;
  std::vector<bool> here_;
  std::vector<Bytes> in_, last_;
};

}  // namespace rma::bootstrap
