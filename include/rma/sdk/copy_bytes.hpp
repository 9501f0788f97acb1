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
// From 65 to 512 bytes, on x86-64 CPUs with AVX-512, the copy is inline too:
// up to eight 64-byte loads from the two ends of the source, then the
// stores, as glibc's AVX-512 memcpy does it at these sizes, again without
// the call. A 512 B READ of the shm provider took 2-3 ns less of about 22
// (alternating pinned pairs of `rma_read_lat -s 512`, bench/README.md),
// which the call and the registers it makes the caller save had cost.
// From 513 to 4096 bytes on the same CPUs, a loop of 256-byte blocks (four
// 64-byte loads, then the stores, on the destination's 64-byte boundaries;
// one call): glibc 2.36's memcpy, `rep
// movsb` from 2 KiB on, ran on the Zen 5 host at about half the loop's speed
// at 4 KiB while both ranges were in the caches (`rma_engine_bench
// --benchmark_filter='BM_(CopyBytes|Memcpy)'`, bench/README.md: 35.6
// against 19.3 ns) and as fast when they came from memory (blocks spread
// over 64 MiB: 358 against 364 ns); from 8 KiB on, from memory, `rep movsb`
// was about 10 % faster in one-process tests, so larger copies stay glibc's. The shm provider's 4 KiB READ took 45 instead of 51 ns,
// its 4 KiB WRITE stream moved 130,000 instead of 92,000 MiB/s
// (bench/README.md).
// The loads and stores are in inline assembly, which the sanitizers do not
// see, so under ASan or TSan the copy first tells them the two ranges.
//
// Header-only and hidden: each library that includes it keeps its own copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RMA_COPY_BYTES_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define RMA_COPY_BYTES_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(RMA_COPY_BYTES_ASAN)
#define RMA_COPY_BYTES_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__) && !defined(RMA_COPY_BYTES_TSAN)
#define RMA_COPY_BYTES_TSAN 1
#endif
#if defined(RMA_COPY_BYTES_ASAN)
#include <sanitizer/asan_interface.h>
#endif
#if defined(RMA_COPY_BYTES_TSAN)
// TSan's runtime exports these (what its instrumentation calls around a
// memcpy); no header declares them.
extern "C" void __tsan_read_range(void* addr, unsigned long size);
extern "C" void __tsan_write_range(void* addr, unsigned long size);
#endif

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
#if defined(__x86_64__)
// Whether this CPU (and the kernel, which must save the zmm registers) has
// AVX-512F. Read once per library at load; __builtin_cpu_init first because
// static initialisers may run before libgcc's own.
inline const bool kCpuHasAvx512 = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") != 0;
}();

// zmm16-24 only: code built without AVX-512 never uses them, and they are
// not the registers whose upper halves make SSE code pay a transition.
#if defined(__AVX512F__)
#define RMA_COPY_BYTES_CLOBBERS \
  "memory", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24"
#else
#define RMA_COPY_BYTES_CLOBBERS "memory"
#endif

