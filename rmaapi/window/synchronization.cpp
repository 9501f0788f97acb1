// Epochs (MPI 4.x 12.5): fence, passive-target lock/unlock/lock_all and
// flushes, post/start/complete/wait.
//
// Passive target: the lock word of the target's metadata region is changed
// only by NIC atomics (the target's own rank too, through its loopback QP):
// shared = FETCH_ADD +1, backed out when the writer bit was set; exclusive =
// CMP_SWAP 0 -> writer bit | (rank + 1) << 32. Unlock flushes first, so all
// of the epoch's operations are complete at the target before the lock goes.
// Readers can keep a writer waiting (no fairness); waits end at
// RMA_WAIT_TIMEOUT_MS.
//
// To a peer whose window is mapped here (PeerWindow::direct_meta) the same
// atomics are CPU atomics on the mapped words, and a flush is a fence
// (direct.hpp): a lock word may be taken by on-host ranks that way and by
// ranks of other hosts through the NIC at once.
//
// Active target: fence = flush everything + barrier. PSCW uses counters in
// the metadata region: post adds 1 to each origin's "posted by me" word,
// start waits until the words of its targets reached the epoch number,
// complete flushes and adds 1 to each target's "completed by me" word, wait
// waits for those.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "comm/collectives.hpp"
#include "datatype/errors.hpp"
#include "window/direct.hpp"
#include "window/thread_level.hpp"
#include "window/window.hpp"

