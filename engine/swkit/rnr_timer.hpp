// The InfiniBand RNR NAK timer encoding (IBA table 45, ibv_modify_qp
// min_rnr_timer): a 5-bit code for how long a requester waits after a
// receiver-not-ready NAK before retrying. Part of the kit because every
// software QP that waits for a receive (self, shm) turns the responder's
// code into its RNR budget the same way.
#pragma once

#include <chrono>
#include <cstdint>

namespace rma::swkit {

// Interval for `code` (0..31); code 0 is the longest, 655.36 ms.
inline std::chrono::nanoseconds rnr_timer_interval(std::uint8_t code) noexcept {
  // In units of 10 us.
  static constexpr std::uint32_t kTenMicros[32] = {
      65536, 1,    2,    3,    4,    6,    8,    12,   16,    24,    32,
      48,    64,   96,   128,  192,  256,  384,  512,  768,   1024,  1536,
      2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152};
  return std::chrono::microseconds(10) * kTenMicros[code & 31u];
}

}  // namespace rma::swkit
