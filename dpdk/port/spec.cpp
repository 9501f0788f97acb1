#include "port/spec.hpp"

#include <cctype>
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <vector>

namespace rma::roce::port {
namespace {

constexpr std::string_view kGrammar =
    "valid port specs: memif:server:<socket>[,rsize=N][,bsize=N][,wait=MS] | "
    "memif:client:<socket>[,...same] | ring:<name> | "
    "af_packet:<ifname>[,framesz=N][,blocksz=N][,framecnt=N] | af_xdp:<ifname> | tap:<ifname> | "
    "(af_packet and af_xdp also: ,mesh=<job>,mesh_rank=R,mesh_size=N with ip= and mac=) | "
    "pci:<domain:bus:dev.fn> | memif-mesh:<job>,rank=R,size=N[,rsize=N][,bsize=N][,wait=MS] ; "
    "every kind but memif-mesh also takes ,ip=a.b.c.d and ,mac=xx:xx:xx:xx:xx:xx";

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    std::size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

Result<std::uint32_t> parse_u32(std::string_view key, std::string_view text, std::uint32_t lo,
                                std::uint32_t hi) {
  std::uint32_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size() || v < lo || v > hi) {
    return invalid_argument("option " + std::string(key) + "='" + std::string(text) +
                            "' must be an integer in [" + std::to_string(lo) + ", " +
                            std::to_string(hi) + "]");
  }
  return v;
}

bool valid_name_char(char c, PortKind kind) {
  if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.') return true;
  if (kind == PortKind::kPci && c == ':') return true;
  if ((kind == PortKind::kMemif || kind == PortKind::kMemifMesh) && c == '/') return true;
  return false;
}

bool valid_bdf(std::string_view s) {
  // [dddd:]bb:dd.f, hex digits
  auto hex = [](std::string_view t, std::size_t n) {
    if (t.size() != n) return false;
    for (char c : t)
      if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
    return true;
  };
  auto parts = split(s, ':');
  if (parts.size() == 3) {
    if (!hex(parts[0], 4)) return false;
    parts.erase(parts.begin());
  }
  if (parts.size() != 2 || !hex(parts[0], 2)) return false;
  auto df = split(parts[1], '.');
  if (df.size() != 2 || !hex(df[0], 2) || df[1].size() != 1 || df[1][0] < '0' || df[1][0] > '7')
    return false;
  return true;
}

}  // namespace

const char* port_kind_name(PortKind kind) noexcept {
  switch (kind) {
    case PortKind::kMemif: return "memif";
    case PortKind::kRing: return "ring";
    case PortKind::kAfPacket: return "af_packet";
    case PortKind::kTap: return "tap";
    case PortKind::kPci: return "pci";
    case PortKind::kMemifMesh: return "memif-mesh";
    case PortKind::kAfXdp: return "af_xdp";
  }
  return "?";
}

std::string_view spec_grammar() noexcept { return kGrammar; }

std::string PortSpec::canonical() const {
  std::string s = port_kind_name(kind);
  s += ':';
  if (kind == PortKind::kMemif) s += memif_server ? "server:" : "client:";
  s += name;
  if (kind == PortKind::kMemifMesh) s += ",rank=" + std::to_string(rank) + ",size=" + std::to_string(size);
  if (!mesh.empty()) {
    s += ",mesh=" + mesh + ",mesh_rank=" + std::to_string(rank) + ",mesh_size=" + std::to_string(size);
  }
  return s;
}

Result<std::uint32_t> parse_ipv4(std::string_view text) {
  auto parts = split(text, '.');
  std::uint32_t ip = 0;
  bool ok = parts.size() == 4;
  for (std::size_t i = 0; ok && i < 4; ++i) {
    unsigned v = 0;
    auto [p, ec] = std::from_chars(parts[i].data(), parts[i].data() + parts[i].size(), v);
    ok = !parts[i].empty() && parts[i].size() <= 3 && ec == std::errc() &&
         p == parts[i].data() + parts[i].size() && v <= 255;
    ip = (ip << 8) | v;
  }
  if (!ok) return invalid_argument("'" + std::string(text) + "' is not an IPv4 address (a.b.c.d)");
  return ip;
}