// 64 < n <= kMidCopyMax bytes with AVX-512: the first and the last 64, 128
// or 256 bytes (they overlap), all loaded before any is stored. The last 64
// bytes are stored last, and x86 makes stores visible in order: a peer that
// polls a message's last byte (as perftest's and our latency tests do)
// sees the rest with it.
[[gnu::always_inline]] inline void copy_mid_avx512(unsigned char* d, const unsigned char* s, std::size_t n) noexcept {
  const unsigned char* se = s + n;
  unsigned char* de = d + n;
  if (n > 256) {
    asm volatile(
        "vmovdqu64 (%[s]), %%zmm16\n\t"
        "vmovdqu64 64(%[s]), %%zmm17\n\t"
        "vmovdqu64 128(%[s]), %%zmm18\n\t"
        "vmovdqu64 192(%[s]), %%zmm19\n\t"
        "vmovdqu64 -256(%[se]), %%zmm20\n\t"
        "vmovdqu64 -192(%[se]), %%zmm21\n\t"
        "vmovdqu64 -128(%[se]), %%zmm22\n\t"
        "vmovdqu64 -64(%[se]), %%zmm23\n\t"
        "vmovdqu64 %%zmm16, (%[d])\n\t"
        "vmovdqu64 %%zmm17, 64(%[d])\n\t"
        "vmovdqu64 %%zmm18, 128(%[d])\n\t"
        "vmovdqu64 %%zmm19, 192(%[d])\n\t"
        "vmovdqu64 %%zmm20, -256(%[de])\n\t"
        "vmovdqu64 %%zmm21, -192(%[de])\n\t"
        "vmovdqu64 %%zmm22, -128(%[de])\n\t"
        "vmovdqu64 %%zmm23, -64(%[de])"
        :
        : [s] "r"(s), [se] "r"(se), [d] "r"(d), [de] "r"(de)
        : RMA_COPY_BYTES_CLOBBERS);
  } else if (n > 128) {
    asm volatile(
        "vmovdqu64 (%[s]), %%zmm16\n\t"
        "vmovdqu64 64(%[s]), %%zmm17\n\t"
        "vmovdqu64 -128(%[se]), %%zmm18\n\t"
        "vmovdqu64 -64(%[se]), %%zmm19\n\t"
        "vmovdqu64 %%zmm16, (%[d])\n\t"
        "vmovdqu64 %%zmm17, 64(%[d])\n\t"
        "vmovdqu64 %%zmm18, -128(%[de])\n\t"
        "vmovdqu64 %%zmm19, -64(%[de])"
        :
        : [s] "r"(s), [se] "r"(se), [d] "r"(d), [de] "r"(de)
        : RMA_COPY_BYTES_CLOBBERS);
  } else {
    asm volatile(
        "vmovdqu64 (%[s]), %%zmm16\n\t"
        "vmovdqu64 -64(%[se]), %%zmm17\n\t"
        "vmovdqu64 %%zmm16, (%[d])\n\t"
        "vmovdqu64 %%zmm17, -64(%[de])"
        :
        : [s] "r"(s), [se] "r"(se), [d] "r"(d), [de] "r"(de)
        : RMA_COPY_BYTES_CLOBBERS);
  }
}

// kMidCopyMax < n <= kPageCopyMax bytes with AVX-512, in one piece of
// assembly: 256-byte blocks (four loads, then the four stores) from the
// destination's first 64-byte boundary on, while a block starts before the
// last 256 bytes; then the first 64 bytes when the destination does not
// start on a boundary (loaded first); then the last 256 bytes, the last 64
// stored last. Stores that straddle two cache lines cost twice: with blocks
// from the start of a destination 16 bytes past a line (where a SHMEM heap
// block of 2 KiB or more starts, and malloc's data), a copy from malloc's
// data took 23.7 ns for 2 KiB and 39.5 for 4 KiB, glibc's memcpy, which
// aligns its stores, 15.8 and 26.2; now 16.9 and 18.6 (an Intel Xeon host,
// both ranges cached, `rma_engine_bench --benchmark_filter='BM_CopyBytes/.*/0/1'`,
// bench/README.md; a destination on a line boundary unchanged). A call: at
// these sizes it costs little against the copy.
[[gnu::noinline]] inline void copy_page_avx512(unsigned char* d, const unsigned char* s, std::size_t n) noexcept {
  const unsigned char* se = s + n;
  unsigned char* de = d + n;
  // n > 512, so the first block, at most 63 bytes in, starts before the
  // last 256: the loop runs at least once.
  const std::size_t skew = (64 - (reinterpret_cast<std::uintptr_t>(d) & 63)) & 63;
  unsigned char* const dlast = de - 256;
  unsigned char* d0;
  asm volatile(
      "mov %[d], %[d0]\n\t"
      "test %[skew], %[skew]\n\t"
      "jz 1f\n\t"
      "vmovdqu64 (%[s]), %%zmm24\n\t"
      "add %[skew], %[s]\n\t"
      "add %[skew], %[d]\n"
      "1:\n\t"
      "vmovdqu64 (%[s]), %%zmm16\n\t"
      "vmovdqu64 64(%[s]), %%zmm17\n\t"
      "vmovdqu64 128(%[s]), %%zmm18\n\t"
      "vmovdqu64 192(%[s]), %%zmm19\n\t"
      "vmovdqu64 %%zmm16, (%[d])\n\t"
      "vmovdqu64 %%zmm17, 64(%[d])\n\t"
      "vmovdqu64 %%zmm18, 128(%[d])\n\t"
      "vmovdqu64 %%zmm19, 192(%[d])\n\t"
      "add $256, %[s]\n\t"
      "add $256, %[d]\n\t"
      "cmp %[dlast], %[d]\n\t"
      "jb 1b\n\t"
      "test %[skew], %[skew]\n\t"
      "jz 2f\n\t"
      "vmovdqu64 %%zmm24, (%[d0])\n"
      "2:\n\t"
      "vmovdqu64 -256(%[se]), %%zmm20\n\t"
      "vmovdqu64 -192(%[se]), %%zmm21\n\t"
      "vmovdqu64 -128(%[se]), %%zmm22\n\t"
      "vmovdqu64 -64(%[se]), %%zmm23\n\t"
      "vmovdqu64 %%zmm20, -256(%[de])\n\t"
      "vmovdqu64 %%zmm21, -192(%[de])\n\t"
      "vmovdqu64 %%zmm22, -128(%[de])\n\t"
      "vmovdqu64 %%zmm23, -64(%[de])"
      : [s] "+r"(s), [d] "+r"(d), [d0] "=&r"(d0)
      : [se] "r"(se), [de] "r"(de), [skew] "r"(skew), [dlast] "r"(dlast)
      : RMA_COPY_BYTES_CLOBBERS, "cc");
}
#undef RMA_COPY_BYTES_CLOBBERS
#endif

}  // namespace detail

