#include "swkit/sgl.hpp"

#include <algorithm>
#include <cstring>

#include "swkit/vendor_err.hpp"

namespace rma::swkit {

std::uint32_t check_local_sgl(const KeyTable& keys, const void* pd, std::span<const Sge> sgl,
                              std::uint64_t bytes, Access needed) noexcept {
  for (const Sge& sge : sgl) {
    if (bytes == 0) break;
    if (sge.length == 0) continue;
    const MrEntry* mr = keys.find_lkey(sge.lkey);
    if (mr == nullptr) return kVeBadLkey;
    if (mr->pd != pd) return kVeLkeyOtherPd;
    if (!mr->contains(sge.addr, sge.length)) return kVeLocalOutOfBounds;
    if (!has_access(mr->access, needed)) return kVeNoLocalWrite;
    // Last: an unmapped region is still a valid key with the rights asked
    // for; only touching it would fault.
    if (mr->is_orphaned()) return kVeLocalUnmapped;
    bytes -= std::min<std::uint64_t>(bytes, sge.length);
  }
  return kVeNone;
}

std::uint32_t check_remote(const KeyTable& keys, const void* pd, std::uint32_t rkey, std::uint64_t addr,
                           std::uint64_t len, Access right) noexcept {
  const MrEntry* mr = keys.find_rkey(rkey);
  if (mr == nullptr) return kVeBadRkey;
  if (mr->pd != pd) return kVeRkeyOtherPd;
  if (!has_access(mr->access, right)) return kVeNoRemoteRight;
  if (!mr->contains(addr, len)) return kVeRemoteOutOfBounds;
  if (mr->is_orphaned()) return kVeRemoteUnmapped;
  return kVeNone;
}

namespace {
// Calls fn(pointer, bytes done before, n) for each piece of [offset,
// offset+len) of the list.
template <typename Fn>
void walk_sgl(std::span<const Sge> sgl, std::uint64_t offset, std::uint64_t len, Fn&& fn) noexcept {
  std::uint64_t done = 0;
  for (const Sge& sge : sgl) {
    if (len == 0) break;
    if (offset >= sge.length) {
      offset -= sge.length;
      continue;
    }
    const std::uint64_t n = std::min<std::uint64_t>(len, sge.length - offset);
    fn(reinterpret_cast<std::uint8_t*>(sge.addr + offset), done, n);
    done += n;
    len -= n;
    offset = 0;
  }
}
}  // namespace

const std::uint8_t* sgl_contiguous(std::span<const Sge> sgl, std::uint64_t offset, std::uint64_t len) noexcept {
  for (const Sge& sge : sgl) {
    if (offset < sge.length) {
      if (len > sge.length - offset) return nullptr;
      return reinterpret_cast<const std::uint8_t*>(sge.addr) + offset;
    }
    offset -= sge.length;
  }
  return nullptr;
}

void copy_to_sgl(std::span<const Sge> sgl, std::uint64_t offset, const std::uint8_t* src,
                 std::uint64_t len) noexcept {
  walk_sgl(sgl, offset, len, [&](std::uint8_t* p, std::uint64_t at, std::uint64_t n) {
    std::memcpy(p, src + at, n);
  });
}

void copy_from_sgl(std::span<const Sge> sgl, std::uint64_t offset, std::uint8_t* dst,
                   std::uint64_t len) noexcept {
  walk_sgl(sgl, offset, len, [&](std::uint8_t* p, std::uint64_t at, std::uint64_t n) {
    std::memcpy(dst + at, p, n);
  });
}

void copy_sgl(std::span<const Sge> dst, std::span<const Sge> src, std::uint64_t len) noexcept {
  std::size_t di = 0, si = 0;
  std::uint64_t doff = 0, soff = 0;
  while (len > 0) {
    while (doff == dst[di].length) { ++di; doff = 0; }
    while (soff == src[si].length) { ++si; soff = 0; }
    const std::uint64_t n = std::min({len, dst[di].length - doff, src[si].length - soff});
    std::memmove(reinterpret_cast<void*>(dst[di].addr + doff), reinterpret_cast<const void*>(src[si].addr + soff), n);
    doff += n;
    soff += n;
    len -= n;
  }
}

}  // namespace rma::swkit
