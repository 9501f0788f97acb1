#include "rc/types.hpp"

#include "swkit/secure_random.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>

namespace rma::roce::rc {

void RcCounters::add(const RcCounters& o) noexcept {
  tx_frames += o.tx_frames;
  tx_bytes += o.tx_bytes;
  rx_frames += o.rx_frames;
  rx_bytes += o.rx_bytes;
  retransmitted_packets += o.retransmitted_packets;
  retry_timeouts += o.retry_timeouts;
  fast_retries += o.fast_retries;
  acks_sent += o.acks_sent;
  acks_received += o.acks_received;
  for (int i = 0; i < 5; ++i) {
    naks_sent[i] += o.naks_sent[i];
    naks_received[i] += o.naks_received[i];
  }
  rnr_naks_sent += o.rnr_naks_sent;
  rnr_naks_received += o.rnr_naks_received;
  duplicate_requests += o.duplicate_requests;
  out_of_sequence += o.out_of_sequence;
  read_replays += o.read_replays;
  atomic_replays += o.atomic_replays;
  stale_duplicates += o.stale_duplicates;
  duplicate_responses += o.duplicate_responses;
  bad_responses += o.bad_responses;
  dropped_state += o.dropped_state;
  bad_opcode_sequence += o.bad_opcode_sequence;
}

std::chrono::nanoseconds rnr_interval(std::uint8_t code) noexcept {
  // In units of 10 us (IBA table 45).
  static constexpr std::uint32_t kTenMicros[32] = {
      65536, 1,   2,   3,   4,   6,    8,    12,   16,   24,    32,    48,    64,    96,    128,   192,
      256,   384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152};
  return std::chrono::microseconds(10) * kTenMicros[code & 31u];
}

// ---------------------------------------------------------------- CqRing

Status CqRing::init(std::uint32_t depth) {
  ring_.reset(new (std::nothrow) CqEntry[depth]);
  if (!ring_) return resource_exhausted("create_cq: cannot allocate " + std::to_string(depth) + " entries");
  depth_ = depth;
  return {};
}

bool CqRing::push(const CqEntry& e) noexcept {
  if (overrun_) return false;
  if (count_ == depth_) {
    std::snprintf(reason_, sizeof reason_,
                  "completion queue overrun (depth %u): a completion of QP %u (wr_id %" PRIu64
                  ") was lost; poll faster or make the CQ deeper",
                  depth_, e.wc.qp_num, e.wc.wr_id);
    overrun_ = true;
    return false;
  }
  ring_[(head_ + count_) % depth_] = e;
  ++count_;
  return true;
}

std::uint32_t CqRing::pop(CqEntry* out, std::uint32_t max) noexcept {
  const std::uint32_t n = std::min(max, count_);
  for (std::uint32_t i = 0; i < n; ++i) {
    out[i] = ring_[head_];
    head_ = (head_ + 1) % depth_;
  }
  count_ -= n;
  return n;
}

// ---------------------------------------------------------------- KeyTable

std::uint32_t KeyTable::fresh_key() const noexcept {
  for (;;) {
    const std::uint32_t k = swkit::secure_random_u32();
    if (k != 0 && !index_.contains(k)) return k;
  }
}

Result<KeyTable::Keys> KeyTable::insert(const MrEntry& e, std::size_t max_entries) {
  if (live_ >= max_entries) {
    return resource_exhausted("register_memory: " + std::to_string(live_) +
                              " regions are registered, the device maximum (max_mr)");
  }
  std::uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[slot];
  s.e = e;
  s.lkey = fresh_key();
  index_.insert(s.lkey, slot << 1);
  s.rkey = fresh_key();
  index_.insert(s.rkey, slot << 1 | 1u);
  s.live = true;
  ++live_;
  return Keys{s.lkey, s.rkey};
}

void KeyTable::erase(std::uint32_t lkey) noexcept {
  std::uint32_t v;
  if (!index_.find(lkey, v) || (v & 1u) != 0) return;
  Slot& s = slots_[v >> 1];
  index_.erase(s.lkey);
  index_.erase(s.rkey);
  s.live = false;
  s.lkey = s.rkey = 0;
  --live_;
  free_.push_back(v >> 1);  // capacity may grow: control path
}

const MrEntry* KeyTable::find(std::uint32_t key, unsigned kind) const noexcept {
  std::uint32_t v;
  if (!index_.find(key, v) || (v & 1u) != kind) return nullptr;
  return &slots_[v >> 1].e;
}

std::uint32_t check_local_sgl(const KeyTable& keys, const void* pd, std::span<const Sge> sgl,
                              std::uint64_t bytes, Access needed) noexcept {
  for (const Sge& sge : sgl) {
    if (bytes == 0) break;
    if (sge.length == 0) continue;
    const MrEntry* mr = keys.find_lkey(sge.lkey);
    if (mr == nullptr) return kVeBadLkey;
    if (mr->pd != pd) return kVeLkeyOtherPd;
    if (!mr->contains(sge.addr, sge.length)) return kVeLocalOutOfBounds;
    if (!has_access(mr->access, needed)) return kVeNoLocalWrite;
    if (mr->is_orphaned()) return kVeLocalUnmapped;
    bytes -= std::min<std::uint64_t>(bytes, sge.length);
  }
  return kVeNone;
}

std::uint32_t check_remote(const KeyTable& keys, const void* pd, std::uint32_t rkey,
                           std::uint64_t addr, std::uint64_t len, Access right) noexcept {
  const MrEntry* mr = keys.find_rkey(rkey);
  if (mr == nullptr) return kVeBadRkey;
  if (mr->pd != pd) return kVeRkeyOtherPd;
  if (!has_access(mr->access, right)) return kVeNoRemoteRight;
  if (addr + len < addr || !mr->contains(addr, len)) return kVeRemoteOutOfBounds;
  if (mr->is_orphaned()) return kVeRemoteUnmapped;
  return kVeNone;
}

namespace {
template <typename Fn>
void walk_sgl(std::span<const Sge> sgl, std::uint64_t offset, std::uint64_t len, Fn&& fn) noexcept {
  std::uint64_t done = 0;
  for (const Sge& sge : sgl) {
    if (len == 0) break;
    if (offset >= sge.length) {
      offset -= sge.length;
      continue;
    }
    const std::uint64_t n = std::min<std::uint64_t>(len, sge.length - offset);
    fn(reinterpret_cast<std::uint8_t*>(sge.addr + offset), done, n);
    done += n;
    len -= n;
    offset = 0;
  }
}
}  // namespace

void copy_to_sgl(std::span<const Sge> sgl, std::uint64_t offset, const std::uint8_t* src,
                 std::uint64_t len) noexcept {
  walk_sgl(sgl, offset, len, [&](std::uint8_t* p, std::uint64_t at, std::uint64_t n) {
    std::memcpy(p, src + at, n);
  });
}

const std::uint8_t* sgl_contiguous(std::span<const Sge> sgl, std::uint64_t offset, std::uint64_t len) noexcept {
  for (const Sge& sge : sgl) {
    if (offset < sge.length) {
      if (len > sge.length - offset) return nullptr;
      return reinterpret_cast<const std::uint8_t*>(sge.addr) + offset;
    }
    offset -= sge.length;
  }
  return nullptr;
}

void copy_from_sgl(std::span<const Sge> sgl, std::uint64_t offset, std::uint8_t* dst,
                   std::uint64_t len) noexcept {
  walk_sgl(sgl, offset, len, [&](std::uint8_t* p, std::uint64_t at, std::uint64_t n) {
    std::memcpy(dst + at, p, n);
  });
}

}  // namespace rma::roce::rc
