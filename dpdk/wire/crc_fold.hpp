// Private to dpdk/wire: the carry-less-multiply folding of a CRC-32 on
// 512-bit vectors (Intel's "Fast CRC Computation for Generic Polynomials
// Using PCLMULQDQ", on VPCLMULQDQ), shared by the copy that continues a CRC
// (copy_crc.cpp) and the ICRC of short packets (icrc.cpp). Callers check
// cpu_folds() before they call anything here.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>

namespace rma::roce::detail::crcfold {

// x^(d+32) and x^(d-32) modulo the CRC-32 polynomial, bit-reflected over
// 32 bits and shifted left by one (the paper's convention for reflected
// CRCs; the 512- and 128-bit ones are those every PCLMULQDQ CRC-32 uses):
// multiplying a 128-bit lane's low and high halves by them moves the lane
// d bits further along the message. CopyCrc's tests check every one of
// them against a bit-at-a-time CRC.
struct FoldConstants {
  std::uint64_t low, high;
};
constexpr FoldConstants kFold2048{0x11542778aULL, 0x1322d1430ULL};  // one 256-byte block
constexpr FoldConstants kFold1536{0x1821d8bc0ULL, 0x12e958ac4ULL};
constexpr FoldConstants kFold1024{0x1e88ef372ULL, 0x14a7fe880ULL};
constexpr FoldConstants kFold512{0x154442bd4ULL, 0x1c6e41596ULL};
constexpr FoldConstants kFold384{0x3db1ecdcULL, 0x174359406ULL};
constexpr FoldConstants kFold256{0xf1da05aaULL, 0x15a546366ULL};
constexpr FoldConstants kFold128{0x1751997d0ULL, 0x0ccaa009eULL};
constexpr long long kFold64 = 0x163cd6124LL;      // the last 32 bits moved on by 64
constexpr long long kBarrettMu = 0x1f7011641LL;   // floor(x^64 / P(x)), reflected
constexpr long long kPolynomial = 0x1db710641LL;  // P(x), reflected

constexpr std::size_t kBlock = 256;  // what the copy folds at a time: four vectors

#define RMA_FOLD_TARGET gnu::target("avx512f,avx512bw,avx512vl,vpclmulqdq,pclmul")

[[RMA_FOLD_TARGET]] inline __m512i broadcast(FoldConstants k) noexcept {
  const auto lo = static_cast<long long>(k.low);
  const auto hi = static_cast<long long>(k.high);
  return _mm512_set_epi64(hi, lo, hi, lo, hi, lo, hi, lo);
}

// x * x^d folded, xor y: the lanes of x moved d bits on, added to y.
[[RMA_FOLD_TARGET]] inline __m512i fold(__m512i x, __m512i k, __m512i y) noexcept {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00), _mm512_clmulepi64_epi128(x, k, 0x11), y,
                                   0x96);
}

// The zlib-style CRC of a message whose remainder, folded onto its last 16
// bytes, is `x` (from a zero register): two more folds to 64 bits and a
// Barrett reduction to 32 (the paper's last steps; the constants are those
// of every PCLMULQDQ CRC-32: x^64 mod P(x), Barrett's mu and P(x),
// reflected), inline where ISA-L's call for these 16 bytes took 28 cycles.
[[RMA_FOLD_TARGET]] inline std::uint32_t reduce_lane(__m128i x) noexcept {
  const __m128i k128 = _mm_set_epi64x(static_cast<long long>(kFold128.high), static_cast<long long>(kFold128.low));
  const __m128i low32 = _mm_set_epi32(0, 0, 0, -1);
  // 128 to 96 bits: the low half moved on by 64 bits onto the high half.
  const __m128i t = _mm_xor_si128(_mm_clmulepi64_si128(x, k128, 0x10), _mm_srli_si128(x, 8));
  // 96 to 64 bits.
  const __m128i k64 = _mm_set_epi64x(0, kFold64);
  const __m128i u = _mm_xor_si128(_mm_srli_si128(t, 4), _mm_clmulepi64_si128(_mm_and_si128(t, low32), k64, 0x00));
  // Barrett: the quotient by P(x) from mu, times P(x), off u.
  const __m128i barrett = _mm_set_epi64x(kBarrettMu, kPolynomial);
  __m128i q = _mm_clmulepi64_si128(_mm_and_si128(u, low32), barrett, 0x10);
  q = _mm_clmulepi64_si128(_mm_and_si128(q, low32), barrett, 0x00);
  return ~static_cast<std::uint32_t>(_mm_extract_epi32(_mm_xor_si128(q, u), 1));
}

// Whether this CPU runs what is here, decided on the first call (a
// function-local static, right whenever it is asked). The constants that
// copy it at start-up read false until they are set: an early caller takes
// the ISA-L path, slower but right.
inline bool cpu_folds() noexcept {
  static const bool folds = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("vpclmulqdq") &&
           __builtin_cpu_supports("pclmul");
  }();
  return folds;
}

// The zlib-style CRC of a message whose remainder, folded onto 64 bytes, is
// `acc`: its four 128-bit lanes folded onto the last, then reduced.
[[RMA_FOLD_TARGET]] inline std::uint32_t reduce_vector(__m512i acc) noexcept {
  const __m512i lanes_k = _mm512_set_epi64(0, 0, static_cast<long long>(kFold128.high),
                                           static_cast<long long>(kFold128.low), static_cast<long long>(kFold256.high),
                                           static_cast<long long>(kFold256.low), static_cast<long long>(kFold384.high),
                                           static_cast<long long>(kFold384.low));
  // Lanes 0-2 moved onto lane 3 (whose constants are zero), lane 3 as it is,
  // then the four added: two swaps within the vector.
  const __m512i moved = _mm512_xor_si512(_mm512_clmulepi64_epi128(acc, lanes_k, 0x00),
                                         _mm512_clmulepi64_epi128(acc, lanes_k, 0x11));
  __m512i sum = _mm512_mask_mov_epi64(moved, 0xC0, acc);
  sum = _mm512_xor_si512(sum, _mm512_maskz_shuffle_i64x2(0xFF, sum, sum, 0x4E));
  sum = _mm512_xor_si512(sum, _mm512_maskz_shuffle_i64x2(0xFF, sum, sum, 0xB1));
  // Lane 0 (a masked extract: GCC 12 warns on the cast's undefined upper half).
  return reduce_lane(_mm512_maskz_extracti32x4_epi32(0xF, sum, 0));
}

}  // namespace rma::roce::detail::crcfold
#endif
