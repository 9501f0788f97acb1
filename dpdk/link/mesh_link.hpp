// One Link over several point-to-point Links, one per peer, plus loopback:
// how a softroce device reaches every rank of a job when each link (memif)
// joins exactly two processes. Transmit routes each frame by its destination
// MAC to the member whose peer owns it, or, for this device's own MAC, into
// a loopback ring that the next poll() delivers (an RC QP connected to
// another QP of the same device, e.g. the RMA API's rank-to-itself QP).
//
// Frames for a MAC no member owns are taken and counted as unroutable (a
// misaddressed frame must not stall the transmit ring behind it). No DPDK;
// the members may be any Links. Not thread-safe, like every Link: the
// softroce engine calls it under its device lock.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "link/link.hpp"
#include "rma/sdk/status.hpp"

namespace rma::roce {

struct MeshMember {
  MacAddress peer{};           // the MAC of the device at the far end
  std::unique_ptr<Link> link;  // its max_frame bounds the mesh's
};

struct MeshCounters {
  std::uint64_t loopback_frames = 0;
  std::uint64_t loopback_full = 0;     // transmit calls stopped by a full loopback ring
  std::uint64_t unroutable_frames = 0; // no member owns the destination MAC, or oversize: dropped
};

class MeshLink final : public Link {
 public:
  // `self`: this device's name, MAC, IPv4 and largest frame (the mesh's
  // max_frame is the smallest of it and the members'). Two members with one
  // peer MAC, or a member with `self.mac`, are rejected.
  static Result<std::unique_ptr<MeshLink>> create(LinkInfo self, std::vector<MeshMember> members,
                                                  std::uint32_t loopback_slots = 256);
  // Shuts every member down, then destroys them, each step concurrently
  // (one thread per member, see shutdown()).
  ~MeshLink() override;

  // Shuts the members down concurrently, one thread each: a member's
  // handshake waits for its peer, and one after another those waits would
  // chain from rank to rank across the job. Every handshake ends before any
  // member is destroyed: a memif port's teardown holds DPDK's interrupt
  // thread off, which would stall the handshakes still running.
  void shutdown() noexcept override;

  std::size_t transmit(std::span<const TxFrame> frames) noexcept override;
  std::size_t poll(FrameSink& sink, std::size_t max) noexcept override;
  const LinkInfo& info() const noexcept override { return info_; }
  // The members' counters added up, plus the loopback frames (sent and received).
  LinkCounters counters() const noexcept override;

  MeshCounters mesh_counters() const noexcept { return mesh_; }
  std::size_t member_count() const noexcept { return members_.size(); }
  Link& member(std::size_t i) noexcept { return *members_[i].link; }
  const MacAddress& member_peer(std::size_t i) const noexcept { return members_[i].peer; }

 private:
  static constexpr std::size_t kLoopback = static_cast<std::size_t>(-1);
  static constexpr std::size_t kUnroutable = static_cast<std::size_t>(-2);

  MeshLink(LinkInfo self, std::vector<MeshMember> members, std::uint32_t loopback_slots);
  std::size_t route(const TxFrame& f) const noexcept;
  bool loop_back(const TxFrame& f) noexcept;
  // Runs `step` on every member, one thread each (inline when no thread can
  // be started), and returns when all are done.
  template <typename Step>
  void on_every_member(Step step) noexcept;

  LinkInfo info_;
  std::vector<MeshMember> members_;
  std::size_t next_member_ = 0;  // poll() starts here: no member starves the others
  // Loopback ring: slot i holds loop_len_[i] bytes at loop_store_ + i * max_frame.
  std::vector<std::uint8_t> loop_store_;
  std::vector<std::uint32_t> loop_len_;
  std::size_t loop_head_ = 0, loop_count_ = 0;
  LinkCounters loop_counters_;
  MeshCounters mesh_;
  bool shut_down_ = false;
};

}  // namespace rma::roce
