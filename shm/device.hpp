// The shm device ("shm0") and its protection domains.
//
// Each open creates a device with its own shared segment (segment.hpp).
// Locks of a device, none of them on the data path of a mapped WRITE, READ
// or atomic (queue_pair.hpp has the QPs' own and the order of all of them):
//   - the device lock: the QP table and the progress rounds that walk it
//     (the progress thread's, and those a poll or post runs);
//   - the key lock (a leaf): the key table and the shared region table,
//     taken by registrations and by the lookups that miss a QP's caches.
// Other processes never take them: they reach this device only through
// the segment (rings, break flags, the region table) and through
// process_vm_* copies.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "rma/sdk/provider.hpp"
#include "shm/progress_thread.hpp"
#include "shm/segment.hpp"
#include "swkit/id_index.hpp"
#include "swkit/key_table.hpp"

namespace rma::shm {

inline constexpr const char* kProviderName = "shm";
inline constexpr const char* kDeviceName = "shm0";

DeviceInfo shm_device_info();

class QpImpl;

class DeviceImpl final : public Device, public std::enable_shared_from_this<DeviceImpl> {
 public:
  // Removes stale segments of dead processes, creates this device's
  // segment and starts its progress thread.
  static Result<std::shared_ptr<DeviceImpl>> open();
  ~DeviceImpl() override;

  const DeviceInfo& info() const noexcept override { return info_; }
  Result<std::shared_ptr<ProtectionDomain>> alloc_pd() override;
  Result<std::shared_ptr<CompletionQueue>> create_cq(std::uint32_t depth) override;

  std::mutex& mutex() noexcept { return mutex_; }
  const std::shared_ptr<Segment>& segment() const noexcept { return segment_; }
  SegmentLayout& layout() const noexcept { return segment_->layout(); }

  // The key table, under keys_mutex(); its generation() may be read
  // without it.
  std::mutex& keys_mutex() noexcept { return keys_mutex_; }
  swkit::KeyTable& keys() noexcept { return keys_; }

  // ---- device lock held
  std::uint32_t new_pd_tag() noexcept { return ++pd_tags_; }
  // A random QP number (24 bits, unique in this device) and a free slot.
  Result<std::uint32_t> add_qp(QpImpl* qp, std::uint32_t& slot);
  void remove_qp(std::uint32_t qpn, std::uint32_t slot) noexcept;

  // ---- any thread, no lock held
  // One round of progress (takes the device lock): serve the request rings
  // and break requests of this device's QPs (the target side), then move
  // every requester that waits for a peer on (responses, RNR timers, peers
  // that died).
  void progress() noexcept;
  // Whether a round would find anything: a requester of this device waits
  // for a peer, or a peer rang the doorbell (a ring or break request) since
  // the last round began. Two loads: what lets a poll skip the round. A
  // third acquires what the rounds so far did to this process's memory
  // (atomics and SEND payloads served for peers): a poller that learned
  // from a peer that its request was answered (a barrier, a flag) then sees
  // the answer's effects ordered by this process's own synchronization,
  // without taking the device lock (ThreadSanitizer sees no order through
  // another process).
  bool progress_due() const noexcept {
    (void)rounds_done_.load(std::memory_order_acquire);
    return waiting_requesters_.load(std::memory_order_relaxed) != 0 ||
           doorbell_->load(std::memory_order_acquire) != doorbell_served_.load(std::memory_order_relaxed);
  }
  // A requester of this device started (+1) or stopped (-1) waiting for a
  // peer (QpImpl::begin_waiting / end_waiting).
  void count_waiting(int delta) noexcept {
    waiting_requesters_.fetch_add(static_cast<std::uint32_t>(delta), std::memory_order_relaxed);
  }

 private:
  DeviceImpl() : info_(shm_device_info()) {}

  DeviceInfo info_;
  std::mutex mutex_;
  std::shared_ptr<Segment> segment_;
  std::mutex keys_mutex_;
  swkit::KeyTable keys_{kMrSlotBits};
  // Our segment's doorbell, which every poll reads: one load from here
  // instead of three through segment_ (the whole progress_due() check was
  // half a nanosecond of an 8 B READ; this part of it, inside the noise).
  const std::atomic<std::uint32_t>* doorbell_ = nullptr;
  std::atomic<std::uint32_t> waiting_requesters_{0};
  std::atomic<std::uint32_t> doorbell_served_{0};  // the doorbell when the last round began
  std::atomic<std::uint64_t> rounds_done_{0};      // released at the end of every round
  swkit::IdIndex qpns_;          // qpn -> slot
  QpImpl* qps_[kMaxQp] = {};     // by slot
  std::vector<QpImpl*> live_;    // capacity kMaxQp: progress walks only live QPs
  std::uint32_t pd_tags_ = 0;
  ProgressThread progress_;      // last: stopped first, before anything it uses goes
};

class PdImpl final : public ProtectionDomain, public std::enable_shared_from_this<PdImpl> {
 public:
  PdImpl(std::shared_ptr<DeviceImpl> device, std::uint32_t tag) noexcept : device_(std::move(device)), tag_(tag) {}

  Device& device() noexcept override { return *device_; }
  DeviceImpl& impl() noexcept { return *device_; }
  const DeviceCaps& caps() const noexcept { return device_->caps(); }
  // Names this PD in the shared tables (MrSlot::pd, QpSlot::pd).
  std::uint32_t tag() const noexcept { return tag_; }

  Result<std::unique_ptr<MemoryRegion>> register_memory(void* addr, std::size_t length, Access access) override;
  Result<std::unique_ptr<QueuePair>> create_qp(const QpConfig& config) override;

 private:
  std::shared_ptr<DeviceImpl> device_;  // children keep parents alive
  const std::uint32_t tag_;
};

}  // namespace rma::shm
