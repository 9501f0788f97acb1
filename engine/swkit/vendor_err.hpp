// Completion::vendor_err of every software provider (self, softroce, and
// shm, the shared-memory provider): which check produced an error
// status, so a failing test or a log line can say more than the
// ibv_wc_status name does. One table for the kit, because the checks that
// produce most of these codes are the kit's (sgl.hpp, completion_ring.hpp):
// the same failure carries the same number on every software transport.
//
// Numbers are part of what users see (logs, rma_info, README): never reuse
// one for another meaning.
#pragma once

#include <cstdint>

namespace rma::swkit {

enum VendorErr : std::uint32_t {
  kVeNone = 0,
  // requester's local checks (sgl.hpp check_local_sgl)
  kVeBadLkey = 1,             // lkey names no live region
  kVeLkeyOtherPd = 2,         // lkey names a region of another PD
  kVeLocalOutOfBounds = 3,    // SGE not inside its region
  kVeNoLocalWrite = 4,        // READ/atomic result or receive buffer lacks LOCAL_WRITE
  // the requester gave up
  kVeRetryExceeded = 5,       // no answer within retry_cnt timeouts
  kVeRnrExceeded = 6,         // no receive was posted within the RNR budget (rnr_retry)
  // responder's checks of a remote access (sgl.hpp check_remote)
  kVeBadRkey = 7,             // rkey names no live region
  kVeRkeyOtherPd = 8,         // rkey names a region outside the responder's PD
  kVeNoRemoteRight = 9,       // region lacks REMOTE_WRITE/READ/ATOMIC
  kVeRemoteOutOfBounds = 10,  // remote range not inside the region
  kVeAtomicUnaligned = 11,    // atomic target not 8-byte aligned
  // receives
  kVeRecvTooSmall = 12,       // SEND longer than the posted receive
  kVeRecvBufferInvalid = 13,  // the receive's SGEs fail the local checks
  // 14: not used (the self provider's RNR code before the table was shared; now 6)
  kVeFlushed = 15,            // flushed because the QP entered the error state
  // memory unmapped after registration (orphan_tracker.hpp)
  kVeLocalUnmapped = 16,      // the local region's memory was unmapped
  kVeRemoteUnmapped = 17,     // the rkey's region's memory was unmapped
  // in-process peers (self)
  kVePeerGone = 18,           // the connected QP no longer exists
  kVePeerNotReady = 19,       // the connected QP is not in RTR/RTS
  // wire protocol (softroce)
  kVeNakInvalidRequest = 20,  // requester: NAK invalid request received
  kVeNakRemoteAccess = 21,    // requester: NAK remote access error received
  kVeNakRemoteOp = 22,        // requester: NAK remote operational error received
  kVeBadOpcodeSequence = 23,  // responder: opcode out of message order
  kVeBadLength = 24,          // responder: payload length inconsistent with the message
  kVeCqOverrun = 25,          // a completion was lost to a CQ overrun
  // cross-process peers (shm)
  kVeCmaDenied = 26,          // process_vm_readv/writev refused (EPERM): ptrace restrictions
                              // (kernel.yama.ptrace_scope, a different uid, no CAP_SYS_PTRACE)
  kVePeerProcessGone = 27,    // the peer's process exited (ESRCH, or its pidfd says so)
};

}  // namespace rma::swkit
