#include "rc/types.hpp"


namespace rma::roce::rc {

void RcCounters::add(const RcCounters& o) noexcept {
  tx_frames += o.tx_frames;
  tx_bytes += o.tx_bytes;
  rx_frames += o.rx_frames;
  rx_bytes += o.rx_bytes;
  retransmitted_packets += o.retransmitted_packets;
  retry_timeouts += o.retry_timeouts;
  fast_retries += o.fast_retries;
  acks_sent += o.acks_sent;
  acks_received += o.acks_received;
  for (int i = 0; i < 5; ++i) {
    naks_sent[i] += o.naks_sent[i];
    naks_received[i] += o.naks_received[i];
  }
  rnr_naks_sent += o.rnr_naks_sent;
  rnr_naks_received += o.rnr_naks_received;
  duplicate_requests += o.duplicate_requests;
  out_of_sequence += o.out_of_sequence;
  read_replays += o.read_replays;
  atomic_replays += o.atomic_replays;
  stale_duplicates += o.stale_duplicates;
  duplicate_responses += o.duplicate_responses;
  bad_responses += o.bad_responses;
  dropped_state += o.dropped_state;
  bad_opcode_sequence += o.bad_opcode_sequence;
}

std::chrono::nanoseconds rnr_interval(std::uint8_t code) noexcept {
  // In units of 10 us (IBA table 45).
  static constexpr std::uint32_t kTenMicros[32] = {
      65536, 1,   2,   3,   4,   6,    8,    12,   16,   24,    32,    48,    64,    96,    128,   192,
      256,   384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152};
  return std::chrono::microseconds(10) * kTenMicros[code & 31u];
}

}  // namespace rma::roce::rc
