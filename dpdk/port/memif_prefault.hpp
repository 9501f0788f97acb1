// Prefaults this process's mappings of memif's shared regions. Private to
// dpdk/port.
//
// memif (DPDK 22.11) maps its regions (descriptor rings and one buffer per
// descriptor) without populating them, so each process takes a page fault
// on the first use of every buffer. On this project's virtual machines a
// fault costs tens of microseconds: the first pass through a 1024-slot ring
// made every 8 B round trip of the first 50 ms take about 100 us instead of
// 3, and held a 2 s 8 B WRITE stream well below the link's frame rate.
// Prefaulting once the link is up moves that cost to the port's set-up.
#pragma once

#include <cstddef>

namespace rma::roce::port {

// Populates every shared writable mapping named like a memif region (memfd
// "memif_region_N") in /proc/self/maps, without changing a byte of it.
// Returns the bytes prefaulted (0 when there is none).
std::size_t prefault_memif_regions() noexcept;

}  // namespace rma::roce::port
