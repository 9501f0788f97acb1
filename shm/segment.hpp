// Device segments: creating this device's, mapping a peer's, and cleaning
// up. A device segment is a node::SharedMemory of purpose "dev" (named
// /rma.<uid>.<pid>.dev.<random>, include/rma/sdk/node.hpp), so the one
// cleanup of librma's segments (node::remove_stale_segments, rmarun,
// rma_info --cleanup) covers it.
//
// One mapping per segment per process: SegmentMap hands out shared_ptrs to
// the same Segment for every QP that connects to it (and to the device that
// owns it), and the last one to go unmaps it.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "rma/sdk/node.hpp"
#include "rma/sdk/status.hpp"
#include "shm/layout.hpp"

namespace rma::shm {

// "/rma.<uid>.<pid>.dev." : every device segment name of `pid` starts so.
std::string segment_prefix(std::uint32_t uid, std::uint32_t pid);
// The random per-process nonce that segment headers and addresses carry
// (with the pid, it tells two incarnations of a reused pid apart).
std::uint64_t process_nonce() noexcept;

class Segment {
 public:
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  SegmentLayout& layout() const noexcept { return *layout_; }
  const std::string& name() const noexcept { return name_; }
  pid_t pid() const noexcept { return pid_; }
  bool own() const noexcept { return own_; }

  // False once the owner process has exited (its pidfd is readable); the
  // first such answer also removes the dead process's librma segments.
  // Our own segment is always alive. A system call: callers rate-limit it.
  bool owner_alive() const noexcept;
  // Wakes the owner's progress thread (after a ring or break request).
  void ring_doorbell() noexcept;
  // Owner only: removes the name (the mapping stays until the last user).
  void unlink() noexcept;

 private:
  friend class SegmentMap;
  Segment() = default;

  std::unique_ptr<node::SharedMemory> memory_;
  SegmentLayout* layout_ = nullptr;
  std::string name_;
  pid_t pid_ = 0;
  int pidfd_ = -1;  // peer segments: the owner process, immune to pid reuse
  bool own_ = false;
  mutable std::atomic<bool> swept_{false};  // the dead owner's segments were removed
};

class SegmentMap {
 public:
  // Creates, sizes, maps and initialises this process's next segment.
  static Result<std::shared_ptr<Segment>> create();
  // The mapping of a peer's segment (this process's own too), mapping it
  // on first use after checking that it is what the address says: the
  // segment of process `pid` with `nonce`, of this layout version.
  static Result<std::shared_ptr<Segment>> attach(const std::string& name, std::uint32_t pid, std::uint64_t nonce);
  // Unlinks librma's segments (every purpose, node::remove_stale_segments)
  // of processes of our uid that no longer exist. Returns how many.
  static int remove_stale();
};

}  // namespace rma::shm
