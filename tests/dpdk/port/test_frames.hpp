// Test frames for the port tests and the peer helper: Ethernet header with a
// test EtherType, a sequence number and a pattern derived from it.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "link/link.hpp"

namespace rma::roce::testing {

constexpr std::uint16_t kTestEtherType = 0x88B6;  // IEEE local experimental 2
constexpr std::uint32_t kStopSeq = 0xFFFFFFFFu;   // "stop echoing" (af_packet tests)

inline std::uint8_t pattern(std::size_t i, std::uint32_t seq) {
  return static_cast<std::uint8_t>((i * 131u + seq * 7u + (i >> 8)) & 0xff);
}

inline std::vector<std::uint8_t> make_frame(std::size_t size, std::uint32_t seq) {
  std::vector<std::uint8_t> f(size);
  for (std::size_t i = 0; i < size; ++i) f[i] = pattern(i, seq);
  std::memset(f.data(), 0xff, 6);
  const std::uint8_t src[6] = {0x02, 0, 0, 0, 0, 0x01};
  std::memcpy(f.data() + 6, src, 6);
  f[12] = kTestEtherType >> 8;
  f[13] = kTestEtherType & 0xff;
  for (int b = 0; b < 4; ++b) f[14 + b] = static_cast<std::uint8_t>(seq >> (24 - 8 * b));
  return f;
}

inline bool is_test_frame(std::span<const std::uint8_t> f) {
  return f.size() >= 18 && f[12] == (kTestEtherType >> 8) && f[13] == (kTestEtherType & 0xff);
}

inline std::uint32_t frame_seq(std::span<const std::uint8_t> f) {
  return (std::uint32_t{f[14]} << 24) | (std::uint32_t{f[15]} << 16) | (std::uint32_t{f[16]} << 8) | f[17];
}

// One frame as three pieces (head 40 B, payload, tail 4 B) so transmit's
// gather path is exercised.
inline TxFrame as_tx(const std::vector<std::uint8_t>& f) {
  const std::size_t head = f.size() < 44 ? f.size() : 40;
  const std::size_t tail = f.size() - head >= 4 ? 4 : f.size() - head;
  std::span<const std::uint8_t> all(f);
  return TxFrame{all.subspan(0, head), all.subspan(head, f.size() - head - tail), all.subspan(f.size() - tail)};
}

struct CollectSink : FrameSink {
  std::vector<std::vector<std::uint8_t>> frames;
  void on_frame(std::span<const std::uint8_t> frame) noexcept override {
    frames.emplace_back(frame.begin(), frame.end());
  }
};

struct CountSink : FrameSink {
  std::uint64_t frames = 0, bytes = 0;
  void on_frame(std::span<const std::uint8_t> frame) noexcept override {
    ++frames;
    bytes += frame.size();
  }
};

// Sends `f`, retrying "not taken" until `deadline`.
inline bool send_until(Link& link, const std::vector<std::uint8_t>& f,
                       std::chrono::steady_clock::time_point deadline) {
  TxFrame tx = as_tx(f);
  while (link.transmit(std::span<const TxFrame>(&tx, 1)) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
  }
  return true;
}

}  // namespace rma::roce::testing
