// The "softroce" provider: a software RoCE v2 NIC on a DPDK port
// (RMA_SOFTROCE_PORT), registered in the engine's provider registry.
#include <sys/random.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "link/lossy_link.hpp"
#include "link/mesh_link.hpp"
#include "port/port.hpp"
#include "port/spec.hpp"
#include "provider/job_port.hpp"
#include "provider/softroce_device.hpp"
#include "rc/qp.hpp"
#include "rma/sdk/config.hpp"
#include "rma/sdk/registry.hpp"
#include "wire/wire.hpp"

namespace rma::softroce {
namespace {

constexpr const char* kPortVar = "RMA_SOFTROCE_PORT";
constexpr const char* kMtuVar = "RMA_SOFTROCE_MTU";
constexpr const char* kPcapVar = "RMA_SOFTROCE_PCAP";
constexpr const char* kTimeoutVar = "RMA_SOFTROCE_TIMEOUT";
constexpr const char* kRetryVar = "RMA_SOFTROCE_RETRY_CNT";
constexpr const char* kRnrRetryVar = "RMA_SOFTROCE_RNR_RETRY";
constexpr const char* kProgressVar = "RMA_SOFTROCE_PROGRESS_US";
constexpr const char* kLossVar = "RMA_SOFTROCE_LOSS";
constexpr const char* kArpTimeoutVar = "RMA_SOFTROCE_ARP_TIMEOUT_MS";
constexpr const char* kDeviceName = "softroce0";

Status declare_variables() {
  RMA_RETURN_IF_ERROR(roce::declare_port_variables());
  RMA_RETURN_IF_ERROR(config::declare({kPortVar, roce::default_port_spec(),
                                       "DPDK port of the softroce provider: memif:server:<sock>, "
                                       "memif:client:<sock>, af_packet:<if>, tap:<if>, ring:<name>, "
                                       "pci:<bdf>, memif-mesh:<job>,rank=R,size=N; options ,ip=a.b.c.d "
                                       ",mac=xx:..:xx. Unset under rmarun or a PMIx launcher (mpirun, srun): a memif mesh of the job's ranks "
                                       "on one host; across hosts af_packet on the interface that reaches them, peers by ARP"}));
  RMA_RETURN_IF_ERROR(config::declare({kArpTimeoutVar, "3000",
                                       "softroce: milliseconds a connect waits for the ARP reply that gives a peer's "
                                       "MAC on a kernel interface port (af_packet, af_xdp, tap, pci), asking again after "
                                       "10, 20, 40 .. 500 ms; 0 = no ARP, use the MAC of the peer's endpoint address"}));
  RMA_RETURN_IF_ERROR(config::declare({kProgressVar, "200",
                                       "softroce: a background thread progresses the device after this "
                                       "many microseconds without progress (a target answers while its "
                                       "program computes or waits); 0 = no thread"}));
  RMA_RETURN_IF_ERROR(config::declare({kMtuVar, "0",
                                       "softroce path MTU in bytes (256, 512, 1024, 2048, 4096); "
                                       "0 = the largest the port carries"}));
  RMA_RETURN_IF_ERROR(config::declare({kPcapVar, "",
                                       "softroce: write every frame sent and received to this pcap "
                                       "file (empty = off)"}));
  RMA_RETURN_IF_ERROR(config::declare({kLossVar, "0",
                                       "softroce: drop this fraction (0 .. 0.5) of the RoCE frames the "
                                       "device sends, as a lossy network would (soak runs, watching "
                                       "recovery); counted as link_tx_loss_injected; 0 = off"}));
  RMA_RETURN_IF_ERROR(config::declare({kTimeoutVar, "",
                                       "softroce local ACK timeout code 0..31 (4.096 us * 2^code, 0 = "
                                       "infinite) for QPs that keep the default (14); empty = 14, or 18 when the port "
                                       "was chosen for a job across hosts"}));
  RMA_RETURN_IF_ERROR(config::declare({kRetryVar, "",
                                       "softroce transport retry count 0..7 for QPs that keep the "
                                       "default (7); empty = 7"}));
  RMA_RETURN_IF_ERROR(config::declare({kRnrRetryVar, "",
                                       "softroce RNR retry count 0..7 (7 = infinite) for QPs that keep "
                                       "the default (7); empty = 7"}));
  return {};
}

// An optional timer code from `var`: empty means "not set".
Result<std::optional<std::uint8_t>> configured_code(const char* var, std::uint64_t max) {
  RMA_ASSIGN_OR_RETURN(std::string text, config::get_string(var));
  if (text.empty()) return std::optional<std::uint8_t>{};
  RMA_ASSIGN_OR_RETURN(std::uint64_t v, config::get_size(var));
  if (v > max) {
    return invalid_argument(std::string(var) + "=" + text + ": must be 0.." + std::to_string(max));
  }
  return std::optional<std::uint8_t>{static_cast<std::uint8_t>(v)};
}

// The port: RMA_SOFTROCE_PORT when set, else the job's (job_port.hpp), else
// the default; `where` says which, for messages.
struct ChosenPort {
  std::string spec;
  std::string where;
  std::optional<std::uint8_t> ack_timeout;  // JobPort::ack_timeout
};
Result<ChosenPort> port_spec() {
  const char* set = std::getenv(kPortVar);
  if (set == nullptr || *set == '\0') {
    RMA_ASSIGN_OR_RETURN(std::optional<JobPort> job, job_port());
    if (job) {
      return ChosenPort{job->spec,
                        "softroce: port \"" + job->spec + "\" (" + kPortVar + " is unset; chosen for " + job->why + ")",
                        job->ack_timeout};
    }
  }
  RMA_ASSIGN_OR_RETURN(std::string spec, config::get_string(kPortVar));
  return ChosenPort{spec, "softroce: " + std::string(kPortVar) + "=\"" + spec + "\"", std::nullopt};
}

// RMA_SOFTROCE_LOSS: a fraction in [0, 0.5] (more loss than that is not a
// network anybody runs RDMA over, and go-back-N would crawl).
Result<double> configured_loss() {
  RMA_ASSIGN_OR_RETURN(std::string text, config::get_string(kLossVar));
  if (text.empty()) return 0.0;
  char* end = nullptr;
  errno = 0;
  const double loss = std::strtod(text.c_str(), &end);
  if (errno != 0 || end == text.c_str() || *end != '\0' || !(loss >= 0.0 && loss <= 0.5)) {
    return invalid_argument(std::string(kLossVar) + "=" + text + ": must be a fraction from 0 to 0.5 (0.01 = 1% loss)");
  }
  return loss;
}

Result<std::uint32_t> configured_mtu() {
  RMA_ASSIGN_OR_RETURN(std::uint64_t mtu, config::get_size(kMtuVar));
  if (mtu != 0 && (mtu < 256 || mtu > 4096 || (mtu & (mtu - 1)) != 0)) {
    return invalid_argument(std::string(kMtuVar) + "=" + std::to_string(mtu) +
                            ": must be 0 or one of 256, 512, 1024, 2048, 4096");
  }
  return static_cast<std::uint32_t>(mtu);
}

class SoftRoceProvider final : public Provider {
 public:
  std::string_view name() const noexcept override { return "softroce"; }
  std::string_view description() const noexcept override {
    return "software RoCE v2 NIC on a DPDK port (RMA_SOFTROCE_PORT)";
  }
  int priority() const noexcept override { return 50; }

