// Short copies of the data path (a mapped WRITE or READ of the shm
// provider, the pieces of a frame that a DPDK port copies into an mbuf).
// Up to 64 bytes they are inline: two overlapping loads and stores of the
// largest fitting width, as glibc's memcpy does it, without the call
// through the PLT and the size dispatch, which at these sizes cost more
// than the copy (three calls per frame were 4 % of an 8 B WRITE stream's
// sender). Larger copies are glibc's memcpy. The ranges must not overlap.
//
// Header-only and hidden: each library that includes it keeps its own copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace rma {

[[gnu::always_inline]] inline void copy_bytes(void* dst, const void* src, std::size_t n) noexcept {
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  if (n > 64) {
    std::memcpy(d, s, n);
  } else if (n >= 32) {
    unsigned char head[32], tail[32];
    std::memcpy(head, s, 32);
    std::memcpy(tail, s + n - 32, 32);
    std::memcpy(d, head, 32);
    std::memcpy(d + n - 32, tail, 32);
  } else if (n >= 16) {
    unsigned char head[16], tail[16];
    std::memcpy(head, s, 16);
    std::memcpy(tail, s + n - 16, 16);
    std::memcpy(d, head, 16);
    std::memcpy(d + n - 16, tail, 16);
  } else if (n >= 8) {
    std::uint64_t head, tail;
    std::memcpy(&head, s, 8);
    std::memcpy(&tail, s + n - 8, 8);
    std::memcpy(d, &head, 8);
    std::memcpy(d + n - 8, &tail, 8);
  } else if (n >= 4) {
    std::uint32_t head, tail;
    std::memcpy(&head, s, 4);
    std::memcpy(&tail, s + n - 4, 4);
    std::memcpy(d, &head, 4);
    std::memcpy(d + n - 4, &tail, 4);
  } else if (n != 0) {
    // 1..3 bytes: the first, the last and the middle one (which is one of
    // the two when n < 3).
    const unsigned char first = s[0], middle = s[n / 2], last = s[n - 1];
    d[0] = first;
    d[n / 2] = middle;
    d[n - 1] = last;
  }
}

}  // namespace rma
