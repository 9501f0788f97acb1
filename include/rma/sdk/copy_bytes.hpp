// Short copies of the data path (a mapped WRITE or READ of the shm
// provider, the pieces of a frame that a DPDK port copies into an mbuf).
// Up to 64 bytes they are inline: two overlapping loads and stores of the
// largest fitting width, as glibc's memcpy does it, without the call
// through the PLT and the size dispatch, which at these sizes cost more
// than the copy (three calls per frame were 4 % of an 8 B WRITE stream's
// sender). Larger copies are glibc's memcpy, from 1 MiB on in pieces of
// 512 KiB: glibc stops using `rep movsb` at its rep_movsb_stop_threshold,
// which on AMD CPUs is the L2 size (1 MiB on a Zen 5 host), and above it
// copies with a vector loop that ran 15-20 % slower there (one process,
// pinned, best of 5: 1 MiB 21.2 against 17.9 us in pieces, 2 MiB 46.0
// against 40.7, 16 MiB 485 against 398, 64 MiB 3218 against 2758; 4 MiB
// alike); Open MPI's osc sm, which copies in pieces, put 1 MiB in 18.1 us
// against our 21.4. Pieces of 512 KiB stay under that threshold wherever
// L2 is at least that large. The ranges must not overlap.
//
// Header-only and hidden: each library that includes it keeps its own copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace rma {

namespace detail {
inline constexpr std::size_t kCopyPiece = std::size_t{512} << 10;

// n >= 2 * kCopyPiece bytes, in kCopyPiece pieces (the last one longer).
[[gnu::noinline]] inline void copy_pieces(unsigned char* d, const unsigned char* s, std::size_t n) noexcept {
  for (; n >= 2 * kCopyPiece; n -= kCopyPiece, d += kCopyPiece, s += kCopyPiece) std::memcpy(d, s, kCopyPiece);
  std::memcpy(d, s, n);
}

// n bytes, W <= n <= 2W: the first W and the last W (they overlap), both
// loaded before either is stored.
template <std::size_t W>
[[gnu::always_inline]] inline void copy_ends(unsigned char* d, const unsigned char* s, std::size_t n) noexcept {
  unsigned char head[W], tail[W];
  std::memcpy(head, s, W);
  std::memcpy(tail, s + n - W, W);
  std::memcpy(d, head, W);
  std::memcpy(d + n - W, tail, W);
}
}  // namespace detail

// The largest copy copy_small_bytes() takes.
inline constexpr std::size_t kInlineCopyMax = 64;

// n <= kInlineCopyMax bytes, inline and without a call (a caller whose
// path must not call out: a call makes it save registers).
[[gnu::always_inline]] inline void copy_small_bytes(void* dst, const void* src, std::size_t n) noexcept {
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  if (n >= 32) {
    detail::copy_ends<32>(d, s, n);
  } else if (n >= 16) {
    detail::copy_ends<16>(d, s, n);
  } else if (n >= 8) {
    detail::copy_ends<8>(d, s, n);
  } else if (n >= 4) {
    detail::copy_ends<4>(d, s, n);
  } else if (n != 0) {
    // 1..3 bytes: the first, the last and the middle one (which is one of
    // the two when n < 3).
    const unsigned char first = s[0], middle = s[n / 2], last = s[n - 1];
    d[0] = first;
    d[n / 2] = middle;
    d[n - 1] = last;
  }
}

[[gnu::always_inline]] inline void copy_bytes(void* dst, const void* src, std::size_t n) noexcept {
  if (n > kInlineCopyMax) {
    auto* d = static_cast<unsigned char*>(dst);
    const auto* s = static_cast<const unsigned char*>(src);
    if (n >= 2 * detail::kCopyPiece) [[unlikely]] {
      detail::copy_pieces(d, s, n);
    } else {
      std::memcpy(d, s, n);
    }
  } else {
    copy_small_bytes(dst, src, n);
  }
}

}  // namespace rma