  Result<std::vector<DeviceInfo>> query_devices() override {
    // Described from the spec: opening a DPDK port (and the EAL) just to
    // list it would be slow and could wait for a memif peer.
    RMA_ASSIGN_OR_RETURN(ChosenPort port, port_spec());
    auto parsed = roce::port::parse_port_spec(port.spec);
    if (!parsed.ok()) return parsed.status().with_context(port.where);
    RMA_ASSIGN_OR_RETURN(std::uint32_t mtu, configured_mtu());
    if (mtu == 0) {
      const bool small = parsed->kind == roce::port::PortKind::kTap ||
                         parsed->kind == roce::port::PortKind::kAfPacket ||
                         parsed->kind == roce::port::PortKind::kAfXdp;
      mtu = small ? largest_path_mtu(1518) : 4096;  // the real value is known once opened
    }
    DeviceInfo d;
    d.name = kDeviceName;
    d.provider = "softroce";
    d.transport = "RoCE v2";
    d.link_layer = "Ethernet";
    if (parsed->ipv4 != 0) d.gid = roce::ipv4_gid(parsed->ipv4);
    if (parsed->mac) d.mac = *parsed->mac;
    d.caps = softroce_caps(mtu, roce::rc::EngineOptions{}.max_qp);
    return std::vector<DeviceInfo>{d};
  }

