// Memory regions of the self provider: validation of a registration, and the
// RAII link between a MemoryRegion handle and its entry in the fabric's key
// table (destroying the handle invalidates both keys at once).
#pragma once

#include <cstddef>
#include <memory>

#include "rma/sdk/provider.hpp"
#include "self/device.hpp"
#include "swkit/orphan_tracker.hpp"

namespace rma::self {

class MrImpl final : public MemoryRegion {
 public:
  static Result<std::unique_ptr<MemoryRegion>> create(std::shared_ptr<PdImpl> pd, void* addr,
                                                      std::size_t length, Access access);
  ~MrImpl() override;

 private:
  MrImpl(std::shared_ptr<PdImpl> pd, std::unique_ptr<swkit::OrphanWatch> watch, std::uint64_t addr,
         std::uint64_t length, std::uint32_t lkey, std::uint32_t rkey, Access access) noexcept
      : MemoryRegion(addr, length, lkey, rkey, access), pd_(std::move(pd)), watch_(std::move(watch)) {}

  std::shared_ptr<PdImpl> pd_;  // keeps the PD (and device) alive
  std::unique_ptr<swkit::OrphanWatch> watch_;
};

}  // namespace rma::self
