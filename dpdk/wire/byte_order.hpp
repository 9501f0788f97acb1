// Private to dpdk/wire: big-endian loads and stores on raw bytes, and the
// byte offsets of the fixed RoCE v2 header fields. Nothing depends on
// alignment or host endianness.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "wire/wire.hpp"

namespace rma::roce::detail {

// Each is one unaligned load or store and a byte swap: memcpy says so to the
// compiler without assuming alignment; the swap is skipped on a big-endian host.
template <typename T>
inline T to_big_endian(T v) noexcept {
  if constexpr (std::endian::native == std::endian::big || sizeof(T) == 1) {
    return v;
  } else if constexpr (sizeof(T) == 2) {
    return static_cast<T>(__builtin_bswap16(v));
  } else if constexpr (sizeof(T) == 4) {
    return static_cast<T>(__builtin_bswap32(v));
  } else {
    return static_cast<T>(__builtin_bswap64(v));
  }
}
template <typename T>
[[gnu::always_inline]] inline T load_be(const std::uint8_t* p) noexcept {
  T v;
  std::memcpy(&v, p, sizeof v);
  return to_big_endian(v);
}
template <typename T>
[[gnu::always_inline]] inline void store_be(std::uint8_t* p, T v) noexcept {
  v = to_big_endian(v);
  std::memcpy(p, &v, sizeof v);
}

inline std::uint16_t load_be16(const std::uint8_t* p) noexcept { return load_be<std::uint16_t>(p); }
inline std::uint32_t load_be24(const std::uint8_t* p) noexcept {
  return (std::uint32_t{p[0]} << 16) | (std::uint32_t{p[1]} << 8) | p[2];
}
inline std::uint32_t load_be32(const std::uint8_t* p) noexcept { return load_be<std::uint32_t>(p); }
inline std::uint64_t load_be64(const std::uint8_t* p) noexcept { return load_be<std::uint64_t>(p); }
inline void store_be16(std::uint8_t* p, std::uint16_t v) noexcept { store_be(p, v); }
inline void store_be24(std::uint8_t* p, std::uint32_t v) noexcept {
  p[0] = static_cast<std::uint8_t>(v >> 16);
  p[1] = static_cast<std::uint8_t>(v >> 8);
  p[2] = static_cast<std::uint8_t>(v);
}
inline void store_be32(std::uint8_t* p, std::uint32_t v) noexcept { store_be(p, v); }
inline void store_be64(std::uint8_t* p, std::uint64_t v) noexcept { store_be(p, v); }
inline void store_le32(std::uint8_t* p, std::uint32_t v) noexcept {
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  std::memcpy(p, &v, sizeof v);
}
inline std::uint32_t load_le32(const std::uint8_t* p) noexcept {
  std::uint32_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  return v;
}

// Frame offsets (Ethernet header first).
constexpr std::size_t kEthTypeOff = 12;
constexpr std::uint16_t kEtherTypeIpv4 = 0x0800;
constexpr std::size_t kIpOff = kEthHeaderLen;
constexpr std::size_t kUdpOff = kIpOff + kIpv4HeaderLen;
constexpr std::size_t kBthOff = kOuterHeadersLen;
constexpr std::size_t kExtOff = kBthOff + kBthLen;

// Offsets inside the IPv4 header.
constexpr std::size_t kIpVerIhl = 0, kIpTos = 1, kIpTotLen = 2, kIpId = 4, kIpFrag = 6, kIpTtl = 8,
                      kIpProto = 9, kIpCsum = 10, kIpSrc = 12, kIpDst = 16;
constexpr std::uint8_t kIpProtoUdp = 17;
constexpr std::uint16_t kIpFlagDf = 0x4000;
// Offsets inside the UDP header.
constexpr std::size_t kUdpSport = 0, kUdpDport = 2, kUdpLen = 4, kUdpCsum = 6;
// Offsets inside the BTH.
constexpr std::size_t kBthOpcode = 0, kBthFlags = 1, kBthPkey = 2, kBthResv8a = 4, kBthQpn = 5,
                      kBthAckReq = 8, kBthPsn = 9;
constexpr std::uint8_t kBthSe = 0x80, kBthMig = 0x40, kBthPadMask = 0x30, kBthTverMask = 0x0F;
constexpr std::uint8_t kBthFecn = 0x80, kBthBecn = 0x40, kBthAckReqBit = 0x80;

// Longest run of extension headers any RC opcode carries (AtomicETH).
constexpr std::size_t kMaxExtLen = kAtomicEthLen;

// Internet checksum of an IPv4 header (20 bytes), with the checksum field
// taken as is: 0 for a header whose checksum field holds the right value.
inline std::uint16_t ipv4_checksum_fold(const std::uint8_t* ip) noexcept {
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i < kIpv4HeaderLen; i += 2) sum += load_be16(ip + i);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum & 0xFFFF);
}

}  // namespace rma::roce::detail