namespace rma::api {
namespace {

constexpr int kValidAsserts =
    RMA_MODE_NOCHECK | RMA_MODE_NOSTORE | RMA_MODE_NOPUT | RMA_MODE_NOPRECEDE | RMA_MODE_NOSUCCEED;

Status check_assert(int assert_, int allowed, const char* call) {
  if ((assert_ & ~allowed) != 0) {
    return class_error(RMA_ERR_ASSERT, "assert " + std::to_string(assert_) + " has bits " +
                                           std::to_string(assert_ & ~allowed) +
                                           " that are not valid for " + call);
  }
  return {};
}

Status check_target(rma_win_s* win, int target) {
  const int n = static_cast<int>(win->peers.size());
  if (target < 0 || target >= n) {
    return class_error(RMA_ERR_RANK, "rank " + std::to_string(target) +
                                         " is not in the window's group (size " + std::to_string(n) + ")");
  }
  return {};
}

// The window ranks of a group's processes (groups name world ranks).
Result<std::vector<int>> window_ranks(rma_win_s* win, rma_group_s* g) {
  RMA_RETURN_IF_ERROR(check_group_handle(g));
  std::vector<int> out;
  out.reserve(g->ranks.size());
  for (int w : g->ranks) {
    auto it = std::find(win->comm.ranks.begin(), win->comm.ranks.end(), w);
    if (it == win->comm.ranks.end()) {
      return class_error(RMA_ERR_RANK, "process " + std::to_string(w) +
                                           " (rank in RMA_COMM_WORLD) of the group is not in the window's communicator");
    }
    out.push_back(static_cast<int>(it - win->comm.ranks.begin()));
  }
  return out;
}

std::uint64_t load(const std::uint64_t* w) noexcept { return __atomic_load_n(w, __ATOMIC_ACQUIRE); }

// Waits until pred() holds, progressing the NIC; RMA_ERR_OTHER at the deadline.
template <typename Pred>
Status wait_until(rma_win_s* win, Pred pred, const std::string& what) {
  const auto start = std::chrono::steady_clock::now();
  WaitBackoff backoff;
  for (std::uint32_t spin = 0; !pred(); ++spin) {
    if (win->ctx->eps().progress() < 0) return class_error(RMA_ERR_OTHER, "the completion queue overran");
    if ((spin & 63u) == 63u) {
      if (win->ctx->eps().expired(start)) {
        return class_error(RMA_ERR_OTHER, what + " did not happen within RMA_WAIT_TIMEOUT_MS (" +
                                              std::to_string(win->ctx->eps().options().timeout.count()) +
                                              " ms)");
      }
      yield_to_other_threads(backoff);  // the other ranks' actions may wait for a thread of ours
    }
  }
  return {};
}

Status acquire_lock(rma_win_s* win, int target, bool exclusive, const char* call) {
  const auto start = std::chrono::steady_clock::now();
  const std::uint64_t me = static_cast<std::uint64_t>(win->rank()) + 1;
  const std::uint64_t writer = kWriterBit | (me << 32);
  WaitBackoff backoff;
  for (std::uint32_t spin = 0;; ++spin) {
    std::uint64_t seen = 0;
    if (exclusive) {
      RMA_ASSIGN_OR_RETURN(seen, meta_atomic(win, target, 0, Opcode::kAtomicCmpSwap, 0, writer));
      if (seen == 0) return {};
    } else {
      RMA_ASSIGN_OR_RETURN(seen, meta_atomic(win, target, 0, Opcode::kAtomicFetchAdd, 1, 0));
      if ((seen & kWriterBit) == 0) return {};
      RMA_RETURN_IF_ERROR(meta_atomic(win, target, 0, Opcode::kAtomicFetchAdd, ~std::uint64_t{0}, 0).status());
    }
    if (win->ctx->eps().expired(start)) {
      std::string holder = (seen & kWriterBit) != 0
                               ? "held exclusively by rank " + std::to_string(((seen >> 32) & 0x7fffffffu) - 1)
                               : "held shared by " + std::to_string(seen & 0xffffffffu) + " rank(s)";
      return class_error(RMA_ERR_OTHER, std::string(call) + ": the lock of rank " +
                                            std::to_string(target) + " was not granted within " +
                                            "RMA_WAIT_TIMEOUT_MS (" + holder + ")");
    }
    if (spin > 4) yield_to_other_threads(backoff);
  }
}

Status release_lock(rma_win_s* win, int target, bool exclusive) {
  const std::uint64_t me = static_cast<std::uint64_t>(win->rank()) + 1;
  const std::uint64_t v = exclusive ? (kWriterBit | (me << 32)) : 1;
  return meta_atomic(win, target, 0, Opcode::kAtomicFetchAdd, ~v + 1, 0).status();
}

// After a flush that failed without breaking the connection (a timeout):
// posts the release behind the epoch's operations on the same QP, without
// waiting for it. RC keeps the order, so the lock word is released once
// those operations are done, and never before. Fails when the release
// cannot be posted at all (a broken connection).
StatusCode post_release(rma_win_s* win, int target, bool exclusive) noexcept {
  endpoint::Endpoint& ep = win->endpoint(target);
  const PeerWindow& p = win->peers[static_cast<std::size_t>(target)];
  const std::uint64_t me = static_cast<std::uint64_t>(win->rank()) + 1;
  const std::uint64_t v = exclusive ? (kWriterBit | (me << 32)) : 1;
  if (p.direct_meta != nullptr) {
    // Nothing of this window to the target is in flight behind it.
    (void)direct::atomic(p.direct_meta, Opcode::kAtomicFetchAdd, ~v + 1, 0);
    return StatusCode::kOk;
  }
  // Word 0: the passive-target lock.
  return ep.post_atomic(Opcode::kAtomicFetchAdd, p.meta, p.meta_rkey, ~v + 1, 0, endpoint::OnComplete{});
}

// The window's creator promised no passive-target epochs (MPI 4.x 12.2.1).
Status check_locks_allowed(const rma_win_s* win) {
  if (!win->hints.no_locks) return {};
  return class_error(RMA_ERR_RMA_SYNC, "the window's info has no_locks=true (set at creation or by rma_win_set_info)");
}

StatusCode flush_endpoint(endpoint::Endpoint& ep, FlushScope scope) noexcept {
  return scope == FlushScope::kLocal ? ep.flush_local() : ep.flush();
}
}  // namespace

StatusCode flush_target(rma_win_s* win, int target, FlushScope scope) noexcept {
  endpoint::Endpoint& ep = win->endpoint(target);
  if (win->peers[static_cast<std::size_t>(target)].direct) {
    // The window's operations to the target completed when they returned;
    // a fence makes their stores visible before whatever follows. The
    // endpoint holds nothing of this window's, but may hold another's.
    if (scope == FlushScope::kRemote) direct::fence();
    if (ep.idle()) return StatusCode::kOk;
  }
  return flush_endpoint(ep, scope);
}

Status flush(rma_win_s* win, const char* call, int target, FlushScope scope) {
  win->forget_remote_tables();
  RMA_RETURN_IF_ERROR(check_target(win, target));
  if (!win->lock_all && win->locks[static_cast<std::size_t>(target)] == 0) {
    return class_error(RMA_ERR_RMA_SYNC, "no passive-target epoch to rank " + std::to_string(target) +
                                             " is open (rma_win_lock or rma_win_lock_all)");
  }
  // Recorded accumulates (accumulate_ordering=none) must be complete at
  // the target; their operands were copied, so local completion has them.
  if (scope == FlushScope::kRemote) RMA_RETURN_IF_ERROR(run_deferred_accumulates(win, call));
  const StatusCode rc = flush_target(win, target, scope);
  if (rc != StatusCode::kOk) return transport_error(win, call, target, rc);
  return {};
}

Status flush_all(rma_win_s* win, const char* call, FlushScope scope) {
  win->forget_remote_tables();
  const bool any = win->lock_all || std::any_of(win->locks.begin(), win->locks.end(),
                                                [](std::uint8_t l) { return l != 0; });
  if (!any) {
    return class_error(RMA_ERR_RMA_SYNC, "no passive-target epoch is open (rma_win_lock or rma_win_lock_all)");
  }
  if (scope == FlushScope::kRemote) RMA_RETURN_IF_ERROR(run_deferred_accumulates(win, call));
  for (int t = 0; t < static_cast<int>(win->peers.size()); ++t) {
    const StatusCode rc = flush_target(win, t, scope);
    if (rc != StatusCode::kOk) return transport_error(win, call, t, rc);
  }
  return {};
}

Status fence(rma_win_s* win, int assert_) {
  win->forget_remote_tables();
  RMA_RETURN_IF_ERROR(check_assert(assert_, kValidAsserts, "rma_win_fence"));
  if (win->lock_all || win->start_active || win->post_active ||
      std::any_of(win->locks.begin(), win->locks.end(), [](std::uint8_t l) { return l != 0; })) {
    return class_error(RMA_ERR_RMA_SYNC, "a lock, lock_all, start or post epoch is open on this window");
  }
  RMA_RETURN_IF_ERROR(run_deferred_accumulates(win, "rma_win_fence"));
  for (int t = 0; t < static_cast<int>(win->peers.size()); ++t) {
    const StatusCode rc = flush_target(win, t, FlushScope::kRemote);
    if (rc != StatusCode::kOk) return transport_error(win, "rma_win_fence", t, rc);
  }
  // This rank's own loads and stores of its window, and its direct stores
  // to peers, are ordered before the barrier.
  direct::fence();
  // This rank's stores to its window before the fence become visible to a
  // software NIC's thread (it takes the device lock that progress() takes).
  if (win->ctx->eps().progress() < 0) return class_error(RMA_ERR_OTHER, "the completion queue overran");
  Status b = comm_barrier(*win->ctx, win->comm);
  if (!b.ok()) return class_error(RMA_ERR_OTHER, "the fence's barrier failed: " + b.message());
  // What other ranks put here completed before they reached the barrier; a
  // software NIC wrote it on its own thread under the device lock, which
  // progress() takes: this rank's loads after the fence are ordered after
  // those writes (for the memory model and ThreadSanitizer alike).
  if (win->ctx->eps().progress() < 0) return class_error(RMA_ERR_OTHER, "the completion queue overran");
  win->fence_open = (assert_ & RMA_MODE_NOSUCCEED) == 0;
  return {};
}

Status lock(rma_win_s* win, int lock_type, int target, int assert_) {
  win->forget_remote_tables();
  if (lock_type != RMA_LOCK_SHARED && lock_type != RMA_LOCK_EXCLUSIVE) {
    return class_error(RMA_ERR_LOCKTYPE, "lock_type " + std::to_string(lock_type) +
                                             " is neither RMA_LOCK_SHARED nor RMA_LOCK_EXCLUSIVE");
  }
  RMA_RETURN_IF_ERROR(check_target(win, target));
  RMA_RETURN_IF_ERROR(check_assert(assert_, RMA_MODE_NOCHECK, "rma_win_lock"));
  RMA_RETURN_IF_ERROR(check_locks_allowed(win));
  if (win->lock_all || win->locks[static_cast<std::size_t>(target)] != 0) {
    return class_error(RMA_ERR_RMA_SYNC, "rank " + std::to_string(target) + " is already locked by this rank");
  }
  if (win->start_active || win->post_active) {
    return class_error(RMA_ERR_RMA_SYNC, "a start or post epoch is open on this window");
  }
  const bool exclusive = lock_type == RMA_LOCK_EXCLUSIVE;
  if ((assert_ & RMA_MODE_NOCHECK) == 0) {
    RMA_RETURN_IF_ERROR(acquire_lock(win, target, exclusive, "rma_win_lock"));
  }
  // A passive epoch replaces a fence epoch left open by a plain fence.
  win->fence_open = false;
  win->locks[static_cast<std::size_t>(target)] =
      static_cast<std::uint8_t>((exclusive ? 2 : 1) | ((assert_ & RMA_MODE_NOCHECK) ? 4 : 0));
  ++win->access_count[static_cast<std::size_t>(target)];
  return {};
}

Status unlock(rma_win_s* win, int target) {
  RMA_RETURN_IF_ERROR(check_target(win, target));
  const std::uint8_t l = win->locks[static_cast<std::size_t>(target)];
  if (l == 0) {
    return class_error(RMA_ERR_RMA_SYNC, "rank " + std::to_string(target) + " is not locked by this rank");
  }
  // The epoch ends and the lock is released even when recorded
  // accumulates fail; their error is reported last.
  const Status deferred = run_deferred_accumulates(win, "rma_win_unlock");
  const StatusCode rc = flush_target(win, target, FlushScope::kRemote);
  win->locks[static_cast<std::size_t>(target)] = 0;
  --win->access_count[static_cast<std::size_t>(target)];
  if (rc != StatusCode::kOk) {
    // The epoch is over either way; the lock word must not stay held.
    const Status err = transport_error(win, "rma_win_unlock", target, rc);
    if ((l & 4) != 0) return err;
    const StatusCode pr = post_release(win, target, (l & 3) == 2);
    return class_error(RMA_ERR_OTHER,
                       std::string(error_detail(err)) +
                           (pr == StatusCode::kOk
                                ? "; the lock was released behind the unfinished operations"
                                : "; the lock at rank " + std::to_string(target) +
                                      " could not be released over the failed connection"));
  }
  if ((l & 4) == 0) RMA_RETURN_IF_ERROR(release_lock(win, target, (l & 3) == 2));
  return deferred;
}

Status lock_all(rma_win_s* win, int assert_) {
  win->forget_remote_tables();
  RMA_RETURN_IF_ERROR(check_assert(assert_, RMA_MODE_NOCHECK, "rma_win_lock_all"));
  RMA_RETURN_IF_ERROR(check_locks_allowed(win));
  if (win->lock_all || std::any_of(win->locks.begin(), win->locks.end(), [](std::uint8_t l) { return l != 0; })) {
    return class_error(RMA_ERR_RMA_SYNC, "a lock or lock_all epoch is already open on this window");
  }
  if (win->start_active || win->post_active) {
    return class_error(RMA_ERR_RMA_SYNC, "a start or post epoch is open on this window");
  }
  const int n = static_cast<int>(win->peers.size());
  if ((assert_ & RMA_MODE_NOCHECK) == 0) {
    for (int t = 0; t < n; ++t) {
      Status s = acquire_lock(win, t, false, "rma_win_lock_all");
      if (!s.ok()) {
        for (int u = 0; u < t; ++u) (void)release_lock(win, u, false);
        return s;
      }
    }
  }
  win->fence_open = false;
  win->lock_all = true;
  win->lock_all_nocheck = (assert_ & RMA_MODE_NOCHECK) != 0;
  return {};
}

Status unlock_all(rma_win_s* win) {
  if (!win->lock_all) return class_error(RMA_ERR_RMA_SYNC, "no lock_all epoch is open on this window");
  const int n = static_cast<int>(win->peers.size());
  win->lock_all = false;
  Status first = run_deferred_accumulates(win, "rma_win_unlock_all");
  std::vector<bool> flushed(static_cast<std::size_t>(n), true);
  for (int t = 0; t < n; ++t) {
    const StatusCode rc = flush_target(win, t, FlushScope::kRemote);
    if (rc != StatusCode::kOk) {
      flushed[static_cast<std::size_t>(t)] = false;
      if (first.ok()) first = transport_error(win, "rma_win_unlock_all", t, rc);
    }
  }
  if (!win->lock_all_nocheck) {
    for (int t = 0; t < n; ++t) {
      if (!flushed[static_cast<std::size_t>(t)]) {
        // Released behind the unfinished operations, not waited for (see unlock).
        (void)post_release(win, t, false);
        continue;
      }
      Status s = release_lock(win, t, false);
      if (!s.ok() && first.ok()) first = s;
    }
  }
  return first;
}

Status post(rma_win_s* win, rma_group_s* group, int assert_) {
  RMA_ASSIGN_OR_RETURN(std::vector<int> ranks, window_ranks(win, group));
  RMA_RETURN_IF_ERROR(check_assert(assert_, RMA_MODE_NOCHECK | RMA_MODE_NOSTORE | RMA_MODE_NOPUT, "rma_win_post"));
  if (win->post_active) return class_error(RMA_ERR_RMA_SYNC, "a post epoch is already open on this window");
  const int me = win->rank();
  for (int r : ranks) {
    ++win->completes_expected[static_cast<std::size_t>(r)];
    RMA_RETURN_IF_ERROR(meta_atomic(win, r, win->post_word(me), Opcode::kAtomicFetchAdd, 1, 0).status());
  }
  win->post_group = ranks;
  win->post_active = true;
  return {};
}

Status start(rma_win_s* win, rma_group_s* group, int assert_) {
  win->forget_remote_tables();
  RMA_ASSIGN_OR_RETURN(std::vector<int> ranks, window_ranks(win, group));
  RMA_RETURN_IF_ERROR(check_assert(assert_, RMA_MODE_NOCHECK, "rma_win_start"));
  if (win->start_active) return class_error(RMA_ERR_RMA_SYNC, "a start epoch is already open on this window");
  if (win->lock_all || std::any_of(win->locks.begin(), win->locks.end(), [](std::uint8_t l) { return l != 0; })) {
    return class_error(RMA_ERR_RMA_SYNC, "a lock or lock_all epoch is open on this window");
  }
  for (int r : ranks) {
    const std::uint64_t epoch = ++win->starts_with[static_cast<std::size_t>(r)];
    const std::uint64_t* w = win->meta + win->post_word(r);
    Status s = wait_until(win, [&] { return load(w) >= epoch; },
                          "rma_win_start: the matching rma_win_post of rank " + std::to_string(r));
    if (!s.ok()) {
      --win->starts_with[static_cast<std::size_t>(r)];
      return s;
    }
  }
  win->fence_open = false;
  win->start_group = ranks;
  for (int r : win->start_group) ++win->access_count[static_cast<std::size_t>(r)];
  win->start_active = true;
  return {};
}

Status complete(rma_win_s* win) {
  if (!win->start_active) return class_error(RMA_ERR_RMA_SYNC, "no start epoch is open on this window");
  const int me = win->rank();
  Status first = run_deferred_accumulates(win, "rma_win_complete");
  for (int r : win->start_group) {
    const StatusCode rc = flush_target(win, r, FlushScope::kRemote);
    if (rc != StatusCode::kOk) {
      if (first.ok()) first = transport_error(win, "rma_win_complete", r, rc);
      continue;
    }
    Status s = meta_atomic(win, r, win->complete_word(me), Opcode::kAtomicFetchAdd, 1, 0).status();
    if (!s.ok() && first.ok()) first = s;
  }
  for (int r : win->start_group) --win->access_count[static_cast<std::size_t>(r)];
  win->start_group.clear();
  win->start_active = false;
  return first;
}

Result<bool> test(rma_win_s* win) {
  if (!win->post_active) return class_error(RMA_ERR_RMA_SYNC, "no post epoch is open on this window");
  (void)win->ctx->eps().progress();
  for (int r : win->post_group) {
    if (load(win->meta + win->complete_word(r)) < win->completes_expected[static_cast<std::size_t>(r)]) {
      return false;
    }
  }
  win->post_active = false;
  win->post_group.clear();
  return true;
}

Status wait(rma_win_s* win) {
  if (!win->post_active) return class_error(RMA_ERR_RMA_SYNC, "no post epoch is open on this window");
  for (int r : win->post_group) {
    const std::uint64_t want = win->completes_expected[static_cast<std::size_t>(r)];
    const std::uint64_t* w = win->meta + win->complete_word(r);
    RMA_RETURN_IF_ERROR(wait_until(win, [&] { return load(w) >= want; },
                                   "rma_win_wait: rma_win_complete of rank " + std::to_string(r)));
  }
  // As in fence: order this rank's later loads after the NIC's writes.
  if (win->ctx->eps().progress() < 0) return class_error(RMA_ERR_OTHER, "the completion queue overran");
  win->post_active = false;
  win->post_group.clear();
  return {};
}

}  // namespace rma::api
