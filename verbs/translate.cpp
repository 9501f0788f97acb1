#include "verbs/translate.hpp"

#include <cstring>

namespace rma::verbs {

WcStatus wc_status_from_ibv(int status) noexcept {
  switch (status) {
    case IBV_WC_SUCCESS: return WcStatus::kSuccess;
    case IBV_WC_LOC_LEN_ERR: return WcStatus::kLocLenErr;
    case IBV_WC_LOC_QP_OP_ERR: return WcStatus::kLocQpOpErr;
    case IBV_WC_LOC_EEC_OP_ERR: return WcStatus::kLocEecOpErr;
    case IBV_WC_LOC_PROT_ERR: return WcStatus::kLocProtErr;
    case IBV_WC_WR_FLUSH_ERR: return WcStatus::kWrFlushErr;
    case IBV_WC_MW_BIND_ERR: return WcStatus::kMwBindErr;
    case IBV_WC_BAD_RESP_ERR: return WcStatus::kBadRespErr;
    case IBV_WC_LOC_ACCESS_ERR: return WcStatus::kLocAccessErr;
    case IBV_WC_REM_INV_REQ_ERR: return WcStatus::kRemInvReqErr;
    case IBV_WC_REM_ACCESS_ERR: return WcStatus::kRemAccessErr;
    case IBV_WC_REM_OP_ERR: return WcStatus::kRemOpErr;
    case IBV_WC_RETRY_EXC_ERR: return WcStatus::kRetryExcErr;
    case IBV_WC_RNR_RETRY_EXC_ERR: return WcStatus::kRnrRetryExcErr;
    case IBV_WC_LOC_RDD_VIOL_ERR: return WcStatus::kLocRddViolErr;
    case IBV_WC_REM_INV_RD_REQ_ERR: return WcStatus::kRemInvRdReqErr;
    case IBV_WC_REM_ABORT_ERR: return WcStatus::kRemAbortErr;
    case IBV_WC_INV_EECN_ERR: return WcStatus::kInvEecnErr;
    case IBV_WC_INV_EEC_STATE_ERR: return WcStatus::kInvEecStateErr;
    case IBV_WC_FATAL_ERR: return WcStatus::kFatalErr;
    case IBV_WC_RESP_TIMEOUT_ERR: return WcStatus::kRespTimeoutErr;
    default: return WcStatus::kGeneralErr;  // GENERAL_ERR and tag-matching statuses
  }
}

std::optional<Opcode> opcode_from_ibv(int opcode) noexcept {
  switch (opcode) {
    case IBV_WC_SEND: return Opcode::kSend;
    case IBV_WC_RDMA_WRITE: return Opcode::kRdmaWrite;
    case IBV_WC_RDMA_READ: return Opcode::kRdmaRead;
    case IBV_WC_COMP_SWAP: return Opcode::kAtomicCmpSwap;
    case IBV_WC_FETCH_ADD: return Opcode::kAtomicFetchAdd;
    case IBV_WC_RECV: return Opcode::kRecv;
    case IBV_WC_RECV_RDMA_WITH_IMM: return Opcode::kRecvRdmaWithImm;
    default: return std::nullopt;
  }
}

ibv_wr_opcode wr_opcode_to_ibv(Opcode op) noexcept {
  switch (op) {
    case Opcode::kRdmaWrite: return IBV_WR_RDMA_WRITE;
    case Opcode::kRdmaWriteWithImm: return IBV_WR_RDMA_WRITE_WITH_IMM;
    case Opcode::kRdmaRead: return IBV_WR_RDMA_READ;
    case Opcode::kAtomicFetchAdd: return IBV_WR_ATOMIC_FETCH_AND_ADD;
    case Opcode::kAtomicCmpSwap: return IBV_WR_ATOMIC_CMP_AND_SWP;
    case Opcode::kSendWithImm: return IBV_WR_SEND_WITH_IMM;
    case Opcode::kSend:
    default: return IBV_WR_SEND;
  }
}

unsigned send_flags_to_ibv(std::uint32_t flags) noexcept {
  unsigned f = 0;
  if ((flags & kWrSignaled) != 0) f |= IBV_SEND_SIGNALED;
  if ((flags & kWrFence) != 0) f |= IBV_SEND_FENCE;
  if ((flags & kWrInline) != 0) f |= IBV_SEND_INLINE;
  if ((flags & kWrSolicited) != 0) f |= IBV_SEND_SOLICITED;
  return f;
}

int access_to_ibv(Access access) noexcept {
  int f = 0;
  if (has_access(access, Access::kLocalWrite)) f |= IBV_ACCESS_LOCAL_WRITE;
  if (has_access(access, Access::kRemoteWrite)) f |= IBV_ACCESS_REMOTE_WRITE;
  if (has_access(access, Access::kRemoteRead)) f |= IBV_ACCESS_REMOTE_READ;
  if (has_access(access, Access::kRemoteAtomic)) f |= IBV_ACCESS_REMOTE_ATOMIC;
  return f;
}

std::uint32_t mtu_bytes(int ibv_mtu) noexcept {
  switch (ibv_mtu) {
    case IBV_MTU_256: return 256;
    case IBV_MTU_512: return 512;
    case IBV_MTU_1024: return 1024;
    case IBV_MTU_2048: return 2048;
    case IBV_MTU_4096: return 4096;
    default: return 0;
  }
}

std::optional<ibv_mtu> mtu_from_bytes(std::uint32_t bytes) noexcept {
  switch (bytes) {
    case 256: return IBV_MTU_256;
    case 512: return IBV_MTU_512;
    case 1024: return IBV_MTU_1024;
    case 2048: return IBV_MTU_2048;
    case 4096: return IBV_MTU_4096;
    default: return std::nullopt;
  }
}

std::optional<AsyncEventType> async_event_from_ibv(int event_type) noexcept {
  switch (event_type) {
    case IBV_EVENT_CQ_ERR: return AsyncEventType::kCqErr;
    case IBV_EVENT_QP_FATAL: return AsyncEventType::kQpFatal;
    case IBV_EVENT_QP_REQ_ERR: return AsyncEventType::kQpReqErr;
    case IBV_EVENT_QP_ACCESS_ERR: return AsyncEventType::kQpAccessErr;
    case IBV_EVENT_COMM_EST: return AsyncEventType::kCommEst;
    case IBV_EVENT_SQ_DRAINED: return AsyncEventType::kSqDrained;
    case IBV_EVENT_PATH_MIG: return AsyncEventType::kPathMig;
    case IBV_EVENT_PATH_MIG_ERR: return AsyncEventType::kPathMigErr;
    case IBV_EVENT_DEVICE_FATAL: return AsyncEventType::kDeviceFatal;
    case IBV_EVENT_PORT_ACTIVE: return AsyncEventType::kPortActive;
    case IBV_EVENT_PORT_ERR: return AsyncEventType::kPortErr;
    case IBV_EVENT_LID_CHANGE: return AsyncEventType::kLidChange;
    case IBV_EVENT_PKEY_CHANGE: return AsyncEventType::kPkeyChange;
    case IBV_EVENT_SM_CHANGE: return AsyncEventType::kSmChange;
    case IBV_EVENT_SRQ_ERR: return AsyncEventType::kSrqErr;
    case IBV_EVENT_SRQ_LIMIT_REACHED: return AsyncEventType::kSrqLimitReached;
    case IBV_EVENT_QP_LAST_WQE_REACHED: return AsyncEventType::kQpLastWqeReached;
    case IBV_EVENT_CLIENT_REREGISTER: return AsyncEventType::kClientReregister;
    case IBV_EVENT_GID_CHANGE: return AsyncEventType::kGidChange;
    default: return std::nullopt;  // WQ_FATAL: no work queues in the contract
  }
}

QpState qp_state_from_ibv(int state) noexcept {
  switch (state) {
    case IBV_QPS_RESET: return QpState::kReset;
    case IBV_QPS_INIT: return QpState::kInit;
    case IBV_QPS_RTR: return QpState::kRtr;
    case IBV_QPS_RTS: return QpState::kRts;
    default: return QpState::kError;  // SQD, SQE and ERR: no longer usable as connected
  }
}

std::string_view port_state_name(int state) noexcept {
  switch (state) {
    case IBV_PORT_NOP: return "NOP";
    case IBV_PORT_DOWN: return "DOWN";
    case IBV_PORT_INIT: return "INIT";
    case IBV_PORT_ARMED: return "ARMED";
    case IBV_PORT_ACTIVE: return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER: return "ACTIVE_DEFER";
    default: return "UNKNOWN";
  }
}

std::string_view link_layer_name(int link_layer) noexcept {
  switch (link_layer) {
    case IBV_LINK_LAYER_ETHERNET: return "Ethernet";
    case IBV_LINK_LAYER_INFINIBAND:
    case IBV_LINK_LAYER_UNSPECIFIED: return "InfiniBand";  // old drivers leave it unset on IB
    default: return "unknown";
  }
}

std::string errno_text(int e) {
  return std::string(std::strerror(e)) + " (errno " + std::to_string(e) + ")";
}

}  // namespace rma::verbs
