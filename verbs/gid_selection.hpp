// Which GID of a port a QP uses as its source. Pure logic over a GID table
// (read from the device by discovery.cpp), so it is unit-tested with fake
// tables.
//
// RoCE v2 (Ethernet link layer): RMA_GID_INDEX wins when set; else the
// RoCE v2 IPv4-mapped GID of the configured address (RMA_VERBS_IP), i.e. of
// the netdev that carries it; else the first RoCE v2 IPv4-mapped GID; else
// the first RoCE v2 global IPv6 GID. Link-local GIDs (fe80::/10) and RoCE v1
// GIDs are never chosen automatically: they do not route.
// InfiniBand: RMA_GID_INDEX, else index 0 (the port GID).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rma/sdk/status.hpp"

namespace rma::verbs {

using Gid = std::array<std::uint8_t, 16>;

enum class GidType : std::uint8_t { kIb, kRoceV1, kRoceV2 };
const char* gid_type_name(GidType t) noexcept;  // "IB", "RoCE v1", "RoCE v2"

struct GidEntry {
  std::uint32_t index = 0;
  Gid gid{};
  GidType type = GidType::kRoceV2;
  std::uint32_t ndev_ifindex = 0;  // the netdev the GID belongs to (Ethernet), 0 if none
};

struct GidQuery {
  std::string device;                    // for messages: "rxe0"
  std::uint32_t port = 1;
  bool ethernet = true;                  // link layer
  std::uint32_t table_len = 0;           // the port's GID table size (gid_tbl_len)
  std::optional<std::uint32_t> ipv4;     // RMA_VERBS_IP, host byte order
  std::optional<std::uint32_t> forced;   // RMA_GID_INDEX
};

// The entry to use, or an error naming the device, the port and what the
// table holds ("rxe0 port 1 has no RoCE v2 GID ...").
Result<GidEntry> choose_gid(const std::vector<GidEntry>& table, const GidQuery& query);

bool gid_is_zero(const Gid& g) noexcept;
bool gid_is_ipv4_mapped(const Gid& g) noexcept;   // ::ffff:a.b.c.d
bool gid_is_link_local(const Gid& g) noexcept;    // fe80::/10
std::uint32_t gid_ipv4(const Gid& g) noexcept;    // host byte order; valid when mapped
Gid ipv4_mapped_gid(std::uint32_t ipv4) noexcept;
std::string gid_to_string(const Gid& g);           // "::ffff:10.0.2.15", "fe80::1"
std::string ipv4_to_string(std::uint32_t ipv4);
// "10.0.2.15" -> host byte order; error names the text.
Result<std::uint32_t> parse_ipv4(const std::string& text);

}  // namespace rma::verbs
