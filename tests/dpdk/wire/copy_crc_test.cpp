// The copy that computes a CRC-32 as it goes (copy_crc32_update) against a
// bit-at-a-time CRC written here, and write_tx_frame: a frame whose ICRC was
// left open comes out byte for byte as the frame built whole.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "wire/icrc.hpp"
#include "wire/packet_template.hpp"
#include "wire/wire.hpp"

namespace rma::roce {
namespace {

using Bytes = std::vector<std::uint8_t>;

// zlib-style continuation (pre- and post-inverted), one bit at a time.
std::uint32_t ref_crc32(std::uint32_t crc, const std::uint8_t* p, std::size_t n) {
  std::uint32_t c = ~crc;
  for (std::size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

TEST(CopyCrc, CopiesAndContinuesTheCrcForEveryLengthAndAlignment) {
  std::mt19937 rng(7);
  Bytes src(16384 + 64);
  for (auto& b : src) b = static_cast<std::uint8_t>(rng());
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n <= 1100; ++n) lengths.push_back(n);
  for (std::size_t n : {2047u, 2048u, 2049u, 4095u, 4096u, 4097u, 4352u, 8192u, 9000u, 16384u}) lengths.push_back(n);
  Bytes dst(src.size() + 128);
  int checked = 0;
  for (std::size_t n : lengths) {
    const std::size_t so = rng() % 64, d = 1 + rng() % 63;
    const std::uint32_t seed = static_cast<std::uint32_t>(rng());
    std::fill(dst.begin(), dst.end(), 0xA5);
    const std::uint32_t got = detail::copy_crc32_update(dst.data() + d, src.data() + so, n, seed);
    ASSERT_EQ(got, ref_crc32(seed, src.data() + so, n)) << "length " << n << " source offset " << so;
    ASSERT_EQ(std::memcmp(dst.data() + d, src.data() + so, n), 0) << "length " << n;
    ASSERT_EQ(dst[d - 1], 0xA5) << "wrote before the destination, length " << n;
    ASSERT_TRUE(std::all_of(dst.begin() + static_cast<std::ptrdiff_t>(d + n), dst.end(),
                            [](std::uint8_t x) { return x == 0xA5; }))
        << "wrote past the destination, length " << n;
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(lengths.size()));
  // A chain of pieces is the CRC of the whole.
  std::uint32_t crc = 0;
  std::size_t off = 0;
  for (std::size_t piece : {300u, 4096u, 1u, 2560u}) {
    crc = detail::copy_crc32_update(dst.data() + off, src.data() + off, piece, crc);
    off += piece;
  }
  EXPECT_EQ(crc, ref_crc32(0, src.data(), off));
}

Headers connection() {
  Headers h;
  h.dst_mac = {0x02, 0, 0, 0, 0, 2};
  h.src_mac = {0x02, 0, 0, 0, 0, 1};
  h.src_ip = 0x0A000001u;
  h.dst_ip = 0x0A000002u;
  h.ttl = 64;
  h.tos = 0x02;
  h.src_port = udp_source_port(5, 0x77);
  h.pkey = 0xFFFF;
  h.fecn = true;
  h.dest_qp = 0x00ABCDu;
  return h;
}

// head | payload | tail as write_tx_frame writes them.
Bytes written(const TxFrame& f) {
  Bytes out(f.size() + 16, 0xEE);
  EXPECT_EQ(write_tx_frame(f, out.data()), f.size());
  EXPECT_TRUE(std::all_of(out.begin() + static_cast<std::ptrdiff_t>(f.size()), out.end(),
                          [](std::uint8_t x) { return x == 0xEE; }));
  out.resize(f.size());
  return out;
}

TEST(WriteTxFrame, AnOpenIcrcIsCompletedToTheFrameBuiltWhole) {
  PacketTemplate t;
  t.init(connection());
  const std::uint8_t ops[] = {static_cast<std::uint8_t>(Opcode::kWriteOnly), static_cast<std::uint8_t>(Opcode::kWriteMiddle),
                              static_cast<std::uint8_t>(Opcode::kReadResponseFirst),
                              static_cast<std::uint8_t>(Opcode::kSendLastImm)};
  int compared = 0;
  for (std::uint8_t op : ops) {
    for (std::size_t size : {1u, 3u, 255u, 256u, 257u, 1021u, 2048u, 2050u, 4093u, 4096u}) {
      Bytes payload(size);
      for (std::size_t i = 0; i < size; ++i) payload[i] = static_cast<std::uint8_t>(i * 7 + op);
      PacketFields f;
      f.opcode = op;
      f.psn = 77 + size;
      f.ip_id = static_cast<std::uint16_t>(size);
      f.va = 0x1000;
      f.rkey = 0x42;
      f.length = static_cast<std::uint32_t>(size);
      f.imm = 9;
      f.syndrome = 0x1F;
      f.msn = 3;
      Bytes head_whole(128), tail_whole(8), head_open(128), tail_open(8, 0xEE);
      const std::size_t hl = header_length(op);
      const std::size_t tl = t.build(f, head_whole, payload, tail_whole);
      ASSERT_NE(tl, 0u);
      std::uint32_t partial = 0;
      ASSERT_EQ(t.build(f, head_open, payload, tail_open, &partial), tl);
      const TxFrame whole{{head_whole.data(), hl}, payload, {tail_whole.data(), tl}};
      const TxFrame open{{head_open.data(), hl}, payload, {tail_open.data(), tl}, true, partial};
      const Bytes a = written(whole), b = written(open);
      ASSERT_EQ(a, b) << "opcode " << int(op) << " payload " << size;
      // The tail alone, for a payload a driver copies from where it lies:
      // the same bytes as the frame's last ones, open ICRC or whole, and
      // nothing written past them.
      for (const TxFrame* tf : {&whole, &open}) {
        Bytes tail(tl + 8, 0xEE);
        write_tx_tail(*tf, tail.data());
        EXPECT_TRUE(std::equal(tail.begin(), tail.begin() + static_cast<std::ptrdiff_t>(tl),
                               b.end() - static_cast<std::ptrdiff_t>(tl)))
            << "opcode " << int(op) << " payload " << size << (tf == &open ? " open" : " whole");
        EXPECT_TRUE(std::all_of(tail.begin() + static_cast<std::ptrdiff_t>(tl), tail.end(),
                                [](std::uint8_t x) { return x == 0xEE; }));
      }
      Packet p;
      ASSERT_EQ(parse_packet(b, p), ParseError::kOk) << "opcode " << int(op) << " payload " << size;
      ++compared;
    }
  }
  EXPECT_EQ(compared, 40);
}

TEST(WriteTxFrame, AFrameWithoutPayloadOrTailIsItsHead) {
  const Bytes head = {1, 2, 3, 4, 5};
  const TxFrame f{head, {}, {}};
  EXPECT_EQ(written(f), head);
}

}  // namespace
}  // namespace rma::roce
