// libFuzzer target for the RoCE v2 parser (dpdk/wire). Built and run by
// fuzz/run-fuzz.sh (clang++ -fsanitize=fuzzer,address,undefined).
//
// Every input is parsed twice: as given, and with its IPv4 checksum and
// ICRC recomputed (where its lengths allow) so the fuzzer gets past the
// CRC and exercises the transport checks. Whatever parses is rebuilt with
// build_packet, and the rebuilt frame must parse to the same headers and
// payload; parsed again with a READ response's ICRC deferred, it must say
// the same (check_deferred). ARP frames go through the request path (the answer) and the
// reply path: the neighbour table (dpdk/rc/neighbour_table) must believe a
// reply only when it answers a question asked and is addressed to the
// asker, and never change its answer.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "rc/neighbour_table.hpp"
#include "wire/arp.hpp"
#include "wire/wire.hpp"

namespace {

using namespace rma::roce;

[[noreturn]] void fail(const char* what) {
  __builtin_printf("parse_fuzz: %s\n", what);
  std::abort();
}

bool same(const Headers& a, const Headers& b) {
  return a.dst_mac == b.dst_mac && a.src_mac == b.src_mac && a.src_ip == b.src_ip && a.dst_ip == b.dst_ip &&
         a.ip_id == b.ip_id && a.ttl == b.ttl && a.tos == b.tos && a.src_port == b.src_port &&
         a.opcode == b.opcode && a.solicited == b.solicited && a.mig_req == b.mig_req && a.pad == b.pad &&
         a.pkey == b.pkey && a.fecn == b.fecn && a.becn == b.becn && a.dest_qp == b.dest_qp &&
         a.ack_req == b.ack_req && a.psn == b.psn && a.reth_va == b.reth_va && a.reth_rkey == b.reth_rkey &&
         a.reth_length == b.reth_length && a.aeth_syndrome == b.aeth_syndrome && a.aeth_msn == b.aeth_msn &&
         a.atomic_va == b.atomic_va && a.atomic_rkey == b.atomic_rkey && a.atomic_swap_add == b.atomic_swap_add &&
         a.atomic_compare == b.atomic_compare && a.atomic_ack_orig == b.atomic_ack_orig && a.imm == b.imm;
}

// An ARP request that parses is answered with a reply that swaps the two
// parties; the reply is not itself a request (the NIC never answers its own).
void check_arp(std::span<const std::uint8_t> frame) {
  ArpRequest req;
  if (!parse_arp_request(frame, req)) return;
  if ((req.sender_mac[0] & 1u) != 0) fail("accepted a multicast ARP sender");
  const MacAddress ours{0x02, 0, 0, 0, 0, 1};
  std::uint8_t reply[kArpReplyLen];
  if (build_arp_reply(req, ours, reply) != kArpReplyLen) fail("build_arp_reply refused a parsed request");
  ArpRequest again;
  if (parse_arp_request(reply, again)) fail("an ARP reply parsed as a request");
  if (std::memcmp(reply, req.sender_mac.data(), 6) != 0) fail("ARP reply not sent to the asker");
}

// Whatever parses as ARP keeps the parser's promises; as a reply it is
// offered to a neighbour table twice: one that asked for the sender's
// address with the frame's own target as its identity (so the fuzzer can
// reach the accepting path), and one that asked for nothing.
void check_arp_reply(std::span<const std::uint8_t> frame) {
  ArpMessage m;
  if (!parse_arp(frame, m)) return;
  if (m.op != kArpOpRequest && m.op != kArpOpReply) fail("accepted an ARP opcode other than 1 and 2");
  if ((m.sender_mac[0] & 1u) != 0) fail("accepted a multicast ARP sender");
  if (m.sender_mac == MacAddress{}) fail("accepted a zero ARP sender");
  if (frame.size() < kArpFrameLen) fail("parsed a truncated ARP frame");

  using rma::roce::rc::NeighbourTable;
  const auto now = NeighbourTable::Clock::now();
  MacAddress mac{};
  NeighbourTable asked(4);
  const bool can_ask = m.sender_ip != 0 && m.sender_ip != m.target_ip;
  if (can_ask && asked.resolve(m.sender_ip, now, mac) != NeighbourTable::Step::kSendRequest) {
    fail("a new address is not asked for at once");
  }
  const MacAddress ours = m.target_mac;
  const bool believed = asked.on_reply(m, ours, m.target_ip);
  const bool addressed = m.op == kArpOpReply && m.eth_dst == ours && m.eth_src == m.sender_mac;
  if (believed != (can_ask && addressed)) fail("neighbour table belief differs from the rule");
  if (believed) {
    if (asked.resolve(m.sender_ip, now, mac) != NeighbourTable::Step::kResolved || mac != m.sender_mac) {
      fail("a believed reply did not resolve the address to its sender");
    }
    ArpMessage second = m;
    second.sender_mac[5] ^= 0x10;
    second.eth_src = second.sender_mac;
    if (asked.on_reply(second, ours, m.target_ip)) fail("a second answer replaced the first");
  }
  NeighbourTable never_asked(4);
  if (never_asked.on_reply(m, ours, m.target_ip)) fail("believed an unsolicited reply");
  if (never_asked.size() != 0) fail("a reply created an entry");
}

// The ICRC left for the placing copy (IcrcCheck::kDeferReadPayload) says
// what parsing with it checked says: a frame parses with it checked exactly
// when it parses deferred and the deferred check (both ways) holds, with
// the same headers and payload, and the placing copy writes the payload.
void check_deferred(std::span<const std::uint8_t> frame, ParseError checked, const Packet& p) {
  Packet d;
  const ParseError e = parse_packet(frame, d, IcrcCheck::kDeferReadPayload);
  if (!d.icrc.pending) {
    if (e != checked) fail("deferred parse disagrees without deferring");
    return;
  }
  if (e != ParseError::kOk) fail("a deferred parse failed yet left its ICRC pending");
  std::vector<std::uint8_t> placed(d.payload.size());
  const bool holds = deferred_icrc_holds(d);
  if (place_payload_checking_icrc(d, placed.data()) != holds) fail("the placing copy's ICRC disagrees");
  if (!placed.empty() && std::memcmp(placed.data(), d.payload.data(), placed.size()) != 0) fail("placed payload differs");
  if (holds != (checked == ParseError::kOk)) fail("deferred ICRC disagrees with the parse that checks it");
  if (!holds && checked != ParseError::kBadIcrc) fail("a deferred packet failed for something but its ICRC");
  if (holds && (!same(p.h, d.h) || p.payload.data() != d.payload.data() || p.payload.size() != d.payload.size()))
    fail("deferred parse decoded differently");
}

void check(std::span<const std::uint8_t> frame) {
  check_arp(frame);
  check_arp_reply(frame);
  Packet p;
  const ParseError e = parse_packet(frame, p);
  if (static_cast<int>(e) >= static_cast<int>(ParseError::kCount)) fail("error out of range");
  if (parse_error_name(e).empty()) fail("unnamed error");
  check_deferred(frame, e, p);
  if (e != ParseError::kOk) return;
  if (p.payload.data() < frame.data() || p.payload.data() + p.payload.size() > frame.data() + frame.size())
    fail("payload outside the frame");
  if (!opcode_traits(p.h.opcode).valid) fail("accepted an invalid opcode");

  std::vector<std::uint8_t> rebuilt(header_length(p.h.opcode));
  std::uint8_t tail[3 + kIcrcLen];
  const std::size_t t = build_packet(p.h, rebuilt, p.payload, tail);
  if (t == 0) fail("build_packet refused a parsed packet");
  if (t != p.h.pad + kIcrcLen) fail("rebuilt pad differs");
  rebuilt.insert(rebuilt.end(), p.payload.begin(), p.payload.end());
  rebuilt.insert(rebuilt.end(), tail, tail + t);
  Packet q;
  if (parse_packet(rebuilt, q) != ParseError::kOk) fail("rebuilt frame does not parse");
  if (!same(p.h, q.h)) fail("rebuilt headers differ");
  if (p.payload.size() != q.payload.size() ||
      (p.payload.size() != 0 && std::memcmp(p.payload.data(), q.payload.data(), p.payload.size()) != 0))
    fail("rebuilt payload differs");
}

// Recomputes the IPv4 header checksum and the ICRC in place, when the IPv4
// total length fits the buffer.
void fix_up(std::vector<std::uint8_t>& f) {
  constexpr std::size_t ip = kEthHeaderLen;
  if (f.size() < ip + kIpv4HeaderLen) return;
  f[ip + 10] = f[ip + 11] = 0;
  std::uint32_t sum = 0;
  for (std::size_t i = ip; i < ip + kIpv4HeaderLen; i += 2) sum += (f[i] << 8) | f[i + 1];
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  f[ip + 10] = static_cast<std::uint8_t>(~sum >> 8);
  f[ip + 11] = static_cast<std::uint8_t>(~sum);
  const std::size_t end = ip + ((f[ip + 2] << 8) | f[ip + 3]);
  if (end > f.size() || end < ip + kIcrcLen) return;
  const std::uint32_t c = compute_icrc(std::span<const std::uint8_t>(f.data(), end - kIcrcLen));
  for (std::size_t i = 0; i < 4; ++i) f[end - 4 + i] = static_cast<std::uint8_t>(c >> (8 * i));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  check(std::span<const std::uint8_t>(data, size));
  std::vector<std::uint8_t> fixed(data, data + size);  // exactly `size` bytes: ASan sees overreads
  fix_up(fixed);
  check(fixed);
  return 0;
}
