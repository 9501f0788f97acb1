// PacketTemplate: the packets of one connection, prepared once.
//
// Every header byte that stays the same from packet to packet (Ethernet and
// IPv4 addresses, TOS, TTL, UDP ports, P_Key, destination QP) is laid out
// when the connection is made, in two images: the bytes as sent, and the
// bytes as the ICRC sees them (TOS, TTL, IPv4 and UDP checksums and BTH
// byte 4 replaced by ones, roce-v2.md 2.5), with the IPv4 checksum's sum over
// the fixed words. A packet then costs two header copies, the fields that
// change (lengths, IP id, checksum, opcode, flags, PSN, extension headers)
// and one CRC call for a small packet, where build_packet writes every field
// from a Headers and gathers the masked image field by field. The bytes are
// build_packet's for the same headers (wire tests compare them).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "wire/wire.hpp"

namespace rma::roce {

// What changes from one packet of a connection to the next. Extension
// fields are read only for the headers the opcode carries.
struct PacketFields {
  std::uint8_t opcode = 0;
  bool solicited = false;
  bool ack_req = false;
  std::uint16_t ip_id = 0;        // nonzero (roce-v2.md 2.7)
  std::uint32_t psn = 0;          // masked to 24 bits
  // RETH, or AtomicETH's address and key
  std::uint64_t va = 0;
  std::uint32_t rkey = 0;
  std::uint32_t length = 0;       // RETH DMA length
  std::uint64_t swap_add = 0, compare = 0;  // AtomicETH
  std::uint8_t syndrome = 0;      // AETH
  std::uint32_t msn = 0;          // AETH, masked to 24 bits
  std::uint64_t orig = 0;         // AtomicAckETH
  std::uint32_t imm = 0;          // ImmDt, host order
};

class PacketTemplate {
 public:
  // The connection's fixed fields, from `h` (its MACs, IPv4 addresses, TOS,
  // TTL, UDP source port, P_Key and destination QP; the rest is ignored).
  void init(const Headers& h) noexcept;

  // Writes the headers of a packet carrying `payload` into `head` (which
  // must hold header_length(f.opcode) bytes; bytes after them may be
  // overwritten when `head` is longer), then pad and ICRC into `tail`
  // (at least 3 + kIcrcLen bytes). Returns the tail bytes used; 0, writing
  // nothing, for the cases build_packet refuses (an invalid opcode, a
  // payload where the opcode allows none or none where it requires one,
  // more than 65535 IP bytes, buffers too small).
  //
  // With `open_icrc`, the ICRC is left open instead (TxFrame::icrc_open):
  // *open_icrc receives the CRC of the masked headers, the payload is not
  // read, and the tail's last four bytes are zero until write_tx_frame
  // completes them.
  std::size_t build(const PacketFields& f, std::span<std::uint8_t> head, std::span<const std::uint8_t> payload,
                    std::span<std::uint8_t> tail, std::uint32_t* open_icrc = nullptr) const noexcept;

 private:
  static constexpr std::size_t kFixed = kOuterHeadersLen + kBthLen;  // Ethernet .. BTH
  std::array<std::uint8_t, kFixed> sent_{};    // as on the wire (lengths, id, checksum, BTH varying bytes 0)
  std::array<std::uint8_t, kFixed> masked_{};  // as the ICRC sees it
  std::uint32_t ip_sum_ = 0;                   // one's-complement sum of the fixed IPv4 header words
  std::uint8_t resv8a_ = 0;                    // BTH byte 4 as sent (FECN/BECN)
};

}  // namespace rma::roce