  Result<std::shared_ptr<Device>> open_device(std::string_view name) override {
    if (!name.empty() && name != kDeviceName) {
      return not_found("softroce provider has no device \"" + std::string(name) +
                       "\"; available: " + kDeviceName);
    }
    RMA_ASSIGN_OR_RETURN(ChosenPort port, port_spec());
    RMA_ASSIGN_OR_RETURN(std::uint32_t mtu, configured_mtu());
    RMA_ASSIGN_OR_RETURN(std::string pcap, config::get_string(kPcapVar));
    RMA_ASSIGN_OR_RETURN(std::uint64_t progress_us, config::get_size(kProgressVar));
    if (progress_us > 1000000) {
      return invalid_argument(std::string(kProgressVar) + "=" + std::to_string(progress_us) +
                              ": must be 0 (off) .. 1000000 microseconds");
    }
    RMA_ASSIGN_OR_RETURN(auto timeout, configured_code(kTimeoutVar, 31));
    if (!timeout) timeout = port.ack_timeout;
    RMA_ASSIGN_OR_RETURN(auto retry_cnt, configured_code(kRetryVar, 7));
    RMA_ASSIGN_OR_RETURN(auto rnr_retry, configured_code(kRnrRetryVar, 7));
    RMA_ASSIGN_OR_RETURN(std::uint64_t arp_timeout_ms, config::get_size(kArpTimeoutVar));
    if (arp_timeout_ms > 600000) {
      return invalid_argument(std::string(kArpTimeoutVar) + "=" + std::to_string(arp_timeout_ms) +
                              ": must be 0 (no ARP) .. 600000 milliseconds");
    }
    const std::string& where = port.where;
    auto parsed = roce::port::parse_port_spec(port.spec);
    if (!parsed.ok()) return parsed.status().with_context(where);
    if (arp_timeout_ms == 0 && roce::port::is_bridged(*parsed)) {
      return invalid_argument(where + ": " + kArpTimeoutVar +
                              "=0 turns ARP off, but this port finds the other ranks of its host by ARP (mesh=): "
                              "set a timeout (the default is 3000)");
    }
    RMA_ASSIGN_OR_RETURN(double loss, configured_loss());
    auto link = roce::open_port(port.spec);
    if (!link.ok()) return link.status().with_context(where);
    std::unique_ptr<roce::Link> port_link = std::move(link).value();
    if (port_link->info().neighbours_by_arp && dynamic_cast<roce::MeshLink*>(port_link.get()) == nullptr) {
      // A kernel interface carries nothing back to its sender: frames to
      // the device's own MAC (the RMA API's rank-to-itself QP) take the
      // mesh's loopback, everything else the interface.
      roce::LinkInfo self = port_link->info();
      auto looped = roce::MeshLink::create(std::move(self), {}, std::move(port_link));
      if (!looped.ok()) return looped.status().with_context(where);
      port_link = std::move(looped).value();
    }
    if (loss > 0.0) {
      std::uint64_t seed = 0;
      if (::getrandom(&seed, sizeof seed, 0) != static_cast<ssize_t>(sizeof seed)) seed = 0;
      port_link = std::make_unique<roce::LossyLink>(std::move(port_link), loss, seed);
    }
    DeviceOptions o;
    o.name = kDeviceName;
    o.path_mtu = mtu;
    o.pcap_path = pcap;
    o.timeout = timeout;
    o.retry_cnt = retry_cnt;
    o.rnr_retry = rnr_retry;
    o.progress_interval_us = static_cast<std::uint32_t>(progress_us);
    o.arp_timeout_ms = static_cast<std::uint32_t>(arp_timeout_ms);
    auto dev = open_softroce_device(std::move(port_link), o);
    if (!dev.ok()) return dev.status().with_context(where);
    return dev;
  }
};

}  // namespace
}  // namespace rma::softroce

namespace rma::providers {

Status register_softroce(ProviderRegistry& registry) {
  RMA_RETURN_IF_ERROR(softroce::declare_variables());
  return registry.add(std::make_unique<softroce::SoftRoceProvider>());
}

}  // namespace rma::providers
