// parse_packet: validates a whole RoCE v2 frame field by field and the
// ICRC, never reading outside the frame, and decodes it into host order.
#include <cstring>

#include "wire/byte_order.hpp"
#include "wire/icrc.hpp"
#include "wire/wire.hpp"

namespace rma::roce {

using namespace detail;

std::uint32_t peek_ipv4_destination(std::span<const std::uint8_t> frame) noexcept {
  if (frame.size() < kEthHeaderLen + kIpv4HeaderLen) return 0;
  if (load_be16(frame.data() + kEthTypeOff) != kEtherTypeIpv4) return 0;
  return load_be32(frame.data() + kIpOff + kIpDst);
}

ParseError parse_packet(std::span<const std::uint8_t> frame, Packet& out) noexcept {
  return parse_packet(frame, out, IcrcCheck::kNow);
}

namespace {
constexpr bool is_read_response(std::uint8_t opcode) noexcept {
  return opcode >= static_cast<std::uint8_t>(Opcode::kReadResponseFirst) &&
         opcode <= static_cast<std::uint8_t>(Opcode::kReadResponseOnly);
}
}  // namespace

ParseError parse_packet(std::span<const std::uint8_t> frame, Packet& out, IcrcCheck check) noexcept {
  out.icrc.pending = false;
  const std::uint8_t* p = frame.data();
  const std::size_t n = frame.size();

  // Ethernet. VLAN-tagged frames are not accepted (EtherType 0x8100).
  if (n < kEthHeaderLen) return ParseError::kTruncated;
  if (load_be16(p + kEthTypeOff) != kEtherTypeIpv4) return ParseError::kNotIpv4;

  // IPv4: version 4, no options, not a fragment, valid checksum.
  if (n < kIpOff + kIpv4HeaderLen) return ParseError::kTruncated;
  const std::uint8_t* ip = p + kIpOff;
  if (ip[kIpVerIhl] != 0x45) return ParseError::kBadIpHeader;
  // Reserved flag, MF or a nonzero fragment offset: DF alone is allowed.
  if ((load_be16(ip + kIpFrag) & ~kIpFlagDf) != 0) return ParseError::kBadIpHeader;
  if (ipv4_checksum_fold(ip) != 0) return ParseError::kBadIpHeader;
  const std::size_t ip_len = load_be16(ip + kIpTotLen);
  if (ip_len < kIpv4HeaderLen) return ParseError::kBadIpHeader;
  // Bytes beyond the IP total length are Ethernet padding and are ignored.
  if (ip_len > n - kIpOff) return ParseError::kTruncated;
  if (ip[kIpProto] != kIpProtoUdp) return ParseError::kNotUdp;

  // UDP: the checksum is not checked (rdma_rxe sends 0; the ICRC covers the data).
  if (ip_len < kIpv4HeaderLen + kUdpHeaderLen) return ParseError::kBadLength;
  const std::uint8_t* udp = p + kUdpOff;
  if (load_be16(udp + kUdpDport) != kRoceV2UdpPort) return ParseError::kNotRoce;
  const std::size_t udp_len = load_be16(udp + kUdpLen);
  if (udp_len != ip_len - kIpv4HeaderLen) return ParseError::kBadLength;
  if (udp_len < kUdpHeaderLen + kBthLen + kIcrcLen) return ParseError::kBadLength;

  // BTH
  const std::uint8_t* bth = p + kBthOff;
  const std::uint8_t opcode = bth[kBthOpcode];
  const std::uint8_t flags = bth[kBthFlags];
  if ((flags & kBthTverMask) != 0) return ParseError::kBadBth;
  if ((opcode & 0xE0) != 0) return ParseError::kBadBth;  // not RC
  const OpcodeTraits t = opcode_traits(opcode);
  if (!t.valid) return ParseError::kUnknownOpcode;

  // Extension headers, payload, pad, ICRC: all inside the IP total length.
  const std::size_t ext_len = ext_length(t.headers);
  const std::size_t transport_len = udp_len - kUdpHeaderLen;  // BTH .. ICRC
  if (transport_len < kBthLen + ext_len + kIcrcLen) return ParseError::kBadPayload;
  const std::size_t data_len = transport_len - kBthLen - ext_len - kIcrcLen;  // payload + pad
  const std::size_t pad = (flags & kBthPadMask) >> 4;
  // The pad count makes payload + pad a multiple of 4 (IBA 9.2.3).
  if (pad > data_len || data_len % 4 != 0) return ParseError::kBadPad;
  const std::size_t payload_len = data_len - pad;
  if (!t.has_payload && data_len != 0) return ParseError::kBadPayload;
  if (t.payload_required && payload_len == 0) return ParseError::kBadPayload;

  // ICRC over IPv4 header .. pad.
  const std::size_t icrc_off = kIpOff + ip_len - kIcrcLen;
  if (check == IcrcCheck::kDeferReadPayload && payload_len >= kDeferIcrcFrom && is_read_response(opcode)) {
    const std::size_t payload_off = kExtOff + ext_len;
    out.icrc.pending = true;
    out.icrc.after_headers = icrc_begin(ip, payload_off - kIpOff);
    out.icrc.expected = load_le32(p + icrc_off);
    out.icrc.pad = frame.subspan(payload_off + payload_len, pad);
  } else {
    const std::uint32_t icrc = icrc_begin(ip, ip_len - kIcrcLen);
    if (icrc != load_le32(p + icrc_off)) return ParseError::kBadIcrc;
  }

  // Decode. Headers the opcode does not carry read as zero. Field by field,
  // every field written once: assigning a default Headers first cost a
  // zeroed temporary and a copy of it (rep stos + rep movs) per packet.
  Headers& h = out.h;
  std::memcpy(h.dst_mac.data(), p, 6);
  std::memcpy(h.src_mac.data(), p + 6, 6);
  h.src_ip = load_be32(ip + kIpSrc);
  h.dst_ip = load_be32(ip + kIpDst);
  h.ip_id = load_be16(ip + kIpId);
  h.ttl = ip[kIpTtl];
  h.tos = ip[kIpTos];
  h.src_port = load_be16(udp + kUdpSport);
  h.opcode = opcode;
  h.solicited = (flags & kBthSe) != 0;
  h.mig_req = (flags & kBthMig) != 0;
  h.pad = static_cast<std::uint8_t>(pad);
  h.pkey = load_be16(bth + kBthPkey);
  h.fecn = (bth[kBthResv8a] & kBthFecn) != 0;
  h.becn = (bth[kBthResv8a] & kBthBecn) != 0;
  h.dest_qp = load_be24(bth + kBthQpn);
  h.ack_req = (bth[kBthAckReq] & kBthAckReqBit) != 0;
  h.psn = load_be24(bth + kBthPsn);
  const std::uint8_t* x = p + kExtOff;
  if (t.headers & kHasReth) {
    h.reth_va = load_be64(x);
    h.reth_rkey = load_be32(x + 8);
    h.reth_length = load_be32(x + 12);
    x += kRethLen;
  } else {
    h.reth_va = 0;
    h.reth_rkey = h.reth_length = 0;
  }
  if (t.headers & kHasAtomicEth) {
    h.atomic_va = load_be64(x);
    h.atomic_rkey = load_be32(x + 8);
    h.atomic_swap_add = load_be64(x + 12);
    h.atomic_compare = load_be64(x + 20);
    x += kAtomicEthLen;
  } else {
    h.atomic_va = h.atomic_swap_add = h.atomic_compare = 0;
    h.atomic_rkey = 0;
  }
  if (t.headers & kHasAeth) {
    h.aeth_syndrome = x[0];
    h.aeth_msn = load_be24(x + 1);
    x += kAethLen;
  } else {
    h.aeth_syndrome = 0;
    h.aeth_msn = 0;
  }
  if (t.headers & kHasAtomicAckEth) {
    h.atomic_ack_orig = load_be64(x);
    x += kAtomicAckEthLen;
  } else {
    h.atomic_ack_orig = 0;
  }
  if (t.headers & kHasImm) {
    h.imm = load_be32(x);
    x += kImmDtLen;
  } else {
    h.imm = 0;
  }
  out.payload = frame.subspan(kExtOff + ext_len, payload_len);
  return ParseError::kOk;
}

bool place_payload_checking_icrc(const Packet& pkt, std::uint8_t* dst) noexcept {
  const std::span<const std::uint8_t> payload = pkt.payload;
  if (!pkt.icrc.pending) {
    if (!payload.empty()) std::memcpy(dst, payload.data(), payload.size());
    return true;
  }
  std::uint32_t crc = copy_crc32_update(dst, payload.data(), payload.size(), pkt.icrc.after_headers);
  crc = crc32_update(crc, pkt.icrc.pad.data(), pkt.icrc.pad.size());
  return crc == pkt.icrc.expected;
}

bool deferred_icrc_holds(const Packet& pkt) noexcept {
  if (!pkt.icrc.pending) return true;
  std::uint32_t crc = crc32_update(pkt.icrc.after_headers, pkt.payload.data(), pkt.payload.size());
  crc = crc32_update(crc, pkt.icrc.pad.data(), pkt.icrc.pad.size());
  return crc == pkt.icrc.expected;
}

}  // namespace rma::roce
