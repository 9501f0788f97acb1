#include "rc/types.hpp"

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
// key = (slot << 9) | (kind << 8) | generation, generation 1..255, slot >= 1.
namespace {
constexpr std::size_t kMaxSlots = std::size_t{1} << 22;
constexpr std::size_t kReuseDelay = 32;
}  // namespace

Result<KeyTable::Keys> KeyTable::insert(const MrEntry& e, std::size_t max_entries) {
  if (live_ >= max_entries) {
    return resource_exhausted("register_memory: " + std::to_string(live_) +
                              " regions are registered, the device maximum (max_mr)");
  }
  std::uint32_t slot;
  if (free_.size() - free_head_ > kReuseDelay) {
    slot = free_[free_head_++];
    if (free_head_ > 4096 && free_head_ * 2 > free_.size()) {
      free_.erase(free_.begin(), free_.begin() + static_cast<std::ptrdiff_t>(free_head_));
      free_head_ = 0;
    }
  } else {
    if (slots_.size() + 1 >= kMaxSlots) return resource_exhausted("register_memory: key space exhausted");
    if (slots_.empty()) slots_.emplace_back();  // slot 0 unused: keys are never 0
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[slot];
  s.gen = static_cast<std::uint8_t>(s.gen == 255 ? 1 : s.gen + 1);
  s.e = e;
  s.live = true;
  ++live_;
  const std::uint32_t base = (slot << 9) | s.gen;
  return Keys{base, base | (1u << 8)};
}

void KeyTable::erase(std::uint32_t lkey) noexcept {
  const std::uint32_t slot = lkey >> 9;
  if (slot == 0 || slot >= slots_.size() || !slots_[slot].live) return;
  slots_[slot].live = false;
  --live_;
  free_.push_back(slot);  // capacity may grow: control path
}

const MrEntry* KeyTable::find(std::uint32_t key, unsigned kind) const noexcept {
  const std::uint32_t slot = key >> 9;
  if (slot == 0 || slot >= slots_.size()) return nullptr;
  const Slot& s = slots_[slot];
  if (!s.live || s.gen != (key & 0xFFu) || ((key >> 8) & 1u) != kind) return nullptr;
  return &s.e;
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
