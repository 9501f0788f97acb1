#include "provider/counter_samples.hpp"

#include <string>

#include "wire/wire.hpp"

namespace rma::softroce {
namespace {

// Suffixes by NakCode (IBA 9.7.5.2.2), in enum order.
constexpr const char* kNakKinds[5] = {"psn_seq_err", "inv_req", "rem_access_err", "rem_op_err",
                                      "inv_rd_req"};

void add(std::vector<CounterSample>& out, std::string name, std::uint64_t v) {
  out.push_back(CounterSample{std::move(name), v});
}

}  // namespace

void append_qp_samples(const roce::rc::RcCounters& c, std::vector<CounterSample>& out) {
  add(out, "tx_frames", c.tx_frames);
  add(out, "tx_bytes", c.tx_bytes);
  add(out, "rx_frames", c.rx_frames);
  add(out, "rx_bytes", c.rx_bytes);
  add(out, "retransmitted_packets", c.retransmitted_packets);
  add(out, "retry_timeouts", c.retry_timeouts);
  add(out, "fast_retries", c.fast_retries);
  add(out, "acks_sent", c.acks_sent);
  add(out, "acks_received", c.acks_received);
  for (int k = 0; k < 5; ++k) add(out, std::string("naks_sent_") + kNakKinds[k], c.naks_sent[k]);
  for (int k = 0; k < 5; ++k) add(out, std::string("naks_received_") + kNakKinds[k], c.naks_received[k]);
  add(out, "rnr_naks_sent", c.rnr_naks_sent);
  add(out, "rnr_naks_received", c.rnr_naks_received);
  add(out, "duplicate_requests", c.duplicate_requests);
  add(out, "out_of_sequence", c.out_of_sequence);
  add(out, "read_replays", c.read_replays);
  add(out, "atomic_replays", c.atomic_replays);
  add(out, "stale_duplicates", c.stale_duplicates);
  add(out, "duplicate_responses", c.duplicate_responses);
  add(out, "bad_responses", c.bad_responses);
  add(out, "dropped_state", c.dropped_state);
  add(out, "bad_opcode_sequence", c.bad_opcode_sequence);
}

std::vector<CounterSample> device_samples(const roce::rc::DeviceCounters& d, const roce::LinkCounters& link) {
  std::vector<CounterSample> out;
  out.reserve(64);
  // Device-level frame counts first: they are what users look at.
  add(out, "dev_rx_frames", d.rx_frames);
  add(out, "dev_rx_bytes", d.rx_bytes);
  add(out, "dev_tx_frames", d.tx_frames);
  add(out, "dev_tx_bytes", d.tx_bytes);
  add(out, "tx_link_full", d.tx_link_full);
  add(out, "tx_ring_full", d.tx_ring_full);
  add(out, "tx_icrc_open", d.tx_icrc_open);
  add(out, "rx_icrc_in_copy", d.rx_icrc_in_copy);
  add(out, "icrc_errors", d.icrc_errors);
  add(out, "unknown_qpn", d.unknown_qpn);
  add(out, "wrong_peer", d.wrong_peer);
  add(out, "bad_pkey", d.bad_pkey);
  add(out, "oversized_frames_dropped", d.oversized_frames);
  add(out, "not_for_us", d.not_for_us);
  add(out, "arp_requests_answered", d.arp_requests_answered);
  add(out, "arp_requests_sent", d.arp_requests_sent);
  add(out, "arp_replies_accepted", d.arp_replies_accepted);
  add(out, "arp_replies_ignored", d.arp_replies_ignored);
  add(out, "arp_address_conflicts", d.arp_address_conflicts);
  // A frame that is not RoCE v2 at all (IPv6 neighbour discovery, ARP, other
  // UDP traffic on a shared interface) is somebody else's, not a malformed
  // one of ours: the two sums are kept apart.
  std::uint64_t malformed = 0, not_roce = 0;
  for (int e = 1; e < static_cast<int>(roce::ParseError::kCount); ++e) {
    const auto pe = static_cast<roce::ParseError>(e);
    if (pe == roce::ParseError::kNotIpv4 || pe == roce::ParseError::kNotUdp || pe == roce::ParseError::kNotRoce) {
      not_roce += d.parse_errors[e];
    } else if (pe != roce::ParseError::kBadIcrc) {
      malformed += d.parse_errors[e];
    }
    add(out, "rx_drop_" + std::string(roce::parse_error_name(pe)), d.parse_errors[e]);
  }
  add(out, "malformed_frames_dropped", malformed);
  add(out, "non_roce_frames_ignored", not_roce);
  // Sums over every QP, live and destroyed.
  append_qp_samples(d.qp, out);
  add(out, "link_tx_frames", link.tx_frames);
  add(out, "link_tx_bytes", link.tx_bytes);
  add(out, "link_tx_dropped", link.tx_dropped);
  add(out, "link_rx_frames", link.rx_frames);
  add(out, "link_rx_bytes", link.rx_bytes);
  add(out, "link_tx_loss_injected", link.tx_loss_injected);
  add(out, "link_rx_control_dropped", link.rx_control_dropped);
  return out;
}

}  // namespace rma::softroce
