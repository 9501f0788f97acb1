// Port specs: the text that names a DPDK port (RMA_SOFTROCE_PORT, open_port).
// Private to dpdk/port and its tests; DPDK-free so it can be tested without
// an EAL.
//
// Grammar (options are comma separated, after the name):
//   memif:server:<socket>[,opts]   memif:client:<socket>[,opts]
//       abstract unix socket <socket> (no file is created); the server listens.
//       opts: rsize=<log2 ring slots, 1..14, default 10> bsize=<buffer bytes, 128..65535, default
//             9216; also the largest frame carried>
//             wait=<ms to wait for link up in open_port; 0 = do not wait>
//   ring:<name>        in-process pair: the 2nd open of <name> is wired to the 1st
//   af_packet:<ifname>[,framesz=N][,blocksz=N][,framecnt=N]  (root/CAP_NET_RAW)
//   af_xdp:<ifname>    DPDK net_af_xdp on queue 0 of a kernel interface (root); a
//                      frame must fit a 4 KiB umem frame (path MTU 2048), and
//                      the default XDP program takes every frame of the queue
//       Both kinds also take mesh=<job>,mesh_rank=R,mesh_size=N (with ip= and
//       mac=, which each rank must have of its own): the ranks of one host
//       share the interface to reach other hosts and reach each other over
//       memif links (abstract sockets <job>.<i>.<j>, local ranks i < j, the
//       lower serves), routed by destination MAC, learned by ARP
//       (open_bridged_port, mesh_port.hpp).
//   tap:<ifname>       creates a tap interface (root/CAP_NET_ADMIN); max frame 1518
//   pci:<bdf>          a NIC bound to a DPDK driver, e.g. pci:0000:3b:00.0
//   memif-mesh:<job>,rank=R,size=N[,rsize=..][,bsize=..][,wait=..]
//       one memif link to every other rank of an N-process job on this
//       machine (abstract sockets <job>.<i>.<j>, the lower rank serves) and
//       loopback, composed into one Link; rank R's MAC and IPv4 are
//       mesh_mac(R) and mesh_ipv4(R) (ip= and mac= are not accepted).
// Options valid for every kind:
//   ip=a.b.c.d         IPv4 address reported in LinkInfo (default: none)
//   mac=xx:xx:xx:xx:xx:xx   MAC address (default: the PMD's)
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "link/link.hpp"
#include "rma/sdk/status.hpp"

namespace rma::roce::port {

enum class PortKind { kMemif, kRing, kAfPacket, kTap, kPci, kMemifMesh, kAfXdp };

const char* port_kind_name(PortKind kind) noexcept;

struct PortSpec {
  PortKind kind = PortKind::kRing;
  std::string name;          // socket name, ring name, interface name or BDF
  bool memif_server = false;
  std::optional<MacAddress> mac;
  std::uint32_t ipv4 = 0;    // host byte order; 0 = none
  // memif
  std::uint32_t memif_rsize = 10;     // log2 of ring slots
  std::uint32_t memif_bsize = 9216;   // bytes per descriptor buffer = max frame (see dpdk_port.cpp)
  std::uint32_t link_wait_ms = 10000; // open_port waits this long for link up
  // memif-mesh; af_packet/af_xdp with mesh= (then `mesh` names the memif
  // sockets, rank and size are the local rank and the ranks on this host)
  std::uint32_t rank = 0, size = 0;
  std::string mesh;
  // af_packet
  std::uint32_t framesz = 8192;
  std::uint32_t blocksz = 16384;
  std::uint32_t framecnt = 256;    // 2 MiB a ring at 8 KiB slots: bench/twohost measured it ahead of 1024 and 4096

  // "memif:server:rma-softroce": kind and name, no options (a mesh adds
  // its rank and size).
  std::string canonical() const;
};

// The list of valid forms, for error messages.
std::string_view spec_grammar() noexcept;

Result<PortSpec> parse_port_spec(std::string_view spec);

// af_packet: DPDK's driver copies each received frame slot (framesz less a
// 32-byte header) into one mbuf of kDataRoom (9216) bytes and refuses a queue
// whose slots do not fit, so framesz is at most 8192 (a power of two). Each
// ring (one rx, one tx) is framecnt * framesz bytes of kernel memory,
// allocated at open: at most kAfPacketMaxRingBytes.
constexpr std::uint32_t kAfPacketMaxFramesz = 8192;
constexpr std::uint64_t kAfPacketMaxRingBytes = 256ull << 20;

// A memif mesh has at most this many ranks (each opens size - 1 memif links).
constexpr std::uint32_t kMaxMeshSize = 64;
// Rank r's addresses in a memif mesh: 02:52:4d:41:<r/256>:<r%256> and
// 10.82.<(r+1)/256>.<(r+1)%256>; both unique per rank, never multicast.
MacAddress mesh_mac(std::uint32_t rank) noexcept;
std::uint32_t mesh_ipv4(std::uint32_t rank) noexcept;  // host byte order
// The abstract socket joining ranks a and b (a != b) of mesh `job`.
std::string mesh_socket(std::string_view job, std::uint32_t a, std::uint32_t b);
// The memif spec that mesh.rank opens to reach rank `peer`. The lower rank
// serves and opens without waiting (wait=0; open_memif_mesh waits for its
// links after connecting its clients); the client waits up to mesh's wait.
// A memif-mesh's member carries the rank's derived addresses; a bridged
// kernel port's member (mesh=) the port's own ip= and mac=.
std::string mesh_member_spec(const PortSpec& mesh, std::uint32_t peer);
// True for a port on a kernel interface that shares it with the ranks of
// its host (af_packet or af_xdp with mesh=).
bool is_bridged(const PortSpec& spec) noexcept;

Result<std::uint32_t> parse_ipv4(std::string_view text);  // host byte order
Result<MacAddress> parse_mac(std::string_view text);

}  // namespace rma::roce::port