// Whether copies of 65 to kMidCopyMax bytes are inline on this CPU, and
// those up to kPageCopyMax go in AVX-512 blocks.
[[gnu::always_inline]] inline bool copy_bytes_mid_inline() noexcept {
#if defined(__x86_64__)
  return detail::kCpuHasAvx512;
#else
  return false;
#endif
}

namespace detail {
// Before a copy in inline assembly, which the sanitizers do not see: under
// ASan a range it calls bad goes to memcpy, whose interceptor reports it
// (true: copied); under TSan it is told both ranges.
[[gnu::always_inline]] inline bool copied_for_sanitizer(unsigned char* d, const unsigned char* s,
                                                        std::size_t n) noexcept {
#if defined(RMA_COPY_BYTES_ASAN)
  if (__asan_region_is_poisoned(const_cast<unsigned char*>(s), n) != nullptr ||
      __asan_region_is_poisoned(d, n) != nullptr) {
    std::memcpy(d, s, n);
    return true;
  }
#endif
#if defined(RMA_COPY_BYTES_TSAN)
  __tsan_read_range(const_cast<unsigned char*>(s), n);
  __tsan_write_range(d, n);
#endif
  (void)d, (void)s, (void)n;
  return false;
}
}  // namespace detail

// 64 < n <= kMidCopyMax bytes where copy_bytes_mid_inline(): inline and
// without a call (elsewhere, and for a range ASan calls bad, memcpy).
[[gnu::always_inline]] inline void copy_mid_bytes(void* dst, const void* src, std::size_t n) noexcept {
#if defined(__x86_64__)
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  if (!detail::copied_for_sanitizer(d, s, n)) detail::copy_mid_avx512(d, s, n);
#else
  std::memcpy(dst, src, n);
#endif
}

// The largest copy copy_mid_bytes() takes.
inline constexpr std::size_t kMidCopyMax = 512;

// The largest copy copy_page_bytes() takes.
inline constexpr std::size_t kPageCopyMax = 4096;

// kMidCopyMax < n <= kPageCopyMax bytes where copy_bytes_mid_inline() (the
// same CPUs): AVX-512 blocks, one call (elsewhere, and for a range ASan
// calls bad, memcpy).
[[gnu::always_inline]] inline void copy_page_bytes(void* dst, const void* src, std::size_t n) noexcept {
#if defined(__x86_64__)
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  if (!detail::copied_for_sanitizer(d, s, n)) detail::copy_page_avx512(d, s, n);
#else
  std::memcpy(dst, src, n);
#endif
}

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
    if (n <= kPageCopyMax && copy_bytes_mid_inline()) {
      if (n <= kMidCopyMax) {
        copy_mid_bytes(d, s, n);
      } else {
        copy_page_bytes(d, s, n);
      }
      return;
    }
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
