// What a window exposes to peers: exactly its bytes, with exactly the rights
// given, and nothing once it is freed (issue 12, defect 3); the error path
// of rma_win_free (defect 8). Peers are driven below the API, with raw work
// requests carrying the window's published rkey, as a hostile or buggy peer
// would send them: the API's own origin checks would stop these earlier.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "api_test_util.hpp"
#include "window/context.hpp"
#include "window/window.hpp"

namespace {

using api_test::run_ranks;
using rma::Opcode;
using rma::WcStatus;

// Posts one work request of `len` bytes (an atomic: 8) from this rank's
// bounce area to `target` and waits for it: the completion status.
WcStatus raw_access(int target, Opcode op, std::uint64_t addr, std::uint32_t rkey, std::uint32_t len) {
  auto& eps = rma::api::current_context()->eps();
  auto& ep = eps.endpoint(target);
  if (ep.reserve(true) != rma::StatusCode::kOk) return WcStatus::kGeneralErr;
  const rma::Sge s = ep.bounce(len);
  rma::WorkRequest wr;
  wr.opcode = op;
  wr.sgl = {&s, 1};
  wr.remote_addr = addr;
  wr.rkey = rkey;
  wr.compare_add = 1;
  rma::endpoint::Request r;
  if (ep.post(wr, rma::endpoint::OnComplete{&r, {}, nullptr, 0}, true) != rma::StatusCode::kOk) {
    return WcStatus::kGeneralErr;
  }
  if (eps.wait(r) != rma::StatusCode::kOk) return WcStatus::kGeneralErr;
  return r.error;
}

// A page-aligned heap buffer; windows are carved out of its middle so that
// the bytes around them are live heap memory a merged registration covers.
struct Arena {
  static constexpr std::size_t kBytes = 3 * 4096;
  Arena() : mem(kBytes + 4096, 0x5a) {}
  std::uint8_t* page(std::size_t i) {
    auto a = reinterpret_cast<std::uintptr_t>(mem.data());
    return reinterpret_cast<std::uint8_t*>((a + 4095) / 4096 * 4096 + i * 4096);
  }
  std::vector<std::uint8_t> mem;
};

// Rank 0 exposes 100 bytes in the middle of a page; every other rank tries
// one access just outside them (each breaks its own connection to rank 0,
// so one attempt per rank). The attempt must fail with a remote access
// error and the neighbouring bytes must stay as they were.
TEST(ApiExposure, PeersReachExactlyTheWindowBytes) {
  Arena arena;
  std::uint8_t* const base = arena.page(1) + 200;
  constexpr rma_Aint kSize = 100;
  run_ranks(5, [&](int rank, int) {
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_create(rank == 0 ? base : nullptr, rank == 0 ? kSize : 0, 1, RMA_INFO_NULL,
                             RMA_COMM_WORLD, &win),
              RMA_SUCCESS);
    ASSERT_EQ(rma_win_set_errhandler(win, RMA_ERRORS_RETURN), RMA_SUCCESS);
    const rma::api::PeerWindow p = win->peers[0];
    ASSERT_EQ(p.base, reinterpret_cast<std::uint64_t>(base));
    if (rank == 1) {
      // Inside: fine.
      EXPECT_EQ(raw_access(0, Opcode::kRdmaRead, p.base + kSize - 8, p.rkey, 8), WcStatus::kSuccess);
      // One byte past the end.
      EXPECT_EQ(raw_access(0, Opcode::kRdmaRead, p.base + kSize, p.rkey, 1), WcStatus::kRemAccessErr);
    } else if (rank == 2) {
      // One byte before the start, written.
      EXPECT_EQ(raw_access(0, Opcode::kRdmaWrite, p.base - 1, p.rkey, 1), WcStatus::kRemAccessErr);
    } else if (rank == 3) {
      // An atomic on the aligned word just past the end (the page is the same).
      const std::uint64_t past = (p.base + kSize + 7) / 8 * 8;
      EXPECT_EQ(raw_access(0, Opcode::kAtomicFetchAdd, past, p.rkey, 8), WcStatus::kRemAccessErr);
    } else if (rank == 4) {
      // The window's metadata is exact too: one word past its end.
      EXPECT_EQ(raw_access(0, Opcode::kRdmaWrite, p.meta + win->meta_words * 8, p.meta_rkey, 8),
                WcStatus::kRemAccessErr);
    }
    EXPECT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    // Ranks 2..4 broke their connection to rank 0: their free reports it.
    const int rc = rma_win_free(&win);
    EXPECT_TRUE(rc == RMA_SUCCESS || rank >= 1) << rc;
  });
  for (std::size_t i = 0; i < arena.kBytes; ++i) {
    const std::uint8_t* b = arena.page(0) + i;
    if (b >= base && b < base + kSize) continue;
    ASSERT_EQ(*b, 0x5a) << "byte " << (b - base) << " relative to the window changed";
  }
}

