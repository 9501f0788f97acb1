// The RC opcode table (IBA table 38; roce-v2.md 2.3, rxe_opcode.c): which
// extension headers follow the BTH and whether data may follow them.
#include <array>

#include "wire/byte_order.hpp"
#include "wire/wire.hpp"

namespace rma::roce {
namespace {

struct OpcodeEntry {
  std::string_view name;
  OpcodeTraits traits;
};

constexpr OpcodeTraits req(std::uint8_t headers, bool payload, bool required = false) {
  return OpcodeTraits{true, headers, payload, true, required};
}
constexpr OpcodeTraits resp(std::uint8_t headers, bool payload, bool required = false) {
  return OpcodeTraits{true, headers, payload, false, required};
}

constexpr std::size_t kRcOpcodeCount = 0x15;  // 0x00 .. 0x14

constexpr std::array<OpcodeEntry, kRcOpcodeCount> kTable = {{
    /* 0x00 */ {"SEND_FIRST", req(0, true, true)},
    /* 0x01 */ {"SEND_MIDDLE", req(0, true, true)},
    /* 0x02 */ {"SEND_LAST", req(0, true)},
    /* 0x03 */ {"SEND_LAST_WITH_IMMEDIATE", req(kHasImm, true)},
    /* 0x04 */ {"SEND_ONLY", req(0, true)},
    /* 0x05 */ {"SEND_ONLY_WITH_IMMEDIATE", req(kHasImm, true)},
    /* 0x06 */ {"RDMA_WRITE_FIRST", req(kHasReth, true, true)},
    /* 0x07 */ {"RDMA_WRITE_MIDDLE", req(0, true, true)},
    /* 0x08 */ {"RDMA_WRITE_LAST", req(0, true)},
    /* 0x09 */ {"RDMA_WRITE_LAST_WITH_IMMEDIATE", req(kHasImm, true)},
    /* 0x0A */ {"RDMA_WRITE_ONLY", req(kHasReth, true)},
    /* 0x0B */ {"RDMA_WRITE_ONLY_WITH_IMMEDIATE", req(kHasReth | kHasImm, true)},
    /* 0x0C */ {"RDMA_READ_REQUEST", req(kHasReth, false)},
    /* 0x0D */ {"RDMA_READ_RESPONSE_FIRST", resp(kHasAeth, true, true)},
    /* 0x0E */ {"RDMA_READ_RESPONSE_MIDDLE", resp(0, true, true)},
    /* 0x0F */ {"RDMA_READ_RESPONSE_LAST", resp(kHasAeth, true)},
    /* 0x10 */ {"RDMA_READ_RESPONSE_ONLY", resp(kHasAeth, true)},
    /* 0x11 */ {"ACKNOWLEDGE", resp(kHasAeth, false)},
    /* 0x12 */ {"ATOMIC_ACKNOWLEDGE", resp(kHasAeth | kHasAtomicAckEth, false)},
    /* 0x13 */ {"COMPARE_SWAP", req(kHasAtomicEth, false)},
    /* 0x14 */ {"FETCH_ADD", req(kHasAtomicEth, false)},
}};

}  // namespace

OpcodeTraits opcode_traits(std::uint8_t opcode) noexcept {
  if (opcode >= kRcOpcodeCount) return OpcodeTraits{};
  return kTable[opcode].traits;
}

std::string_view opcode_name(std::uint8_t opcode) noexcept {
  if (opcode >= kRcOpcodeCount) return "UNKNOWN";
  return kTable[opcode].name;
}

std::string_view opcode_name(Opcode op) noexcept { return opcode_name(static_cast<std::uint8_t>(op)); }

std::size_t header_length(std::uint8_t opcode) noexcept {
  const OpcodeTraits t = opcode_traits(opcode);
  if (!t.valid) return 0;
  return kOuterHeadersLen + kBthLen + detail::ext_length(t.headers);
}

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
