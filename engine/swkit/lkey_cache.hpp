// The region behind the last local key a QP used, so that post() checks an
// SGE with a compare and a bounds test instead of a hash lookup in the key
// table under the provider's lock (which, at 8 bytes, costs more than the
// copy).
//
// The copy is used only while the key table's generation (key_table.hpp)
// is the one it was filled under: every deregistration moves it on, so a
// key deregistered before the post looked is never accepted. A
// deregistration that races with a post using that very region is the
// caller's race, as on a NIC (the memory may go while it is being read).
//
// Data path: no allocation; the lookup on a miss takes the lock the
// provider guards its key table with. One cache per QP, used by one thread
// at a time (the QP's).
#pragma once

#include <cstdint>
#include <mutex>
#include <span>

#include "rma/sdk/provider.hpp"
#include "swkit/key_table.hpp"
#include "swkit/sgl.hpp"
#include "swkit/vendor_err.hpp"

namespace rma::swkit {

// The lock argument of LkeyCache::check for a caller that already holds the
// lock guarding the key table (softroce posts under its engine's mutex).
struct KeysLockHeld {
  void lock() noexcept {}
  void unlock() noexcept {}
};

class LkeyCache {
 public:
  // The cached answer for one SGE that carries bytes, when the cache has
  // one: kVeNone or check_local_sgl's vendor error; kMiss when `sge` names
  // another key or a region went since the fill (then ask check()). No
  // lock, no side effect.
  static constexpr std::uint32_t kMiss = ~0u;
  [[gnu::always_inline]] std::uint32_t probe(const KeyTable& keys, const void* pd, const Sge& sge,
                                             Access needed) const noexcept {
    if (sge.lkey != lkey_ || lkey_ == 0 || keys.generation() != generation_) return kMiss;
    return check_entry(entry_, pd, sge, needed);
  }

  // check_local_sgl's answer for `sgl` (the SGEs that carry its first
  // `bytes` bytes lie in live regions of `pd` with `needed`), in its order
  // and with its vendor errors. `keys_lock` guards `keys`; it is taken only
  // when an SGE names another key than the cached one, or a region went.
  template <typename Lock>
  std::uint32_t check(const KeyTable& keys, Lock& keys_lock, const void* pd, std::span<const Sge> sgl,
                      std::uint64_t bytes, Access needed) noexcept {
    const std::uint32_t generation = keys.generation();
    if (generation == generation_ && lkey_ != 0) {
      std::uint32_t ve = kVeNone;
      bool hit = true;
      std::uint64_t left = bytes;
      for (const Sge& sge : sgl) {
        if (left == 0) break;
        if (sge.length == 0) continue;
        if (sge.lkey != lkey_) {
          hit = false;
          break;
        }
        ve = check_entry(entry_, pd, sge, needed);
        if (ve != kVeNone) break;
        left -= left < sge.length ? left : sge.length;
      }
      if (hit) return ve;
    }
    return refill(keys, keys_lock, generation, pd, sgl, bytes, needed);
  }

 private:
  // check_local_sgl's checks of one SGE against a region that lives.
  [[gnu::always_inline]] static std::uint32_t check_entry(const MrEntry& mr, const void* pd, const Sge& sge, Access needed) noexcept {
    if (mr.pd != pd) return kVeLkeyOtherPd;
    if (!mr.contains(sge.addr, sge.length)) return kVeLocalOutOfBounds;
    if (!has_access(mr.access, needed)) return kVeNoLocalWrite;
    if (mr.is_orphaned()) return kVeLocalUnmapped;
    return kVeNone;
  }

  // The whole list under the lock (check_local_sgl itself), and the cache
  // refilled with the key of the list's first SGE that carries bytes, when
  // that key names a live region.
  // `generation` was read before the lock: a deregistration after it makes
  // the next check miss again, never use a stale copy.
  template <typename Lock>
  std::uint32_t refill(const KeyTable& keys, Lock& keys_lock, std::uint32_t generation, const void* pd,
                       std::span<const Sge> sgl, std::uint64_t bytes, Access needed) noexcept {
    std::lock_guard lock(keys_lock);
    const std::uint32_t ve = check_local_sgl(keys, pd, sgl, bytes, needed);
    for (const Sge& sge : sgl) {
      if (sge.length == 0) continue;
      if (const MrEntry* mr = keys.find_lkey(sge.lkey)) {
        entry_ = *mr;
        lkey_ = sge.lkey;
        generation_ = generation;
      }
      break;
    }
    return ve;
  }

  std::uint32_t lkey_ = 0;             // 0 names no region (the key table never draws it)
  std::uint32_t generation_ = ~0u;     // the key table's generation when filled
  MrEntry entry_;
};

}  // namespace rma::swkit
