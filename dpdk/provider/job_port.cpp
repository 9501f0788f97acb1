#include "provider/job_port.hpp"

#include <unistd.h>

#include <array>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "rma/sdk/node.hpp"

namespace rma::softroce {
namespace {

std::uint64_t fnv1a(std::string_view text) noexcept {
  std::uint64_t h = 1469598103934665603ull;
  for (const char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

// FNV-1a spreads a difference in the last characters over the low and the
// high bits only: a job's addresses take their bits from this mix of it
// (MurmurHash3's finalizer), so that jobs named alike land far apart.
std::uint64_t job_hash(std::string_view job) noexcept {
  std::uint64_t x = fnv1a(job);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

const char* env_or_null(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

// The first of `vars` that is set, and its name.
const char* first_env(std::initializer_list<const char*> vars, const char** which = nullptr) {
  for (const char* var : vars) {
    if (const char* v = env_or_null(var)) {
      if (which != nullptr) *which = var;
      return v;
    }
  }
  return nullptr;
}

Result<std::uint32_t> env_number(const char* var, const char* text) {
  std::uint32_t v = 0;
  const char* end = text + std::strlen(text);
  auto [p, ec] = std::from_chars(text, end, v);
  if (ec != std::errc() || p != end) {
    return invalid_argument(std::string("softroce: the launcher set ") + var + "=" + text + ", which is not a number");
  }
  return v;
}

constexpr const char* kSetPort =
    "set RMA_SOFTROCE_PORT (memif-mesh:<job>,rank=R,size=N on one host; across hosts "
    "af_packet:<interface>,ip=<an IPv4 of this rank's own>,mac=<a MAC of its own>)";

// The job's size under a PMIx launcher, from what the launcher puts in every
// rank's environment (PMIx itself has no such variable): Open MPI's
// mpirun/prterun, Slurm's srun, or a PMI-style launcher.
const char* pmix_job_size(const char** which = nullptr) {
  return first_env({"OMPI_COMM_WORLD_SIZE", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "PMI_SIZE"}, which);
}

// True when the launcher says the job's ranks are on more than one host.
bool pmix_job_spans_hosts(const char* job_size) {
  if (const char* local = first_env({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})) {
    return std::strcmp(local, job_size) != 0;
  }
  if (const char* nodes = first_env({"SLURM_STEP_NUM_NODES", "SLURM_NNODES"})) return std::strcmp(nodes, "1") != 0;
  return false;
}

// This rank's place among the ranks of its host.
Result<CrossHostRank> local_layout(CrossHostRank r) {
  const char* rank_var = nullptr;
  const char* size_var = nullptr;
  const char* local_rank = first_env({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}, &rank_var);
  const char* local_size = first_env({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}, &size_var);
  std::optional<std::uint32_t> slurm_size;
  if (local_size == nullptr) {
    const char* per_node = first_env({"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"});
    const char* node = env_or_null("SLURM_NODEID");
    if (per_node != nullptr && node != nullptr) {
      RMA_ASSIGN_OR_RETURN(std::uint32_t node_id, env_number("SLURM_NODEID", node));
      slurm_size = slurm_tasks_on_node(per_node, node_id);
    }
  }
  if (local_rank == nullptr || (local_size == nullptr && !slurm_size)) {
    return invalid_argument("softroce: the job's " + std::to_string(r.size) +
                            " ranks are on several hosts, and the launcher does not say which of them share this "
                            "one (OMPI_COMM_WORLD_LOCAL_RANK and _LOCAL_SIZE, MPI_LOCALRANKID and MPI_LOCALNRANKS, "
                            "or SLURM_LOCALID with SLURM_TASKS_PER_NODE and SLURM_NODEID): " + kSetPort);
  }
  RMA_ASSIGN_OR_RETURN(r.local_rank, env_number(rank_var, local_rank));
  if (local_size != nullptr) {
    RMA_ASSIGN_OR_RETURN(r.local_size, env_number(size_var, local_size));
  } else {
    r.local_size = *slurm_size;
  }
  return r;
}

std::string ipv4_text(std::uint32_t ip) {
  char b[20];
  std::snprintf(b, sizeof b, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
  return b;
}

std::string mac_text(const roce::MacAddress& m) {
  char b[24];
  std::snprintf(b, sizeof b, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return b;
}

std::string hostname() {
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) != 0) return {};
  return host.data();
}

}  // namespace

std::string mesh_name(const char* prefix, std::string_view job) {
  char name[48];
  std::snprintf(name, sizeof name, "%s-%016llx", prefix, static_cast<unsigned long long>(fnv1a(job)));
  return name;
}

roce::MacAddress job_rank_mac(std::string_view job, std::uint32_t rank) noexcept {
  const std::uint64_t h = job_hash(job);
  // 0x06: locally administered, unicast; distinct from a memif-mesh's 0x02.
  return {0x06, static_cast<std::uint8_t>(h >> 16), static_cast<std::uint8_t>(h >> 8), static_cast<std::uint8_t>(h),
          static_cast<std::uint8_t>(rank >> 8), static_cast<std::uint8_t>(rank)};
}

std::uint32_t job_rank_ipv4(std::string_view job, std::uint32_t rank) noexcept {
  const std::uint32_t start = static_cast<std::uint32_t>(job_hash(job) >> 24) & 0xFFFFu;
  const std::uint32_t index = (start + rank) % kMaxCrossHostRanks;
  std::uint32_t third = 1 + index / 256;  // 1 .. 253
  if (third >= 169) ++third;              // skip 169.254.169.0/24: 1 .. 168, 170 .. 254
  return (169u << 24) | (254u << 16) | (third << 8) | (index % 256);
}

AfPacketRing af_packet_ring_for_mtu(int mtu) noexcept {
  // Our af_packet port carries frames of up to framesz - 80 bytes (the
  // kernel's slot header), and at most 8192-byte slots.
  const std::uint32_t need = mtu > 0 ? static_cast<std::uint32_t>(mtu) + 14 + 80 : 8192;
  std::uint32_t framesz = 2048;
  while (framesz < need && framesz < 8192) framesz *= 2;
  // 2 MiB per ring (rx and tx each), 256 slots of 8 KiB: bench/twohost
  // measured 256 slots ahead of 1024 and 4096 in bandwidth and latency
  // alike on this project's virtual machines (bench/README.md), and 128
  // beginning to drop frames.
  return AfPacketRing{framesz, 65536, kAfPacketRingBytes / framesz};
}

std::optional<std::uint32_t> slurm_tasks_on_node(std::string_view text, std::uint32_t node) noexcept {
  std::optional<std::uint32_t> found;
  std::uint64_t first = 0;  // the first node of the current group
  // Every group is checked, also after the node's: a malformed value says
  // nothing reliable about any node.
  while (true) {
    const std::size_t comma = text.find(',');
    const std::string_view group = text.substr(0, comma);
    std::uint32_t tasks = 0, repeat = 1;
    const char* p = group.data();
    const char* end = group.data() + group.size();
    auto r = std::from_chars(p, end, tasks);
    if (group.empty() || r.ec != std::errc()) return std::nullopt;
    p = r.ptr;
    if (p != end) {
      if (end - p < 4 || p[0] != '(' || p[1] != 'x' || end[-1] != ')') return std::nullopt;
      auto r2 = std::from_chars(p + 2, end - 1, repeat);
      if (r2.ec != std::errc() || r2.ptr != end - 1 || repeat == 0) return std::nullopt;
    }
    if (!found && node >= first && node - first < repeat) found = tasks;
    first += repeat;
    if (comma == std::string_view::npos) break;
    text = text.substr(comma + 1);
  }
  return found;
}

Result<std::string> cross_host_spec(const CrossHostRank& r, const UplinkInterface& uplink, std::string_view host) {
  if (r.size > kMaxCrossHostRanks) {
    return invalid_argument("softroce: a job across hosts of " + std::to_string(r.size) + " ranks is larger than the " +
                            std::to_string(kMaxCrossHostRanks) + " IPv4 link-local addresses its NICs take: " +
                            kSetPort);
  }
  if (r.rank >= r.size || r.local_size == 0 || r.local_rank >= r.local_size || r.local_size > r.size) {
    return invalid_argument("softroce: the launcher's description of this rank does not add up (rank " +
                            std::to_string(r.rank) + " of " + std::to_string(r.size) + ", local rank " +
                            std::to_string(r.local_rank) + " of " + std::to_string(r.local_size) + ")");
  }
  if (r.local_size > 64) {
    return invalid_argument("softroce: " + std::to_string(r.local_size) +
                            " ranks of the job share this host, and its memif mesh joins at most 64: " + kSetPort);
  }
  const AfPacketRing ring = af_packet_ring_for_mtu(uplink.mtu);
  std::string job_host(r.job);
  job_host += '|';
  job_host += host;
  return "af_packet:" + uplink.name + ",framesz=" + std::to_string(ring.framesz) +
         ",blocksz=" + std::to_string(ring.blocksz) + ",framecnt=" + std::to_string(ring.framecnt) +
         ",ip=" + ipv4_text(job_rank_ipv4(r.job, r.rank)) + ",mac=" + mac_text(job_rank_mac(r.job, r.rank)) +
         ",mesh=" + mesh_name("rma-host", job_host) + ",mesh_rank=" + std::to_string(r.local_rank) +
         ",mesh_size=" + std::to_string(r.local_size);
}

Result<std::optional<JobPort>> job_port() {
  const char* rank = env_or_null("RMA_RANK");
  const char* size = env_or_null("RMA_SIZE");
  const char* job = env_or_null("RMA_BOOTSTRAP_ADDR");
  if (rank != nullptr && size != nullptr && job != nullptr) {
    return std::optional<JobPort>{JobPort{"memif-mesh:" + mesh_name("rma-job", job) + ",rank=" + rank + ",size=" + size,
                                          "rmarun's job of " + std::string(size) + " ranks on this host", std::nullopt}};
  }
  const char* ns = env_or_null("PMIX_NAMESPACE");
  const char* pmix_rank = env_or_null("PMIX_RANK");
  if (ns == nullptr || pmix_rank == nullptr) return std::optional<JobPort>{};
  const char* size_var = nullptr;
  const char* pmix_size = pmix_job_size(&size_var);
  if (pmix_size == nullptr) {
    return invalid_argument(std::string("softroce: started by a PMIx launcher (namespace ") + ns +
                            ") that does not say the job's size (OMPI_COMM_WORLD_SIZE, SLURM_NTASKS or PMI_SIZE): " +
                            kSetPort);
  }
  if (!pmix_job_spans_hosts(pmix_size)) {
    return std::optional<JobPort>{
        JobPort{"memif-mesh:" + mesh_name("rma-pmix", ns) + ",rank=" + pmix_rank + ",size=" + pmix_size,
                "the PMIx job's " + std::string(pmix_size) + " ranks, all on this host", std::nullopt}};
  }
  CrossHostRank r;
  r.job = ns;
  RMA_ASSIGN_OR_RETURN(r.rank, env_number("PMIX_RANK", pmix_rank));
  RMA_ASSIGN_OR_RETURN(r.size, env_number(size_var, pmix_size));
  RMA_ASSIGN_OR_RETURN(r, local_layout(std::move(r)));
  RMA_ASSIGN_OR_RETURN(UplinkInterface uplink, choose_uplink_interface());
  RMA_ASSIGN_OR_RETURN(std::string spec, cross_host_spec(r, uplink, hostname() + "|" + node::host_identity()));
  return std::optional<JobPort>{JobPort{
      std::move(spec),
      "the PMIx job's " + std::to_string(r.size) + " ranks on several hosts (" + std::to_string(r.local_size) +
          " on this one): af_packet on " + uplink.name,
      kCrossHostAckTimeout}};
}

}  // namespace rma::softroce
