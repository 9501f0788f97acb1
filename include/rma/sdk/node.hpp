// Node-local services: what makes two processes "on the same host" for
// librma, and memory that the processes of one host share.
//
// Host identity. Two processes are on the same host when they run on the
// same kernel boot, in the same pid namespace (their pids mean the same
// process: cross-memory attach and pid liveness checks work) and in the
// same network namespace (so two namespaces joined by a veth pair stand for
// two hosts, as containers would). RMA_HOST_ID overrides the whole identity
// (tests, or sites that know better).
//
// Shared memory. Memory librma allocates for others to reach (window
// memory, the SHMEM heap, the perftest tools' buffers) lives in a POSIX
// shared segment named /dev/shm/rma.<uid>.<pid>.<purpose>.<random>, so that
// a peer on this host maps it once and then reaches it with loads, stores
// and CPU atomics, without a system call or the owner's help. The name
// carries the owner's uid and pid: segments of processes that no longer
// exist (killed with SIGKILL) are removed by the next librma process of the
// same user (remove_stale_segments() at the first allocation), by rmarun
// when a rank dies, and by `rma_info --cleanup`. The owner unlinks its
// segments when it frees them and at exit; a collective allocation whose
// peers have all mapped it may unlink at once (unlink()), leaving nothing
// to clean even after a kill -9.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rma/sdk/status.hpp"

// librma is built with hidden visibility: what this header declares is
// part of its exported interface.
#pragma GCC visibility push(default)

namespace rma::node {

// This process's host identity (see above): "<boot_id>/<pidns>/<netns>",
// or RMA_HOST_ID when set. At most 127 bytes.
std::string host_identity();

// Whether this process can read `len` bytes at `addr` in process `pid` by
// cross-memory attach (process_vm_readv) and finds `expect` there (len 8).
// kPermissionDenied names the cause (another user, kernel.yama.ptrace_scope,
// a missing CAP_SYS_PTRACE) and what would change it; kNotFound when the
// process is gone; kFailedPrecondition when the word differs.
Status probe_cross_memory_attach(std::uint32_t pid, std::uint64_t addr, std::uint64_t expect);

// What a peer on this host needs to map a segment.
struct SegmentRef {
  static constexpr std::size_t kMaxName = 63;
  char name[kMaxName + 1] = {};  // shm_open name, "/rma.<uid>.<pid>.<purpose>.<random>"
  std::uint64_t size = 0;        // data bytes (a multiple of the page size; the object has one
                                 // control page more, in front: nonce, size, freed mark)
  std::uint32_t pid = 0;         // owner process
  std::uint32_t pad = 0;
  std::uint64_t nonce = 0;       // random, also in the segment's name: a recreated name is told apart
};

// A mapping of a shared segment: this process's own (allocate) or a
// peer's (attach). Unmaps on destruction; the owner's also unlinks.
class SharedMemory {
 public:
  // A new zero-filled segment of at least `bytes` (rounded up to the page)
  // mapped read-write here. `purpose` (1..15 of [a-z0-9_]) goes into the
  // name ("win", "heap", "bench"). While it lives, locate() finds it.
  static Result<std::unique_ptr<SharedMemory>> allocate(std::size_t bytes, std::string_view purpose);
  // Maps a peer's segment read-write. kNotFound when it is gone (freed,
  // or its owner exited), kFailedPrecondition when the name now holds
  // another segment (size or nonce differ), kPermissionDenied naming the
  // cause (another user's segment).
  static Result<std::unique_ptr<SharedMemory>> attach(const SegmentRef& ref);

  ~SharedMemory();
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;

  std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  const SegmentRef& ref() const noexcept { return ref_; }
  bool owner() const noexcept { return owner_; }
  // Owner only: removes the name now (peers that mapped it keep their
  // mapping; later attach() calls fail with kNotFound). Idempotent.
  void unlink() noexcept;
  // True once the owner has freed the segment (its SharedMemory was
  // destroyed): a peer that still maps it must not write through its
  // mapping any more, nothing there is the owner's memory now. One load,
  // for data paths. An owner killed with SIGKILL never says so; its pid
  // does.
  bool freed() const noexcept { return state_->load(std::memory_order_acquire) != kLive; }

 private:
  SharedMemory() = default;
  static constexpr std::uint32_t kLive = 1;
  std::byte* base_ = nullptr;  // the whole mapping: one control page, then data_
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  SegmentRef ref_;
  // In the segment's control page (shared): kLive until the owner frees it.
  std::atomic<std::uint32_t>* state_ = nullptr;
  bool owner_ = false;
  bool unlinked_ = false;
};

// The live segment this process allocated that holds [addr, addr + len),
// and addr's offset in it. Thread-safe; no allocation.
struct Location {
  SegmentRef ref;
  std::uint64_t offset = 0;
};
std::optional<Location> locate(const void* addr, std::size_t len) noexcept;

// Unlinks every /dev/shm entry of librma's naming of this user whose owner
// pid no longer exists (or only those of `pid` when it is non-zero and
// dead). Returns the names removed.
std::vector<std::string> remove_stale_segments(std::uint32_t pid = 0);

}  // namespace rma::node

#pragma GCC visibility pop
