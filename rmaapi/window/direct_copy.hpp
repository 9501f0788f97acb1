// The copy of the load/store path (window/direct.hpp, shmem/runtime.hpp):
// bytes between this rank's memory and a peer's mapping.
//
// Why not always memcpy: glibc copies more than about 2 KiB with
// `rep movsb`, which on this machine's CPUs runs 3-4x slower when the
// destination lies a little past the source modulo 4 KiB (each load then
// seems to depend on a store just made: "4K aliasing") — the usual case
// for a get into a malloc'd buffer (16 bytes past a page) from a
// page-aligned window. (Large SHMEM heap blocks avoid it by where they
// start: placement() in shmem/c_setup.cpp.) Measured between two ranks (shmem_getmem of 4 KiB,
// rmarun -n 2): 0.17-0.24 us with memcpy against 0.055 us with 64-byte
// unaligned moves (oshmem over UCX: 0.068 us); 8 KiB 0.2 against 0.11 us.
// From 16 KiB on the two were alike within this machine's noise, and with
// the destination behind the source (a put from that buffer) memcpy was
// the faster, so everything else stays memcpy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "rma/sdk/copy_bytes.hpp"

namespace rma::api::direct {

inline constexpr std::size_t kMisalignedCopyMin = 2048;
inline constexpr std::size_t kMisalignedCopyMax = 8192;
inline constexpr std::uintptr_t kAliasingDistance = 64;

// memcpy(to, from, bytes) for non-overlapping ranges, one of them mapped from a peer.
inline void copy_mapped(void* to, const void* from, std::size_t bytes) noexcept {
  const auto ahead = (reinterpret_cast<std::uintptr_t>(to) - reinterpret_cast<std::uintptr_t>(from)) & 4095u;
  if (ahead == 0 || ahead >= kAliasingDistance || bytes < kMisalignedCopyMin || bytes > kMisalignedCopyMax) {
    rma::copy_bytes(to, from, bytes);  // AVX-512 up to 4 KiB where it can, memcpy above (rma/sdk/copy_bytes.hpp says why)
    return;
  }
  auto* d = static_cast<std::byte*>(to);
  const auto* s = static_cast<const std::byte*>(from);
  // A fixed 64-byte memcpy is four unaligned vector loads, then four stores.
  for (; bytes >= 64; bytes -= 64, d += 64, s += 64) __builtin_memcpy(d, s, 64);
  std::memcpy(d, s, bytes);
}

}  // namespace rma::api::direct
