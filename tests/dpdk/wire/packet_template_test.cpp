// PacketTemplate (the data path's builder) against build_packet (the
// reference): the same bytes for every RC opcode, payload sizes around every
// pad value and the small/large ICRC split, varied addresses and fields; and
// the same refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "wire/packet_template.hpp"
#include "wire/wire.hpp"

namespace rma::roce {
namespace {

using Bytes = std::vector<std::uint8_t>;

Headers connection(std::uint32_t salt) {
  Headers h;
  h.dst_mac = {0x02, 0x11, 0x22, 0x33, 0x44, static_cast<std::uint8_t>(salt)};
  h.src_mac = {0x02, 0xAA, 0xBB, 0xCC, 0xDD, static_cast<std::uint8_t>(salt >> 8)};
  h.src_ip = 0xC6120001u + salt * 0x10001u;
  h.dst_ip = 0xC6130001u ^ (salt << 8);
  h.ttl = static_cast<std::uint8_t>(1 + salt % 255);
  h.tos = static_cast<std::uint8_t>(salt * 7);
  h.src_port = udp_source_port(salt, 0x123);
  h.mig_req = (salt & 2) != 0;
  h.pkey = static_cast<std::uint16_t>(0xFFFF - salt);
  h.fecn = (salt & 4) != 0;
  h.becn = (salt & 8) != 0;
  h.dest_qp = (0x00ABCDEFu + salt * 977u) & kPsnMask;
  return h;
}

PacketFields fields_for(std::uint8_t opcode, std::uint32_t salt) {
  PacketFields f;
  f.opcode = opcode;
  f.solicited = (salt & 1) != 0;
  f.ack_req = (salt & 16) != 0;
  f.ip_id = static_cast<std::uint16_t>(salt * 31 + 1);
  f.psn = 0xFFFFF0u + salt;  // wraps past 24 bits: masked
  const OpcodeTraits t = opcode_traits(opcode);
  if (t.headers & kHasReth) {
    f.va = 0xFEDCBA9876543210ull + salt;
    f.rkey = 0x80000001u ^ salt;
    f.length = 0x10000u + salt;
  }
  if (t.headers & kHasAtomicEth) {
    f.va = 0x00007FFF00001000ull + 8ull * salt;
    f.rkey = 0x1234u + salt;
    f.swap_add = 0x8000000000000001ull * (salt + 1);
    f.compare = ~f.swap_add;
  }
  if (t.headers & kHasAeth) {
    f.syndrome = static_cast<std::uint8_t>(0x60 + salt % 5);
    f.msn = 0x1FFFFFFu - salt;  // masked to 24 bits
  }
  if (t.headers & kHasAtomicAckEth) f.orig = 0xDEADBEEFCAFEF00Dull ^ salt;
  if (t.headers & kHasImm) f.imm = 0x01020304u * (salt + 1);
  return f;
}

// The same packet as build_packet's Headers.
Headers as_headers(const Headers& conn, const PacketFields& f) {
  Headers h = conn;
  h.opcode = f.opcode;
  h.solicited = f.solicited;
  h.ack_req = f.ack_req;
  h.ip_id = f.ip_id;
  h.psn = f.psn;
  const OpcodeTraits t = opcode_traits(f.opcode);
  if (t.headers & kHasReth) {
    h.reth_va = f.va;
    h.reth_rkey = f.rkey;
    h.reth_length = f.length;
  }
  if (t.headers & kHasAtomicEth) {
    h.atomic_va = f.va;
    h.atomic_rkey = f.rkey;
    h.atomic_swap_add = f.swap_add;
    h.atomic_compare = f.compare;
  }
  h.aeth_syndrome = f.syndrome;
  h.aeth_msn = f.msn;
  h.atomic_ack_orig = f.orig;
  h.imm = f.imm;
  return h;
}

struct Built {
  Bytes head, tail;
  std::size_t tail_len = 0;
};

Built with_template(const PacketTemplate& t, const PacketFields& f, const Bytes& payload, std::size_t head_room) {
  Built b;
  b.head.assign(head_room, 0xEE);
  b.tail.assign(8, 0xEE);
  b.tail_len = t.build(f, b.head, payload, b.tail);
  return b;
}

Built with_reference(const Headers& h, const Bytes& payload) {
  Built b;
  b.head.assign(header_length(h.opcode), 0xEE);
  b.tail.assign(8, 0xEE);
  b.tail_len = build_packet(h, b.head, payload, b.tail);
  return b;
}

TEST(PacketTemplate, WritesTheBytesBuildPacketWrites) {
  const std::size_t sizes[] = {0, 1, 2, 3, 4, 5, 7, 8, 60, 63, 64, 120, 185, 186, 187, 188, 189, 190, 200, 255,
                               256, 257, 1000, 1024, 4093, 4096};
  int compared = 0;
  for (std::uint32_t salt : {0u, 1u, 6u, 17u, 30u, 255u, 4099u}) {
    const Headers conn = connection(salt);
    PacketTemplate t;
    t.init(conn);
    for (std::uint8_t op = 0; op <= 0x14; ++op) {
      const OpcodeTraits tr = opcode_traits(op);
      for (std::size_t size : sizes) {
        if (!tr.has_payload && size != 0) continue;
        if (tr.payload_required && size == 0) continue;
        Bytes payload(size);
        for (std::size_t i = 0; i < size; ++i) payload[i] = static_cast<std::uint8_t>(i * 13 + salt + op);
        const PacketFields f = fields_for(op, salt + static_cast<std::uint32_t>(size));
        const Built ref = with_reference(as_headers(conn, f), payload);
        ASSERT_NE(ref.tail_len, 0u);
        // Exactly the header length, and a roomy head (the slot's 128 bytes).
        for (std::size_t room : {header_length(op), std::size_t{128}}) {
          const Built got = with_template(t, f, payload, room);
          ASSERT_EQ(got.tail_len, ref.tail_len) << "opcode " << int(op) << " size " << size;
          ASSERT_TRUE(std::equal(ref.head.begin(), ref.head.end(), got.head.begin()))
              << "headers differ: opcode " << int(op) << " size " << size << " salt " << salt;
          ASSERT_TRUE(std::equal(ref.tail.begin(), ref.tail.begin() + static_cast<std::ptrdiff_t>(ref.tail_len),
                                 got.tail.begin()))
              << "pad/ICRC differ: opcode " << int(op) << " size " << size << " salt " << salt;
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, 1000);
}

TEST(PacketTemplate, TheFrameItBuildsParses) {
  const Headers conn = connection(3);
  PacketTemplate t;
  t.init(conn);
  const PacketFields f = fields_for(static_cast<std::uint8_t>(Opcode::kWriteOnly), 9);
  const Bytes payload = {1, 2, 3, 4, 5};
  const Built b = with_template(t, f, payload, header_length(f.opcode));
  Bytes frame = b.head;
  frame.insert(frame.end(), payload.begin(), payload.end());
  frame.insert(frame.end(), b.tail.begin(), b.tail.begin() + static_cast<std::ptrdiff_t>(b.tail_len));
  Packet p;
  ASSERT_EQ(parse_packet(frame, p), ParseError::kOk);
  EXPECT_EQ(p.h.psn, f.psn & kPsnMask);
  EXPECT_EQ(p.h.reth_va, f.va);
  EXPECT_EQ(p.h.dest_qp, conn.dest_qp);
  ASSERT_EQ(p.payload.size(), payload.size());
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), p.payload.begin()));
}

TEST(PacketTemplate, RefusesWhatBuildPacketRefusesAndWritesNothing) {
  PacketTemplate t;
  t.init(connection(1));
  const Bytes some(16, 7), none;
  struct Case {
    std::uint8_t opcode;
    const Bytes* payload;
    std::size_t head_room, tail_room;
  } cases[] = {
      {0x15, &none, 128, 8},                                                  // not an RC opcode
      {0xFF, &none, 128, 8},
      {static_cast<std::uint8_t>(Opcode::kAcknowledge), &some, 128, 8},       // payload on an ACK
      {static_cast<std::uint8_t>(Opcode::kWriteFirst), &none, 128, 8},        // FIRST without payload
      {static_cast<std::uint8_t>(Opcode::kWriteOnly), &some, 40, 8},          // head too small
      {static_cast<std::uint8_t>(Opcode::kWriteOnly), &some, 128, 6},         // tail too small
  };
  for (const Case& c : cases) {
    PacketFields f = fields_for(c.opcode, 2);
    f.opcode = c.opcode;
    Bytes head(c.head_room, 0xEE), tail(c.tail_room, 0xEE);
    EXPECT_EQ(t.build(f, head, *c.payload, tail), 0u) << "opcode " << int(c.opcode);
    EXPECT_TRUE(std::all_of(head.begin(), head.end(), [](std::uint8_t x) { return x == 0xEE; }));
    EXPECT_TRUE(std::all_of(tail.begin(), tail.end(), [](std::uint8_t x) { return x == 0xEE; }));
  }
  // More than 65535 IP bytes.
  const Bytes huge(70000, 1);
  PacketFields f = fields_for(static_cast<std::uint8_t>(Opcode::kWriteOnly), 2);
  Bytes head(128, 0xEE), tail(8, 0xEE);
  EXPECT_EQ(t.build(f, head, huge, tail), 0u);
}

}  // namespace
}  // namespace rma::roce
