// build_packet: Ethernet / IPv4 / UDP / BTH / extension headers into the
// caller's head buffer, pad + ICRC into its tail buffer. No allocation; the
// payload is only read (for the ICRC), never copied.
#include <cstring>

#include "wire/byte_order.hpp"
#include "wire/icrc.hpp"
#include "wire/wire.hpp"

namespace rma::roce {

using namespace detail;

std::size_t build_packet(const Headers& h, std::span<std::uint8_t> head, std::span<const std::uint8_t> payload,
                         std::span<std::uint8_t> tail) noexcept {
  const OpcodeTraits t = opcode_traits(h.opcode);
  if (!t.valid) return 0;
  if (!t.has_payload && !payload.empty()) return 0;
  if (t.payload_required && payload.empty()) return 0;
  const std::size_t hlen = kOuterHeadersLen + kBthLen + ext_length(t.headers);
  if (head.size() < hlen || tail.size() < 3 + kIcrcLen) return 0;
  const std::size_t pad = (4 - payload.size() % 4) % 4;
  const std::size_t ip_len = hlen - kEthHeaderLen + payload.size() + pad + kIcrcLen;
  if (ip_len > 0xFFFF) return 0;

  std::uint8_t* p = head.data();
  // Ethernet
  std::memcpy(p, h.dst_mac.data(), 6);
  std::memcpy(p + 6, h.src_mac.data(), 6);
  store_be16(p + kEthTypeOff, kEtherTypeIpv4);
  // IPv4
  std::uint8_t* ip = p + kIpOff;
  ip[kIpVerIhl] = 0x45;
  ip[kIpTos] = h.tos;
  store_be16(ip + kIpTotLen, static_cast<std::uint16_t>(ip_len));
  store_be16(ip + kIpId, h.ip_id);
  store_be16(ip + kIpFrag, kIpFlagDf);
  ip[kIpTtl] = h.ttl;
  ip[kIpProto] = kIpProtoUdp;
  store_be16(ip + kIpCsum, 0);
  store_be32(ip + kIpSrc, h.src_ip);
  store_be32(ip + kIpDst, h.dst_ip);
  store_be16(ip + kIpCsum, ipv4_checksum_fold(ip));
  // UDP
  std::uint8_t* udp = p + kUdpOff;
  store_be16(udp + kUdpSport, h.src_port);
  store_be16(udp + kUdpDport, kRoceV2UdpPort);
  store_be16(udp + kUdpLen, static_cast<std::uint16_t>(ip_len - kIpv4HeaderLen));
  store_be16(udp + kUdpCsum, 0);
  // BTH
  std::uint8_t* bth = p + kBthOff;
  bth[kBthOpcode] = h.opcode;
  bth[kBthFlags] = static_cast<std::uint8_t>((h.solicited ? kBthSe : 0) | (h.mig_req ? kBthMig : 0) |
                                             (pad << 4));  // TVer 0
  store_be16(bth + kBthPkey, h.pkey);
  bth[kBthResv8a] = static_cast<std::uint8_t>((h.fecn ? kBthFecn : 0) | (h.becn ? kBthBecn : 0));
  store_be24(bth + kBthQpn, h.dest_qp & kPsnMask);
  bth[kBthAckReq] = h.ack_req ? kBthAckReqBit : 0;
  store_be24(bth + kBthPsn, h.psn & kPsnMask);
  // Extension headers in IBA order: RETH, AtomicETH, AETH, AtomicAckETH, ImmDt.
  std::uint8_t* x = p + kExtOff;
  if (t.headers & kHasReth) {
    store_be64(x, h.reth_va);
    store_be32(x + 8, h.reth_rkey);
    store_be32(x + 12, h.reth_length);
    x += kRethLen;
  }
  if (t.headers & kHasAtomicEth) {
    store_be64(x, h.atomic_va);
    store_be32(x + 8, h.atomic_rkey);
    store_be64(x + 12, h.atomic_swap_add);
    store_be64(x + 20, h.atomic_compare);
    x += kAtomicEthLen;
  }
  if (t.headers & kHasAeth) {
    x[0] = h.aeth_syndrome;
    store_be24(x + 1, h.aeth_msn & kPsnMask);
    x += kAethLen;
  }
  if (t.headers & kHasAtomicAckEth) {
    store_be64(x, h.atomic_ack_orig);
    x += kAtomicAckEthLen;
  }
  if (t.headers & kHasImm) {
    store_be32(x, h.imm);
    x += kImmDtLen;
  }

  // Tail: pad zeros, then the ICRC over IPv4 header .. pad.
  std::uint8_t* tl = tail.data();
  for (std::size_t i = 0; i < pad; ++i) tl[i] = 0;
  store_le32(tl + pad, icrc_pieces(ip, hlen - kEthHeaderLen, payload.data(), payload.size(), pad));
  return pad + kIcrcLen;
}

}  // namespace rma::roce
