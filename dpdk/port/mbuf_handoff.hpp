// Tells ThreadSanitizer that an mbuf changes hands.
//
// Two ports of one process (net_ring, a memif-mesh loopback) pass mbufs
// between threads through DPDK's rings and mempools, which synchronise in
// uninstrumented code: TSan would see the sender's writes and the receiver's
// reads of a frame as a race. The port marks the hand-overs: release when an
// mbuf leaves this thread (tx, free), acquire when one arrives (rx, alloc).
// Without -fsanitize=thread these compile to nothing.
#pragma once

#include <rte_mbuf.h>

#include <cstdint>

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace rma::roce::port {

inline void mbufs_arrive([[maybe_unused]] rte_mbuf* const* m, [[maybe_unused]] std::uint16_t n) noexcept {
#if defined(__SANITIZE_THREAD__)
  for (std::uint16_t i = 0; i < n; ++i) __tsan_acquire(m[i]);
#endif
}

inline void mbufs_leave([[maybe_unused]] rte_mbuf* const* m, [[maybe_unused]] std::uint16_t n) noexcept {
#if defined(__SANITIZE_THREAD__)
  for (std::uint16_t i = 0; i < n; ++i) __tsan_release(m[i]);
#endif
}

}  // namespace rma::roce::port
