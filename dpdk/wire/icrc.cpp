// RoCE v2 ICRC exactly as rdma_rxe computes it (rxe_icrc.c): CRC-32 over
// 8 x 0xFF || masked IPv4 header || masked UDP header || masked BTH ||
// remaining transport headers || payload || pad, stored least-significant
// byte first. The CRC itself is ISA-L's crc32_gzip_refl (PCLMULQDQ/VPCLMULQDQ),
// which chains like zlib's crc32.
#include <isa-l/crc.h>

#include <algorithm>
#include <cstring>
#include <span>

#include "wire/byte_order.hpp"
#include "wire/crc_fold.hpp"
#include "wire/icrc.hpp"
#include "wire/wire.hpp"

namespace rma::roce {
namespace detail {

namespace {
// ISA-L's AVX-512 and AVX2 kernels return with the upper halves of the
// vector registers dirty (no vzeroupper). This library is built for
// baseline x86-64, so the legacy-SSE instructions that follow (our header
// copies, memcpy's) then pay, on Intel, a state transition or a false
// dependency each until something clears the state: measured, the first
// SSE load after the CRC took 83 % of PacketTemplate::build's samples in a
// 64 KiB WRITE stream. vzeroupper is an AVX instruction: only where the
// CPU has AVX (and only there can ISA-L have dirtied anything).
#if defined(__x86_64__)
[[gnu::target("avx")]] void clear_upper_vector_state() noexcept { __builtin_ia32_vzeroupper(); }
// A static initializer may run before libgcc's own constructor has filled
// in the CPU model: __builtin_cpu_init first.
const bool kHaveAvx = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx") != 0;
}();
#endif
}  // namespace

std::uint32_t crc32_update(std::uint32_t crc, const std::uint8_t* data, std::size_t len) noexcept {
  if (len == 0) return crc;
  const std::uint32_t out = crc32_gzip_refl(crc, data, len);
#if defined(__x86_64__)
  if (kHaveAvx) clear_upper_vector_state();
#endif
  return out;
}

namespace {
// Offsets, from the start of the IPv4 header, of the bytes that the ICRC
// treats as all ones.
constexpr std::size_t kUdpInIp = kIpv4HeaderLen;
constexpr std::size_t kBthInIp = kIpv4HeaderLen + kUdpHeaderLen;
constexpr std::size_t kMaskedOffsets[] = {
    kIpTos,
    kIpTtl,
    kIpCsum,
    kIpCsum + 1,
    kUdpInIp + kUdpCsum,
    kUdpInIp + kUdpCsum + 1,
    kBthInIp + kBthResv8a,
};
// Bytes copied to the stack: masked headers plus, so short packets take
// one CRC call, the longest extension header run.
constexpr std::size_t kCopyLen = kIpv4HeaderLen + kUdpHeaderLen + kBthLen + kMaxExtLen;
}  // namespace

#if defined(__x86_64__)
namespace {
// The ICRC of 4 to 128 bytes in registers: the masked bytes set and the
// seed's register state added to the first 32 bits by two constant images
// (ShortIcrcTables), the message right-aligned in 128 bytes (zeros before a
// message leave a CRC whose register starts at zero unchanged), then
// folded. Tables of 128 zero bytes and then the pattern from the IPv4
// header on: a load at `len` bytes in puts the pattern under the message
// wherever it starts. ISA-L's call for the 44-64 bytes of an ACK or a small
// WRITE took about 30 ns with the masking copy before it (whose byte
// stores its wider loads then waited for); this takes about a fifth.
struct ShortIcrcTables {
  alignas(64) std::uint8_t ones[256] = {};
  alignas(64) std::uint8_t state[256] = {};
  constexpr ShortIcrcTables() {
    for (std::size_t off : kMaskedOffsets) ones[128 + off] = 0xFF;
    for (std::size_t i = 0; i < 4; ++i) state[128 + i] = static_cast<std::uint8_t>(~kIcrcSeed >> (8 * i));
  }
};
constexpr ShortIcrcTables kShortIcrc;
constexpr std::size_t kShortIcrcMax = 128;
static_assert(kBthInIp + kBthResv8a < 64, "icrc_begin masks the first 64 bytes only");

[[RMA_FOLD_TARGET]] std::uint32_t icrc_short(const std::uint8_t* ip, std::size_t len) noexcept {
  using namespace crcfold;
  // Masked loads: the bytes before the message are neither read nor faulted on.
  const auto at = [&](std::size_t back) {
    return reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(ip) + len - back);
  };
  const __mmask64 hi_mask = len >= 64 ? ~__mmask64{0} : ~__mmask64{0} << (64 - len);
  __m512i hi = _mm512_maskz_loadu_epi8(hi_mask, at(64));
  hi = _mm512_or_si512(hi, _mm512_loadu_si512(kShortIcrc.ones + len + 64));
  hi = _mm512_xor_si512(hi, _mm512_loadu_si512(kShortIcrc.state + len + 64));
  if (len <= 64) return reduce_vector(hi);
  __m512i lo = _mm512_maskz_loadu_epi8(~__mmask64{0} << (kShortIcrcMax - len), at(128));
  lo = _mm512_or_si512(lo, _mm512_loadu_si512(kShortIcrc.ones + len));
  lo = _mm512_xor_si512(lo, _mm512_loadu_si512(kShortIcrc.state + len));
  return reduce_vector(fold(lo, broadcast(kFold512), hi));
}

const bool kShortIcrcFolds = crcfold::cpu_folds();
}  // namespace
#endif

