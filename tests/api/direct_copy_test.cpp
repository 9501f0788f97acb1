// direct::copy_mapped, the load/store path's copy: every size around its
// thresholds, at every distance of the destination past the source
// around the aliasing one, copies exactly the bytes asked for and touches nothing around them.
#include "window/direct_copy.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace {

using rma::api::direct::copy_mapped;
using rma::api::direct::kMisalignedCopyMax;
using rma::api::direct::kMisalignedCopyMin;

TEST(DirectCopy, EverySizeAndSkewCopiesExactlyTheRange) {
  const std::size_t sizes[] = {0, 1, 63, 64, 65, kMisalignedCopyMin - 1, kMisalignedCopyMin, kMisalignedCopyMin + 1,
                               4096 + 17, kMisalignedCopyMax - 1, kMisalignedCopyMax, kMisalignedCopyMax + 1};
  constexpr std::size_t kGuard = 128;
  std::vector<std::uint8_t> src(kMisalignedCopyMax + 2 * kGuard + 64);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>(i * 131 + 7);
  std::vector<std::uint8_t> dst(src.size() + 80);
  for (std::size_t size : sizes) {
    for (std::size_t skew = 0; skew < 80; skew += 3) {
      std::fill(dst.begin(), dst.end(), std::uint8_t{0xEE});
      std::uint8_t* to = dst.data() + kGuard + skew;
      const std::uint8_t* from = src.data() + kGuard;
      copy_mapped(to, from, size);
      for (std::size_t i = 0; i < size; ++i) {
        ASSERT_EQ(to[i], from[i]) << "size " << size << " skew " << skew << " byte " << i;
      }
      for (std::size_t i = 0; i < kGuard; ++i) {
        ASSERT_EQ(to[-1 - static_cast<std::ptrdiff_t>(i)], 0xEE) << "size " << size << " skew " << skew;
        ASSERT_EQ(to[size + i], 0xEE) << "size " << size << " skew " << skew << " past the end by " << i;
      }
    }
  }
}

}  // namespace
