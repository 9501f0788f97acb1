// The in-process "fabric": the state every self-provider object in this
// process shares — the lock, the memory-region key table, the table of live
// QPs by number, and the per-process nonce that endpoint addresses carry.
//
// Why one lock for everything: executing one work request touches the
// requester QP, the responder QP (possibly the same one), both QPs' regions
// and up to three CQs. A single fabric-wide mutex makes each execution atomic
// with respect to every other post/poll and leaves no lock order to get
// wrong. This provider exists for tests and same-process peers, so the
// serialisation costs nothing that matters.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "rma/sdk/status.hpp"
#include "swkit/key_table.hpp"

namespace rma::self {

class QpImpl;

class Fabric {
 public:
  // The process-wide instance. Never destroyed: handles may outlive static
  // destruction order, and the fabric owns nothing but bookkeeping.
  static Fabric& instance() noexcept;

  std::mutex& mutex() noexcept { return mutex_; }

  // Everything below requires mutex() to be held.
  swkit::KeyTable& keys() noexcept { return keys_; }

  // Assigns a QP number (24 bits, never reused while the process lives, so a
  // stale address cannot name a newer QP). kResourceExhausted past max_qp.
  Result<std::uint32_t> add_qp(QpImpl* qp, std::uint32_t max_qp);
  void remove_qp(std::uint32_t qpn) noexcept;
  QpImpl* find_qp(std::uint32_t qpn) const noexcept;

  // Random per process; with the pid it lets connect() reject addresses made
  // by another process.
  std::uint64_t nonce() const noexcept { return nonce_; }

 private:
  Fabric();

  std::mutex mutex_;
  std::uint64_t nonce_;
  swkit::KeyTable keys_;
  std::unordered_map<std::uint32_t, QpImpl*> qps_;
  std::uint32_t next_qpn_;
};

}  // namespace rma::self
