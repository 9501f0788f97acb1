// Completion of requests (MPI 4.x 3.7.3-3.7.5 as RMA requests use them):
// wait, test, waitall, waitany, waitsome, testall, testany, testsome,
// request_free. A request is done when every signaled work request of its
// operation completed (remote completion). The multiple-completion calls
// report failures of single requests as MPI says: RMA_ERR_IN_STATUS, with
// each status's RMA_ERROR = RMA_SUCCESS, the request's error, or
// RMA_ERR_PENDING for one that neither failed nor completed (waitall past
// RMA_WAIT_TIMEOUT_MS). Errors go to RMA_COMM_WORLD's handler.
#include <chrono>
#include <string>

#include "comm/c_call.hpp"
#include "rma/sdk/wait_backoff.hpp"
#include "datatype/errors.hpp"
#include "window/context.hpp"

namespace rma::api {
namespace {

void fill_status(rma_Status* st, int source, int error) {
  if (st == RMA_STATUS_IGNORE) return;
  st->RMA_SOURCE = source;
  st->RMA_TAG = -1;
  st->RMA_ERROR = error;
}

// The empty status MPI gives for a null request.
void empty_status(rma_Status* st) { fill_status(st, RMA_PROC_NULL, RMA_SUCCESS); }

rma_Status* status_at(rma_Status statuses[], int i) {
  return statuses == RMA_STATUSES_IGNORE ? RMA_STATUS_IGNORE : &statuses[i];
}

Status check_request(rma_request_s* r, const std::string& what) {
  if (r->magic != rma_request_s::kMagic || !r->active) {
    return class_error(RMA_ERR_REQUEST, what + " is not an active request (already completed, freed, or corrupt)");
  }
  return {};
}

Status check_array(int count, const rma_Request requests[]) {
  if (count < 0) return count_error("count " + std::to_string(count) + " is negative");
  if (requests == nullptr && count > 0) return arg_error("array_of_requests is null but count is " + std::to_string(count));
  for (int i = 0; i < count; ++i) {
    if (requests[i] != RMA_REQUEST_NULL) {
      RMA_RETURN_IF_ERROR(check_request(requests[i], "array_of_requests[" + std::to_string(i) + "]"));
    }
  }
  return {};
}

// The error a completed request carries (ok when it succeeded).
Status request_error(const rma_request_s* r) {
  if (!r->req.failed()) return {};
  return class_error(RMA_ERR_OTHER, "the operation to rank " + std::to_string(r->req.error_peer) +
                                        " failed: " + endpoint::describe_error(r->req.error, r->req.vendor_err));
}

// Completes a done request: its status, its error, and frees it.
Status finish(Context& ctx, rma_Request* request, rma_Status* st) {
  rma_request_s* r = *request;
  Status s = request_error(r);
  fill_status(st, r->target, error_code(s));
  ctx.release_request(r);
  *request = RMA_REQUEST_NULL;
  return s;
}

bool any_active(int count, const rma_Request requests[]) {
  for (int i = 0; i < count; ++i) {
    if (requests[i] != RMA_REQUEST_NULL) return true;
  }
  return false;
}

Status timeout_error(Context& ctx, const char* what) {
  return class_error(RMA_ERR_OTHER, std::string(what) + " did not complete within RMA_WAIT_TIMEOUT_MS (" +
                                        std::to_string(ctx.eps().options().timeout.count()) + " ms)");
}

// Progresses until pred() or the deadline; false at the deadline.
template <typename Pred>
bool progress_until(Context& ctx, Pred pred) {
  const auto start = std::chrono::steady_clock::now();
  WaitBackoff backoff;
  for (std::uint32_t spin = 0; !pred(); ++spin) {
    if (ctx.eps().progress() < 0) return pred();
    if ((spin & 63u) == 63u) {
      if (ctx.eps().expired(start)) return pred();
      backoff.pause();
    }
  }
  return true;
}

// Completes every done request of the array into indices/statuses (the
// "some" calls); returns how many, and RMA_ERR_IN_STATUS if one failed.
Status complete_done(Context& ctx, int count, rma_Request requests[], int* outcount, int indices[],
                     rma_Status statuses[]) {
  int n = 0;
  bool failed = false;
  for (int i = 0; i < count; ++i) {
    if (requests[i] == RMA_REQUEST_NULL || !requests[i]->req.done()) continue;
    Status s = finish(ctx, &requests[i], status_at(statuses, n));
    failed |= !s.ok();
    indices[n++] = i;
  }
  *outcount = n;
  if (failed) return class_error(RMA_ERR_IN_STATUS, "an operation failed: see the statuses' RMA_ERROR");
  return {};
}

Status context_or_error(Context*& ctx) {
  ctx = current_context();
  if (ctx == nullptr) return not_initialized_error();
  return {};
}

}  // namespace
}  // namespace rma::api

