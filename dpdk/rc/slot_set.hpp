// A fixed set of slot indices 0..N-1 as a bitmap, walked in index order by
// bit scans. The responder keeps in one the resources that still have READ
// responses or atomic acknowledgements to send: with max_qp_rd_atom
// resources (128, as rdma_rxe offers) a transmit call then costs the
// pending ones, not a pass over every slot.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace rma::roce::rc {

template <std::uint32_t N>
class SlotSet {
 public:
  void insert(std::uint32_t i) noexcept { words_[i / 64] |= bit(i); }
  void erase(std::uint32_t i) noexcept { words_[i / 64] &= ~bit(i); }
  bool contains(std::uint32_t i) const noexcept { return (words_[i / 64] & bit(i)) != 0; }
  void clear() noexcept { words_.fill(0); }
  bool empty() const noexcept {
    for (const std::uint64_t w : words_) {
      if (w != 0) return false;
    }
    return true;
  }
  // The smallest member at or after `i`, or N when there is none.
  std::uint32_t first_from(std::uint32_t i) const noexcept {
    while (i < N) {
      const std::uint64_t w = words_[i / 64] >> (i % 64);
      if (w != 0) return i + static_cast<std::uint32_t>(std::countr_zero(w));
      i = (i / 64 + 1) * 64;
    }
    return N;
  }

 private:
  static_assert(N > 0 && N % 64 == 0, "SlotSet holds whole 64-bit words");
  static constexpr std::uint64_t bit(std::uint32_t i) noexcept { return std::uint64_t{1} << (i % 64); }
  std::array<std::uint64_t, N / 64> words_{};
};

}  // namespace rma::roce::rc