Result<MacAddress> parse_mac(std::string_view text) {
  auto parts = split(text, ':');
  MacAddress mac{};
  bool ok = parts.size() == 6;
  for (std::size_t i = 0; ok && i < 6; ++i) {
    unsigned v = 0;
    auto [p, ec] = std::from_chars(parts[i].data(), parts[i].data() + parts[i].size(), v, 16);
    ok = parts[i].size() == 2 && ec == std::errc() && p == parts[i].data() + 2;
    mac[i] = static_cast<std::uint8_t>(v);
  }
  if (!ok) {
    return invalid_argument("'" + std::string(text) +
                            "' is not a MAC address (six hex pairs: 02:00:00:00:00:01)");
  }
  if (mac[0] & 1) return invalid_argument("MAC " + std::string(text) + " is a multicast address");
  return mac;
}

Result<PortSpec> parse_port_spec(std::string_view spec) {
  const std::string quoted = "port spec '" + std::string(spec) + "': ";
  auto fields = split(spec, ',');
  std::string_view head = fields[0];
  PortSpec out;
  std::size_t colon = head.find(':');
  if (colon == std::string_view::npos) {
    return invalid_argument(quoted + "no kind (expected <kind>:<name>); " + std::string(kGrammar));
  }
  std::string_view kind = head.substr(0, colon);
  std::string_view rest = head.substr(colon + 1);
  if (kind == "memif") {
    out.kind = PortKind::kMemif;
    std::size_t c2 = rest.find(':');
    std::string_view role = c2 == std::string_view::npos ? rest : rest.substr(0, c2);
    if (role == "server") out.memif_server = true;
    else if (role == "client") out.memif_server = false;
    else return invalid_argument(quoted + "memif needs a role, 'server' or 'client' (memif:server:<socket>); " + std::string(kGrammar));
    rest = c2 == std::string_view::npos ? std::string_view() : rest.substr(c2 + 1);
  } else if (kind == "ring") {
    out.kind = PortKind::kRing;
  } else if (kind == "af_packet") {
    out.kind = PortKind::kAfPacket;
  } else if (kind == "af_xdp") {
    out.kind = PortKind::kAfXdp;
  } else if (kind == "tap") {
    out.kind = PortKind::kTap;
  } else if (kind == "pci") {
    out.kind = PortKind::kPci;
  } else if (kind == "memif-mesh") {
    out.kind = PortKind::kMemifMesh;
    out.memif_rsize = 9;     // size - 1 links per process: smaller rings
    out.link_wait_ms = 30000;  // ranks start in any order, at any pace
  } else {
    return invalid_argument(quoted + "unknown kind '" + std::string(kind) + "'; " + std::string(kGrammar));
  }
  if (rest.empty()) {
    return invalid_argument(quoted + "missing name after '" + std::string(head) + "'; " + std::string(kGrammar));
  }
  std::size_t max_len = 64;
  if (out.kind == PortKind::kAfPacket || out.kind == PortKind::kAfXdp || out.kind == PortKind::kTap) {
    max_len = 15;  // IFNAMSIZ - 1
  }
  if (out.kind == PortKind::kMemif) max_len = 100;                                   // sun_path
  if (out.kind == PortKind::kMemifMesh) max_len = 80;  // + ".<rank>.<rank>" per link
  if (rest.size() > max_len) {
    return invalid_argument(quoted + "name '" + std::string(rest) + "' is longer than " +
                            std::to_string(max_len) + " characters");
  }
  for (char c : rest) {
    if (!valid_name_char(c, out.kind)) {
      return invalid_argument(quoted + "name '" + std::string(rest) +
                              "' may contain only letters, digits, '_', '-', '.'" +
                              (out.kind == PortKind::kPci ? " and ':'" : "") +
                              (out.kind == PortKind::kMemif ? " and '/'" : ""));
    }
  }
  if (out.kind == PortKind::kPci && !valid_bdf(rest)) {
    return invalid_argument(quoted + "'" + std::string(rest) +
                            "' is not a PCI address (dddd:bb:dd.f or bb:dd.f, hex)");
  }
  out.name = std::string(rest);

  bool have_rank = false, have_mesh_rank = false;
  for (std::size_t i = 1; i < fields.size(); ++i) {
    std::string_view opt = fields[i];
    std::size_t eq = opt.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return invalid_argument(quoted + "option '" + std::string(opt) + "' is not key=value; " + std::string(kGrammar));
    }
    std::string_view key = opt.substr(0, eq), val = opt.substr(eq + 1);
    auto bad = [&](const Status& s) { return s.with_context(quoted.substr(0, quoted.size() - 2)); };
    const bool memif_like = out.kind == PortKind::kMemif || out.kind == PortKind::kMemifMesh;
    if (out.kind == PortKind::kMemifMesh && (key == "ip" || key == "mac")) {
      return invalid_argument(quoted + "memif-mesh derives each rank's " + std::string(key) +
                              " from its rank; '" + std::string(key) + "=' is not accepted");
    }
    if (out.kind == PortKind::kMemifMesh && key == "rank") {
      auto r = parse_u32(key, val, 0, kMaxMeshSize - 1);
      if (!r.ok()) return bad(r.status());
      out.rank = *r;
      have_rank = true;
      continue;
    }
    if (out.kind == PortKind::kMemifMesh && key == "size") {
      auto r = parse_u32(key, val, 1, kMaxMeshSize);
      if (!r.ok()) return bad(r.status());
      out.size = *r;
      continue;
    }
    const bool kernel_shared = out.kind == PortKind::kAfPacket || out.kind == PortKind::kAfXdp;
    if (kernel_shared && key == "mesh") {
      if (val.empty() || val.size() > 80) {
        return invalid_argument(quoted + "option mesh='" + std::string(val) + "' must name the job in 1..80 characters");
      }
      for (char c : val) {
        if (!valid_name_char(c, PortKind::kMemifMesh)) {
          return invalid_argument(quoted + "option mesh='" + std::string(val) +
                                  "' may contain only letters, digits, '_', '-', '.' and '/'");
        }
      }
      out.mesh = std::string(val);
      continue;
    }
    if (kernel_shared && key == "mesh_rank") {
      auto r = parse_u32(key, val, 0, kMaxMeshSize - 1);
      if (!r.ok()) return bad(r.status());
      out.rank = *r;
      have_mesh_rank = true;
      continue;
    }
    if (kernel_shared && key == "mesh_size") {
      auto r = parse_u32(key, val, 1, kMaxMeshSize);
      if (!r.ok()) return bad(r.status());
      out.size = *r;
      continue;
    }
    if (key == "ip") {
      auto r = parse_ipv4(val);
      if (!r.ok()) return bad(r.status());
      out.ipv4 = *r;
      continue;
    }
    if (key == "mac") {
      auto r = parse_mac(val);
      if (!r.ok()) return bad(r.status());
      out.mac = *r;
      continue;
    }
    Result<std::uint32_t> r = invalid_argument("");
    std::uint32_t* dst = nullptr;
    if (memif_like && key == "rsize") {
      r = parse_u32(key, val, 1, 14);
      dst = &out.memif_rsize;
    } else if (memif_like && key == "bsize") {
      r = parse_u32(key, val, 128, 65535);
      dst = &out.memif_bsize;
    } else if (memif_like && key == "wait") {
      r = parse_u32(key, val, 0, 3600000);
      dst = &out.link_wait_ms;
    } else if (out.kind == PortKind::kAfPacket && key == "framesz") {
      r = parse_u32(key, val, 2048, 65536);
      dst = &out.framesz;
    } else if (out.kind == PortKind::kAfPacket && key == "blocksz") {
      r = parse_u32(key, val, 4096, 1u << 24);
      dst = &out.blocksz;
    } else if (out.kind == PortKind::kAfPacket && key == "framecnt") {
      r = parse_u32(key, val, 16, 1u << 20);
      dst = &out.framecnt;
    } else {
      return invalid_argument(quoted + "unknown option '" + std::string(key) + "' for " +
                              port_kind_name(out.kind) + "; " + std::string(kGrammar));
    }
    if (!r.ok()) return bad(r.status());
    *dst = *r;
  }
  if (out.kind == PortKind::kMemifMesh) {
    if (!have_rank || out.size == 0) {
      return invalid_argument(quoted + "memif-mesh needs rank=R and size=N (rank 0..N-1, N 1.." +
                              std::to_string(kMaxMeshSize) + ")");
    }
    if (out.rank >= out.size) {
      return invalid_argument(quoted + "rank " + std::to_string(out.rank) + " is not below size " +
                              std::to_string(out.size));
    }
    out.mac = mesh_mac(out.rank);
    out.ipv4 = mesh_ipv4(out.rank);
  }
  if (out.kind == PortKind::kAfPacket || out.kind == PortKind::kAfXdp) {
    const bool any_mesh = !out.mesh.empty() || have_mesh_rank || out.size != 0;
    if (any_mesh && (out.mesh.empty() || !have_mesh_rank || out.size == 0)) {
      return invalid_argument(quoted + "mesh=<job>, mesh_rank=R and mesh_size=N go together (the ranks of this host, R "
                              "below N, N 1.." + std::to_string(kMaxMeshSize) + ")");
    }
    if (any_mesh && out.rank >= out.size) {
      return invalid_argument(quoted + "mesh_rank " + std::to_string(out.rank) + " is not below mesh_size " +
                              std::to_string(out.size));
    }
    if (any_mesh && (!out.mac || out.ipv4 == 0)) {
      return invalid_argument(quoted + "mesh= needs this rank's own ip= and mac=: every rank sharing the interface is "
                              "a NIC of its own, told apart by its addresses");
    }
    if (any_mesh) {
      out.memif_rsize = 9;       // as a memif-mesh: size - 1 links per process
      out.link_wait_ms = 30000;  // the other ranks of this host start in any order
    }
  }
  if (out.kind == PortKind::kAfPacket) {
    if (out.blocksz % 4096 != 0 || out.blocksz < out.framesz || out.blocksz % out.framesz != 0 ||
        (out.framesz & (out.framesz - 1)) != 0) {
      return invalid_argument(quoted + "af_packet needs framesz a power of two and blocksz a multiple of 4096 and of framesz (framesz=" +
                              std::to_string(out.framesz) + ", blocksz=" + std::to_string(out.blocksz) + ")");
    }
    if ((static_cast<std::uint64_t>(out.framecnt) * out.framesz) % out.blocksz != 0) {
      return invalid_argument(quoted + "af_packet framecnt*framesz must be a multiple of blocksz");
    }
    if (out.framesz > kAfPacketMaxFramesz) {
      return invalid_argument(quoted + "option framesz=" + std::to_string(out.framesz) + " is larger than " +
                              std::to_string(kAfPacketMaxFramesz) +
                              ": DPDK's af_packet driver copies each frame slot into one 9216-byte buffer and "
                              "refuses larger slots");
    }
    const std::uint64_t ring = static_cast<std::uint64_t>(out.framecnt) * out.framesz;
    if (ring > kAfPacketMaxRingBytes) {
      return invalid_argument(quoted + "options framecnt=" + std::to_string(out.framecnt) + " and framesz=" +
                              std::to_string(out.framesz) + " make a ring of " + std::to_string(ring >> 20) +
                              " MiB, more than " + std::to_string(kAfPacketMaxRingBytes >> 20) +
                              " MiB: the kernel allocates the rx and the tx ring at open");
    }
  }
  return out;
}