using namespace rma::api;  // NOLINT
using rma::Status;
using rma::StatusCode;

extern "C" {

int rma_wait(rma_Request* request, rma_Status* status) {
  return world_call("rma_wait", [&]() -> Status {
    Context* c = nullptr;
    RMA_RETURN_IF_ERROR(context_or_error(c));
    if (request == nullptr) return class_error(RMA_ERR_REQUEST, "request is null");
    if (*request == RMA_REQUEST_NULL) {
      empty_status(status);
      return {};
    }
    RMA_RETURN_IF_ERROR(check_request(*request, "*request"));
    const StatusCode rc = c->eps().wait((*request)->req);
    if (rc != StatusCode::kOk) {
      return class_error(RMA_ERR_OTHER, "the request did not complete within RMA_WAIT_TIMEOUT_MS (" +
                                            std::string(status_code_name(rc)) + ")");
    }
    return finish(*c, request, status);
  });
}

int rma_test(rma_Request* request, int* flag, rma_Status* status) {
  return world_call("rma_test", [&]() -> Status {
    Context* c = nullptr;
    RMA_RETURN_IF_ERROR(context_or_error(c));
    if (request == nullptr) return class_error(RMA_ERR_REQUEST, "request is null");
    if (flag == nullptr) return arg_error("flag is null");
    if (*request == RMA_REQUEST_NULL) {
      *flag = 1;
      empty_status(status);
      return {};
    }
    RMA_RETURN_IF_ERROR(check_request(*request, "*request"));
    if (!(*request)->req.done()) (void)c->eps().progress();
    if (!(*request)->req.done()) {
      *flag = 0;
      return {};
    }
    *flag = 1;
    return finish(*c, request, status);
  });
}

int rma_request_free(rma_Request* request) {
  return world_call("rma_request_free", [&]() -> Status {
    Context* c = nullptr;
    RMA_RETURN_IF_ERROR(context_or_error(c));
    if (request == nullptr) return class_error(RMA_ERR_REQUEST, "request is null");
    if (*request == RMA_REQUEST_NULL) return class_error(RMA_ERR_REQUEST, "*request is RMA_REQUEST_NULL");
    RMA_RETURN_IF_ERROR(check_request(*request, "*request"));
    // The operation goes on (MPI 4.x 3.7.3); its completion, and any error,
    // can no longer be observed through the handle.
    if ((*request)->req.done()) {
      c->release_request(*request);
    } else {
      c->detach_request(*request);
    }
    *request = RMA_REQUEST_NULL;
    return {};
  });
}

int rma_waitall(int count, rma_Request requests[], rma_Status statuses[]) {
  return world_call("rma_waitall", [&]() -> Status {
    Context* c = nullptr;
    RMA_RETURN_IF_ERROR(context_or_error(c));
    RMA_RETURN_IF_ERROR(check_array(count, requests));
    bool failed = false;
    for (int i = 0; i < count; ++i) {
      if (requests[i] == RMA_REQUEST_NULL) {
        empty_status(status_at(statuses, i));
        continue;
      }
      if (!progress_until(*c, [&] { return requests[i]->req.done(); })) {
        // Past the deadline: the remaining requests stay active.
        failed = true;
        for (int j = i; j < count; ++j) {
          if (requests[j] == RMA_REQUEST_NULL) {
            empty_status(status_at(statuses, j));
          } else if (requests[j]->req.done()) {
            (void)finish(*c, &requests[j], status_at(statuses, j));  // RMA_ERROR says how it ended
          } else {
            fill_status(status_at(statuses, j), requests[j]->target, RMA_ERR_PENDING);
          }
        }
        break;
      }
      failed |= !finish(*c, &requests[i], status_at(statuses, i)).ok();
    }
    if (failed) {
      return class_error(RMA_ERR_IN_STATUS, "an operation failed or did not complete within "
                                            "RMA_WAIT_TIMEOUT_MS: see the statuses' RMA_ERROR");
    }
    return {};
  });
}

int rma_testall(int count, rma_Request requests[], int* flag, rma_Status statuses[]) {
  return world_call("rma_testall", [&]() -> Status {
    Context* c = nullptr;
    RMA_RETURN_IF_ERROR(context_or_error(c));
    RMA_RETURN_IF_ERROR(check_array(count, requests));
    if (flag == nullptr) return arg_error("flag is null");
    (void)c->eps().progress();
    for (int i = 0; i < count; ++i) {
      if (requests[i] != RMA_REQUEST_NULL && !requests[i]->req.done()) {
        *flag = 0;  // nothing is completed (MPI: all or none)
        return {};
      }
    }
    *flag = 1;
    bool failed = false;
    for (int i = 0; i < count; ++i) {
      if (requests[i] == RMA_REQUEST_NULL) {
        empty_status(status_at(statuses, i));
      } else {
        failed |= !finish(*c, &requests[i], status_at(statuses, i)).ok();
      }
    }
    if (failed) return class_error(RMA_ERR_IN_STATUS, "an operation failed: see the statuses' RMA_ERROR");
    return {};
  });
}

int rma_waitany(int count, rma_Request requests[], int* index, rma_Status* status) {
  return world_call("rma_waitany", [&]() -> Status {
    Context* c = nullptr;
    RMA_RETURN_IF_ERROR(context_or_error(c));
    RMA_RETURN_IF_ERROR(check_array(count, requests));
    if (index == nullptr) return arg_error("index is null");
    if (!any_active(count, requests)) {
      *index = RMA_UNDEFINED;
      empty_status(status);
      return {};
    }
    int found = -1;
    auto any_done = [&] {
      for (int i = 0; i < count; ++i) {
        if (requests[i] != RMA_REQUEST_NULL && requests[i]->req.done()) {
          found = i;
          return true;
        }
      }
      return false;
    };
    if (!progress_until(*c, any_done)) return timeout_error(*c, "none of the requests");
    *index = found;
    return finish(*c, &requests[found], status);
  });
}

int rma_testany(int count, rma_Request requests[], int* index, int* flag, rma_Status* status) {
  return world_call("rma_testany", [&]() -> Status {
    Context* c = nullptr;
    RMA_RETURN_IF_ERROR(context_or_error(c));
    RMA_RETURN_IF_ERROR(check_array(count, requests));
    if (index == nullptr || flag == nullptr) return arg_error("index or flag is null");
    if (!any_active(count, requests)) {
      *flag = 1;
      *index = RMA_UNDEFINED;
      empty_status(status);
      return {};
    }
    (void)c->eps().progress();
    for (int i = 0; i < count; ++i) {
      if (requests[i] != RMA_REQUEST_NULL && requests[i]->req.done()) {
        *flag = 1;
        *index = i;
        return finish(*c, &requests[i], status);
      }
    }
    *flag = 0;
    *index = RMA_UNDEFINED;
    return {};
  });
}

int rma_waitsome(int incount, rma_Request requests[], int* outcount, int indices[], rma_Status statuses[]) {
  return world_call("rma_waitsome", [&]() -> Status {
    Context* c = nullptr;
    RMA_RETURN_IF_ERROR(context_or_error(c));
    RMA_RETURN_IF_ERROR(check_array(incount, requests));
    if (outcount == nullptr) return arg_error("outcount is null");
    if (!any_active(incount, requests)) {
      *outcount = RMA_UNDEFINED;
      return {};
    }
    if (indices == nullptr) return arg_error("array_of_indices is null");
    auto any_done = [&] {
      for (int i = 0; i < incount; ++i) {
        if (requests[i] != RMA_REQUEST_NULL && requests[i]->req.done()) return true;
      }
      return false;
    };
    if (!progress_until(*c, any_done)) return timeout_error(*c, "none of the requests");
    return complete_done(*c, incount, requests, outcount, indices, statuses);
  });
}

int rma_testsome(int incount, rma_Request requests[], int* outcount, int indices[], rma_Status statuses[]) {
  return world_call("rma_testsome", [&]() -> Status {
    Context* c = nullptr;
    RMA_RETURN_IF_ERROR(context_or_error(c));
    RMA_RETURN_IF_ERROR(check_array(incount, requests));
    if (outcount == nullptr) return arg_error("outcount is null");
    if (!any_active(incount, requests)) {
      *outcount = RMA_UNDEFINED;
      return {};
    }
    if (indices == nullptr) return arg_error("array_of_indices is null");
    (void)c->eps().progress();
    return complete_done(*c, incount, requests, outcount, indices, statuses);
  });
}

}  // extern "C"
