// The copy of a mapped RDMA WRITE or READ. Up to 16 bytes it is inline
// (two overlapping loads and stores of the largest fitting width, as
// glibc's memcpy does it, without the call through the PLT and the size
// dispatch: at 8 bytes those cost more than the copy); larger copies are
// glibc's memcpy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace rma::shm {

[[gnu::always_inline]] inline void copy_bytes(void* dst, const void* src, std::size_t n) noexcept {
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  if (n > 16) {
    std::memcpy(d, s, n);
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

}  // namespace rma::shm
