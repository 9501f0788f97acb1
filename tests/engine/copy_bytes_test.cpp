// copy_bytes: every length from 0 to past the inline limit copies exactly
// its bytes, at every alignment of source and destination, and touches no
// byte around the destination.
#include "rma/sdk/copy_bytes.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace rma {
namespace {

constexpr std::size_t kMaxLen = 160;  // past the 64-byte inline limit and its 32/16/8/4 steps
constexpr std::size_t kGuard = 16;
constexpr std::uint8_t kUntouched = 0xA5;

TEST(CopyBytes, CopiesExactlyTheBytesAtEveryLengthAndAlignment) {
  std::array<std::uint8_t, kMaxLen + 2 * kGuard + 8> src{};
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>(i * 7 + 1);
  for (std::size_t len = 0; len <= kMaxLen; ++len) {
    for (std::size_t src_off = 0; src_off < 8; ++src_off) {
      for (std::size_t dst_off = 0; dst_off < 8; ++dst_off) {
        std::array<std::uint8_t, kMaxLen + 2 * kGuard + 8> dst;
        dst.fill(kUntouched);
        copy_bytes(dst.data() + kGuard + dst_off, src.data() + src_off, len);
        for (std::size_t i = 0; i < dst.size(); ++i) {
          const bool inside = i >= kGuard + dst_off && i < kGuard + dst_off + len;
          const std::uint8_t want = inside ? src[src_off + (i - kGuard - dst_off)] : kUntouched;
          ASSERT_EQ(dst[i], want) << "len " << len << ", source offset " << src_off << ", destination offset "
                                  << dst_off << ", byte " << i << (inside ? " (copied)" : " (outside the copy)");
        }
      }
    }
  }
}

// From 1 MiB on the copy goes in 512 KiB pieces: lengths at, around and
// well past the piece boundaries copy every byte, in order, and nothing
// beyond the destination.
TEST(CopyBytes, LargeCopiesInPiecesCopyEveryByte) {
  constexpr std::size_t kPiece = std::size_t{512} << 10;
  const std::size_t lens[] = {2 * kPiece - 1, 2 * kPiece, 2 * kPiece + 1, 3 * kPiece - 7, 3 * kPiece + 13,
                              5 * kPiece + 4095};
  std::vector<std::uint8_t> src(6 * kPiece);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>((i * 2654435761u) >> 13);
  std::vector<std::uint8_t> dst(6 * kPiece + 2 * kGuard);
  for (std::size_t len : lens) {
    std::fill(dst.begin(), dst.end(), kUntouched);
    copy_bytes(dst.data() + kGuard, src.data() + 3, len);
    for (std::size_t i = 0; i < dst.size(); ++i) {
      const bool inside = i >= kGuard && i < kGuard + len;
      const std::uint8_t want = inside ? src[3 + i - kGuard] : kUntouched;
      ASSERT_EQ(dst[i], want) << "len " << len << ", byte " << i << (inside ? " (copied)" : " (outside the copy)");
    }
  }
}

TEST(CopyBytes, ZeroLengthAcceptsNullPointers) {
  // An empty span's data() may be null (a frame without payload).
  copy_bytes(nullptr, nullptr, 0);
  SUCCEED();
}

}  // namespace
}  // namespace rma
