// The shared region table: every registered region of a device, by slot,
// in the device's segment, so that a requester in another process checks
// the rkey, rights and bounds of its target itself before it copies (the
// checks a NIC responder makes, in the order swkit::check_remote makes
// them, with the same vendor errors).
//
// The slot of a region is the low kMrSlotBits of its keys (the device's
// swkit::KeyTable draws them so); the whole rkey is compared, so a stale key
// names nothing. Entries are seqlocked (layout.hpp MrSlot).
#pragma once

#include <cstdint>

#include "rma/sdk/provider.hpp"
#include "shm/layout.hpp"

namespace rma::shm {

// Owner, under its device lock.
void publish_region(SegmentLayout& seg, std::uint32_t rkey, std::uint64_t addr, std::uint64_t length,
                    Access access, std::uint32_t pd) noexcept;
void withdraw_region(SegmentLayout& seg, std::uint32_t rkey) noexcept;

// Any process: kVeNone when `rkey` names a live region of PD `pd` that
// grants `right` over [addr, addr+len), else the swkit vendor error.
std::uint32_t check_remote_region(const SegmentLayout& seg, std::uint32_t pd, std::uint32_t rkey, std::uint64_t addr,
                                  std::uint64_t len, Access right) noexcept;

}  // namespace rma::shm