MacAddress mesh_mac(std::uint32_t rank) noexcept {
  // Locally administered unicast, "RMA" in the middle.
  return {0x02, 0x52, 0x4d, 0x41, static_cast<std::uint8_t>(rank >> 8), static_cast<std::uint8_t>(rank)};
}

std::uint32_t mesh_ipv4(std::uint32_t rank) noexcept { return (10u << 24) | (82u << 16) | ((rank + 1) & 0xffffu); }

std::string mesh_socket(std::string_view job, std::uint32_t a, std::uint32_t b) {
  return std::string(job) + "." + std::to_string(std::min(a, b)) + "." + std::to_string(std::max(a, b));
}

bool is_bridged(const PortSpec& spec) noexcept {
  return (spec.kind == PortKind::kAfPacket || spec.kind == PortKind::kAfXdp) && !spec.mesh.empty();
}

std::string mesh_member_spec(const PortSpec& mesh, std::uint32_t peer) {
  const bool bridged = is_bridged(mesh);
  const MacAddress m = bridged ? *mesh.mac : mesh_mac(mesh.rank);
  char mac[24];
  std::snprintf(mac, sizeof mac, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  const std::uint32_t ip = bridged ? mesh.ipv4 : mesh_ipv4(mesh.rank);
  const std::string& job = bridged ? mesh.mesh : mesh.name;
  return std::string("memif:") + (mesh.rank < peer ? "server:" : "client:") + mesh_socket(job, mesh.rank, peer) +
         ",rsize=" + std::to_string(mesh.memif_rsize) + ",bsize=" + std::to_string(mesh.memif_bsize) +
         ",wait=" + std::to_string(mesh.rank < peer ? 0 : mesh.link_wait_ms) + ",mac=" + mac + ",ip=" + std::to_string(ip >> 24) + "." +
         std::to_string((ip >> 16) & 255) + "." + std::to_string((ip >> 8) & 255) + "." + std::to_string(ip & 255);
}

}  // namespace rma::roce::port
