// Connection establishment through rdma_cm for the verbs provider: the one
// thing of libibverbs/librdmacm the provider contract has no place for,
// because it replaces the EndpointAddress exchange with the CM's own
// (IP address and port, REQ/REP/RTU). Available when librma was built with
// the verbs provider (libibverbs-dev and librdmacm-dev present).
//
// The QPs it returns are ordinary rma::QueuePair objects of the PD's device,
// already in RTS; connect() on them is refused. The PD must come from the
// "verbs" provider and from the device that carries the address: rdma_cm
// picks the device by route, and a mismatch is an error naming both.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/status.hpp"

// librma is built with hidden visibility: what this header declares is
// part of its exported interface.
#pragma GCC visibility push(default)

namespace rma::verbs {

class CmListener {
 public:
  virtual ~CmListener() = default;
  // The port it listens on (the one chosen when 0 was asked for).
  virtual std::uint16_t port() const noexcept = 0;
  // Waits up to `timeout` for one connection request, creates a QP for it
  // from `pd` and `config`, accepts, and returns the QP once established.
  // kTimeout when no request arrived in time.
  virtual Result<std::unique_ptr<QueuePair>> accept(const std::shared_ptr<ProtectionDomain>& pd,
                                                    const QpConfig& config,
                                                    std::chrono::milliseconds timeout) = 0;
};

// Listens on `ip` ("10.0.2.15"; IPv4) and `port` (0 = any free port).
Result<std::unique_ptr<CmListener>> cm_listen(const std::string& ip, std::uint16_t port);

// Connects to a listener at ip:port: address and route resolution, REQ,
// REP, RTU. Each step waits at most `timeout`; a refused or unreachable
// peer is an error naming it.
Result<std::unique_ptr<QueuePair>> cm_connect(const std::shared_ptr<ProtectionDomain>& pd,
                                              const QpConfig& config, const std::string& ip,
                                              std::uint16_t port, std::chrono::milliseconds timeout);

// The fields of a verbs QP's EndpointAddress, for programs that exchange QP
// parameters in another format (perftest's key exchange, for one).
struct QpEndpoint {
  bool ethernet = true;                 // RoCE (routed by GID) or InfiniBand (LID)
  std::uint32_t qpn = 0;
  std::uint32_t psn = 0;                // the first PSN the QP sends; its peer expects it
  std::array<std::uint8_t, 16> gid{};   // RoCE v2: the IPv4-mapped IPv6 address
  std::uint16_t lid = 0;
  std::uint32_t mtu = 0;                // path MTU in bytes, 256..4096
  std::uint8_t max_rd_atomic = 0;       // READs/atomics the QP keeps outstanding
};
// Reads a verbs provider's address; an error names what is wrong with it.
Result<QpEndpoint> describe_endpoint(const EndpointAddress& address);
// Builds the address connect() takes; every field is checked as when decoding.
Result<EndpointAddress> make_endpoint(const QpEndpoint& endpoint);

}  // namespace rma::verbs

#pragma GCC visibility pop