// After rma_win_free the window's rkey reaches nothing, even while this
// rank still holds a cached (origin) registration of the same memory, as a
// put from that buffer would.
TEST(ApiExposure, FreedWindowIsNotReachableThroughAHeldRegistration) {
  Arena arena;
  std::uint8_t* const base = arena.page(1);
  run_ranks(2, [&](int rank, int) {
    rma_Win win = RMA_WIN_NULL;
    ASSERT_EQ(rma_win_create(rank == 0 ? base : nullptr, rank == 0 ? 64 : 0, 1, RMA_INFO_NULL,
                             RMA_COMM_WORLD, &win),
              RMA_SUCCESS);
    ASSERT_EQ(rma_win_set_errhandler(win, RMA_ERRORS_RETURN), RMA_SUCCESS);
    const rma::api::PeerWindow p = win->peers[0];
    rma::RegistrationCache::Handle held;
    if (rank == 0) {
      auto h = rma::api::current_context()->eps().rcache(rma::endpoint::kNetworkRail).acquire(base, 64, rma::Access::kNone);
      ASSERT_TRUE(h.ok()) << h.status().to_string();
      held = std::move(h).value();
    }
    if (rank == 1) {
      EXPECT_EQ(raw_access(0, Opcode::kRdmaRead, p.base, p.rkey, 8), WcStatus::kSuccess);
    }
    ASSERT_EQ(rma_win_free(&win), RMA_SUCCESS);
    // Rank 0 deregisters after the free's barrier: wait until it is done.
    EXPECT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    if (rank == 1) {
      EXPECT_EQ(raw_access(0, Opcode::kRdmaWrite, p.base, p.rkey, 8), WcStatus::kRemAccessErr);
    }
    EXPECT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
  });
  for (int i = 0; i < 64; ++i) EXPECT_EQ(base[i], 0x5a) << i;
}

int g_handler_calls = 0;
rma_Win g_handler_win = reinterpret_cast<rma_Win>(1);
void count_handler(rma_Win* win, int* code, ...) {
  ++g_handler_calls;
  g_handler_win = *win;
  (void)code;
}

// rma_win_free reports a failure after the window is gone: the error goes to
// the window's handler (which must still exist) without reading the freed
// window (under ASan, the old code read it: heap-use-after-free).
TEST(ApiExposure, FreeReportsAFailureWithoutTouchingTheFreedWindow) {
  g_handler_calls = 0;
  run_ranks(2, [&](int rank, int) {
    rma_Win win = RMA_WIN_NULL, win2 = RMA_WIN_NULL;
    std::uint64_t* b1 = nullptr;
    std::uint64_t* b2 = nullptr;
    ASSERT_EQ(rma_win_allocate(64, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &b1, &win), RMA_SUCCESS);
    ASSERT_EQ(rma_win_allocate(64, 8, RMA_INFO_NULL, RMA_COMM_WORLD, &b2, &win2), RMA_SUCCESS);
    ASSERT_EQ(rma_win_set_errhandler(win, RMA_ERRORS_RETURN), RMA_SUCCESS);
    rma_Errhandler eh = nullptr;
    ASSERT_EQ(rma_win_create_errhandler(count_handler, &eh), RMA_SUCCESS);
    ASSERT_EQ(rma_win_set_errhandler(win2, eh), RMA_SUCCESS);
    // The window now holds the only other reference to the handler.
    ASSERT_EQ(rma_errhandler_free(&eh), RMA_SUCCESS);
    if (rank == 1) {
      // Break the connection to rank 0: flushing it fails from now on.
      EXPECT_EQ(raw_access(0, Opcode::kRdmaRead, win->peers[0].base, win->peers[0].rkey + 12345, 8),
                WcStatus::kRemAccessErr);
    }
    EXPECT_EQ(rma_barrier(RMA_COMM_WORLD), RMA_SUCCESS);
    const int rc = rma_win_free(&win);
    EXPECT_EQ(win, RMA_WIN_NULL);
    if (rank == 1) {
      EXPECT_EQ(rc, RMA_ERR_OTHER);
      EXPECT_NE(api_test::last_message().find("rma_win_free"), std::string::npos) << api_test::last_message();
    }
    const int rc2 = rma_win_free(&win2);
    if (rank == 1) {
      EXPECT_EQ(rc2, RMA_ERR_OTHER);
      EXPECT_EQ(g_handler_calls, 1);
      EXPECT_EQ(g_handler_win, RMA_WIN_NULL);
    } else {
      EXPECT_EQ(rc2, RMA_SUCCESS);
    }
  });
}

}  // namespace
