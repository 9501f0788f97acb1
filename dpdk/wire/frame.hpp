// What a RoCE v2 frame is to the wire format and to every Link that carries
// it: an Ethernet address, and a frame to send in pieces. Here, not in the
// Link, so that the wire format depends on nothing that moves frames.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace rma::roce {

using MacAddress = std::array<std::uint8_t, 6>;

// One frame to send, Ethernet header first, without FCS, as up to three
// pieces so the payload can come straight from registered memory: the
// headers (Ethernet..transport), the payload, and the tail (pad + ICRC).
//
// An open ICRC (icrc_open) is one the sender left for the copy that writes
// the frame out: `tail` ends in four placeholder bytes, `icrc_partial` is
// the CRC of the masked headers (PacketTemplate::build), and write_tx_frame
// continues it over payload and pad while it copies them, so a large
// payload is read once instead of twice (or write_tx_tail completes it for
// a Link that hands the payload to a driver that copies it). Only a Link
// whose LinkInfo::completes_icrc says it writes frames out with one of the
// two is given open frames.
struct TxFrame {
  std::span<const std::uint8_t> head;
  std::span<const std::uint8_t> payload;
  std::span<const std::uint8_t> tail;
  bool icrc_open = false;
  std::uint32_t icrc_partial = 0;
  std::size_t size() const noexcept { return head.size() + payload.size() + tail.size(); }
};

// Writes the frame's pieces one after the other at `dst` (room for
// f.size() bytes), completing an open ICRC; returns f.size().
std::size_t write_tx_frame(const TxFrame& f, std::uint8_t* dst) noexcept;

// Writes only the frame's tail at `dst` (room for f.tail.size() bytes),
// completing an open ICRC over the payload where it lies: for a Link that
// sends the payload from where it is (a port whose driver copies it out of
// registered memory), so the payload is read by the CRC but not copied here.
void write_tx_tail(const TxFrame& f, std::uint8_t* dst) noexcept;

// From how many payload bytes a frame is cheaper to send with its ICRC
// open, where write_tx_frame folds the CRC into its copy
// (icrc_folds_in_copy(): AVX-512 with VPCLMULQDQ): one block of the fold.
// Measured, template build and write_tx_frame of one frame
// (`rma_wire_bench --benchmark_filter=BM_FrameOut`, bench/README.md): 4 KiB
// 104 ns open against 136 whole, 1 KiB 64 against 69, 256 B 57 against 60.
// Without the fold an open ICRC saves nothing (the same CRC after the copy).
constexpr std::size_t kOpenIcrcFrom = 256;
bool icrc_folds_in_copy() noexcept;

}  // namespace rma::roce
