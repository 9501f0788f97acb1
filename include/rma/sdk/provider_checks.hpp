// Checks every provider applies to the contract's control-path calls, so
// that all providers reject the same bad input with the same message.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/status.hpp"

// librma is built with hidden visibility: what this header declares is
// part of its exported interface.
#pragma GCC visibility push(default)

namespace rma {

// create_qp: CQs present, queue depths, SGE/inline/rd_atomic limits within
// the device's caps, timer encodings within their bit widths, path MTU 0 or a
// power of two in 256..caps.path_mtu.
Status check_qp_config(const QpConfig& config, const DeviceCaps& caps);

// register_memory: non-null address, non-zero length, no wrap, within
// max_mr_size, known access bits, LOCAL_WRITE present when REMOTE_WRITE or
// REMOTE_ATOMIC is asked for (the verbs rule), and every page mapped.
Status check_registration(const void* addr, std::size_t length, Access access, const DeviceCaps& caps);

// The limits of one QP that post() checks a send work request against.
struct SendLimits {
  std::uint32_t max_send_sge = 0;
  std::uint32_t max_inline_data = 0;
  std::uint64_t max_msg_size = 0;
};

// post(): the checks of a send work request that depend only on the request
// and the QP's limits: opcode, flag bits, SGE count, atomic shape and
// alignment, inline rules and message size. Data path: no allocation.
// Returns nullptr when it passes, else a static reason (with `code` set to
// kInvalidArgument); `*total` gets the message length. QP state and queue
// space stay the provider's to check.
const char* check_send_wr(const WorkRequest& wr, const SendLimits& limits, std::uint64_t* total,
                          StatusCode& code) noexcept;

}  // namespace rma

#pragma GCC visibility pop
