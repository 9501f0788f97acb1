// ICRC throughput and build+parse cost of the RoCE v2 wire format, and what
// sending a frame costs with its ICRC computed by the builder against left
// open for the copy into the link's buffer (BM_FrameOut).
//   rma_wire_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <vector>

#include "wire/packet_template.hpp"
#include "wire/wire.hpp"

namespace rma::roce {
namespace {

Headers bench_headers(Opcode op) {
  Headers h;
  h.dst_mac = {2, 0, 0, 0, 0, 2};
  h.src_mac = {2, 0, 0, 0, 0, 1};
  h.src_ip = 0x0A000001;
  h.dst_ip = 0x0A000002;
  h.ip_id = 1;
  h.opcode = static_cast<std::uint8_t>(op);
  h.dest_qp = 0x11;
  h.psn = 0x1234;
  h.reth_va = 0x7F0000001000;
  h.reth_rkey = 0x55;
  return h;
}

// A whole WRITE ONLY frame whose total size (Ethernet .. ICRC) is `frame_len`.
std::vector<std::uint8_t> frame_of_size(std::size_t frame_len) {
  Headers h = bench_headers(Opcode::kWriteOnly);
  const std::size_t hl = header_length(h.opcode);
  const std::size_t payload_len = frame_len > hl + 4 ? frame_len - hl - 4 : 0;  // multiple of 4 for our sizes
  std::vector<std::uint8_t> payload(payload_len, 0x5A);
  std::vector<std::uint8_t> f(hl);
  std::uint8_t tail[7];
  const std::size_t t = build_packet(h, f, payload, tail);
  f.insert(f.end(), payload.begin(), payload.end());
  f.insert(f.end(), tail, tail + t);
  return f;
}

void BM_Icrc(benchmark::State& state) {
  const auto f = frame_of_size(static_cast<std::size_t>(state.range(0)));
  const std::span<const std::uint8_t> without_icrc(f.data(), f.size() - kIcrcLen);
  for (auto _ : state) {
    benchmark::DoNotOptimize(compute_icrc(without_icrc));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(without_icrc.size() - kEthHeaderLen));
}
BENCHMARK(BM_Icrc)->Arg(64)->Arg(1024)->Arg(4096);

void BM_BuildParseWrite4K(benchmark::State& state) {
  Headers h = bench_headers(Opcode::kWriteOnly);
  const std::size_t payload_len = 4096;
  std::vector<std::uint8_t> payload(payload_len, 0xA5);
  // Frame laid out contiguously, as a NIC would receive it.
  std::vector<std::uint8_t> frame(header_length(h.opcode) + payload_len + 7);
  const std::size_t hl = header_length(h.opcode);
  std::copy(payload.begin(), payload.end(), frame.begin() + static_cast<std::ptrdiff_t>(hl));
  const std::span<std::uint8_t> head(frame.data(), hl);
  const std::span<const std::uint8_t> pay(frame.data() + hl, payload_len);
  const std::span<std::uint8_t> tail(frame.data() + hl + payload_len, 7);
  Packet p;
  for (auto _ : state) {
    h.psn = psn_add(h.psn, 1);
    const std::size_t t = build_packet(h, head, pay, tail);
    const ParseError e = parse_packet(std::span<const std::uint8_t>(frame.data(), hl + payload_len + t), p);
    if (e != ParseError::kOk) state.SkipWithError("parse failed");
    benchmark::DoNotOptimize(p);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(payload_len));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_BuildParseWrite4K);

// One WRITE MIDDLE frame of range(0) payload bytes as the engine and a DPDK
// port send it: PacketTemplate::build, then write_tx_frame into the frame's
// buffer (the mbuf). range(1): 0 = the builder computes the whole ICRC (a
// CRC pass over the payload, then the copy), 1 = the ICRC is left open and
// completed in the copy.
void BM_FrameOut(benchmark::State& state) {
  const auto payload_len = static_cast<std::size_t>(state.range(0));
  const bool open = state.range(1) != 0;
  Headers h = bench_headers(Opcode::kWriteMiddle);
  PacketTemplate t;
  t.init(h);
  PacketFields f;
  f.opcode = static_cast<std::uint8_t>(Opcode::kWriteMiddle);
  std::vector<std::uint8_t> payload(payload_len, 0x3C), head(128), tail(8), out(payload_len + 256);
  const std::size_t hl = header_length(f.opcode);
  for (auto _ : state) {
    f.psn = psn_add(f.psn, 1);
    std::uint32_t partial = 0;
    const std::size_t tl = t.build(f, head, payload, tail, open ? &partial : nullptr);
    const TxFrame frame{{head.data(), hl}, payload, {tail.data(), tl}, open, partial};
    benchmark::DoNotOptimize(write_tx_frame(frame, out.data()));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(payload_len));
}
BENCHMARK(BM_FrameOut)->ArgsProduct({{256, 512, 1024, 2048, 4096}, {0, 1}})->ArgNames({"payload", "open"});
// Small payloads: the headers, payload and pad in one CRC (never open).
BENCHMARK(BM_FrameOut)->Args({8, 0})->Args({64, 0})->ArgNames({"payload", "open"});

void BM_ParseAck(benchmark::State& state) {
  Headers h = bench_headers(Opcode::kAcknowledge);
  std::vector<std::uint8_t> f(header_length(h.opcode));
  std::uint8_t tail[7];
  const std::size_t t = build_packet(h, f, {}, tail);
  f.insert(f.end(), tail, tail + t);
  Packet p;
  for (auto _ : state) {
    benchmark::DoNotOptimize(parse_packet(f, p));
    benchmark::DoNotOptimize(p);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_ParseAck);

}  // namespace
}  // namespace rma::roce
