// A base for the objects whose fields every request of a software
// provider's data path loads (a QP, a CQ): their `new` places them at
// kOffset bytes into a page of their own, instead of wherever the heap has
// room.
//
// Why: a CPU that has a store in flight and then loads from another address
// with the same low 12 bits ("4K aliasing") first takes the load for
// dependent on the store, and replays it once the store has gone. User
// buffers are very often page-aligned (perftest's, ucx_perftest's, anything
// from mmap or posix_memalign), so a request's copy stores into [0, its
// length) of a page, and the next request's post loads the QP's fields
// while those stores drain: where the fields lay at the same page offsets,
// the post waited. The heap had put the shm provider's QP at page offset
// 192, inside the 512 bytes a mid-size READ stores.
//
// Where: the QP from kQpPageOffset (past the inline copies of up to 512
// bytes, and far below the last stores of a page-sized copy, which drain
// last), the CQ past the QP's end, so that the CQ's stores of one request
// (its ring's count) do not alias the QP's loads of the next. Measured on
// the shm provider (alternating pinned pairs of `rma_read_lat -s N -n
// 1000000`, the library swapped under the same tools, medians of 8 pairs;
// bench/README.md): READ 512 B 19.3 -> 17.8 ns, 2 KiB 32.2 -> 27.6 ns,
// 8 B, 64 B, 1 KiB and 4 KiB unchanged; with both objects in the upper half
// of their pages instead (2048 and 3712), 512 B gained as much but 4 KiB
// lost 2.5 ns, the fields then lying under a page-sized copy's last stores.
// A page per object costs 4 KiB per QP and CQ.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

namespace rma::swkit {

inline constexpr std::size_t kPlacementPage = 4096;
inline constexpr std::size_t kQpPageOffset = 512;
inline constexpr std::size_t kCqPageOffset = 2176;

template <std::size_t kOffset>
class PagePlaced {
  static_assert(kOffset < kPlacementPage);

 public:
  // The only allocation these objects use: `new (std::nothrow) T(...)`.
  // nullptr also when T does not fit between kOffset and the page's end
  // (each user static_asserts that it does).
  static void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
    if (size > kPlacementPage - kOffset) return nullptr;
    void* page = std::aligned_alloc(kPlacementPage, kPlacementPage);
    return page == nullptr ? nullptr : static_cast<std::byte*>(page) + kOffset;
  }
  static void operator delete(void* p) noexcept {
    if (p != nullptr) std::free(static_cast<std::byte*>(p) - kOffset);
  }
  // What a constructor that throws out of the nothrow new calls.
  static void operator delete(void* p, const std::nothrow_t&) noexcept { operator delete(p); }
  // No throwing new: the size check's nullptr has to reach the caller.
  static void* operator new(std::size_t) = delete;
};

}  // namespace rma::swkit
