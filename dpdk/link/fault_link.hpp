// A pair of in-memory Links (A <-> B) that injects faults: drops, duplicates,
// reorders, delays (by a number of polls of the receiving side) and corrupts
// (flips one random byte of) frames, each with its own probability, driven
// by a seeded generator so a run is repeatable for a given seed. Counts every
// fault it injects. No DPDK; thread-safe (one mutex per pair).
//
// Used by the RC protocol tests and by anything that wants two softroce
// devices in one process without a NIC.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "link/link.hpp"

namespace rma::roce {

struct FaultConfig {
  double drop = 0.0;       // probability a frame is lost
  double duplicate = 0.0;  // probability a frame is delivered twice
  double reorder = 0.0;    // probability a frame overtakes the one queued before it
  double delay = 0.0;      // probability a frame is held back for 1..max_delay_polls polls
  double corrupt = 0.0;    // probability one random byte of the frame is flipped
  std::uint32_t max_delay_polls = 8;
  std::uint64_t seed = 1;
  std::size_t capacity = 8192;  // frames queued per direction before transmit refuses more
};

struct FaultCounters {
  std::uint64_t offered = 0;     // frames handed to transmit (and taken)
  std::uint64_t dropped = 0;
  std::uint64_t duplicated = 0;
  std::uint64_t reordered = 0;
  std::uint64_t delayed = 0;
  std::uint64_t corrupted = 0;
  std::uint64_t delivered = 0;
  std::uint64_t refused = 0;     // transmit found the queue at capacity
};

struct LinkEndpointConfig {
  std::string name;
  MacAddress mac{};
  std::uint32_t ipv4 = 0;        // host byte order
  std::uint32_t max_frame = 4096 + 128;
  bool neighbours_by_arp = false;  // LinkInfo::neighbours_by_arp (tests of ARP resolution)
};

class FaultLink;

// Both ends of one fault pair. The Links share state; either may be
// destroyed first.
struct FaultLinkPair {
  std::unique_ptr<FaultLink> a;
  std::unique_ptr<FaultLink> b;
};

class FaultLink final : public Link {
 public:
  struct Shared;
  FaultLink(std::shared_ptr<Shared> shared, int side, LinkInfo info) noexcept;
  ~FaultLink() override;

  std::size_t transmit(std::span<const TxFrame> frames) noexcept override;
  std::size_t poll(FrameSink& sink, std::size_t max) noexcept override;
  const LinkInfo& info() const noexcept override { return info_; }
  LinkCounters counters() const noexcept override;

  // Faults applied to frames sent from this side (from now on).
  void set_faults(const FaultConfig& cfg) noexcept;
  // Tests: called for every frame this side transmits (index counts from 0
  // over the pair's life); returning true drops the frame. Empty = none.
  using DropFilter = std::function<bool(std::uint64_t index, std::span<const std::uint8_t> head)>;
  void set_drop_filter(DropFilter filter);
  // Faults injected on frames this side sent.
  FaultCounters fault_counters() const noexcept;
  // Frames queued towards this side, not yet delivered.
  std::size_t pending_rx() const noexcept;

 private:
  std::shared_ptr<Shared> shared_;
  int side_;
  LinkInfo info_;
};

// Makes a connected pair. `faults` applies to both directions (change each
// side with set_faults). Endpoint names default to "fault:A"/"fault:B", MACs
// to 02:00:00:00:00:0{1,2} and addresses to 10.0.0.{1,2}.
FaultLinkPair make_fault_link_pair(const FaultConfig& faults, LinkEndpointConfig a = {},
                                   LinkEndpointConfig b = {});

}  // namespace rma::roce
