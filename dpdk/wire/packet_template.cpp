// PacketTemplate: see packet_template.hpp.
#include "wire/packet_template.hpp"

#include <cstring>

#include "wire/byte_order.hpp"
#include "wire/icrc.hpp"

namespace rma::roce {

using namespace detail;

namespace {
constexpr std::size_t kIpBth = kBthOff - kIpOff;  // IPv4 header .. BTH, as offsets from the IPv4 header

std::uint16_t fold_checksum(std::uint32_t sum) noexcept {
  sum = (sum & 0xFFFF) + (sum >> 16);
  sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum & 0xFFFF);
}

// Writes the extension headers `bits` of `f` at `x`.
void write_ext(std::uint8_t* x, std::uint8_t bits, const PacketFields& f) noexcept {
  if (bits & kHasReth) {
    store_be64(x, f.va);
    store_be32(x + 8, f.rkey);
    store_be32(x + 12, f.length);
    x += kRethLen;
  }
  if (bits & kHasAtomicEth) {
    store_be64(x, f.va);
    store_be32(x + 8, f.rkey);
    store_be64(x + 12, f.swap_add);
    store_be64(x + 20, f.compare);
    x += kAtomicEthLen;
  }
  if (bits & kHasAeth) {
    x[0] = f.syndrome;
    store_be24(x + 1, f.msn & kPsnMask);
    x += kAethLen;
  }
  if (bits & kHasAtomicAckEth) {
    store_be64(x, f.orig);
    x += kAtomicAckEthLen;
  }
  if (bits & kHasImm) store_be32(x, f.imm);
}
}  // namespace

void PacketTemplate::init(const Headers& h) noexcept {
  // The fixed fields, written by build_packet itself so both agree byte for
  // byte; lengths, id, checksum, opcode, flags and PSN are overwritten per
  // packet.
  Headers fixed = h;
  fixed.opcode = static_cast<std::uint8_t>(Opcode::kAcknowledge);  // any valid opcode
  fixed.solicited = false;
  fixed.ack_req = false;
  fixed.psn = 0;
  fixed.ip_id = 0;
  std::array<std::uint8_t, kOuterHeadersLen + kBthLen + kAethLen> head{};
  std::array<std::uint8_t, 8> tail{};
  (void)build_packet(fixed, head, {}, tail);
  std::memcpy(sent_.data(), head.data(), kFixed);
  std::uint8_t* ip = sent_.data() + kIpOff;
  store_be16(ip + kIpTotLen, 0);
  store_be16(ip + kIpCsum, 0);
  store_be16(sent_.data() + kUdpOff + kUdpLen, 0);
  std::uint8_t* bth = sent_.data() + kBthOff;
  bth[kBthOpcode] = 0;
  bth[kBthFlags] = h.mig_req ? kBthMig : 0;
  bth[kBthAckReq] = 0;
  store_be24(bth + kBthPsn, 0);
  resv8a_ = bth[kBthResv8a];
  // With tot_len, id and checksum zero, the header's sum is that of the fixed words.
  ip_sum_ = 0;
  for (std::size_t i = 0; i < kIpv4HeaderLen; i += 2) ip_sum_ += load_be16(ip + i);

  masked_ = sent_;
  std::uint8_t* mip = masked_.data() + kIpOff;
  mip[kIpTos] = 0xFF;
  mip[kIpTtl] = 0xFF;
  mip[kIpCsum] = mip[kIpCsum + 1] = 0xFF;
  std::uint8_t* mudp = masked_.data() + kUdpOff;
  mudp[kUdpCsum] = mudp[kUdpCsum + 1] = 0xFF;
  masked_[kBthOff + kBthResv8a] = 0xFF;
}

std::size_t PacketTemplate::build(const PacketFields& f, std::span<std::uint8_t> head,
                                  std::span<const std::uint8_t> payload, std::span<std::uint8_t> tail,
                                  std::uint32_t* open_icrc) const noexcept {
  const OpcodeTraits t = opcode_traits(f.opcode);
  if (!t.valid) return 0;
  if (!t.has_payload && !payload.empty()) return 0;
  if (t.payload_required && payload.empty()) return 0;
  const std::size_t ext = ext_length(t.headers);
  const std::size_t hlen = kFixed + ext;
  if (head.size() < hlen || tail.size() < 3 + kIcrcLen) return 0;
  const std::size_t pad = (4 - payload.size() % 4) % 4;
  const std::size_t ip_len = hlen - kEthHeaderLen + payload.size() + pad + kIcrcLen;
  if (ip_len > 0xFFFF) return 0;

  // The masked image, IPv4 header on, on the stack, followed by a small
  // payload and the pad so the ICRC is one CRC call.
  constexpr std::size_t kGather = 256;
  constexpr std::size_t kMaxHdr = kIpBth + kBthLen + kMaxExtLen;
  std::uint8_t m[kGather];
  std::memcpy(m, masked_.data() + kIpOff, kIpBth + kBthLen);
  store_be16(m + kIpTotLen, static_cast<std::uint16_t>(ip_len));
  store_be16(m + kIpId, f.ip_id);
  store_be16(m + kIpv4HeaderLen + kUdpLen, static_cast<std::uint16_t>(ip_len - kIpv4HeaderLen));
  std::uint8_t* bth = m + kIpBth;
  bth[kBthOpcode] = f.opcode;
  bth[kBthFlags] = static_cast<std::uint8_t>(bth[kBthFlags] | (f.solicited ? kBthSe : 0) | (pad << 4));
  bth[kBthAckReq] = f.ack_req ? kBthAckReqBit : 0;
  store_be24(bth + kBthPsn, f.psn & kPsnMask);
  write_ext(bth + kBthLen, t.headers, f);
  const std::size_t mlen = hlen - kEthHeaderLen;  // masked headers
  std::uint32_t crc;
  if (open_icrc != nullptr) {
    crc = 0;
    *open_icrc = crc32_update(kIcrcSeed, m, mlen);
  } else if (payload.size() + pad <= kGather - kMaxHdr) {
    if (!payload.empty()) std::memcpy(m + mlen, payload.data(), payload.size());
    std::memset(m + mlen + payload.size(), 0, pad);
    crc = crc32_update(kIcrcSeed, m, mlen + payload.size() + pad);
  } else {
    static constexpr std::uint8_t kZeros[4] = {};
    crc = crc32_update(kIcrcSeed, m, mlen);
    crc = crc32_update(crc, payload.data(), payload.size());
    crc = crc32_update(crc, kZeros, pad);
  }

  // The headers as sent: the masked image with the masked bytes restored.
  std::uint8_t* p = head.data();
  std::memcpy(p, sent_.data(), kEthHeaderLen);
  if (head.size() >= kIpOff + kMaxHdr) {
    std::memcpy(p + kIpOff, m, kMaxHdr);  // a fixed size: a few vector moves, where mlen's took rep movs
  } else {
    std::memcpy(p + kIpOff, m, mlen);
  }
  std::uint8_t* ip = p + kIpOff;
  ip[kIpTos] = sent_[kIpOff + kIpTos];
  ip[kIpTtl] = sent_[kIpOff + kIpTtl];
  store_be16(ip + kIpCsum, fold_checksum(ip_sum_ + static_cast<std::uint32_t>(ip_len) + f.ip_id));
  store_be16(p + kUdpOff + kUdpCsum, 0);
  p[kBthOff + kBthResv8a] = resv8a_;

  std::uint8_t* tl = tail.data();
  for (std::size_t i = 0; i < pad; ++i) tl[i] = 0;
  store_le32(tl + pad, crc);
  return pad + kIcrcLen;
}

}  // namespace rma::roce
