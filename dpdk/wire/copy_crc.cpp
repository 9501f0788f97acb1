// A copy that continues a CRC-32 over the bytes it copies, in one pass: the
// ICRC of a frame's payload computed while the payload is copied into the
// frame's buffer (write_tx_frame), where a separate CRC pass read the
// payload a second time. Measured (bench/README.md): a 64 KiB WRITE stream's
// sender spent a quarter of its time in that pass.
//
// The CRC is the carry-less-multiply folding of Intel's "Fast CRC
// Computation for Generic Polynomials Using PCLMULQDQ" on 512-bit vectors
// (VPCLMULQDQ): four vectors of 64 bytes hold the running remainder of 256
// bytes; each 256 bytes of source are loaded once, stored to the
// destination, and folded in. At the end the sixteen 128-bit lanes are
// folded onto the last one, whose 16 bytes have the message's CRC (with no
// pre- or post-inversion) as their own, reduced to 32 bits with Barrett's
// method; ISA-L computes the bytes after the last whole block, so the
// result is exactly crc32_gzip_refl's.
// CPUs without AVX-512 and VPCLMULQDQ, and copies shorter than the blocks,
// take memcpy and then ISA-L's CRC.
#include <cstring>

#include "wire/icrc.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace rma::roce::detail {

namespace {

#if defined(__x86_64__)
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

constexpr std::size_t kBlock = 256;

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

// Copies and folds whole 256-byte blocks (len: a multiple of 256, at least
// one block); returns the CRC of them, zlib-style, continued from `crc`.
[[RMA_FOLD_TARGET]] std::uint32_t copy_fold_blocks(std::uint8_t* dst, const std::uint8_t* src, std::size_t len,
                                                   std::uint32_t crc) noexcept {
  __m512i x0 = _mm512_loadu_si512(src);
  __m512i x1 = _mm512_loadu_si512(src + 64);
  __m512i x2 = _mm512_loadu_si512(src + 128);
  __m512i x3 = _mm512_loadu_si512(src + 192);
  _mm512_storeu_si512(dst, x0);
  _mm512_storeu_si512(dst + 64, x1);
  _mm512_storeu_si512(dst + 128, x2);
  _mm512_storeu_si512(dst + 192, x3);
  // The register state (the complement of a zlib-style CRC) added to the
  // message's first 32 bits is the same as starting from it.
  x0 = _mm512_xor_si512(x0, _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(~crc))));
  const __m512i k2048 = broadcast(kFold2048);
  for (std::size_t off = kBlock; off < len; off += kBlock) {
    const __m512i y0 = _mm512_loadu_si512(src + off);
    const __m512i y1 = _mm512_loadu_si512(src + off + 64);
    const __m512i y2 = _mm512_loadu_si512(src + off + 128);
    const __m512i y3 = _mm512_loadu_si512(src + off + 192);
    _mm512_storeu_si512(dst + off, y0);
    _mm512_storeu_si512(dst + off + 64, y1);
    _mm512_storeu_si512(dst + off + 128, y2);
    _mm512_storeu_si512(dst + off + 192, y3);
    x0 = fold(x0, k2048, y0);
    x1 = fold(x1, k2048, y1);
    x2 = fold(x2, k2048, y2);
    x3 = fold(x3, k2048, y3);
  }
  // Four vectors onto the last one, then its four lanes onto the last lane.
  __m512i acc = fold(x0, broadcast(kFold1536), x3);
  acc = fold(x1, broadcast(kFold1024), acc);
  acc = fold(x2, broadcast(kFold512), acc);
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

const bool kHaveFold = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("vpclmulqdq") &&
         __builtin_cpu_supports("pclmul");
}();
#endif

}  // namespace

bool copy_crc32_folds() noexcept {
#if defined(__x86_64__)
  return kHaveFold;
#else
  return false;
#endif
}

std::uint32_t copy_crc32_update(std::uint8_t* dst, const std::uint8_t* src, std::size_t len,
                                std::uint32_t crc) noexcept {
  std::size_t done = 0;
#if defined(__x86_64__)
  if (kHaveFold && len >= kBlock) {
    done = len - len % kBlock;
    crc = copy_fold_blocks(dst, src, done, crc);
  }
#endif
  if (done == len) return crc;
  std::memcpy(dst + done, src + done, len - done);
  return crc32_update(crc, src + done, len - done);
}

}  // namespace rma::roce::detail
