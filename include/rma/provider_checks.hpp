// Checks every provider applies to the contract's control-path calls, so
// that all providers reject the same bad input with the same message.
#pragma once

#include <cstddef>

#include "rma/provider.hpp"
#include "rma/status.hpp"

namespace rma {

// create_qp: CQs present, queue depths, SGE/inline/rd_atomic limits within
// the device's caps, timer encodings within their bit widths, path MTU 0 or a
// power of two in 256..caps.path_mtu.
Status check_qp_config(const QpConfig& config, const DeviceCaps& caps);

// register_memory: non-null address, non-zero length, no wrap, within
// max_mr_size, known access bits, LOCAL_WRITE present when REMOTE_WRITE or
// REMOTE_ATOMIC is asked for (the verbs rule), and every page mapped.
Status check_registration(const void* addr, std::size_t length, Access access, const DeviceCaps& caps);

}  // namespace rma
