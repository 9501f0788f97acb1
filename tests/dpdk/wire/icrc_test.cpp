// ICRC against oracles that do not share code with dpdk/wire:
//  * a bit-at-a-time CRC-32 (IEEE 802.3, reflected; checked against the
//    standard check value) over the masked pseudo-header written out here;
//  * frames built by scapy 2.5 (python3-scapy, scapy.contrib.roce
//    BTH.compute_icrc) and confirmed with Python's zlib following
//    roce-v2.md 2.5, hard-coded below. The generator:
//
//      def outer(tos, ttl, ipid, sport):
//          return (Ether(dst='02:00:00:00:00:02', src='02:00:00:00:00:01') /
//                  IP(src='10.0.0.1', dst='10.0.0.2', tos=tos, ttl=ttl, id=ipid, flags='DF') /
//                  UDP(sport=sport, dport=4791, chksum=0))
//      reth = struct.pack('>QII', 0x00007F0012345678, 0xABCD1234, 5)
//      write_only = outer(0x02, 64, 0x1234, 0xC123) / BTH(opcode=0x0A, padcount=3, fecn=1,
//          dqpn=0x000123, ackreq=1, psn=0xABCDEF) / Raw(reth + b'hello' + b'\0' * 3)
//      ack = outer(0, 255, 0x0001, 0xC000) / BTH(opcode=0x11, dqpn=0xFFFFFF, psn=1) /
//          AETH(syndrome=0x1F, msn=7)
//      ae = struct.pack('>QIQQ', 0x1000, 0x55AA55AA, 0x0102030405060708, 0x1112131415161718)
//      cmp_swap = outer(0xB8, 3, 0xBEEF, 0xFFFF) / BTH(opcode=0x13, solicited=1, migreq=1,
//          pkey=0x8001, becn=1, dqpn=0x42, psn=0xFFFFFF) / Raw(ae)
//      rr_middle = outer(0, 64, 0x7777, 0xD000) / BTH(opcode=0x0E, dqpn=0x11, psn=5) /
//          Raw(bytes(range(256)))
//      # zlib cross-check: mask IP[1], IP[8], IP[10:12], UDP[6:8], BTH[4] to 0xFF;
//      # struct.pack('<I', zlib.crc32(b'\xff'*8 + masked)) == frame[-4:]
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "wire/icrc.hpp"
#include "wire/wire.hpp"

