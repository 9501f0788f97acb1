// The RC opcodes' names and the parse errors' names. The opcode table itself
// (which headers follow the BTH, whether data may) is in wire.hpp.
#include <array>

#include "wire/byte_order.hpp"
#include "wire/wire.hpp"

namespace rma::roce {
namespace {

// Names, in the order of detail::kOpcodeTraits (wire.hpp).
constexpr std::array<std::string_view, detail::kRcOpcodeCount> kNames = {{
    "SEND_FIRST",
    "SEND_MIDDLE",
    "SEND_LAST",
    "SEND_LAST_WITH_IMMEDIATE",
    "SEND_ONLY",
    "SEND_ONLY_WITH_IMMEDIATE",
    "RDMA_WRITE_FIRST",
    "RDMA_WRITE_MIDDLE",
    "RDMA_WRITE_LAST",
    "RDMA_WRITE_LAST_WITH_IMMEDIATE",
    "RDMA_WRITE_ONLY",
    "RDMA_WRITE_ONLY_WITH_IMMEDIATE",
    "RDMA_READ_REQUEST",
    "RDMA_READ_RESPONSE_FIRST",
    "RDMA_READ_RESPONSE_MIDDLE",
    "RDMA_READ_RESPONSE_LAST",
    "RDMA_READ_RESPONSE_ONLY",
    "ACKNOWLEDGE",
    "ATOMIC_ACKNOWLEDGE",
    "COMPARE_SWAP",
    "FETCH_ADD",
}};

}  // namespace

std::string_view opcode_name(std::uint8_t opcode) noexcept {
  if (opcode >= detail::kRcOpcodeCount) return "UNKNOWN";
  return kNames[opcode];
}

std::string_view opcode_name(Opcode op) noexcept { return opcode_name(static_cast<std::uint8_t>(op)); }

std::string_view parse_error_name(ParseError e) noexcept {
  switch (e) {
    case ParseError::kOk: return "ok";
    case ParseError::kTruncated: return "truncated";
    case ParseError::kNotIpv4: return "not_ipv4";
    case ParseError::kBadIpHeader: return "bad_ip_header";
    case ParseError::kNotUdp: return "not_udp";
    case ParseError::kNotRoce: return "not_roce";
    case ParseError::kBadLength: return "bad_length";
    case ParseError::kBadBth: return "bad_bth";
    case ParseError::kUnknownOpcode: return "unknown_opcode";
    case ParseError::kBadPad: return "bad_pad";
    case ParseError::kBadPayload: return "bad_payload";
    case ParseError::kBadIcrc: return "bad_icrc";
    case ParseError::kCount: break;
  }
  return "unknown";
}

}  // namespace rma::roce
