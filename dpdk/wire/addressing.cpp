// RoCE v2 addressing helpers: IPv4-mapped GIDs and the UDP source port
// rdma_rxe picks for a QP pair (roce-v2.md 2.6).
#include "wire/wire.hpp"

namespace rma::roce {

std::array<std::uint8_t, 16> ipv4_gid(std::uint32_t ipv4) noexcept {
  std::array<std::uint8_t, 16> gid{};
  gid[10] = 0xFF;
  gid[11] = 0xFF;
  gid[12] = static_cast<std::uint8_t>(ipv4 >> 24);
  gid[13] = static_cast<std::uint8_t>(ipv4 >> 16);
  gid[14] = static_cast<std::uint8_t>(ipv4 >> 8);
  gid[15] = static_cast<std::uint8_t>(ipv4);
  return gid;
}

std::uint16_t udp_source_port(std::uint32_t local_qpn, std::uint32_t remote_qpn) noexcept {
  // rdma_calc_flow_label (include/rdma/ib_verbs.h)
  std::uint64_t v = static_cast<std::uint64_t>(local_qpn) * remote_qpn;
  v ^= v >> 20;
  v ^= v >> 40;
  const auto fl = static_cast<std::uint32_t>(v & 0xFFFFF);
  // rdma_flow_label_to_udp_sport
  const std::uint32_t low = (fl & 0x3FFF) ^ ((fl & 0xFC000) >> 14);
  return static_cast<std::uint16_t>(low | 0xC000);
}

}  // namespace rma::roce
