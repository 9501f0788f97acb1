#include "verbs/gid_selection.hpp"

#include <arpa/inet.h>

#include <cstring>

namespace rma::verbs {
namespace {

std::string describe_table(const std::vector<GidEntry>& table) {
  if (table.empty()) return "no GIDs at all";
  std::string s = std::to_string(table.size()) + (table.size() == 1 ? " GID: " : " GIDs: ");
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (i != 0) s += ", ";
    if (i == 8) {
      s += "...";
      break;
    }
    s += "[" + std::to_string(table[i].index) + "] " + gid_to_string(table[i].gid) + " " +
         gid_type_name(table[i].type);
  }
  return s;
}

std::string where(const GidQuery& q) { return q.device + " port " + std::to_string(q.port); }

const GidEntry* find_index(const std::vector<GidEntry>& table, std::uint32_t index) {
  for (const GidEntry& e : table) {
    if (e.index == index && !gid_is_zero(e.gid)) return &e;
  }
  return nullptr;
}

}  // namespace

const char* gid_type_name(GidType t) noexcept {
  switch (t) {
    case GidType::kIb: return "IB";
    case GidType::kRoceV1: return "RoCE v1";
    case GidType::kRoceV2: return "RoCE v2";
  }
  return "?";
}

bool gid_is_zero(const Gid& g) noexcept {
  for (std::uint8_t b : g) {
    if (b != 0) return false;
  }
  return true;
}

bool gid_is_ipv4_mapped(const Gid& g) noexcept {
  for (int i = 0; i < 10; ++i) {
    if (g[static_cast<std::size_t>(i)] != 0) return false;
  }
  return g[10] == 0xff && g[11] == 0xff;
}

bool gid_is_link_local(const Gid& g) noexcept { return g[0] == 0xfe && (g[1] & 0xc0) == 0x80; }

std::uint32_t gid_ipv4(const Gid& g) noexcept {
  return (std::uint32_t{g[12]} << 24) | (std::uint32_t{g[13]} << 16) | (std::uint32_t{g[14]} << 8) | g[15];
}

Gid ipv4_mapped_gid(std::uint32_t ipv4) noexcept {
  Gid g{};
  g[10] = 0xff;
  g[11] = 0xff;
  g[12] = static_cast<std::uint8_t>(ipv4 >> 24);
  g[13] = static_cast<std::uint8_t>(ipv4 >> 16);
  g[14] = static_cast<std::uint8_t>(ipv4 >> 8);
  g[15] = static_cast<std::uint8_t>(ipv4);
  return g;
}

std::string gid_to_string(const Gid& g) {
  char buf[INET6_ADDRSTRLEN] = {};
  in6_addr a;
  std::memcpy(&a, g.data(), 16);
  if (::inet_ntop(AF_INET6, &a, buf, sizeof buf) == nullptr) return "?";
  return buf;
}

std::string ipv4_to_string(std::uint32_t ip) {
  return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 255) + "." +
         std::to_string((ip >> 8) & 255) + "." + std::to_string(ip & 255);
}

Result<std::uint32_t> parse_ipv4(const std::string& text) {
  in_addr a;
  if (::inet_pton(AF_INET, text.c_str(), &a) != 1) {
    return invalid_argument("\"" + text + "\" is not an IPv4 address (expected a.b.c.d)");
  }
  return ntohl(a.s_addr);
}

Result<GidEntry> choose_gid(const std::vector<GidEntry>& table, const GidQuery& q) {
  if (q.forced) {
    const std::uint32_t idx = *q.forced;
    const GidEntry* e = find_index(table, idx);
    if (e == nullptr) {
      if (q.table_len != 0 && idx >= q.table_len) {
        return invalid_argument("GID index " + std::to_string(idx) + " out of range (" + where(q) +
                                " has a table of " + std::to_string(q.table_len) + " entries, " +
                                describe_table(table) + ")");
      }
      return invalid_argument("GID index " + std::to_string(idx) + " out of range (" + where(q) +
                              " has " + describe_table(table) + ")");
    }
    if (q.ethernet && e->type != GidType::kRoceV2) {
      return invalid_argument("GID index " + std::to_string(idx) + " of " + where(q) + " is a " +
                              gid_type_name(e->type) + " GID (" + gid_to_string(e->gid) +
                              "); librma speaks RoCE v2 only (" + describe_table(table) + ")");
    }
    return *e;
  }
  if (!q.ethernet) {
    if (const GidEntry* e = find_index(table, 0)) return *e;
    return not_found(where(q) + " has no port GID at index 0 (" + describe_table(table) + ")");
  }
  const GidEntry* mapped = nullptr;
  const GidEntry* global6 = nullptr;
  for (const GidEntry& e : table) {
    if (e.type != GidType::kRoceV2 || gid_is_zero(e.gid) || gid_is_link_local(e.gid)) continue;
    if (gid_is_ipv4_mapped(e.gid)) {
      if (q.ipv4) {
        if (gid_ipv4(e.gid) == *q.ipv4) return e;
      } else if (mapped == nullptr) {
        mapped = &e;
      }
    } else if (global6 == nullptr) {
      global6 = &e;
    }
  }
  if (q.ipv4) {
    return not_found(where(q) + " has no RoCE v2 GID for " + ipv4_to_string(*q.ipv4) +
                     " (RMA_VERBS_IP): no netdev of this port carries that address (" +
                     describe_table(table) + ")");
  }
  if (mapped != nullptr) return *mapped;
  if (global6 != nullptr) return *global6;
  return not_found(where(q) + " has no RoCE v2 GID (" + describe_table(table) +
                   "); link-local GIDs do not route: give its netdev an IPv4 address, or set "
                   "RMA_GID_INDEX");
}

}  // namespace rma::verbs
