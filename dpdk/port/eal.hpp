// Private to dpdk/port: EAL state.
#pragma once

namespace rma::roce::port {
// True once ensure_eal() succeeded in this process.
bool eal_ready() noexcept;
}  // namespace rma::roce::port
