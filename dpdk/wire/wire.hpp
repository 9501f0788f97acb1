// RoCE v2 wire format: Ethernet / IPv4 / UDP 4791 / BTH / extension headers /
// payload / pad / ICRC, byte for byte as the InfiniBand spec, RoCE NICs and
// the kernel's rdma_rxe put them on the wire. Layouts, builders, parsers that
// check every field, and the ICRC. No DPDK here (see DESIGN.md).
// Reference: ../shared/reference/roce-v2.md.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "wire/frame.hpp"

namespace rma::roce {

constexpr std::uint16_t kRoceV2UdpPort = 4791;
constexpr std::size_t kEthHeaderLen = 14;
constexpr std::size_t kIpv4HeaderLen = 20;
constexpr std::size_t kUdpHeaderLen = 8;
constexpr std::size_t kBthLen = 12;
constexpr std::size_t kRethLen = 16;
constexpr std::size_t kAethLen = 4;
constexpr std::size_t kAtomicEthLen = 28;
constexpr std::size_t kAtomicAckEthLen = 8;
constexpr std::size_t kImmDtLen = 4;
constexpr std::size_t kIcrcLen = 4;
// Ethernet + IPv4 + UDP: what precedes the BTH.
constexpr std::size_t kOuterHeadersLen = kEthHeaderLen + kIpv4HeaderLen + kUdpHeaderLen;
constexpr std::uint16_t kDefaultPkey = 0xFFFF;

// RC opcodes (IBA table 38, ib_pack.h).
enum class Opcode : std::uint8_t {
  kSendFirst = 0x00,
  kSendMiddle = 0x01,
  kSendLast = 0x02,
  kSendLastImm = 0x03,
  kSendOnly = 0x04,
  kSendOnlyImm = 0x05,
  kWriteFirst = 0x06,
  kWriteMiddle = 0x07,
  kWriteLast = 0x08,
  kWriteLastImm = 0x09,
  kWriteOnly = 0x0A,
  kWriteOnlyImm = 0x0B,
  kReadRequest = 0x0C,
  kReadResponseFirst = 0x0D,
  kReadResponseMiddle = 0x0E,
  kReadResponseLast = 0x0F,
  kReadResponseOnly = 0x10,
  kAcknowledge = 0x11,
  kAtomicAcknowledge = 0x12,
  kCompareSwap = 0x13,
  kFetchAdd = 0x14,
};
std::string_view opcode_name(Opcode op) noexcept;  // "RDMA_WRITE_FIRST"
// Same for a raw BTH opcode byte; "UNKNOWN" for anything not listed above.
std::string_view opcode_name(std::uint8_t opcode) noexcept;

// Which headers follow the BTH, and whether a payload may, must or must not.
enum HeaderBits : std::uint8_t {
  kHasReth = 1u << 0,
  kHasAeth = 1u << 1,
  kHasAtomicEth = 1u << 2,
  kHasAtomicAckEth = 1u << 3,
  kHasImm = 1u << 4,
};
struct OpcodeTraits {
  bool valid = false;
  std::uint8_t headers = 0;     // HeaderBits
  bool has_payload = false;     // payload allowed (may be 0 bytes for ONLY/LAST)
  bool is_request = false;      // requester -> responder
  // FIRST and MIDDLE packets carry a full path MTU of data, so an empty one
  // is malformed (parse_packet: kBadPayload). Implies has_payload.
  bool payload_required = false;
};

namespace detail {
// Bytes of extension headers for a HeaderBits set.
constexpr std::size_t ext_length(std::uint8_t bits) noexcept {
  return ((bits & kHasReth) ? kRethLen : 0) + ((bits & kHasAtomicEth) ? kAtomicEthLen : 0) +
         ((bits & kHasAeth) ? kAethLen : 0) + ((bits & kHasAtomicAckEth) ? kAtomicAckEthLen : 0) +
         ((bits & kHasImm) ? kImmDtLen : 0);
}
constexpr OpcodeTraits request_traits(std::uint8_t headers, bool payload, bool required = false) {
  return OpcodeTraits{true, headers, payload, true, required};
}
constexpr OpcodeTraits response_traits(std::uint8_t headers, bool payload, bool required = false) {
  return OpcodeTraits{true, headers, payload, false, required};
}
constexpr std::size_t kRcOpcodeCount = 0x15;  // 0x00 .. 0x14
// IBA table 38 (roce-v2.md 2.3, rxe_opcode.c), indexed by opcode. Here, not
// in opcodes.cpp, so that every packet built or parsed looks it up inline.
inline constexpr std::array<OpcodeTraits, kRcOpcodeCount> kOpcodeTraits = {{
    /* SEND_FIRST */ request_traits(0, true, true),
    /* SEND_MIDDLE */ request_traits(0, true, true),
    /* SEND_LAST */ request_traits(0, true),
    /* SEND_LAST_WITH_IMMEDIATE */ request_traits(kHasImm, true),
    /* SEND_ONLY */ request_traits(0, true),
    /* SEND_ONLY_WITH_IMMEDIATE */ request_traits(kHasImm, true),
    /* RDMA_WRITE_FIRST */ request_traits(kHasReth, true, true),
    /* RDMA_WRITE_MIDDLE */ request_traits(0, true, true),
    /* RDMA_WRITE_LAST */ request_traits(0, true),
    /* RDMA_WRITE_LAST_WITH_IMMEDIATE */ request_traits(kHasImm, true),
    /* RDMA_WRITE_ONLY */ request_traits(kHasReth, true),
    /* RDMA_WRITE_ONLY_WITH_IMMEDIATE */ request_traits(kHasReth | kHasImm, true),
    /* RDMA_READ_REQUEST */ request_traits(kHasReth, false),
    /* RDMA_READ_RESPONSE_FIRST */ response_traits(kHasAeth, true, true),
    /* RDMA_READ_RESPONSE_MIDDLE */ response_traits(0, true, true),
    /* RDMA_READ_RESPONSE_LAST */ response_traits(kHasAeth, true),
    /* RDMA_READ_RESPONSE_ONLY */ response_traits(kHasAeth, true),
    /* ACKNOWLEDGE */ response_traits(kHasAeth, false),
    /* ATOMIC_ACKNOWLEDGE */ response_traits(kHasAeth | kHasAtomicAckEth, false),
    /* COMPARE_SWAP */ request_traits(kHasAtomicEth, false),
    /* FETCH_ADD */ request_traits(kHasAtomicEth, false),
}};
}  // namespace detail

inline OpcodeTraits opcode_traits(std::uint8_t opcode) noexcept {
  return opcode < detail::kRcOpcodeCount ? detail::kOpcodeTraits[opcode] : OpcodeTraits{};
}

// AETH syndromes (IBA 9.7.5.2.2).
enum class AckType : std::uint8_t { kAck = 0, kRnrNak = 1, kNak = 3 };
enum NakCode : std::uint8_t {
  kNakPsnSequenceError = 0,
  kNakInvalidRequest = 1,
  kNakRemoteAccessError = 2,
  kNakRemoteOperationalError = 3,
  kNakInvalidRdRequest = 4,
};
constexpr std::uint8_t make_syndrome(AckType t, std::uint8_t value) noexcept {
  return static_cast<std::uint8_t>((static_cast<std::uint8_t>(t) << 5) | (value & 0x1F));
}
constexpr AckType syndrome_type(std::uint8_t s) noexcept { return static_cast<AckType>(s >> 5); }
constexpr std::uint8_t syndrome_value(std::uint8_t s) noexcept { return s & 0x1F; }
constexpr std::uint8_t kAckUnlimitedCredits = 0x1F;

// Decoded headers, host byte order throughout.
struct Headers {
  // Ethernet / IPv4 / UDP
  MacAddress dst_mac{};
  MacAddress src_mac{};
  std::uint32_t src_ip = 0;
  std::uint32_t dst_ip = 0;
  std::uint16_t ip_id = 0;       // must be nonzero on send (see roce-v2.md 2.7)
  std::uint8_t ttl = 64;
  std::uint8_t tos = 0;
  std::uint16_t src_port = 0xC000;  // flow entropy; receivers ignore it
  // BTH
  std::uint8_t opcode = 0;
  bool solicited = false;
  bool mig_req = false;
  std::uint8_t pad = 0;          // 0..3, filled in by build_packet from the payload length
  std::uint16_t pkey = kDefaultPkey;
  bool fecn = false;
  bool becn = false;
  std::uint32_t dest_qp = 0;     // 24 bits
  bool ack_req = false;
  std::uint32_t psn = 0;         // 24 bits
  // Extension headers, valid per opcode_traits(opcode).headers.
  std::uint64_t reth_va = 0;
  std::uint32_t reth_rkey = 0;
  std::uint32_t reth_length = 0;
  std::uint8_t aeth_syndrome = 0;
  std::uint32_t aeth_msn = 0;    // 24 bits
  std::uint64_t atomic_va = 0;
  std::uint32_t atomic_rkey = 0;
  std::uint64_t atomic_swap_add = 0;
  std::uint64_t atomic_compare = 0;
  std::uint64_t atomic_ack_orig = 0;
  std::uint32_t imm = 0;         // ImmDt, host order
};

// Bytes of Ethernet..last extension header for this opcode (0 if invalid).
inline std::size_t header_length(std::uint8_t opcode) noexcept {
  const OpcodeTraits t = opcode_traits(opcode);
  return t.valid ? kOuterHeadersLen + kBthLen + detail::ext_length(t.headers) : 0;
}

// Writes the headers of a packet carrying `payload_len` bytes into `head`
// (which must hold header_length(h.opcode) bytes): lengths, pad count and the
// IPv4 checksum are computed here. Then computes the ICRC over the headers
// and payload and writes pad (zeros) + ICRC into `tail` (which must hold
// 3 + kIcrcLen bytes). Returns the number of tail bytes used, or 0 when the
// opcode is invalid, a payload is given to an opcode that carries none (or
// none to a FIRST/MIDDLE opcode, see OpcodeTraits::payload_required), the
// packet would exceed 65535 IP bytes, or a buffer is too small.
// h.pad is ignored (computed); dest_qp, psn and aeth_msn are masked to 24
// bits; h.ip_id is written as given (callers must pass a nonzero one).
std::size_t build_packet(const Headers& h, std::span<std::uint8_t> head,
                         std::span<const std::uint8_t> payload, std::span<std::uint8_t> tail) noexcept;

// Why a frame was rejected. Every value is counted by the receiver.
enum class ParseError : std::uint8_t {
  kOk = 0,
  kTruncated,          // shorter than its headers say
  kNotIpv4,            // EtherType is not IPv4 (IPv6 RoCE is not supported)
  kBadIpHeader,        // version/IHL/fragment/checksum invalid
  kNotUdp,
  kNotRoce,            // UDP destination port is not 4791
  kBadLength,          // IP/UDP lengths disagree with the frame
  kBadBth,             // transport version not 0, or not an RC opcode
  kUnknownOpcode,
  kBadPad,             // pad count larger than the payload, or payload + pad not a multiple of 4
  kBadPayload,         // payload where the opcode allows none, or too short for the opcode
  kBadIcrc,
  kCount
};
std::string_view parse_error_name(ParseError e) noexcept;

// The ICRC of a packet parsed with IcrcCheck::kDeferReadPayload whose check
// was left for the copy that places its payload (see that mode).
struct DeferredIcrc {
  bool pending = false;
  std::uint32_t after_headers = 0;       // the CRC of the masked headers, continued by the payload
  std::uint32_t expected = 0;            // the ICRC the frame carries
  std::span<const std::uint8_t> pad;     // the pad bytes, after the payload
};

struct Packet {
  Headers h;
  std::span<const std::uint8_t> payload;  // without pad and ICRC; points into the frame
  DeferredIcrc icrc;                      // pending only under IcrcCheck::kDeferReadPayload
};

// The destination IPv4 address of an Ethernet frame that carries IPv4, read
// without validating anything else; 0 when the frame is not IPv4 or too
// short to hold the address. What a receiver on a shared interface looks at
// before it spends an ICRC on a frame that may be somebody else's.
std::uint32_t peek_ipv4_destination(std::span<const std::uint8_t> frame) noexcept;

// Parses and validates a whole frame (Ethernet header first, no FCS),
// including the ICRC. Never reads outside `frame`. Bytes after the IP total
// length (Ethernet minimum-size padding) are ignored. `out` is written only
// when kOk is returned; extension-header fields the opcode does not carry
// are zero then. Not checked: UDP checksum (rxe sends 0), UDP source port,
// addresses, BTH reserved bits; VLAN tags and IPv4 options are rejected.
ParseError parse_packet(std::span<const std::uint8_t> frame, Packet& out) noexcept;

// kDeferReadPayload: a READ response (FIRST, MIDDLE, LAST, ONLY) carrying
// kDeferIcrcFrom bytes of payload or more is validated field by field but its
// ICRC is not checked: out.icrc.pending is set and the receiver checks it
// with place_payload_checking_icrc (its payload copied into the READ's
// local buffer and CRC'd in one pass, where the check and the copy read the
// payload twice) or deferred_icrc_holds. Until then nothing in the packet is
// to be believed: a receiver may only place its payload where a READ's
// local buffer, whose contents are undefined until the READ completes,
// takes it, and must drop the packet, changing nothing else, if the ICRC
// then fails. Every other packet is parsed as by parse_packet.
enum class IcrcCheck : std::uint8_t { kNow, kDeferReadPayload };
constexpr std::size_t kDeferIcrcFrom = 256;
ParseError parse_packet(std::span<const std::uint8_t> frame, Packet& out, IcrcCheck check) noexcept;

// For a packet whose ICRC parse deferred (pkt.icrc.pending): copies its
// payload to `dst` (payload.size() bytes) while continuing the ICRC, and
// says whether the ICRC holds. `dst` then has the payload either way.
bool place_payload_checking_icrc(const Packet& pkt, std::uint8_t* dst) noexcept;
// For a packet whose ICRC parse deferred: whether it holds (no copy). True
// for a packet whose ICRC was checked at parse.
bool deferred_icrc_holds(const Packet& pkt) noexcept;

// The RoCE v2 ICRC of a frame's IP header .. pad (the frame without its last
// 4 bytes), computed as rdma_rxe does (roce-v2.md 2.5). For tests and tools.
std::uint32_t compute_icrc(std::span<const std::uint8_t> frame_without_icrc) noexcept;

// 24-bit PSN arithmetic.
constexpr std::uint32_t kPsnMask = 0xFFFFFF;
constexpr std::uint32_t psn_add(std::uint32_t psn, std::uint32_t n) noexcept { return (psn + n) & kPsnMask; }
// How far a is past b, modulo 2^24.
constexpr std::uint32_t psn_diff(std::uint32_t a, std::uint32_t b) noexcept { return (a - b) & kPsnMask; }
// >0 when a is after b, <0 before, 0 equal; window +-2^23.
constexpr std::int32_t psn_compare(std::uint32_t a, std::uint32_t b) noexcept {
  return static_cast<std::int32_t>((a - b) << 8);
}

// IPv4-mapped RoCE v2 GID (::ffff:a.b.c.d) from a host-order address.
std::array<std::uint8_t, 16> ipv4_gid(std::uint32_t ipv4) noexcept;

// The UDP source port rdma_rxe derives from the two QP numbers
// (rdma_get_udp_sport), for flow entropy.
std::uint16_t udp_source_port(std::uint32_t local_qpn, std::uint32_t remote_qpn) noexcept;

}  // namespace rma::roce
