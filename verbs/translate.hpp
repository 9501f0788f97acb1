// Pure translations between the provider contract's types and libibverbs'
// enums and flags. No device is needed, so all of it is unit-tested on hosts
// without RDMA.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "rma/sdk/provider.hpp"

namespace rma::verbs {

WcStatus wc_status_from_ibv(int status) noexcept;
// Completion opcode from ibv_wc.opcode; nullopt for opcodes the contract
// has no name for (memory windows, TSO, tag matching).
std::optional<Opcode> opcode_from_ibv(int opcode) noexcept;
// Send opcode for ibv_send_wr; the contract's checks have already rejected
// receive-only opcodes.
ibv_wr_opcode wr_opcode_to_ibv(Opcode op) noexcept;
unsigned send_flags_to_ibv(std::uint32_t flags) noexcept;
int access_to_ibv(Access access) noexcept;

// Path MTU: bytes <-> enum ibv_mtu. 0 / nullopt for anything else.
std::uint32_t mtu_bytes(int ibv_mtu) noexcept;
std::optional<ibv_mtu> mtu_from_bytes(std::uint32_t bytes) noexcept;

std::optional<AsyncEventType> async_event_from_ibv(int event_type) noexcept;
QpState qp_state_from_ibv(int state) noexcept;

std::string_view port_state_name(int state) noexcept;   // "ACTIVE", "DOWN"
std::string_view link_layer_name(int link_layer) noexcept;  // "Ethernet", "InfiniBand"

// "Cannot allocate memory (errno 12)"
std::string errno_text(int e);

}  // namespace rma::verbs
