// The port a softroce device opens when RMA_SOFTROCE_PORT is unset, taken
// from the job the process belongs to, as its launcher describes it in the
// rank's environment:
//   - rmarun (RMA_RANK, RMA_SIZE, RMA_BOOTSTRAP_ADDR): every rank is on this
//     host: a memif mesh of the job's ranks, named after the job's
//     bootstrap socket;
//   - a PMIx launcher (PMIX_NAMESPACE, PMIX_RANK and a job size: Open MPI's
//     mpirun/prterun, srun --mpi=pmix) whose ranks are all on this host: a
//     memif mesh named after the PMIx namespace;
//   - a PMIx launcher whose ranks are on several hosts (the launcher's
//     local size is smaller than the job, or Slurm spans several nodes):
//     af_packet on the interface that reaches the other hosts
//     (uplink_interface.hpp), shared by the ranks of this host, each its
//     own NIC with its own MAC and IPv4 (job_rank_mac, job_rank_ipv4), with
//     a memif link to every other rank of this host (mesh=), peers found by
//     ARP. af_xdp is never chosen by itself: its XDP program would take
//     every frame of the interface from the host (the launcher's own TCP
//     among them) and it binds one rank per interface queue.
//   - anything else: no job; the provider's default port.
// No DPDK; reads the environment, the interfaces and the hostname.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "provider/uplink_interface.hpp"
#include "rma/sdk/status.hpp"
#include "wire/frame.hpp"

namespace rma::softroce {

struct JobPort {
  std::string spec;  // a port spec for open_port
  std::string why;   // what chose it, for messages ("PMIx job of 4 ranks on 2 hosts: ...")
  // The local ACK timeout code for QPs that keep the contract's default,
  // unless RMA_SOFTROCE_TIMEOUT says otherwise; nullopt: the provider's (14).
  // A job across hosts takes kCrossHostAckTimeout.
  std::optional<std::uint8_t> ack_timeout;
};

// 18: 1.07 s per attempt, about 8.6 s without an answer before a QP fails
// with RETRY_EXC_ERR (14 gives 67 ms and 0.5 s). The peers of a job across
// hosts are processes that an oversubscribed node (ranks on every core,
// their progress threads, the launcher's daemons) deschedules for hundreds
// of milliseconds, as MPI libraries assume when they default to a second or
// more (Open MPI's openib 4 s, UCX 1 s); what it costs is a slower recovery
// from a lost last packet of a burst (one timeout), which the memif mesh of
// a job on one host does not lose.
constexpr std::uint8_t kCrossHostAckTimeout = 18;

// The job's port, or nullopt when the process belongs to no launcher's job.
// An error when the launcher's description is incomplete or the port
// cannot be chosen (it names RMA_SOFTROCE_PORT).
Result<std::optional<JobPort>> job_port();

// One rank of a job across hosts, as the launcher describes it.
struct CrossHostRank {
  std::string job;                 // PMIx namespace
  std::uint32_t rank = 0, size = 0;
  std::uint32_t local_rank = 0, local_size = 0;  // among the ranks on this host
};

// The af_packet spec of `r` on `uplink`: ring options sized for the
// interface's MTU, the rank's addresses and its host's memif mesh, named
// after the job and `host` (what tells this host's ranks from another's
// sharing its network namespace).
Result<std::string> cross_host_spec(const CrossHostRank& r, const UplinkInterface& uplink, std::string_view host);

// A rank's addresses in a job across hosts. MAC: locally administered
// unicast 06:<24 bits of the job's hash>:<rank, 16 bits>. IPv4: IPv4
// link-local (RFC 3927, 169.254.1.0 .. 169.254.254.255 without
// 169.254.169.0/24, where clouds put their metadata service), the job's
// hash plus the rank: distinct for every rank of a job of up to
// kMaxCrossHostRanks ranks; another job on the same segment overlaps with
// a chance of about (its ranks + ours) / 64768, which the devices detect
// and count (arp_address_conflicts).
constexpr std::uint32_t kMaxCrossHostRanks = 253 * 256;
roce::MacAddress job_rank_mac(std::string_view job, std::uint32_t rank) noexcept;
std::uint32_t job_rank_ipv4(std::string_view job, std::uint32_t rank) noexcept;  // host byte order

// af_packet ring options for an interface of `mtu`: frames of the MTU (and
// at most 8192, what our port carries), kAfPacketRingBytes per ring.
inline constexpr std::uint32_t kAfPacketRingBytes = 2u << 20;
struct AfPacketRing {
  std::uint32_t framesz = 0, blocksz = 0, framecnt = 0;
};
AfPacketRing af_packet_ring_for_mtu(int mtu) noexcept;

// Slurm's SLURM_STEP_TASKS_PER_NODE / SLURM_TASKS_PER_NODE ("2(x3),1": two
// tasks on each of nodes 0..2, one on node 3): the tasks of node `node`;
// nullopt when malformed or too short.
std::optional<std::uint32_t> slurm_tasks_on_node(std::string_view tasks_per_node, std::uint32_t node) noexcept;

// A memif mesh's name for a job: FNV-1a of what identifies the job, so that
// concurrent jobs on one machine never meet.
std::string mesh_name(const char* prefix, std::string_view job);

}  // namespace rma::softroce
