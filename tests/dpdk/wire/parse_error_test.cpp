// Every ParseError, from frames that are valid except for the one thing
// under test (lengths, IPv4 checksum and ICRC re-fixed where the mutation
// would otherwise trip an earlier check).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "wire/wire.hpp"

namespace rma::roce {
namespace {

using Bytes = std::vector<std::uint8_t>;

constexpr std::size_t kIp = 14, kUdp = 34, kBth = 42, kExt = 54;

Bytes build(std::uint8_t opcode, std::size_t payload_len, std::uint32_t salt = 0) {
  Headers h;
  h.dst_mac = {2, 0, 0, 0, 0, 2};
  h.src_mac = {2, 0, 0, 0, 0, 1};
  h.src_ip = 0x0A000001;
  h.dst_ip = 0x0A000002;
  h.ip_id = static_cast<std::uint16_t>(0x100 + salt);
  h.opcode = opcode;
  h.dest_qp = 0x11 + salt;
  h.psn = 0x1000 + salt;
  h.reth_va = 0x7000;
  h.reth_rkey = 0x55;
  h.reth_length = static_cast<std::uint32_t>(payload_len);
  h.aeth_syndrome = 0x1F;
  h.aeth_msn = 9;
  h.atomic_va = 0x8000;
  h.atomic_swap_add = 1;
  h.atomic_ack_orig = 42;
  Bytes payload(payload_len);
  for (std::size_t i = 0; i < payload_len; ++i) payload[i] = static_cast<std::uint8_t>(i * 13 + salt);
  Bytes f(header_length(opcode));
  std::uint8_t tail[7];
  const std::size_t t = build_packet(h, f, payload, tail);
  EXPECT_NE(t, 0u) << int(opcode);
  f.insert(f.end(), payload.begin(), payload.end());
  f.insert(f.end(), tail, tail + t);
  return f;
}

void put16(Bytes& f, std::size_t off, std::size_t v) {
  f[off] = static_cast<std::uint8_t>(v >> 8);
  f[off + 1] = static_cast<std::uint8_t>(v);
}

void fix_ip_checksum(Bytes& f) {
  put16(f, kIp + 10, 0);
  std::uint32_t sum = 0;
  for (std::size_t i = kIp; i < kIp + 20; i += 2) sum += (f[i] << 8) | f[i + 1];
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  put16(f, kIp + 10, ~sum & 0xFFFF);
}

void fix_icrc(Bytes& f) {
  const std::size_t end = kIp + ((f[kIp + 2] << 8) | f[kIp + 3]);
  if (end > f.size() || end < kIp + 4) return;  // random mutations: nothing sensible to fix
  const std::uint32_t c = compute_icrc(std::span<const std::uint8_t>(f.data(), end - 4));
  for (int i = 0; i < 4; ++i) f[end - 4 + i] = static_cast<std::uint8_t>(c >> (8 * i));
}

// After inserting or removing bytes: IP/UDP lengths from the frame size,
// then checksum and ICRC.
void relength(Bytes& f) {
  put16(f, kIp + 2, f.size() - kIp);
  put16(f, kUdp + 4, f.size() - kUdp);
  fix_ip_checksum(f);
  fix_icrc(f);
}

void refix(Bytes& f) {
  fix_ip_checksum(f);
  fix_icrc(f);
}

// Parses from an exactly-sized heap copy so that ASan sees any read past
// the end.
ParseError parse(const Bytes& f) {
  std::unique_ptr<std::uint8_t[]> copy(new std::uint8_t[f.size() + 1]);
  std::copy(f.begin(), f.end(), copy.get());
  Packet p;
  return parse_packet(std::span<const std::uint8_t>(copy.get(), f.size()), p);
}

#define EXPECT_PARSE(frame, err) EXPECT_EQ(parse_error_name(parse(frame)), parse_error_name(err))

TEST(ParseErrors, BaseFramesAreValid) {
  for (std::uint8_t op = 0; op <= 0x14; ++op) {
    EXPECT_EQ(parse(build(op, opcode_traits(op).has_payload ? 100 : 0)), ParseError::kOk) << int(op);
  }
}

TEST(ParseErrors, TruncatedAtEveryLength) {
  for (std::uint8_t op : {0x06, 0x0C, 0x11, 0x12, 0x13, 0x0E, 0x0B}) {
    const Bytes f = build(op, opcode_traits(op).has_payload ? 61 : 0);
    for (std::size_t len = 0; len < f.size(); ++len) {
      const Bytes prefix(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(len));
      EXPECT_PARSE(prefix, ParseError::kTruncated);
    }
  }
  // Empty span.
  Packet p;
  EXPECT_EQ(parse_packet({}, p), ParseError::kTruncated);
}

TEST(ParseErrors, NotIpv4) {
  for (std::uint16_t type : {0x86DD, 0x8100, 0x0806, 0x0000}) {
    Bytes f = build(0x11, 0);
    put16(f, 12, type);
    EXPECT_PARSE(f, ParseError::kNotIpv4);
  }
}

TEST(ParseErrors, BadIpVersionAndIhl) {
  for (std::uint8_t vihl : {0x65, 0x46, 0x44, 0x4F, 0x55, 0x00}) {
    Bytes f = build(0x11, 0);
    f[kIp] = vihl;
    refix(f);
    EXPECT_PARSE(f, ParseError::kBadIpHeader);
  }
}

TEST(ParseErrors, Fragments) {
  for (std::uint16_t frag : {0x2000, 0x6000, 0x0001, 0x4001, 0x1FFF, 0x8000}) {
    Bytes f = build(0x0A, 8);
    put16(f, kIp + 6, frag);
    refix(f);
    EXPECT_PARSE(f, ParseError::kBadIpHeader);
  }
  // DF clear is fine.
  Bytes f = build(0x0A, 8);
  put16(f, kIp + 6, 0);
  refix(f);
  EXPECT_PARSE(f, ParseError::kOk);
}

TEST(ParseErrors, BadIpChecksum) {
  for (std::size_t off : {kIp + 10, kIp + 11}) {
    Bytes f = build(0x11, 0);
    f[off] ^= 0x01;  // checksum is masked in the ICRC: only the checksum is wrong
    EXPECT_PARSE(f, ParseError::kBadIpHeader);
  }
  Bytes f = build(0x11, 0);
  f[kIp + 12] ^= 0x80;  // source address changed, checksum not updated
  fix_icrc(f);
  EXPECT_PARSE(f, ParseError::kBadIpHeader);
}

TEST(ParseErrors, IpTotalLengthBelowHeader) {
  Bytes f = build(0x11, 0);
  put16(f, kIp + 2, 19);
  fix_ip_checksum(f);
  EXPECT_PARSE(f, ParseError::kBadIpHeader);
}

TEST(ParseErrors, WrongProtocol) {
  for (std::uint8_t proto : {6, 1, 0, 255}) {
    Bytes f = build(0x11, 0);
    f[kIp + 9] = proto;
    refix(f);
    EXPECT_PARSE(f, ParseError::kNotUdp);
  }
}

TEST(ParseErrors, WrongPort) {
  for (std::uint16_t port : {4790, 4792, 0, 0xB712, 4789}) {
    Bytes f = build(0x11, 0);
    put16(f, kUdp + 2, port);
    refix(f);
    EXPECT_PARSE(f, ParseError::kNotRoce);
  }
  // The source port does not matter.
  Bytes f = build(0x11, 0);
  put16(f, kUdp, 1234);
  refix(f);
  EXPECT_PARSE(f, ParseError::kOk);
}

TEST(ParseErrors, UdpIpLengthMismatch) {
  for (int delta : {-4, -1, 1, 4, 100}) {
    Bytes f = build(0x0A, 16);
    const std::size_t udp_len = (f[kUdp + 4] << 8) | f[kUdp + 5];
    put16(f, kUdp + 4, static_cast<std::size_t>(static_cast<int>(udp_len) + delta));
    refix(f);
    EXPECT_PARSE(f, ParseError::kBadLength);
  }
  // IP total length covering less than a UDP header.
  Bytes f = build(0x11, 0);
  put16(f, kIp + 2, 27);
  fix_ip_checksum(f);
  EXPECT_PARSE(f, ParseError::kBadLength);
}

TEST(ParseErrors, TooShortForBthAndIcrc) {
  // Consistent IP and UDP lengths, but no room for BTH + ICRC.
  for (std::size_t keep : {0u, 4u, 11u, 12u, 15u}) {
    Bytes f = build(0x11, 0);
    f.resize(kBth + keep);
    put16(f, kIp + 2, f.size() - kIp);
    put16(f, kUdp + 4, f.size() - kUdp);
    fix_ip_checksum(f);
    EXPECT_PARSE(f, ParseError::kBadLength);
  }
}

TEST(ParseErrors, IpLengthBeyondFrame) {
  Bytes f = build(0x0A, 16);
  put16(f, kIp + 2, f.size() - kIp + 4);
  put16(f, kUdp + 4, f.size() - kUdp + 4);
  fix_ip_checksum(f);
  EXPECT_PARSE(f, ParseError::kTruncated);
}

TEST(ParseErrors, TransportVersion) {
  for (std::uint8_t tver : {1, 2, 0xF}) {
    Bytes f = build(0x11, 0);
    f[kBth + 1] = static_cast<std::uint8_t>((f[kBth + 1] & 0xF0) | tver);
    refix(f);
    EXPECT_PARSE(f, ParseError::kBadBth);
  }
}

TEST(ParseErrors, NonRcOpcodes) {
  // UC SEND ONLY / RDMA WRITE ONLY, RD, UD SEND ONLY, CNP, and other transports.
  for (std::uint8_t op : {0x24, 0x2A, 0x20, 0x40, 0x64, 0x65, 0x81, 0xA0, 0xE4, 0xFF}) {
    Bytes f = build(0x04, 8);
    f[kBth] = op;
    refix(f);
    EXPECT_PARSE(f, ParseError::kBadBth);
  }
}

TEST(ParseErrors, UnknownRcOpcodes) {
  // 0x15 reserved; 0x16/0x17 SEND with INVALIDATE, 0x1C/0x1D FLUSH / ATOMIC WRITE: not supported.
  for (std::uint8_t op = 0x15; op <= 0x1F; ++op) {
    Bytes f = build(0x04, 8);
    f[kBth] = op;
    refix(f);
    EXPECT_PARSE(f, ParseError::kUnknownOpcode);
  }
}

TEST(ParseErrors, PadLargerThanPayload) {
  for (std::uint8_t pad : {1, 2, 3}) {
    Bytes f = build(0x04, 0);  // SEND ONLY, empty
    f[kBth + 1] = static_cast<std::uint8_t>((f[kBth + 1] & ~0x30) | (pad << 4));
    refix(f);
    EXPECT_PARSE(f, ParseError::kBadPad);
    Bytes r = build(0x0C, 0);  // READ REQUEST
    r[kBth + 1] = static_cast<std::uint8_t>((r[kBth + 1] & ~0x30) | (pad << 4));
    refix(r);
    EXPECT_PARSE(r, ParseError::kBadPad);
  }
  // Payload + pad not 4-byte aligned: 5 data bytes with pad 3, 2, 1 or 0.
  for (std::uint8_t pad : {0, 1, 2, 3}) {
    Bytes f = build(0x04, 4);
    f.insert(f.end() - 4, 0xAB);
    f[kBth + 1] = static_cast<std::uint8_t>((f[kBth + 1] & ~0x30) | (pad << 4));
    relength(f);
    EXPECT_PARSE(f, ParseError::kBadPad);
  }
  // Pad within the data is accepted: 4 data bytes, pad 3 => 1-byte payload.
  Bytes f = build(0x04, 4);
  f[kBth + 1] = static_cast<std::uint8_t>(f[kBth + 1] | 0x30);
  refix(f);
  Packet p;
  ASSERT_EQ(parse_packet(f, p), ParseError::kOk);
  EXPECT_EQ(p.payload.size(), 1u);
  EXPECT_EQ(p.h.pad, 3);
}

TEST(ParseErrors, PayloadWhereNoneAllowed) {
  // ACK, ATOMIC ACK, READ REQUEST, COMPARE_SWAP, FETCH_ADD with 4 extra bytes
  // (and with 1 extra byte plus a pad of 3).
  for (std::uint8_t op : {0x11, 0x12, 0x0C, 0x13, 0x14}) {
    Bytes f = build(op, 0);
    f.insert(f.end() - 4, {1, 2, 3, 4});
    relength(f);
    EXPECT_PARSE(f, ParseError::kBadPayload);
    Bytes g = build(op, 0);
    g.insert(g.end() - 4, {1, 0, 0, 0});
    g[kBth + 1] |= 0x30;
    relength(g);
    EXPECT_PARSE(g, ParseError::kBadPayload);
  }
}

TEST(ParseErrors, MissingExtensionHeaderBytes) {
  // The IP/UDP lengths say the packet ends before the opcode's headers do.
  struct Case { std::uint8_t op; std::size_t ext; };
  for (const Case c : {Case{0x13, 28}, Case{0x14, 28}, Case{0x12, 12}, Case{0x0C, 16}, Case{0x11, 4},
                       Case{0x0B, 20}, Case{0x06, 16}}) {
    for (std::size_t cut = 1; cut <= c.ext; ++cut) {
      Bytes f = build(c.op, opcode_traits(c.op).payload_required ? 4 : 0);
      // Drop payload+pad, then `cut` bytes from the end of the extension headers.
      const std::size_t ext_end = kExt + c.ext;
      f.erase(f.begin() + static_cast<std::ptrdiff_t>(ext_end - cut), f.end() - 4);
      f[kBth + 1] &= static_cast<std::uint8_t>(~0x30);
      relength(f);
      EXPECT_PARSE(f, ParseError::kBadPayload);
    }
  }
}

TEST(ParseErrors, MissingDataOnFirstAndMiddle) {
  for (std::uint8_t op : {0x00, 0x01, 0x06, 0x07, 0x0D, 0x0E}) {
    Bytes f = build(op, 4);
    f.erase(f.end() - 8, f.end() - 4);
    relength(f);
    EXPECT_PARSE(f, ParseError::kBadPayload);
  }
  // ONLY and LAST may be empty.
  for (std::uint8_t op : {0x02, 0x04, 0x08, 0x0A, 0x0F, 0x10}) EXPECT_EQ(parse(build(op, 0)), ParseError::kOk);
}

TEST(ParseErrors, FlippedIcrcByte) {
  for (std::uint8_t op : {0x06, 0x11, 0x13}) {
    const Bytes base = build(op, opcode_traits(op).has_payload ? 33 : 0);
    for (std::size_t i = base.size() - 4; i < base.size(); ++i) {
      for (int bit = 0; bit < 8; ++bit) {
        Bytes f = base;
        f[i] ^= static_cast<std::uint8_t>(1 << bit);
        EXPECT_PARSE(f, ParseError::kBadIcrc);
      }
    }
  }
}

TEST(ParseErrors, FlippedPayloadOrHeaderByte) {
  const Bytes base = build(0x0B, 33);  // WRITE ONLY with IMM, pad 3
  // Every payload byte, the pad bytes and every extension header byte.
  for (std::size_t i = kExt; i < base.size() - 4; ++i) {
    Bytes f = base;
    f[i] ^= 0x10;
    EXPECT_PARSE(f, ParseError::kBadIcrc);
  }
  // BTH fields that pass the structural checks.
  for (std::size_t i : {kBth + 2, kBth + 3, kBth + 5, kBth + 7, kBth + 8, kBth + 11}) {
    Bytes f = base;
    f[i] ^= 0x01;
    EXPECT_PARSE(f, ParseError::kBadIcrc);
  }
  // FECN/BECN are outside the ICRC: a switch may set them.
  Bytes f = base;
  f[kBth + 4] |= 0xC0;
  Packet p;
  ASSERT_EQ(parse_packet(f, p), ParseError::kOk);
  EXPECT_TRUE(p.h.fecn);
  EXPECT_TRUE(p.h.becn);
  // So are TTL and TOS (with the IP checksum updated, as a router does).
  Bytes g = base;
  g[kIp + 8] = 1;
  g[kIp + 1] = 0xFC;
  fix_ip_checksum(g);
  EXPECT_PARSE(g, ParseError::kOk);
}

TEST(ParseErrors, RandomMutationsStayInBounds) {
  std::mt19937_64 rng(2024);
  const Bytes bases[] = {build(0x0A, 100), build(0x12, 0), build(0x0D, 256), build(0x13, 0)};
  for (int i = 0; i < 20000; ++i) {
    Bytes f = bases[i % 4];
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) f[rng() % f.size()] = static_cast<std::uint8_t>(rng());
    if (rng() & 1) f.resize(rng() % (f.size() + 1));
    if (rng() & 1 && f.size() >= 60) refix(f);
    std::unique_ptr<std::uint8_t[]> copy(new std::uint8_t[f.size() + 1]);
    std::copy(f.begin(), f.end(), copy.get());
    const std::span<const std::uint8_t> span(copy.get(), f.size());
    Packet p;
    if (parse_packet(span, p) == ParseError::kOk) {
      ASSERT_GE(p.payload.data(), span.data());
      ASSERT_LE(p.payload.data() + p.payload.size(), span.data() + span.size());
    }
  }
}

// One example of every ParseError, so a new error kind without a test (or
// a check that stopped firing) shows up here.
TEST(ParseErrors, EveryErrorHasAnExample) {
  std::vector<std::pair<ParseError, Bytes>> ex;
  const Bytes ack = build(0x11, 0);
  ex.emplace_back(ParseError::kOk, ack);
  ex.emplace_back(ParseError::kTruncated, Bytes(ack.begin(), ack.end() - 1));
  Bytes f = ack;
  put16(f, 12, 0x86DD);
  ex.emplace_back(ParseError::kNotIpv4, f);
  f = ack;
  f[kIp] = 0x46;
  refix(f);
  ex.emplace_back(ParseError::kBadIpHeader, f);
  f = ack;
  f[kIp + 9] = 6;
  refix(f);
  ex.emplace_back(ParseError::kNotUdp, f);
  f = ack;
  put16(f, kUdp + 2, 4792);
  refix(f);
  ex.emplace_back(ParseError::kNotRoce, f);
  f = ack;
  put16(f, kUdp + 4, f.size() - kUdp - 1);
  refix(f);
  ex.emplace_back(ParseError::kBadLength, f);
  f = ack;
  f[kBth + 1] |= 1;
  refix(f);
  ex.emplace_back(ParseError::kBadBth, f);
  f = ack;
  f[kBth] = 0x15;
  refix(f);
  ex.emplace_back(ParseError::kUnknownOpcode, f);
  f = ack;
  f[kBth + 1] |= 0x10;
  refix(f);
  ex.emplace_back(ParseError::kBadPad, f);
  f = ack;
  f.insert(f.end() - 4, {0, 0, 0, 0});
  relength(f);
  ex.emplace_back(ParseError::kBadPayload, f);
  f = ack;
  f.back() ^= 1;
  ex.emplace_back(ParseError::kBadIcrc, f);

  std::set<ParseError> covered;
  for (const auto& [err, frame] : ex) {
    EXPECT_PARSE(frame, err);
    covered.insert(err);
  }
  EXPECT_EQ(covered.size(), static_cast<std::size_t>(ParseError::kCount));
}

// IcrcCheck::kDeferReadPayload: READ responses with kDeferIcrcFrom bytes of
// payload or more leave their ICRC pending, checked by the placing copy or
// on its own; a corrupt byte anywhere the ICRC covers (a header, the
// payload, the pad) fails both, and a good frame passes both with the
// payload copied whole. Every other packet is checked at parse as before.
TEST(DeferredIcrc, ReadResponsesLeaveItToThePlacingCopyAndEveryCorruptByteFailsIt) {
  const std::uint8_t first = static_cast<std::uint8_t>(Opcode::kReadResponseFirst);
  const std::uint8_t last = static_cast<std::uint8_t>(Opcode::kReadResponseLast);
  for (const auto& [opcode, len] : std::vector<std::pair<std::uint8_t, std::size_t>>{
           {first, 4096}, {static_cast<std::uint8_t>(Opcode::kReadResponseMiddle), 1024}, {last, 1023},
           {last, 257}, {static_cast<std::uint8_t>(Opcode::kReadResponseOnly), 256}}) {
    SCOPED_TRACE(std::to_string(opcode) + " with " + std::to_string(len) + " bytes");
    const Bytes good = build(opcode, len);
    Packet p;
    ASSERT_EQ(parse_packet(good, p, IcrcCheck::kDeferReadPayload), ParseError::kOk);
    ASSERT_TRUE(p.icrc.pending);
    EXPECT_EQ(p.icrc.pad.size(), (4 - len % 4) % 4);
    Bytes placed(len + 64, 0xEE);
    EXPECT_TRUE(place_payload_checking_icrc(p, placed.data() + 32));
    EXPECT_TRUE(deferred_icrc_holds(p));
    EXPECT_TRUE(std::equal(p.payload.begin(), p.payload.end(), placed.begin() + 32));
    EXPECT_EQ(placed[31], 0xEE);
    EXPECT_EQ(placed[32 + len], 0xEE);

    const std::size_t payload_off = kExt + 4;  // AETH on FIRST, LAST, ONLY; none on MIDDLE
    const std::size_t off = opcode == static_cast<std::uint8_t>(Opcode::kReadResponseMiddle) ? kExt : payload_off;
    std::vector<std::size_t> flips = {kBth + 5 /* destination QP */, kBth + 11 /* PSN */, kIp + 12 /* source IP */, off, off + len - 1,
                                      good.size() - 1 /* ICRC */};
    if (len % 4 != 0) flips.push_back(off + len);  // a pad byte
    for (std::size_t at : flips) {
      Bytes bad = good;
      bad[at] ^= 0x10;
      if (at >= kIp && at < kIp + 20) fix_ip_checksum(bad);
      Packet q;
      ASSERT_EQ(parse_packet(bad, q, IcrcCheck::kDeferReadPayload), ParseError::kOk) << "byte " << at;
      ASSERT_TRUE(q.icrc.pending);
      EXPECT_FALSE(deferred_icrc_holds(q)) << "byte " << at;
      EXPECT_FALSE(place_payload_checking_icrc(q, placed.data() + 32)) << "byte " << at;
      EXPECT_EQ(parse_packet(bad, q), ParseError::kBadIcrc) << "byte " << at;
    }
  }
  // Checked at parse: READ responses under kDeferIcrcFrom bytes, anything
  // that is not a READ response, and every packet under IcrcCheck::kNow.
  for (const auto& [opcode, len] : std::vector<std::pair<std::uint8_t, std::size_t>>{
           {first, 252}, {static_cast<std::uint8_t>(Opcode::kWriteOnly), 4096},
           {static_cast<std::uint8_t>(Opcode::kSendOnly), 1024}, {static_cast<std::uint8_t>(Opcode::kAcknowledge), 0}}) {
    Bytes f = build(opcode, len);
    Packet p;
    ASSERT_EQ(parse_packet(f, p, IcrcCheck::kDeferReadPayload), ParseError::kOk) << int(opcode);
    EXPECT_FALSE(p.icrc.pending) << int(opcode);
    f[f.size() - 1] ^= 0x10;
    EXPECT_EQ(parse_packet(f, p, IcrcCheck::kDeferReadPayload), ParseError::kBadIcrc) << int(opcode);
  }
  Packet p;
  ASSERT_EQ(parse_packet(build(first, 4096), p, IcrcCheck::kNow), ParseError::kOk);
  EXPECT_FALSE(p.icrc.pending);
}

}  // namespace
}  // namespace rma::roce
