#include "rc/neighbour_table.hpp"

#include <algorithm>

namespace rma::roce::rc {

namespace {
using std::chrono::milliseconds;

// The wait after the n-th request (n >= 1): 10 ms doubling up to 500 ms.
// Short at first (a peer on the same segment answers in microseconds once
// something progresses its NIC), then no more than two requests a second
// while a peer that has not started yet is awaited.
milliseconds retry_interval(std::uint32_t requests) noexcept {
  const std::uint32_t shift = std::min<std::uint32_t>(requests - 1, 6);
  return std::min(milliseconds(10 << shift), milliseconds(500));
}
}  // namespace

NeighbourTable::NeighbourTable(std::size_t capacity) : capacity_(capacity) { entries_.reserve(capacity); }

NeighbourTable::Entry* NeighbourTable::find(std::uint32_t ip) noexcept {
  for (Entry& e : entries_) {
    if (e.ip == ip) return &e;
  }
  return nullptr;
}

const NeighbourTable::Entry* NeighbourTable::find(std::uint32_t ip) const noexcept {
  for (const Entry& e : entries_) {
    if (e.ip == ip) return &e;
  }
  return nullptr;
}

NeighbourTable::Step NeighbourTable::resolve(std::uint32_t ip, Clock::time_point now, MacAddress& mac) noexcept {
  Entry* e = find(ip);
  if (e == nullptr) {
    if (entries_.size() >= capacity_) return Step::kFull;
    entries_.push_back(Entry{ip, false, {}, 0, now});  // within the reserved capacity: no allocation
    e = &entries_.back();
  }
  if (e->resolved) {
    mac = e->mac;
    return Step::kResolved;
  }
  if (now < e->next_request) return Step::kWait;
  ++e->requests;
  e->next_request = now + retry_interval(e->requests);
  return Step::kSendRequest;
}

bool NeighbourTable::on_reply(const ArpMessage& r, const MacAddress& our_mac, std::uint32_t our_ip) noexcept {
  if (r.op != kArpOpReply) return false;
  if (r.eth_dst != our_mac || r.target_mac != our_mac || r.target_ip != our_ip) return false;
  if (r.eth_src != r.sender_mac || r.sender_ip == 0 || r.sender_ip == our_ip) return false;
  Entry* e = find(r.sender_ip);
  if (e == nullptr || e->resolved || e->requests == 0) return false;
  e->mac = r.sender_mac;
  e->resolved = true;
  return true;
}

std::uint32_t NeighbourTable::requests_sent(std::uint32_t ip) const noexcept {
  const Entry* e = find(ip);
  return e == nullptr ? 0 : e->requests;
}

}  // namespace rma::roce::rc