std::uint32_t icrc_begin(const std::uint8_t* ip, std::size_t len) noexcept {
#if defined(__x86_64__)
  if (kShortIcrcFolds && len >= 4) {
    if (len <= kShortIcrcMax) return icrc_short(ip, len);
    // Every masked byte lies in the first 64: those in registers, the rest
    // (a payload) as it is.
    return crc32_update(icrc_short(ip, 64), ip + 64, len - 64);
  }
#endif
  std::uint8_t buf[kCopyLen];
  const std::size_t n = std::min(len, kCopyLen);
  if (n != 0) std::memcpy(buf, ip, n);
  for (std::size_t off : kMaskedOffsets) {
    if (off < n) buf[off] = 0xFF;
  }
  std::uint32_t crc = crc32_update(kIcrcSeed, buf, n);
  return crc32_update(crc, ip + n, len - n);
}

std::uint32_t icrc_of_masked(const std::uint8_t* masked, std::size_t len) noexcept {
#if defined(__x86_64__)
  if (kShortIcrcFolds && len <= kShortIcrcMax && len >= 4) return icrc_short(masked, len);  // masks again: no change
#endif
  return crc32_update(kIcrcSeed, masked, len);
}

std::uint32_t icrc_pieces(const std::uint8_t* ip, std::size_t hdr_len, const std::uint8_t* payload,
                          std::size_t payload_len, std::size_t pad) noexcept {
  static constexpr std::uint8_t kZeros[4] = {};
  constexpr std::size_t kGather = 256;
  if (hdr_len <= kCopyLen && pad <= 3 && payload_len <= kGather - kCopyLen - 3) {
    std::uint8_t buf[kGather];
    if (hdr_len != 0) std::memcpy(buf, ip, hdr_len);
    for (std::size_t off : kMaskedOffsets) {
      if (off < hdr_len) buf[off] = 0xFF;
    }
    if (payload_len != 0) std::memcpy(buf + hdr_len, payload, payload_len);
    std::memset(buf + hdr_len + payload_len, 0, pad);
    // icrc_of_masked masks again: only where no payload byte lies under a mask.
    if (hdr_len > kBthInIp + kBthResv8a) return icrc_of_masked(buf, hdr_len + payload_len + pad);
    return crc32_update(kIcrcSeed, buf, hdr_len + payload_len + pad);
  }
  std::uint32_t crc = icrc_begin(ip, hdr_len);
  crc = crc32_update(crc, payload, payload_len);
  for (std::size_t left = pad; left != 0;) {
    const std::size_t n = std::min(left, sizeof kZeros);
    crc = crc32_update(crc, kZeros, n);
    left -= n;
  }
  return crc;
}

}  // namespace detail

std::uint32_t compute_icrc(std::span<const std::uint8_t> frame_without_icrc) noexcept {
  if (frame_without_icrc.size() <= kEthHeaderLen) return detail::kIcrcSeed;  // the seed: no bytes
  return detail::icrc_begin(frame_without_icrc.data() + kEthHeaderLen,
                            frame_without_icrc.size() - kEthHeaderLen);
}

}  // namespace rma::roce
