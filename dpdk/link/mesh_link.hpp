// One Link over several point-to-point Links, one per peer, plus loopback,
// plus optionally an uplink: how a softroce device reaches every rank of a
// job when each link (memif) joins exactly two processes, and, with the
// uplink, how the ranks of one host share a kernel interface to the other
// hosts while reaching each other over memif. Transmit routes each frame by
// its destination MAC: this device's own MAC goes into a loopback ring that
// the next poll() delivers (an RC QP connected to another QP of the same
// device, e.g. the RMA API's rank-to-itself QP); a member's peer MAC to
// that member; a broadcast or multicast frame (an ARP request) to every
// member and the uplink; anything else to the uplink, or, without one, is
// taken and counted as unroutable (a misaddressed frame must not stall the
// transmit ring behind it).
//
// A member's peer MAC is either given (a memif mesh derives every rank's
// MAC from its rank) or learned: the source MAC of the first frame the
// member delivers (the ranks of one host sharing an interface have
// identities their siblings cannot compute; each asks for the others by
// ARP, and the request or the reply that crosses the member teaches it).
// A member is a point-to-point link to one process of this host, so what
// it teaches is as trustworthy as that process; nothing arriving on the
// uplink ever changes a route, and a route once learned is never replaced.
//
// No DPDK; the members and the uplink may be any Links. Not thread-safe,
// like every Link: the softroce engine calls it under its device lock.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "link/link.hpp"
#include "rma/sdk/status.hpp"

namespace rma::roce {

struct MeshMember {
  MacAddress peer{};           // the MAC of the device at the far end (ignored while `learn` waits)
  std::unique_ptr<Link> link;  // its max_frame bounds the mesh's
  bool learn = false;          // peer unknown: the source MAC of the first frame it delivers
};

struct MeshCounters {
  std::uint64_t loopback_frames = 0;
  std::uint64_t loopback_full = 0;     // transmit calls stopped by a full loopback ring
  std::uint64_t unroutable_frames = 0; // no member owns the destination MAC and no uplink, or oversize: dropped
  std::uint64_t flooded_frames = 0;    // broadcast/multicast frames sent to every member and the uplink
  std::uint64_t peers_learned = 0;     // member routes learned from a frame's source MAC
};

class MeshLink final : public Link {
 public:
  // `self`: this device's name, MAC, IPv4 and largest frame (the mesh's
  // max_frame is the smallest of it, the members' and the uplink's). Two
  // members with one given peer MAC, or a member with `self.mac`, are
  // rejected. `uplink` (may be null) carries what no member owns; the
  // mesh finds its peers by ARP (LinkInfo::neighbours_by_arp) when the
  // uplink does or when a member's peer is to be learned.
  static Result<std::unique_ptr<MeshLink>> create(LinkInfo self, std::vector<MeshMember> members,
                                                  std::unique_ptr<Link> uplink = nullptr,
                                                  std::uint32_t loopback_slots = 256);
  // Shuts every member down, then destroys them, each step concurrently
  // (one thread per member, see shutdown()).
  ~MeshLink() override;

  // Shuts the members (and the uplink) down concurrently, one thread each: a member's
  // handshake waits for its peer, and one after another those waits would
  // chain from rank to rank across the job. Every handshake ends before any
  // member is destroyed: a memif port's teardown holds DPDK's interrupt
  // thread off, which would stall the handshakes still running.
  void shutdown() noexcept override;

  std::size_t transmit(std::span<const TxFrame> frames) noexcept override;
  std::size_t poll(FrameSink& sink, std::size_t max) noexcept override;
  const LinkInfo& info() const noexcept override { return info_; }
  // The members' and the uplink's counters added up, plus the loopback
  // frames (sent and received).
  LinkCounters counters() const noexcept override;

  MeshCounters mesh_counters() const noexcept { return mesh_; }
  std::size_t member_count() const noexcept { return members_.size(); }
  Link& member(std::size_t i) noexcept { return *members_[i].link; }
  const MacAddress& member_peer(std::size_t i) const noexcept { return members_[i].peer; }
  // False while the member's peer is still to be learned.
  bool member_known(std::size_t i) const noexcept { return !members_[i].learn; }
  Link* uplink() noexcept { return uplink_.get(); }

 private:
  static constexpr std::size_t kLoopback = static_cast<std::size_t>(-1);
  static constexpr std::size_t kUnroutable = static_cast<std::size_t>(-2);
  static constexpr std::size_t kFlood = static_cast<std::size_t>(-3);
  static constexpr std::size_t kUplink = static_cast<std::size_t>(-4);
  class LearningSink;

  MeshLink(LinkInfo self, std::vector<MeshMember> members, std::unique_ptr<Link> uplink,
           std::uint32_t loopback_slots);
  std::size_t route(const TxFrame& f) const noexcept;
  Link* link_for(std::size_t route) noexcept;
  bool loop_back(const TxFrame& f) noexcept;
  void flood(const TxFrame& f) noexcept;
  void learn(std::size_t member, std::span<const std::uint8_t> frame) noexcept;
  // Runs `step` on every member, one thread each (inline when no thread can
  // be started), and returns when all are done.
  template <typename Step>
  void on_every_member(Step step) noexcept;

  LinkInfo info_;
  std::vector<MeshMember> members_;
  std::unique_ptr<Link> uplink_;  // may be null
  std::size_t next_member_ = 0;  // poll() starts here (members, then the uplink): none starves the others
  // Loopback ring: slot i holds loop_len_[i] bytes at loop_store_ + i * max_frame.
  std::vector<std::uint8_t> loop_store_;
  std::vector<std::uint32_t> loop_len_;
  std::size_t loop_head_ = 0, loop_count_ = 0;
  LinkCounters loop_counters_;
  MeshCounters mesh_;
  bool shut_down_ = false;
};

}  // namespace rma::roce
