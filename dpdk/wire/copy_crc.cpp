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

#include "wire/crc_fold.hpp"
#include "wire/icrc.hpp"

namespace rma::roce::detail {

namespace {

#if defined(__x86_64__)
using namespace crcfold;

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
  return reduce_vector(acc);
}

const bool kHaveFold = cpu_folds();
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
  if (kHaveFold && len >= crcfold::kBlock) {
    done = len - len % crcfold::kBlock;
    crc = copy_fold_blocks(dst, src, done, crc);
  }
#endif
  if (done == len) return crc;
  std::memcpy(dst + done, src + done, len - done);
  return crc32_update(crc, src + done, len - done);
}

}  // namespace rma::roce::detail
