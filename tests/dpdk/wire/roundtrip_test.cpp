// build_packet -> parse_packet for every RC opcode and every payload size
// 0..4096 (all four pad values), compared field by field.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "wire/wire.hpp"

namespace rma::roce {
namespace {

using Bytes = std::vector<std::uint8_t>;

Headers make_headers(std::uint8_t opcode, std::uint32_t salt) {
  Headers h;
  h.dst_mac = {0x02, 0x11, 0x22, 0x33, 0x44, static_cast<std::uint8_t>(salt)};
  h.src_mac = {0x02, 0xAA, 0xBB, 0xCC, 0xDD, static_cast<std::uint8_t>(salt >> 8)};
  h.src_ip = 0xC0A80001 + salt;
  h.dst_ip = 0xC0A80101 ^ (salt << 8);
  h.ip_id = static_cast<std::uint16_t>(salt * 31 + 1);
  h.ttl = static_cast<std::uint8_t>(1 + salt % 255);
  h.tos = static_cast<std::uint8_t>(salt * 7);
  h.src_port = udp_source_port(salt, 0x123);
  h.opcode = opcode;
  h.solicited = salt & 1;
  h.mig_req = salt & 2;
  h.pkey = static_cast<std::uint16_t>(0xFFFF - salt);
  h.fecn = salt & 4;
  h.becn = salt & 8;
  h.dest_qp = (0x00ABCDEF + salt * 977) & kPsnMask;
  h.ack_req = salt & 16;
  h.psn = (0xFFFFF0 + salt) & kPsnMask;
  const OpcodeTraits t = opcode_traits(opcode);
  if (t.headers & kHasReth) {
    h.reth_va = 0xFEDCBA9876543210ull + salt;
    h.reth_rkey = 0x80000001u ^ salt;
    h.reth_length = 0x10000u + salt;
  }
  if (t.headers & kHasAeth) {
    h.aeth_syndrome = static_cast<std::uint8_t>(0x60 + salt % 5);
    h.aeth_msn = (0xFFFFFF - salt) & kPsnMask;
  }
  if (t.headers & kHasAtomicEth) {
    h.atomic_va = 0x00007FFF00001000ull + 8ull * salt;
    h.atomic_rkey = 0x1234u + salt;
    h.atomic_swap_add = 0x8000000000000001ull * (salt + 1);
    h.atomic_compare = ~h.atomic_swap_add;
  }
  if (t.headers & kHasAtomicAckEth) h.atomic_ack_orig = 0xDEADBEEFCAFEF00Dull ^ salt;
  if (t.headers & kHasImm) h.imm = 0x01020304u * (salt + 1);
  return h;
}

// Field-by-field differences ("" when equal).
std::string diff(const Headers& a, const Headers& b) {
  std::ostringstream o;
#define CMP(f)                                                                   \
  if (a.f != b.f) o << #f << ": " << +a.f << " != " << +b.f << "; ";
  if (a.dst_mac != b.dst_mac) o << "dst_mac; ";
  if (a.src_mac != b.src_mac) o << "src_mac; ";
  CMP(src_ip) CMP(dst_ip) CMP(ip_id) CMP(ttl) CMP(tos) CMP(src_port) CMP(opcode) CMP(solicited) CMP(mig_req)
  CMP(pad) CMP(pkey) CMP(fecn) CMP(becn) CMP(dest_qp) CMP(ack_req) CMP(psn) CMP(reth_va) CMP(reth_rkey)
  CMP(reth_length) CMP(aeth_syndrome) CMP(aeth_msn) CMP(atomic_va) CMP(atomic_rkey) CMP(atomic_swap_add)
  CMP(atomic_compare) CMP(atomic_ack_orig) CMP(imm)
#undef CMP
  return o.str();
}

TEST(RoundTrip, EveryOpcodeEveryPayloadSize) {
  Bytes data(4096);
  std::mt19937 rng(1);
  for (auto& b : data) b = static_cast<std::uint8_t>(rng());
  Bytes frame;
  std::size_t frames = 0;
  for (std::uint8_t op = 0; op <= 0x14; ++op) {
    const OpcodeTraits t = opcode_traits(op);
    ASSERT_TRUE(t.valid);
    const std::size_t max = t.has_payload ? 4096 : 0;
    for (std::size_t len = 0; len <= max; ++len) {
      Headers h = make_headers(op, static_cast<std::uint32_t>(len));
      const std::span<const std::uint8_t> payload(data.data(), len);
      Bytes head(header_length(op));
      std::uint8_t tail[7];
      const std::size_t tl = build_packet(h, head, payload, tail);
      if (t.payload_required && len == 0) {
        ASSERT_EQ(tl, 0u) << opcode_name(op) << " built with no payload";
        continue;
      }
      const std::size_t pad = (4 - len % 4) % 4;
      ASSERT_EQ(tl, pad + 4) << opcode_name(op) << " len " << len;
      for (std::size_t i = 0; i < pad; ++i) ASSERT_EQ(tail[i], 0) << "pad byte";
      frame.assign(head.begin(), head.end());
      frame.insert(frame.end(), payload.begin(), payload.end());
      frame.insert(frame.end(), tail, tail + tl);
      ASSERT_EQ(frame.size() % 4, (head.size() + 4) % 4) << "payload+pad is 4-byte aligned";

      Packet p;
      const ParseError e = parse_packet(frame, p);
      ASSERT_EQ(e, ParseError::kOk) << opcode_name(op) << " len " << len << ": " << parse_error_name(e);
      h.pad = static_cast<std::uint8_t>(pad);
      ASSERT_EQ(diff(h, p.h), "") << opcode_name(op) << " len " << len;
      ASSERT_EQ(p.payload.size(), len);
      ASSERT_EQ(p.payload.data(), frame.data() + head.size()) << "payload points into the frame";
      ASSERT_TRUE(std::equal(p.payload.begin(), p.payload.end(), data.begin()));
      ++frames;
    }
  }
  // 16 payload opcodes x 4097 sizes, minus the 6 empty FIRST/MIDDLE, plus 5 payload-free opcodes.
  EXPECT_EQ(frames, 16u * 4097 + 5 - 6);
}

TEST(RoundTrip, UnusedExtensionFieldsReadAsZero) {
  Headers h = make_headers(static_cast<std::uint8_t>(Opcode::kAcknowledge), 3);
  h.reth_va = 1;      // not carried by an ACK
  h.imm = 2;
  h.atomic_ack_orig = 3;
  Bytes head(header_length(h.opcode));
  std::uint8_t tail[7];
  ASSERT_EQ(build_packet(h, head, {}, tail), 4u);
  head.insert(head.end(), tail, tail + 4);
  Packet p;
  p.h.reth_va = 99;
  ASSERT_EQ(parse_packet(head, p), ParseError::kOk);
  EXPECT_EQ(p.h.reth_va, 0u);
  EXPECT_EQ(p.h.imm, 0u);
  EXPECT_EQ(p.h.atomic_ack_orig, 0u);
  EXPECT_EQ(p.h.aeth_msn, h.aeth_msn);
}

TEST(Build, WireBytesAtKnownOffsets) {
  Headers h = make_headers(static_cast<std::uint8_t>(Opcode::kWriteOnlyImm), 0);
  h.dest_qp = 0x123456;
  h.psn = 0x789ABC;
  h.ack_req = true;
  h.solicited = true;
  h.mig_req = false;
  h.fecn = true;
  h.becn = false;
  h.pkey = 0xFFFF;
  h.tos = 0x10;
  h.ttl = 64;
  h.ip_id = 0x0102;
  h.src_ip = 0x0A000001;
  h.dst_ip = 0x0A000002;
  h.src_port = 0xC001;
  h.reth_va = 0x1122334455667788ull;
  h.reth_rkey = 0x99AABBCC;
  h.reth_length = 0x00000005;
  h.imm = 0xDDEEFF00;
  const Bytes payload = {1, 2, 3, 4, 5};
  Bytes head(header_length(h.opcode));
  ASSERT_EQ(head.size(), 14u + 20 + 8 + 12 + 16 + 4);
  std::uint8_t tail[7] = {9, 9, 9, 9, 9, 9, 9};
  ASSERT_EQ(build_packet(h, head, payload, tail), 7u);
  const Bytes want_outer = {
      // Ethernet
      0x02, 0x11, 0x22, 0x33, 0x44, 0x00, 0x02, 0xAA, 0xBB, 0xCC, 0xDD, 0x00, 0x08, 0x00,
      // IPv4: 0x45, TOS, total 20+8+12+20+5+3+4 = 72, ID, DF, TTL, UDP, checksum, addresses
      0x45, 0x10, 0x00, 72, 0x01, 0x02, 0x40, 0x00, 64, 17, 0x00, 0x00, 10, 0, 0, 1, 10, 0, 0, 2,
      // UDP: sport, 4791, length 52, checksum 0
      0xC0, 0x01, 0x12, 0xB7, 0x00, 52, 0x00, 0x00,
      // BTH: opcode, SE|pad 3, pkey, FECN, QPN, AckReq, PSN
      0x0B, 0xB0, 0xFF, 0xFF, 0x80, 0x12, 0x34, 0x56, 0x80, 0x78, 0x9A, 0xBC,
      // RETH
      0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0x00, 0x00, 0x00, 0x05,
      // ImmDt
      0xDD, 0xEE, 0xFF, 0x00};
  Bytes got = head;
  got[24] = got[25] = 0;  // checksum checked separately
  EXPECT_EQ(got, want_outer);
  // IPv4 header checksum: one's-complement sum over the header is 0xFFFF.
  std::uint32_t sum = 0;
  for (std::size_t i = 14; i < 34; i += 2) sum += (head[i] << 8) | head[i + 1];
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  EXPECT_EQ(sum, 0xFFFFu);
  EXPECT_EQ(tail[0], 0);
  EXPECT_EQ(tail[1], 0);
  EXPECT_EQ(tail[2], 0);
}

TEST(Build, RejectsBadArguments) {
  Headers h = make_headers(static_cast<std::uint8_t>(Opcode::kWriteOnly), 1);
  Bytes head(header_length(h.opcode));
  std::uint8_t tail[7];
  const Bytes payload(10, 1);
  EXPECT_NE(build_packet(h, head, payload, tail), 0u);
  Bytes small(head.size() - 1);
  EXPECT_EQ(build_packet(h, small, payload, tail), 0u) << "head too small";
  EXPECT_EQ(build_packet(h, head, payload, std::span<std::uint8_t>(tail, 6)), 0u) << "tail too small";
  Bytes huge(65536, 0);
  EXPECT_EQ(build_packet(h, head, huge, tail), 0u) << "over 65535 IP bytes";
  h.opcode = 0x15;
  EXPECT_EQ(build_packet(h, head, payload, tail), 0u) << "unknown opcode";
  h.opcode = 0x24;  // UC SEND ONLY
  EXPECT_EQ(build_packet(h, head, payload, tail), 0u) << "UC opcode";
  h.opcode = static_cast<std::uint8_t>(Opcode::kAcknowledge);
  EXPECT_EQ(build_packet(h, head, payload, tail), 0u) << "payload on an ACK";
  h.opcode = static_cast<std::uint8_t>(Opcode::kReadRequest);
  EXPECT_EQ(build_packet(h, head, payload, tail), 0u) << "payload on a READ REQUEST";
  h.opcode = static_cast<std::uint8_t>(Opcode::kFetchAdd);
  Bytes atomic_head(header_length(h.opcode));
  EXPECT_EQ(build_packet(h, atomic_head, payload, tail), 0u) << "payload on FETCH_ADD";
  EXPECT_NE(build_packet(h, atomic_head, {}, tail), 0u);
  h.opcode = static_cast<std::uint8_t>(Opcode::kWriteMiddle);
  EXPECT_EQ(build_packet(h, head, {}, tail), 0u) << "empty WRITE MIDDLE";
}

TEST(Build, LargestPacket) {
  // 65535 IP bytes exactly: 20 + 8 + 12 + 16 (RETH) + payload + 0 pad + 4.
  Headers h = make_headers(static_cast<std::uint8_t>(Opcode::kWriteOnly), 2);
  const Bytes payload(65535 - 60, 7);
  ASSERT_EQ(payload.size() % 4, 3u);  // would need a pad byte: too long
  Bytes head(header_length(h.opcode));
  std::uint8_t tail[7];
  EXPECT_EQ(build_packet(h, head, payload, tail), 0u);
  const Bytes fits(65535 - 60 - 3, 7);
  ASSERT_EQ(build_packet(h, head, fits, tail), 4u);
  Bytes f = head;
  f.insert(f.end(), fits.begin(), fits.end());
  f.insert(f.end(), tail, tail + 4);
  Packet p;
  ASSERT_EQ(parse_packet(f, p), ParseError::kOk);
  EXPECT_EQ(p.payload.size(), fits.size());
}

TEST(Parse, IgnoresEthernetPaddingAfterIpTotalLength) {
  Headers h = make_headers(static_cast<std::uint8_t>(Opcode::kAcknowledge), 4);
  Bytes f(header_length(h.opcode));
  std::uint8_t tail[7];
  ASSERT_EQ(build_packet(h, f, {}, tail), 4u);
  f.insert(f.end(), tail, tail + 4);
  ASSERT_EQ(f.size(), 62u);
  f.resize(f.size() + 30, 0xEE);  // trailing junk / padding
  Packet p;
  ASSERT_EQ(parse_packet(f, p), ParseError::kOk);
  EXPECT_TRUE(p.payload.empty());
  EXPECT_EQ(p.h.aeth_msn, h.aeth_msn);
}

}  // namespace
}  // namespace rma::roce
