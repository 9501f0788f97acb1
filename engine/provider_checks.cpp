#include "rma/sdk/provider_checks.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "rma/sdk/text.hpp"

namespace rma {
namespace {

// True when some page of [addr, addr+length) is not mapped. msync on the
// page-aligned range fails with ENOMEM exactly then, and with MS_ASYNC it
// does no I/O, so this is a cheap probe that touches nothing.
bool has_unmapped_page(std::uint64_t addr, std::uint64_t length) noexcept {
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t start = addr & ~(page - 1);
  const std::uint64_t span = ((addr + length - start) + page - 1) & ~(page - 1);
  return ::msync(reinterpret_cast<void*>(start), span, MS_ASYNC) != 0 && errno == ENOMEM;
}

}  // namespace

Status check_qp_config(const QpConfig& c, const DeviceCaps& caps) {
  auto range = [](const char* what, std::uint64_t v, std::uint64_t lo, std::uint64_t hi) {
    return v < lo || v > hi ? invalid_argument(std::string("create_qp: ") + what + " " + dec(v) +
                                               " is outside " + dec(lo) + ".." + dec(hi))
                            : Status();
  };
  if (!c.send_cq) return invalid_argument("create_qp: send_cq is null");
  if (!c.recv_cq) return invalid_argument("create_qp: recv_cq is null");
  RMA_RETURN_IF_ERROR(range("max_send_wr", c.max_send_wr, 1, caps.max_qp_wr));
  RMA_RETURN_IF_ERROR(range("max_recv_wr", c.max_recv_wr, 1, caps.max_qp_wr));
  RMA_RETURN_IF_ERROR(range("max_send_sge", c.max_send_sge, 0, caps.max_sge));
  RMA_RETURN_IF_ERROR(range("max_recv_sge", c.max_recv_sge, 0, caps.max_recv_sge));
  RMA_RETURN_IF_ERROR(range("max_inline_data", c.max_inline_data, 0, caps.max_inline_data));
  RMA_RETURN_IF_ERROR(range("max_rd_atomic", c.max_rd_atomic, 0, caps.max_qp_rd_atom));
  RMA_RETURN_IF_ERROR(range("timeout", c.timeout, 0, 31));
  RMA_RETURN_IF_ERROR(range("retry_cnt", c.retry_cnt, 0, 7));
  RMA_RETURN_IF_ERROR(range("rnr_retry", c.rnr_retry, 0, 7));
  RMA_RETURN_IF_ERROR(range("min_rnr_timer", c.min_rnr_timer, 0, 31));
  const std::uint32_t mtu = c.path_mtu;
  if (mtu != 0 && (mtu < 256 || mtu > caps.path_mtu || (mtu & (mtu - 1)) != 0)) {
    return invalid_argument("create_qp: path_mtu " + dec(mtu) + " must be 0 or a power of two in 256.." +
                            dec(caps.path_mtu));
  }
  return {};
}

Status check_registration(const void* addr, std::size_t length, Access access, const DeviceCaps& caps) {
  const auto a = reinterpret_cast<std::uint64_t>(addr);
  if (a == 0) return invalid_argument("register_memory: address is null");
  if (length == 0) return invalid_argument("register_memory: length is 0 at address " + hex(a));
  if (a + length < a) {
    return invalid_argument("register_memory: range " + hex(a) + " + " + dec(length) +
                            " wraps around the address space");
  }
  if (length > caps.max_mr_size) {
    return invalid_argument("register_memory: length " + dec(length) + " exceeds max_mr_size " +
                            dec(caps.max_mr_size));
  }
  const auto bits = static_cast<std::uint32_t>(access);
  if ((bits & ~static_cast<std::uint32_t>(kAllAccess)) != 0) {
    return invalid_argument("register_memory: unknown access bits " + hex(bits));
  }
  // Verbs rule (ibv_reg_mr EINVAL): a region peers may write or run atomics
  // on must also be locally writable.
  if ((has_access(access, Access::kRemoteWrite) || has_access(access, Access::kRemoteAtomic)) &&
      !has_access(access, Access::kLocalWrite)) {
    return invalid_argument("register_memory: access " + access_to_string(access) +
                            " needs LOCAL_WRITE too (REMOTE_WRITE and REMOTE_ATOMIC require it)");
  }
  if (has_unmapped_page(a, length)) {
    return invalid_argument("register_memory: range " + hex(a) + " + " + dec(length) +
                            " is not (entirely) mapped memory");
  }
  return {};
}

const char* check_send_wr(const WorkRequest& wr, const SendLimits& limits, std::uint64_t* total,
                          StatusCode& code) noexcept {
  code = StatusCode::kInvalidArgument;
  const bool atomic = wr.opcode == Opcode::kAtomicFetchAdd || wr.opcode == Opcode::kAtomicCmpSwap;
  switch (wr.opcode) {
    case Opcode::kRdmaWrite:
    case Opcode::kRdmaWriteWithImm:
    case Opcode::kRdmaRead:
    case Opcode::kAtomicFetchAdd:
    case Opcode::kAtomicCmpSwap:
    case Opcode::kSend:
    case Opcode::kSendWithImm:
      break;
    default:
      return "opcode not valid for post";
  }
  constexpr std::uint32_t kKnownFlags = kWrSignaled | kWrFence | kWrInline | kWrSolicited;
  if ((wr.flags & ~kKnownFlags) != 0) return "unknown work request flag bits";
  if (wr.sgl.size() > limits.max_send_sge) return "too many SGEs";
  const bool inl = (wr.flags & kWrInline) != 0;
  if (atomic) {
    if (wr.sgl.size() != 1 || wr.sgl[0].length != 8) return "atomic needs exactly one 8-byte SGE";
    if ((wr.remote_addr & 7u) != 0) return "atomic remote_addr not 8-byte aligned";
  }
  if (inl && (wr.opcode == Opcode::kRdmaRead || atomic)) return "inline is only valid for SEND and RDMA WRITE";
  std::uint64_t sum = 0;
  for (const Sge& sge : wr.sgl) sum += sge.length;
  if (sum > limits.max_msg_size) return "message exceeds max_msg_size";
  if (inl && sum > limits.max_inline_data) return "inline data exceeds max_inline_data";
  *total = sum;
  code = StatusCode::kOk;
  return nullptr;
}

}  // namespace rma
