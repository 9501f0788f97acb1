// Out-of-line helpers of the provider contract: names users recognise from
// libibverbs, and the EndpointAddress byte/hex forms.
#include <cstdio>

#include "rma/sdk/provider.hpp"

namespace rma {

std::string access_to_string(Access a) {
  if (a == Access::kNone) return "NONE";
  std::string s;
  auto add = [&](Access bit, const char* name) {
    if (has_access(a, bit)) s += (s.empty() ? "" : "|") + std::string(name);
  };
  add(Access::kLocalWrite, "LOCAL_WRITE");
  add(Access::kRemoteWrite, "REMOTE_WRITE");
  add(Access::kRemoteRead, "REMOTE_READ");
  add(Access::kRemoteAtomic, "REMOTE_ATOMIC");
  return s;
}

std::string_view opcode_name(Opcode op) noexcept {
  switch (op) {
    case Opcode::kRdmaWrite: return "RDMA_WRITE";
    case Opcode::kRdmaWriteWithImm: return "RDMA_WRITE_WITH_IMM";
    case Opcode::kRdmaRead: return "RDMA_READ";
    case Opcode::kAtomicFetchAdd: return "ATOMIC_FETCH_AND_ADD";
    case Opcode::kAtomicCmpSwap: return "ATOMIC_CMP_AND_SWP";
    case Opcode::kSend: return "SEND";
    case Opcode::kSendWithImm: return "SEND_WITH_IMM";
    case Opcode::kRecv: return "RECV";
    case Opcode::kRecvRdmaWithImm: return "RECV_RDMA_WITH_IMM";
  }
  return "UNKNOWN_OPCODE";
}

namespace {
struct WcName {
  const char* name;
  const char* description;
};
constexpr WcName kWcNames[] = {
    {"SUCCESS", "success"},
    {"LOC_LEN_ERR", "local length error"},
    {"LOC_QP_OP_ERR", "local QP operation error"},
    {"LOC_EEC_OP_ERR", "local EE context operation error"},
    {"LOC_PROT_ERR", "local protection error"},
    {"WR_FLUSH_ERR", "Work Request Flushed Error"},
    {"MW_BIND_ERR", "memory management operation error"},
    {"BAD_RESP_ERR", "bad response error"},
    {"LOC_ACCESS_ERR", "local access error"},
    {"REM_INV_REQ_ERR", "remote invalid request error"},
    {"REM_ACCESS_ERR", "remote access error"},
    {"REM_OP_ERR", "remote operation error"},
    {"RETRY_EXC_ERR", "transport retry counter exceeded"},
    {"RNR_RETRY_EXC_ERR", "RNR retry counter exceeded"},
    {"LOC_RDD_VIOL_ERR", "local RDD violation error"},
    {"REM_INV_RD_REQ_ERR", "remote invalid RD request"},
    {"REM_ABORT_ERR", "aborted error"},
    {"INV_EECN_ERR", "invalid EE context number"},
    {"INV_EEC_STATE_ERR", "invalid EE context state"},
    {"FATAL_ERR", "fatal error"},
    {"RESP_TIMEOUT_ERR", "response timeout error"},
    {"GENERAL_ERR", "general error"},
};
}  // namespace

std::string_view wc_status_name(WcStatus s) noexcept {
  auto i = static_cast<size_t>(s);
  return i < std::size(kWcNames) ? kWcNames[i].name : "UNKNOWN_STATUS";
}
std::string_view wc_status_description(WcStatus s) noexcept {
  auto i = static_cast<size_t>(s);
  return i < std::size(kWcNames) ? kWcNames[i].description : "unknown completion status";
}

std::string_view async_event_name(AsyncEventType t) noexcept {
  static constexpr std::string_view kNames[] = {
      "CQ_ERR",         "QP_FATAL",          "QP_REQ_ERR",         "QP_ACCESS_ERR",    "COMM_EST",
      "SQ_DRAINED",     "PATH_MIG",          "PATH_MIG_ERR",       "DEVICE_FATAL",     "PORT_ACTIVE",
      "PORT_ERR",       "LID_CHANGE",        "PKEY_CHANGE",        "SM_CHANGE",        "SRQ_ERR",
      "SRQ_LIMIT_REACHED", "QP_LAST_WQE_REACHED", "CLIENT_REREGISTER", "GID_CHANGE",
  };
  auto i = static_cast<size_t>(t);
  return i < std::size(kNames) ? kNames[i] : "UNKNOWN_EVENT";
}

std::string_view qp_state_name(QpState s) noexcept {
  switch (s) {
    case QpState::kReset: return "RESET";
    case QpState::kInit: return "INIT";
    case QpState::kRtr: return "RTR";
    case QpState::kRts: return "RTS";
    case QpState::kError: return "ERROR";
  }
  return "UNKNOWN";
}

std::string_view provider_reach_name(ProviderReach r) noexcept {
  switch (r) {
    case ProviderReach::kProcess: return "process";
    case ProviderReach::kHost: return "host";
    case ProviderReach::kNetwork: return "network";
  }
  return "unknown";
}

Status PostResult::to_status() const {
  if (ok()) return {};
  std::string m = "work request " + std::to_string(bad_index) + ": " +
                  (reason != nullptr ? reason : "rejected");
  return Status(code, std::move(m));
}

std::string EndpointAddress::to_hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(size * 2);
  for (std::uint32_t i = 0; i < size; ++i) {
    s += kDigits[bytes[i] >> 4];
    s += kDigits[bytes[i] & 15];
  }
  return s;
}

Result<EndpointAddress> EndpointAddress::from_bytes(std::span<const std::uint8_t> data) {
  if (data.empty()) return invalid_argument("endpoint address is empty");
  if (data.size() > kMaxSize) {
    return invalid_argument("endpoint address has " + std::to_string(data.size()) +
                            " bytes; at most " + std::to_string(kMaxSize) + " are allowed");
  }
  EndpointAddress a;
  std::copy(data.begin(), data.end(), a.bytes.begin());
  a.size = static_cast<std::uint32_t>(data.size());
  return a;
}

Result<EndpointAddress> EndpointAddress::from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0) {
    return invalid_argument("endpoint address hex has an odd number of digits (" +
                            std::to_string(hex.size()) + ")");
  }
  if (hex.size() / 2 > kMaxSize) {
    return invalid_argument("endpoint address hex is " + std::to_string(hex.size() / 2) +
                            " bytes; at most " + std::to_string(kMaxSize) + " are allowed");
  }
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::array<std::uint8_t, kMaxSize> buf{};
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) {
      return invalid_argument("endpoint address hex has a non-hex character at offset " +
                              std::to_string(hi < 0 ? i : i + 1));
    }
    buf[i / 2] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return from_bytes({buf.data(), hex.size() / 2});
}

}  // namespace rma
