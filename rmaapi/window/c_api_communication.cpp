// The C functions of <rma/rma.h> that communicate (MPI 4.x 12.3): put,
// get, the accumulates, fetch_and_op, compare_and_swap and the
// request-based forms. rma_wait, rma_test and the other completion calls:
// window/requests.cpp.
#include "window/c_call.hpp"

using namespace rma::api;  // NOLINT
using rma::Result;
using rma::Status;
using rma::StatusCode;

namespace {

// The arguments every communication call has; a get's origin is where its
// data lands (OpArgs::result).
OpArgs args(const void* origin, int origin_count, rma_Datatype origin_type, int target, rma_Aint disp,
            int target_count, rma_Datatype target_type, rma_Op op = RMA_OP_NULL) {
  return OpArgs{.origin = origin, .origin_count = origin_count, .origin_type = origin_type,
                .target = target, .target_disp = disp, .target_count = target_count,
                .target_type = target_type, .op = op};
}
OpArgs with_result(OpArgs a, void* result, int count, rma_Datatype type) {
  a.result = result;
  a.result_count = count;
  a.result_type = type;
  return a;
}

// The checked paths of the calls with shortcuts, out of line: the
// shortcut's caller then needs no stack frame for them.
[[gnu::noinline]] int put_checked(rma_Win win, const FastArgs& f) {
  return win_call(win, "rma_put", [&] {
    const OpArgs a = args(f.origin, f.origin_count, f.origin_type, f.target, f.target_disp, f.target_count,
                          f.target_type);
    return put(win, "rma_put", a, nullptr);
  });
}

[[gnu::noinline]] int get_checked(rma_Win win, const FastArgs& f) {
  return win_call(win, "rma_get", [&] {
    OpArgs a = args(nullptr, f.origin_count, f.origin_type, f.target, f.target_disp, f.target_count,
                    f.target_type);
    a.result = const_cast<void*>(f.origin);  // a get's origin buffer receives the data
    return get(win, "rma_get", a, nullptr);
  });
}

[[gnu::noinline]] int fetch_and_op_checked(rma_Win win, const FastArgs& f, void* result_addr, rma_Op op) {
  return win_call(win, "rma_fetch_and_op", [&]() -> Status {
    const OpArgs a = with_result(args(f.origin, 1, f.origin_type, f.target, f.target_disp, 1, f.origin_type, op),
                                 result_addr, 1, f.origin_type);
    const rma_Datatype datatype = f.origin_type;
    if (datatype != nullptr && datatype->magic == rma_datatype_s::kMagic && !datatype->predefined) {
      return type_error("rma_fetch_and_op needs a predefined datatype");
    }
    return accumulate(win, "rma_fetch_and_op", a, true, nullptr);
  });
}

[[gnu::noinline]] int compare_and_swap_checked(rma_Win win, const FastArgs& f, const void* compare_addr,
                                               void* result_addr) {
  return win_call(win, "rma_compare_and_swap", [&] {
    OpArgs a = with_result(args(f.origin, 0, nullptr, f.target, f.target_disp, 1, f.target_type), result_addr, 0,
                           nullptr);
    a.compare = compare_addr;
    return compare_and_swap(win, "rma_compare_and_swap", a, nullptr);
  });
}

}  // namespace

