// Private to dpdk/wire: the pieces of the RoCE v2 ICRC (roce-v2.md 2.5) so
// build and parse can chain header, payload and pad without copying more
// than the masked headers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rma::roce::detail {

// zlib-style CRC-32 (IEEE, reflected, pre- and post-inverted) of eight 0xFF
// bytes: the masked "LRH" every RoCE v2 ICRC starts with. rdma_rxe seeds its
// raw crc32_le with the complement of this, 0xDEBB20E3.
constexpr std::uint32_t kIcrcSeed = 0x2144DF1C;

// Continues a zlib-style CRC-32 (crc32(prev, buf, len) as in zlib; ISA-L
// crc32_gzip_refl).
std::uint32_t crc32_update(std::uint32_t crc, const std::uint8_t* data, std::size_t len) noexcept;

// Copies `len` bytes from `src` to `dst` (not overlapping) and continues a
// zlib-style CRC-32 over them, in one pass where the CPU can fold 512-bit
// vectors (copy_crc32_folds()), else as memcpy and crc32_update.
std::uint32_t copy_crc32_update(std::uint8_t* dst, const std::uint8_t* src, std::size_t len,
                                std::uint32_t crc) noexcept;
bool copy_crc32_folds() noexcept;

// Starts an ICRC: seed, then `len` bytes from the IPv4 header on, with the
// invariant fields (IPv4 TOS, TTL, checksum; UDP checksum; BTH byte 4)
// replaced by ones. Masks apply to whichever of those bytes lie within
// `len`; an IPv4 header without options (IHL 5) is assumed.
std::uint32_t icrc_begin(const std::uint8_t* ip, std::size_t len) noexcept;

// The same for `len` bytes whose invariant fields are already ones. It may
// set them again, so the bytes at those offsets must be header bytes (never
// a payload's after a header shorter than IPv4 + UDP + BTH).
std::uint32_t icrc_of_masked(const std::uint8_t* masked, std::size_t len) noexcept;

// The whole ICRC of a packet built in pieces: `hdr_len` bytes of headers from
// the IPv4 header on (masked as icrc_begin), the payload, `pad` zero bytes.
// A small packet is gathered on the stack and takes one CRC call instead of
// one per piece (the CRC's fixed cost dominates at these sizes).
std::uint32_t icrc_pieces(const std::uint8_t* ip, std::size_t hdr_len, const std::uint8_t* payload,
                          std::size_t payload_len, std::size_t pad) noexcept;

}  // namespace rma::roce::detail
