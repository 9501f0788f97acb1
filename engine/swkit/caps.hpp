// The capabilities every software provider reports. The per-request limits
// (SGEs, inline bytes, message and region sizes, key count) are the kit's:
// its work-queue storage, key table and copies are what enforce them, so
// they are written once here. What each provider decides for itself (how
// many QPs its QP table holds, queue and CQ depths, responder resources,
// path MTU) comes in QueueLimits.
#pragma once

#include <cstdint>

#include "rma/sdk/provider.hpp"

namespace rma::swkit {

struct QueueLimits {
  std::uint32_t max_qp = 0;
  std::uint32_t max_qp_wr = 0;
  std::uint32_t max_cqe = 0;
  std::uint32_t max_qp_rd_atom = 0;
  std::uint32_t path_mtu = 0;
};

inline DeviceCaps software_caps(const QueueLimits& l) noexcept {
  DeviceCaps c;
  c.max_sge = 32;
  c.max_recv_sge = 32;
  c.max_inline_data = 256;
  c.max_qp_rd_atom = l.max_qp_rd_atom;
  c.max_qp_wr = l.max_qp_wr;
  c.max_cqe = l.max_cqe;
  c.max_qp = l.max_qp;
  c.max_mr = 1u << 20;
  c.max_mr_size = std::uint64_t{1} << 46;
  c.max_msg_size = 1u << 31;  // byte_len of a completion is 32 bits
  c.atomics = true;           // CPU atomics on the target word
  c.path_mtu = l.path_mtu;
  // self and shm: the initiator copies (or the device's thread serves the
  // request ring); softroce sets it back (its receive path runs in polls).
  c.target_needs_polls = false;
  return c;
}

}  // namespace rma::swkit
