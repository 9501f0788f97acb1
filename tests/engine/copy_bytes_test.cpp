// copy_bytes: every length from 0 to past the inline limits (64 bytes, and
// 512 with AVX-512) and the AVX-512 page copy (4096) copies exactly its
// bytes, at every alignment of source and destination (from 601 bytes on
// at four), and touches no byte around the destination.
#include "rma/sdk/copy_bytes.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace rma {
namespace {

// Past the 64-byte inline limit and its 32/16/8/4 steps, past the AVX-512
// copy's 128/256/512 steps (at every alignment) and past its 4096-byte page
// copy.
constexpr std::size_t kMaxLen = 4200;
constexpr std::size_t kEveryAlignmentUpTo = 600;
constexpr std::size_t kGuard = 16;
constexpr std::uint8_t kUntouched = 0xA5;

TEST(CopyBytes, CopiesExactlyTheBytesAtEveryLengthAndAlignment) {
  std::array<std::uint8_t, kMaxLen + 2 * kGuard + 8> src{};
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>(i * 7 + 1);
  for (std::size_t len = 0; len <= kMaxLen; ++len) {
    const std::size_t step = len <= kEveryAlignmentUpTo ? 1 : 5;
    for (std::size_t src_off = 0; src_off < 8; src_off += step) {
      for (std::size_t dst_off = 0; dst_off < 8; dst_off += step) {
        std::array<std::uint8_t, kMaxLen + 2 * kGuard + 8> dst;
        dst.fill(kUntouched);
        copy_bytes(dst.data() + kGuard + dst_off, src.data() + src_off, len);
        std::array<std::uint8_t, kMaxLen + 2 * kGuard + 8> want;
        want.fill(kUntouched);
        std::copy_n(src.data() + src_off, len, want.data() + kGuard + dst_off);
        if (dst == want) continue;
        for (std::size_t i = 0; i < dst.size(); ++i) {
          const bool inside = i >= kGuard + dst_off && i < kGuard + dst_off + len;
          ASSERT_EQ(dst[i], want[i]) << "len " << len << ", source offset " << src_off << ", destination offset "
                                     << dst_off << ", byte " << i << (inside ? " (copied)" : " (outside the copy)");
        }
      }
    }
  }
}

// The AVX-512 page copy aligns its stores to the destination's next 64-byte
// boundary: every destination offset within a cache line, with source
// offsets that put its loads on and off a line, at lengths that end its
// block loop in each way (n - 256 a multiple of 256 or not, the first block
// just before or after the last 256 bytes).
TEST(CopyBytes, PageCopyAtEveryDestinationOffsetInALine) {
  alignas(64) static std::uint8_t src[kPageCopyMax + 128];
  alignas(64) static std::uint8_t dst[kPageCopyMax + 128 + 2 * kGuard];
  for (std::size_t i = 0; i < sizeof src; ++i) src[i] = static_cast<std::uint8_t>(i * 13 + 5);
  const std::size_t lens[] = {513, 575, 576, 577, 600, 767, 768, 769, 1024, 2047, 2048, 3000, 4095, 4096};
  for (std::size_t len : lens) {
    for (std::size_t dst_off = 0; dst_off < 64; ++dst_off) {
      for (std::size_t src_off : {std::size_t{0}, std::size_t{1}, std::size_t{16}, dst_off, std::size_t{63}}) {
        std::fill(std::begin(dst), std::end(dst), kUntouched);
        copy_bytes(dst + kGuard + dst_off, src + src_off, len);
        for (std::size_t i = 0; i < sizeof dst; ++i) {
          const bool inside = i >= kGuard + dst_off && i < kGuard + dst_off + len;
          const std::uint8_t want = inside ? src[src_off + i - kGuard - dst_off] : kUntouched;
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

// The AVX-512 copies' source and destination each end at a page whose next
// page is inaccessible: they read and write nothing past either.
TEST(CopyBytes, MidSizeCopyStopsAtTheEndOfBothRanges) {
  RecordProperty("mid_size_copy_inline", copy_bytes_mid_inline() ? "yes" : "no (memcpy)");
  const long page = ::sysconf(_SC_PAGESIZE);
  auto* area = static_cast<std::uint8_t*>(
      ::mmap(nullptr, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(area, MAP_FAILED);
  ASSERT_EQ(::mprotect(area + page, page, PROT_NONE), 0);
  ASSERT_EQ(::mprotect(area + 3 * page, page, PROT_NONE), 0);
  std::uint8_t* const src_end = area + page;
  std::uint8_t* const dst_end = area + 3 * page;
  for (std::size_t len = 65; len <= kPageCopyMax && len <= static_cast<std::size_t>(page); ++len) {
    std::uint8_t* src = src_end - len;
    std::uint8_t* dst = dst_end - len;
    for (std::size_t i = 0; i < len; ++i) src[i] = static_cast<std::uint8_t>(len + i);
    copy_bytes(dst, src, len);
    ASSERT_TRUE(std::equal(src, src + len, dst)) << "len " << len;
  }
  ::munmap(area, 4 * page);
}

TEST(CopyBytes, ZeroLengthAcceptsNullPointers) {
  // An empty span's data() may be null (a frame without payload).
  copy_bytes(nullptr, nullptr, 0);
  SUCCEED();
}

}  // namespace
}  // namespace rma
