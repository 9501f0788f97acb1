// Scatter/gather lists of a software provider: the protection checks a NIC
// makes before it touches memory (after rxe's copy_data and check_rkey) and
// the copies between SGE lists and contiguous bytes.
//
// Checks return a VendorErr (vendor_err.hpp): kVeNone or the first check
// that failed, in the order rxe makes them, so every provider reports the
// same failure the same way. Bounds are computed without sums that could
// wrap: an SGE or remote range near 2^64 fails instead of passing.
// Data path: no allocation, noexcept. The caller holds the lock that guards
// the key table, so no region can go between check and copy.
#pragma once

#include <cstdint>
#include <span>

#include "rma/sdk/provider.hpp"
#include "swkit/key_table.hpp"

namespace rma::swkit {

// Total bytes of an SGE list (each SGE is at most 2^32-1, lists are short:
// no overflow).
inline std::uint64_t sgl_bytes(std::span<const Sge> sgl) noexcept {
  std::uint64_t n = 0;
  for (const Sge& sge : sgl) n += sge.length;
  return n;
}

// The SGEs that carry the first `bytes` bytes each lie inside a live region
// of `pd` with the `needed` rights. Zero-length SGEs are not looked at
// (IBA: they carry no valid key).
std::uint32_t check_local_sgl(const KeyTable& keys, const void* pd, std::span<const Sge> sgl,
                              std::uint64_t bytes, Access needed) noexcept;

// Responder side: `rkey` names a live region of `pd` that grants `right`
// over [addr, addr+len).
std::uint32_t check_remote(const KeyTable& keys, const void* pd, std::uint32_t rkey, std::uint64_t addr,
                           std::uint64_t len, Access right) noexcept;

// The `len` bytes at `offset` into an SGE list when they lie within one SGE
// (then they can be sent from there without a copy), else nullptr.
const std::uint8_t* sgl_contiguous(std::span<const Sge> sgl, std::uint64_t offset, std::uint64_t len) noexcept;

// Copies between an SGE list (from `offset` bytes into it) and contiguous
// memory. The caller checked that the list holds offset+len bytes.
void copy_to_sgl(std::span<const Sge> sgl, std::uint64_t offset, const std::uint8_t* src,
                 std::uint64_t len) noexcept;
void copy_from_sgl(std::span<const Sge> sgl, std::uint64_t offset, std::uint8_t* dst,
                   std::uint64_t len) noexcept;

// Copies `len` bytes from the gather list `src` into the scatter list `dst`,
// both holding at least `len` bytes (checked by the caller). memmove: in
// loopback the two may overlap.
void copy_sgl(std::span<const Sge> dst, std::span<const Sge> src, std::uint64_t len) noexcept;

}  // namespace rma::swkit