extern "C" {

int rma_put(const void* origin_addr, int origin_count, rma_Datatype origin_datatype,
            int target_rank, rma_Aint target_disp, int target_count,
            rma_Datatype target_datatype, rma_Win win) {
  const FastArgs f{origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                   target_datatype};
  if (run_fast(win, [&] { return put_fast(win, f); })) [[likely]] return RMA_SUCCESS;
  return put_checked(win, f);
}

int rma_get(void* origin_addr, int origin_count, rma_Datatype origin_datatype, int target_rank,
            rma_Aint target_disp, int target_count, rma_Datatype target_datatype, rma_Win win) {
  const FastArgs f{origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                   target_datatype};
  if (run_fast(win, [&] { return get_fast(win, f); })) [[likely]] return RMA_SUCCESS;
  return get_checked(win, f);
}

int rma_accumulate(const void* origin_addr, int origin_count, rma_Datatype origin_datatype,
                   int target_rank, rma_Aint target_disp, int target_count,
                   rma_Datatype target_datatype, rma_Op op, rma_Win win) {
  const FastArgs f{origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                   target_datatype};
  if (run_fast(win, [&] { return accumulate_fast(win, f, op); })) [[likely]] return RMA_SUCCESS;
  return win_call(win, "rma_accumulate", [&] {
    const OpArgs a = args(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                          target_count, target_datatype, op);
    return accumulate(win, "rma_accumulate", a, false, nullptr);
  });
}

int rma_get_accumulate(const void* origin_addr, int origin_count, rma_Datatype origin_datatype,
                       void* result_addr, int result_count, rma_Datatype result_datatype,
                       int target_rank, rma_Aint target_disp, int target_count,
                       rma_Datatype target_datatype, rma_Op op, rma_Win win) {
  return win_call(win, "rma_get_accumulate", [&] {
    const OpArgs a = with_result(args(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                                      target_count, target_datatype, op),
                                 result_addr, result_count, result_datatype);
    return accumulate(win, "rma_get_accumulate", a, true, nullptr);
  });
}

int rma_fetch_and_op(const void* origin_addr, void* result_addr, rma_Datatype datatype,
                     int target_rank, rma_Aint target_disp, rma_Op op, rma_Win win) {
  const FastArgs f{origin_addr, 1, datatype, target_rank, target_disp, 1, datatype};
  if (run_fast(win, [&] { return fetch_and_op_fast(win, f, result_addr, op); })) [[likely]] return RMA_SUCCESS;
  return fetch_and_op_checked(win, f, result_addr, op);
}

int rma_compare_and_swap(const void* origin_addr, const void* compare_addr, void* result_addr,
                         rma_Datatype datatype, int target_rank, rma_Aint target_disp,
                         rma_Win win) {
  const FastArgs f{origin_addr, 1, datatype, target_rank, target_disp, 1, datatype};
  if (run_fast(win, [&] { return compare_and_swap_fast(win, f, compare_addr, result_addr); })) [[likely]] {
    return RMA_SUCCESS;
  }
  return compare_and_swap_checked(win, f, compare_addr, result_addr);
}

int rma_rput(const void* origin_addr, int origin_count, rma_Datatype origin_datatype,
             int target_rank, rma_Aint target_disp, int target_count,
             rma_Datatype target_datatype, rma_Win win, rma_Request* request) {
  return request_op(win, "rma_rput", request, target_rank, [&](rma::endpoint::Request* r) {
    const OpArgs a = args(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                          target_count, target_datatype);
    return put(win, "rma_rput", a, r);
  });
}

int rma_rget(void* origin_addr, int origin_count, rma_Datatype origin_datatype, int target_rank,
             rma_Aint target_disp, int target_count, rma_Datatype target_datatype, rma_Win win,
             rma_Request* request) {
  return request_op(win, "rma_rget", request, target_rank, [&](rma::endpoint::Request* r) {
    OpArgs a = args(nullptr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                    target_datatype);
    a.result = origin_addr;  // a get's origin buffer receives the data
    return get(win, "rma_rget", a, r);
  });
}

int rma_raccumulate(const void* origin_addr, int origin_count, rma_Datatype origin_datatype,
                    int target_rank, rma_Aint target_disp, int target_count,
                    rma_Datatype target_datatype, rma_Op op, rma_Win win, rma_Request* request) {
  return request_op(win, "rma_raccumulate", request, target_rank, [&](rma::endpoint::Request* r) {
    const OpArgs a = args(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                          target_count, target_datatype, op);
    return accumulate(win, "rma_raccumulate", a, false, r);
  });
}

int rma_rget_accumulate(const void* origin_addr, int origin_count, rma_Datatype origin_datatype,
                        void* result_addr, int result_count, rma_Datatype result_datatype,
                        int target_rank, rma_Aint target_disp, int target_count,
                        rma_Datatype target_datatype, rma_Op op, rma_Win win,
                        rma_Request* request) {
  return request_op(win, "rma_rget_accumulate", request, target_rank, [&](rma::endpoint::Request* r) {
    const OpArgs a = with_result(args(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                                      target_count, target_datatype, op),
                                 result_addr, result_count, result_datatype);
    return accumulate(win, "rma_rget_accumulate", a, true, r);
  });
}

}  // extern "C"