namespace rma::roce {
namespace {

using Bytes = std::vector<std::uint8_t>;

std::uint32_t ref_crc32(const Bytes& bytes) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::uint8_t b : bytes) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

// roce-v2.md 2.5, spelled out independently of dpdk/wire.
std::uint32_t ref_icrc(const Bytes& frame_without_icrc) {
  Bytes v(8, 0xFF);
  v.insert(v.end(), frame_without_icrc.begin() + 14, frame_without_icrc.end());
  const std::size_t ip = 8;
  v[ip + 1] = 0xFF;                       // TOS
  v[ip + 8] = 0xFF;                       // TTL
  v[ip + 10] = v[ip + 11] = 0xFF;         // IPv4 header checksum
  v[ip + 20 + 6] = v[ip + 20 + 7] = 0xFF; // UDP checksum
  v[ip + 28 + 4] = 0xFF;                  // BTH FECN/BECN/resv6a
  return ref_crc32(v);
}

Bytes from_hex(std::string_view hex) {
  Bytes out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<std::uint8_t>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return out;
}

std::uint32_t stored_icrc(const Bytes& f) {
  const std::size_t n = f.size();
  return std::uint32_t{f[n - 4]} | (std::uint32_t{f[n - 3]} << 8) | (std::uint32_t{f[n - 2]} << 16) |
         (std::uint32_t{f[n - 1]} << 24);
}

Bytes build(const Headers& h, const Bytes& payload) {
  Bytes head(header_length(h.opcode));
  std::uint8_t tail[7];
  const std::size_t t = build_packet(h, head, payload, tail);
  EXPECT_NE(t, 0u);
  Bytes f = head;
  f.insert(f.end(), payload.begin(), payload.end());
  f.insert(f.end(), tail, tail + t);
  return f;
}

Bytes without_icrc(const Bytes& f) { return Bytes(f.begin(), f.end() - 4); }

struct Vector {
  const char* name;
  const char* hex;
  std::uint32_t icrc;  // as a little-endian u32 read from the last 4 bytes
};

const Vector kScapyFrames[] = {
    {"write_only",
     "02000000000202000000000108004502004412344000401114710a0000010a000002c12312b7003000000a30ffff8000012380abcdef00007"
     "f0012345678abcd12340000000568656c6c6f0000007391f66d",
     0x6DF69173},
    {"ack",
     "02000000000202000000000108004500003000014000ff1167b90a0000010a000002c00012b7001c00001100ffff00ffffff000000011f00"
     "00077c955ca3",
     0xA35C957C},
    {"cmp_swap",
     "020000000002020000000001080045b80048beef40000311a3fb0a0000010a000002ffff12b70034000013c080014000004200ffffff0000"
     "00000000100055aa55aa01020304050607081112131415161718699146ba",
     0xBA469169},
    {"rr_middle",
     "02000000000202000000000108004500012c777740004011ae470a0000010a000002d00012b7011800000e00ffff00000011000000050001"
     "02030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f30313233343536373839"
     "3a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f7071"
     "72737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9"
     "aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1"
     "e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff8dbac185",
     0x85C1BA8D},
};

TEST(IcrcReference, CheckValue) {
  // The CRC-32/ISO-HDLC check value: the reference CRC itself is right.
  const std::string s = "123456789";
  EXPECT_EQ(ref_crc32(Bytes(s.begin(), s.end())), 0xCBF43926u);
  EXPECT_EQ(ref_crc32(Bytes(8, 0xFF)), 0x2144DF1Cu);  // roce-v2.md 2.5
}

TEST(IcrcScapy, ParseComputeAndRebuild) {
  for (const Vector& v : kScapyFrames) {
    SCOPED_TRACE(v.name);
    const Bytes f = from_hex(v.hex);
    EXPECT_EQ(stored_icrc(f), v.icrc);
    EXPECT_EQ(ref_icrc(without_icrc(f)), v.icrc);
    EXPECT_EQ(compute_icrc(without_icrc(f)), v.icrc);
    Packet p;
    ASSERT_EQ(parse_packet(f, p), ParseError::kOk);
    // Rebuilding from the decoded headers gives the same bytes, checksum,
    // pad and ICRC included.
    const Bytes rebuilt = build(p.h, Bytes(p.payload.begin(), p.payload.end()));
    EXPECT_EQ(rebuilt, f);
  }
}

TEST(IcrcScapy, DecodedFields) {
  Packet p;
  const Bytes w = from_hex(kScapyFrames[0].hex);
  ASSERT_EQ(parse_packet(w, p), ParseError::kOk);
  EXPECT_EQ(p.h.opcode, 0x0A);
  EXPECT_EQ(p.h.pad, 3);
  EXPECT_TRUE(p.h.fecn);
  EXPECT_FALSE(p.h.becn);
  EXPECT_TRUE(p.h.ack_req);
  EXPECT_EQ(p.h.dest_qp, 0x123u);
  EXPECT_EQ(p.h.psn, 0xABCDEFu);
  EXPECT_EQ(p.h.reth_va, 0x00007F0012345678u);
  EXPECT_EQ(p.h.reth_rkey, 0xABCD1234u);
  EXPECT_EQ(p.h.reth_length, 5u);
  EXPECT_EQ(p.h.tos, 0x02);
  EXPECT_EQ(p.h.ip_id, 0x1234);
  EXPECT_EQ(p.h.src_port, 0xC123);
  EXPECT_EQ(p.h.src_ip, 0x0A000001u);
  EXPECT_EQ(p.h.dst_ip, 0x0A000002u);
  EXPECT_EQ(std::string(p.payload.begin(), p.payload.end()), "hello");

  const Bytes c = from_hex(kScapyFrames[2].hex);
  ASSERT_EQ(parse_packet(c, p), ParseError::kOk);
  EXPECT_TRUE(p.h.solicited);
  EXPECT_TRUE(p.h.mig_req);
  EXPECT_TRUE(p.h.becn);
  EXPECT_EQ(p.h.pkey, 0x8001);
  EXPECT_EQ(p.h.ttl, 3);
  EXPECT_EQ(p.h.atomic_va, 0x1000u);
  EXPECT_EQ(p.h.atomic_rkey, 0x55AA55AAu);
  EXPECT_EQ(p.h.atomic_swap_add, 0x0102030405060708u);
  EXPECT_EQ(p.h.atomic_compare, 0x1112131415161718u);
  EXPECT_TRUE(p.payload.empty());

  const Bytes a = from_hex(kScapyFrames[1].hex);
  ASSERT_EQ(parse_packet(a, p), ParseError::kOk);
  EXPECT_EQ(p.h.aeth_syndrome, 0x1F);
  EXPECT_EQ(p.h.aeth_msn, 7u);
  EXPECT_EQ(p.h.dest_qp, 0xFFFFFFu);
}

Headers random_headers(std::mt19937_64& rng, std::uint8_t opcode) {
  Headers h;
  auto r = [&] { return rng(); };
  for (auto& b : h.dst_mac) b = static_cast<std::uint8_t>(r());
  for (auto& b : h.src_mac) b = static_cast<std::uint8_t>(r());
  h.src_ip = static_cast<std::uint32_t>(r());
  h.dst_ip = static_cast<std::uint32_t>(r());
  h.ip_id = static_cast<std::uint16_t>(r() | 1);
  h.ttl = static_cast<std::uint8_t>(r());
  h.tos = static_cast<std::uint8_t>(r());
  h.src_port = static_cast<std::uint16_t>(r());
  h.opcode = opcode;
  h.solicited = r() & 1;
  h.mig_req = r() & 1;
  h.pkey = static_cast<std::uint16_t>(r());
  h.fecn = r() & 1;
  h.becn = r() & 1;
  h.dest_qp = static_cast<std::uint32_t>(r()) & 0xFFFFFF;
  h.ack_req = r() & 1;
  h.psn = static_cast<std::uint32_t>(r()) & 0xFFFFFF;
  h.reth_va = r();
  h.reth_rkey = static_cast<std::uint32_t>(r());
  h.reth_length = static_cast<std::uint32_t>(r());
  h.aeth_syndrome = static_cast<std::uint8_t>(r());
  h.aeth_msn = static_cast<std::uint32_t>(r()) & 0xFFFFFF;
  h.atomic_va = r();
  h.atomic_rkey = static_cast<std::uint32_t>(r());
  h.atomic_swap_add = r();
  h.atomic_compare = r();
  h.atomic_ack_orig = r();
  h.imm = static_cast<std::uint32_t>(r());
  return h;
}

TEST(IcrcReference, AgreesOnRandomFrames) {
  std::mt19937_64 rng(12345);
  for (int i = 0; i < 2000; ++i) {
    const auto op = static_cast<std::uint8_t>(rng() % 0x15);
    const Headers h = random_headers(rng, op);
    Bytes payload;
    if (opcode_traits(op).has_payload) {
      payload.resize(1 + rng() % 2100);
      for (auto& b : payload) b = static_cast<std::uint8_t>(rng());
    }
    const Bytes f = build(h, payload);
    ASSERT_EQ(stored_icrc(f), ref_icrc(without_icrc(f))) << "opcode " << int(op) << " payload " << payload.size();
    ASSERT_EQ(compute_icrc(without_icrc(f)), stored_icrc(f));
  }
}

// The start of an ICRC, from the IPv4 header on, for any length (masks
// only where the bytes exist): what detail::icrc_begin computes.
std::uint32_t ref_icrc_begin(const std::uint8_t* ip, std::size_t len) {
  Bytes v(8, 0xFF);
  v.insert(v.end(), ip, ip + len);
  for (std::size_t off : {1u, 8u, 10u, 11u, 26u, 27u, 32u}) {
    if (off < len) v[8 + off] = 0xFF;
  }
  return ref_crc32(v);
}

// Up to 128 bytes (every ACK, READ request, atomic and small WRITE, and the
// headers of every larger packet) are CRC'd in registers where the CPU
// folds (AVX-512 with VPCLMULQDQ), with masked loads that reach back from
// the message's end: every length across that limit, every alignment, and
// messages that start right after and end right before an unmapped page.
TEST(IcrcShort, EveryLengthAgreesWithTheReferenceAndReadsOnlyTheMessage) {
  std::mt19937 rng(99);
  Bytes buf(512);
  for (std::size_t len = 1; len <= 200; ++len) {
    for (int rep = 0; rep < 4; ++rep) {
      for (auto& b : buf) b = static_cast<std::uint8_t>(rng());
      const std::size_t at = rng() % 64;
      ASSERT_EQ(detail::icrc_begin(buf.data() + at, len), ref_icrc_begin(buf.data() + at, len))
          << "length " << len << " at offset " << at;
    }
  }
  const long page = ::sysconf(_SC_PAGESIZE);
  auto* map = static_cast<std::uint8_t*>(
      ::mmap(nullptr, static_cast<std::size_t>(3 * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(map, MAP_FAILED);
  std::uint8_t* mid = map + page;
  for (long i = 0; i < page; ++i) mid[i] = static_cast<std::uint8_t>(rng());
  ASSERT_EQ(::mprotect(map, static_cast<std::size_t>(page), PROT_NONE), 0);
  ASSERT_EQ(::mprotect(mid + page, static_cast<std::size_t>(page), PROT_NONE), 0);
  for (std::size_t len = 1; len <= 160; ++len) {
    ASSERT_EQ(detail::icrc_begin(mid, len), ref_icrc_begin(mid, len)) << "at a page's start, length " << len;
    const std::uint8_t* end = mid + page - static_cast<long>(len);
    ASSERT_EQ(detail::icrc_begin(end, len), ref_icrc_begin(end, len)) << "at a page's end, length " << len;
  }
  ::munmap(map, static_cast<std::size_t>(3 * page));
}

Bytes sample_frame() {
  std::mt19937_64 rng(7);
  Headers h = random_headers(rng, static_cast<std::uint8_t>(Opcode::kWriteOnlyImm));
  Bytes payload(37);
  for (auto& b : payload) b = static_cast<std::uint8_t>(rng());
  return build(h, payload);
}

TEST(IcrcMasking, InvariantFieldsDoNotChangeIcrc) {
  const Bytes f = without_icrc(sample_frame());
  const std::uint32_t base = compute_icrc(f);
  ASSERT_EQ(base, ref_icrc(f));
  // IP TOS, IP TTL, IP checksum, UDP checksum, BTH byte 4 (FECN, BECN, resv6a);
  // and the Ethernet header, which the ICRC never covers.
  std::vector<std::size_t> masked = {14 + 1, 14 + 8, 14 + 10, 14 + 11, 34 + 6, 34 + 7, 42 + 4};
  for (std::size_t i = 0; i < 14; ++i) masked.push_back(i);
  for (std::size_t pos : masked) {
    for (int v = 0; v < 256; v += 17) {
      Bytes g = f;
      g[pos] = static_cast<std::uint8_t>(v);
      EXPECT_EQ(compute_icrc(g), base) << "byte " << pos << " value " << v;
    }
  }
}

TEST(IcrcMasking, EveryOtherByteChangesIcrc) {
  const Bytes f = without_icrc(sample_frame());
  const std::uint32_t base = compute_icrc(f);
  const std::set<std::size_t> masked = {14 + 1, 14 + 8, 14 + 10, 14 + 11, 34 + 6, 34 + 7, 42 + 4};
  for (std::size_t pos = 14; pos < f.size(); ++pos) {
    if (masked.count(pos)) continue;
    for (int bit = 0; bit < 8; ++bit) {
      Bytes g = f;
      g[pos] ^= static_cast<std::uint8_t>(1u << bit);
      EXPECT_NE(compute_icrc(g), base) << "byte " << pos << " bit " << bit;
    }
  }
}

TEST(IcrcMasking, ThroughBuildPacket) {
  std::mt19937_64 rng(99);
  const Headers base = random_headers(rng, static_cast<std::uint8_t>(Opcode::kWriteFirst));
  const Bytes payload(64, 0xA5);
  const std::uint32_t icrc = stored_icrc(build(base, payload));

  Headers h = base;
  h.ttl ^= 0x5A;
  EXPECT_EQ(stored_icrc(build(h, payload)), icrc) << "TTL";
  h = base;
  h.tos ^= 0xFF;
  EXPECT_EQ(stored_icrc(build(h, payload)), icrc) << "TOS";
  h = base;
  h.fecn = !h.fecn;
  EXPECT_EQ(stored_icrc(build(h, payload)), icrc) << "FECN";
  h = base;
  h.becn = !h.becn;
  EXPECT_EQ(stored_icrc(build(h, payload)), icrc) << "BECN";
  h = base;
  h.dst_mac[0] ^= 1;
  EXPECT_EQ(stored_icrc(build(h, payload)), icrc) << "MAC";

  // Covered fields.
  auto differs = [&](auto mutate, const char* what) {
    Headers m = base;
    mutate(m);
    EXPECT_NE(stored_icrc(build(m, payload)), icrc) << what;
  };
  differs([](Headers& m) { m.psn ^= 1; }, "PSN");
  differs([](Headers& m) { m.dest_qp ^= 0x800000; }, "QPN");
  differs([](Headers& m) { m.ack_req = !m.ack_req; }, "AckReq");
  differs([](Headers& m) { m.solicited = !m.solicited; }, "SE");
  differs([](Headers& m) { m.mig_req = !m.mig_req; }, "MigReq");
  differs([](Headers& m) { m.pkey ^= 0x100; }, "PKey");
  differs([](Headers& m) { m.ip_id ^= 2; }, "IP ID");
  differs([](Headers& m) { m.src_ip ^= 1; }, "src IP");
  differs([](Headers& m) { m.dst_ip ^= 0x80000000; }, "dst IP");
  differs([](Headers& m) { m.src_port ^= 4; }, "UDP sport");
  differs([](Headers& m) { m.reth_va ^= 1ull << 63; }, "RETH VA");
  differs([](Headers& m) { m.reth_rkey ^= 1; }, "RETH rkey");
  differs([](Headers& m) { m.reth_length ^= 1; }, "RETH length");
  Bytes p2 = payload;
  p2[63] ^= 0x80;
  EXPECT_NE(stored_icrc(build(base, p2)), icrc) << "payload";
}

TEST(IcrcMasking, PadBytesAreCovered) {
  Bytes f = without_icrc(sample_frame());  // 37-byte payload: 3 pad bytes at the end
  const std::uint32_t base = compute_icrc(f);
  f.back() = 1;
  EXPECT_NE(compute_icrc(f), base);
}

}  // namespace
}  // namespace rma::roce
