// Memory regions of the shm provider: the device's swkit key table (local
// checks, this process's target-side checks) and the shared region table
// (a peer's requester-side checks) are updated together under the device's
// key lock, so a deregistered key names nothing on either side.
#pragma once

#include <cstddef>
#include <memory>

#include "rma/sdk/provider.hpp"
#include "shm/device.hpp"
#include "swkit/orphan_tracker.hpp"

namespace rma::shm {

class MrImpl final : public MemoryRegion {
 public:
  static Result<std::unique_ptr<MemoryRegion>> create(std::shared_ptr<PdImpl> pd, void* addr, std::size_t length,
                                                      Access access);
  ~MrImpl() override;

 private:
  MrImpl(std::shared_ptr<PdImpl> pd, std::unique_ptr<swkit::RegionWatch> watch, std::uint64_t addr,
         std::uint64_t length, std::uint32_t lkey, std::uint32_t rkey, Access access) noexcept
      : MemoryRegion(addr, length, lkey, rkey, access), pd_(std::move(pd)), watch_(std::move(watch)) {}

  std::shared_ptr<PdImpl> pd_;  // keeps the PD (and device) alive
  // Destroyed after the destructor body, outside the key lock (the
  // memory monitor must never wait for it).
  std::unique_ptr<swkit::RegionWatch> watch_;
};

}  // namespace rma::shm
