// Completion::vendor_err values of the self provider: which check produced an
// error status, so a failing test or a log line can say more than the
// ibv_wc_status name does.
#pragma once

#include <cstdint>

namespace rma::self {

enum VendorErr : std::uint32_t {
  kVeNone = 0,
  kVeBadLkey = 1,             // lkey names no live region
  kVeLkeyOtherPd = 2,         // lkey names a region of another PD
  kVeLocalOutOfBounds = 3,    // SGE not inside its region
  kVeNoLocalWrite = 4,        // READ/atomic result or receive buffer lacks LOCAL_WRITE
  kVePeerGone = 5,            // the connected QP no longer exists
  kVePeerNotReady = 6,        // the connected QP is not in RTR/RTS
  kVeBadRkey = 7,             // rkey names no live region
  kVeRkeyOtherPd = 8,         // rkey names a region outside the responder's PD
  kVeNoRemoteRight = 9,       // region lacks REMOTE_WRITE/READ/ATOMIC
  kVeRemoteOutOfBounds = 10,  // remote range not inside the region
  kVeAtomicUnaligned = 11,    // atomic target not 8-byte aligned
  kVeRecvTooSmall = 12,       // SEND longer than the posted receive
  kVeRecvBufferInvalid = 13,  // the receive's SGEs fail the local checks
  kVeRnrExhausted = 14,       // no receive was posted within the RNR budget
  kVeFlushed = 15,            // flushed because the QP entered the error state
  kVeLocalUnmapped = 16,      // the local region's memory was unmapped after registration
  kVeRemoteUnmapped = 17,     // the remote region's memory was unmapped after registration
};

}  // namespace rma::self
