// The C functions of <rma/rma.h> that synchronize (MPI 4.x 12.5): fence,
// post/start/complete/wait/test, lock/unlock, flush, sync.
#include <atomic>
#include <cstdint>

#include "window/c_call.hpp"

using namespace rma::api;  // NOLINT
using rma::Result;
using rma::Status;
using rma::StatusCode;

namespace {
// Out of line: rma_win_flush's shortcut then needs no stack frame for it.
[[gnu::noinline]] int flush_checked(rma_Win win, int rank) {
  return win_call(win, "rma_win_flush", [&] { return flush(win, "rma_win_flush", rank); });
}
}  // namespace

extern "C" {

int rma_win_fence(int assert_, rma_Win win) {
  return win_call(win, "rma_win_fence", [&] { return fence(win, assert_); });
}
int rma_win_start(rma_Group group, int assert_, rma_Win win) {
  return win_call(win, "rma_win_start", [&] { return start(win, group, assert_); });
}
int rma_win_complete(rma_Win win) {
  return win_call(win, "rma_win_complete", [&] { return complete(win); });
}
int rma_win_post(rma_Group group, int assert_, rma_Win win) {
  return win_call(win, "rma_win_post", [&] { return post(win, group, assert_); });
}
int rma_win_wait(rma_Win win) {
  return win_call(win, "rma_win_wait", [&] { return wait(win); });
}
int rma_win_test(rma_Win win, int* flag) {
  return win_call(win, "rma_win_test", [&]() -> Status {
    if (flag == nullptr) return arg_error("flag is null");
    RMA_ASSIGN_OR_RETURN(bool done, test(win));
    *flag = done ? 1 : 0;
    return {};
  });
}
int rma_win_lock(int lock_type, int rank, int assert_, rma_Win win) {
  return win_call(win, "rma_win_lock", [&] { return lock(win, lock_type, rank, assert_); });
}
int rma_win_lock_all(int assert_, rma_Win win) {
  return win_call(win, "rma_win_lock_all", [&] { return lock_all(win, assert_); });
}
int rma_win_unlock(int rank, rma_Win win) {
  return win_call(win, "rma_win_unlock", [&] { return unlock(win, rank); });
}
int rma_win_unlock_all(rma_Win win) {
  return win_call(win, "rma_win_unlock_all", [&] { return unlock_all(win); });
}
int rma_win_flush(int rank, rma_Win win) {
  // Shortcut: a live window of this thread with a passive epoch to `rank`
  // nothing failed and no accumulates recorded (accumulate_ordering=none).
  // Everything else (errors too) takes the checked path.
  if (run_fast(win, [&] { return flush_fast(win, rank); })) [[likely]] return RMA_SUCCESS;
  return flush_checked(win, rank);
}
int rma_win_flush_all(rma_Win win) {
  return win_call(win, "rma_win_flush_all", [&] { return flush_all(win, "rma_win_flush_all"); });
}
// Local completion: origin and result buffers free; inline puts need no acknowledgement.
int rma_win_flush_local(int rank, rma_Win win) {
  return win_call(win, "rma_win_flush_local", [&] { return flush(win, "rma_win_flush_local", rank, FlushScope::kLocal); });
}
int rma_win_flush_local_all(rma_Win win) {
  return win_call(win, "rma_win_flush_local_all", [&] { return flush_all(win, "rma_win_flush_local_all", FlushScope::kLocal); });
}
int rma_win_sync(rma_Win win) {
  return win_call(win, "rma_win_sync", [&]() -> Status {
    // A full barrier between this rank's loads/stores of its window and the
    // NIC's (a locked RMW; ThreadSanitizer understands it, unlike a fence),
    // then progress: a software NIC writes the window on its own thread
    // under the device lock, which progress() takes, so later loads are
    // ordered after everything it wrote so far.
    static std::atomic<int> barrier_word{0};
    barrier_word.fetch_add(0, std::memory_order_seq_cst);
    if (win->ctx->eps().progress() < 0) return class_error(RMA_ERR_OTHER, "the completion queue overran");
    return {};
  });
}

}  // extern "C"
