// The softroce provider's counters under the contract's stable names
// (Device::read_counters, QueuePair::read_counters): the RC engine keeps them
// as structs; tools and tests look them up by name.
#pragma once

#include <vector>

#include "link/link.hpp"
#include "rc/types.hpp"
#include "rma/sdk/provider.hpp"

namespace rma::softroce {

// Per-QP protocol counters: frames, bytes, retransmissions, ACKs, NAKs by kind...
void append_qp_samples(const roce::rc::RcCounters& c, std::vector<CounterSample>& out);

// Device-wide: every QP (live and destroyed) plus the receive path's drops
// by reason and the link's own counters (prefixed "link_").
std::vector<CounterSample> device_samples(const roce::rc::DeviceCounters& d, const roce::LinkCounters& link);

}  // namespace rma::softroce
