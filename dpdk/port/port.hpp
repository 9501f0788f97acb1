// DPDK ports as Links. The only part of librma that includes rte_* headers is
// this folder's .cpp files; this header stays DPDK-free.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "link/link.hpp"
#include "rma/sdk/status.hpp"

namespace rma::roce {

// Initialises the DPDK EAL once per process (DPDK cannot do it twice), with
// the arguments from RMA_SOFTROCE_EAL_ARGS or the defaults (no hugepages, no
// PCI, no shared config; hugepages when enough are free). Later calls return
// the first call's outcome.
Status ensure_eal();

// Declares the port layer's RMA_* variables (RMA_SOFTROCE_EAL_ARGS) so that
// rma_info lists them before any port is opened.
Status declare_port_variables();

// Opens a port described by `spec`:
//   memif:server:<socket-name>[,<options>]   memif:client:<socket-name>
//   af_packet:<ifname>    tap:<ifname>    ring:<name>   (ring: in-process pair by name)
//   pci:<bdf>
// An optional ",ip=a.b.c.d" sets the IPv4 address; ",mac=xx:..." the MAC.
Result<std::unique_ptr<Link>> open_port(std::string_view spec);

// The spec the softroce provider opens when RMA_SOFTROCE_PORT is unset.
std::string default_port_spec();
}  // namespace rma::roce
