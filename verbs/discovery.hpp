// Device and port discovery: which port and GID a device is used through,
// and the capabilities the contract reports, read with ibv_query_device_ex,
// ibv_query_port and ibv_query_gid_table.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/status.hpp"
#include "verbs/gid_selection.hpp"
#include "verbs/verbs_objects.hpp"

namespace rma::verbs {

inline constexpr const char* kProviderName = "verbs";
inline constexpr const char* kGidIndexVar = "RMA_GID_INDEX";
inline constexpr const char* kIpVar = "RMA_VERBS_IP";
inline constexpr const char* kPortVar = "RMA_VERBS_PORT";
inline constexpr const char* kOdpVar = "RMA_VERBS_ODP";

// The most SGEs one work request may carry through this provider: post()
// converts requests on the stack, so the bound keeps that allocation-free.
inline constexpr std::uint32_t kMaxSgePerWr = 32;

Status declare_variables();

struct VerbsOptions {
  std::optional<std::uint32_t> gid_index;  // RMA_GID_INDEX
  std::optional<std::uint32_t> ipv4;       // RMA_VERBS_IP, host byte order
  std::uint32_t port = 0;                  // RMA_VERBS_PORT; 0 = first active port
  bool odp = false;                        // RMA_VERBS_ODP
};
Result<VerbsOptions> read_options();

// What open_device() learns about a device besides its DeviceInfo.
struct PortSetup {
  std::uint8_t port = 1;
  bool ethernet = true;
  std::uint16_t lid = 0;
  int active_mtu = IBV_MTU_1024;        // enum ibv_mtu
  GidEntry gid;                          // the source GID of every QP
  std::uint32_t max_qp_init_rd_atom = 0; // READs/atomics a QP may initiate
  std::uint32_t max_qp_rd_atom = 0;      // ... and answer as responder
  bool odp_rc = false;                   // on-demand paging for RC send/recv/write/read/atomic
};

// The GID table of one port (valid entries only).
Result<std::vector<GidEntry>> read_gid_table(ibv_context* ctx, std::uint8_t port, std::uint32_t table_len);

// Describes an open device: capabilities, chosen port and GID. Fails with a
// message naming the device when the port or GID cannot be used.
Result<DeviceInfo> describe_device(ibv_context* ctx, const VerbsOptions& options, PortSetup* setup);

// The devices libibverbs lists; empty (not an error) when the machine has no
// RDMA device or no kernel support.
DeviceList list_devices(int* count);

}  // namespace rma::verbs
