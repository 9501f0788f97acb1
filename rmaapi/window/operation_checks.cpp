// The checks and helpers the communication calls share (operation_checks.hpp).
#include "window/operation_checks.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>

#include "rma/sdk/wait_backoff.hpp"

namespace rma::api {

using endpoint::Endpoint;
using endpoint::OnComplete;

namespace {
constexpr std::uint32_t kMaxSgeArray = 64;
}  // namespace

bool lookup_one(void* ctx, std::uint64_t addr, std::uint64_t, LocalKey* out) noexcept {
  const auto* r = static_cast<const OneRegistration*>(ctx);
  if (addr < r->begin || addr >= r->end) return false;
  *out = LocalKey{r->begin, r->end, r->lkey};
  return true;
}

std::string type_name(const rma_datatype_s* t) {
  return (t != nullptr && t->predefined && t->name != nullptr) ? t->name : "derived datatype";
}

Status check_rank(rma_win_s* win, int target) {
  const int n = static_cast<int>(win->peers.size());
  if (target < 0 || target >= n) {
    return class_error(RMA_ERR_RANK, "target_rank " + std::to_string(target) +
                                         " is not a rank of the window's group (size " +
                                         std::to_string(n) + ")");
  }
  if (!win->may_access(target)) {
    return class_error(RMA_ERR_RMA_SYNC,
                       "no access epoch to rank " + std::to_string(target) +
                           " is open: call rma_win_fence, rma_win_lock, rma_win_lock_all or "
                           "rma_win_start first");
  }
  return {};
}

Status check_proc_null_epoch(rma_win_s* win, const char* call) {
  const bool open = win->fence_open || win->lock_all || win->start_active ||
                    std::any_of(win->access_count.begin(), win->access_count.end(),
                                [](std::uint32_t c) { return c != 0; });
  if (open) return {};
  return class_error(RMA_ERR_RMA_SYNC, std::string(call) +
                                           " to RMA_PROC_NULL outside an access epoch: call "
                                           "rma_win_fence, rma_win_lock, rma_win_lock_all or "
                                           "rma_win_start first");
}

Status check_count(int count, const char* what) {
  if (count < 0) return count_error(std::string(what) + " " + std::to_string(count) + " is negative");
  return {};
}

Status check_span(const TypeLayout& type, int count, const char* count_name, const void* local) {
  Footprint fp;
  if (!footprint_fits(type, count, fp)) [[unlikely]] {
    return count_error(std::string(count_name) + " " + std::to_string(count) + " x the datatype's extent " +
                       std::to_string(type.extent()) + " overflows 64 bits");
  }
  if (local != nullptr && fp.hi > fp.lo) {
    const auto a = reinterpret_cast<std::uintptr_t>(local);
    const bool below = fp.lo < 0 && static_cast<std::uint64_t>(-(fp.lo + 1)) >= a;
    const bool above = fp.hi > 0 && static_cast<std::uint64_t>(fp.hi) > UINTPTR_MAX - a;
    if (below || above) {
      return buffer_error("the buffer at " + std::to_string(a) + " with " + std::string(count_name) + " " +
                          std::to_string(count) + " spans [" + std::to_string(fp.lo) + ", " +
                          std::to_string(fp.hi) + ") around it, which wraps the address space");
    }
  }
  return {};
}

Status transport_error(rma_win_s* win, const char* call, int target, StatusCode code) {
  Endpoint& ep = win->endpoint(target);
  std::string what;
  if (ep.broken()) {
    what = "the connection to rank " + std::to_string(target) + " failed: " +
           endpoint::describe_error(ep.error(), ep.vendor_err());
  } else if (code == StatusCode::kTimeout) {
    what = "rank " + std::to_string(target) + " did not complete within " +
           std::to_string(win->ctx->eps().options().timeout.count()) +
           " ms (RMA_WAIT_TIMEOUT_MS)";
  } else if (ep.last_reject() != nullptr) {
    what = std::string("the provider rejected a work request to rank ") + std::to_string(target) +
           ": " + ep.last_reject();
  } else {
    what = "posting to rank " + std::to_string(target) + " failed (" +
           std::string(status_code_name(code)) + ")";
  }
  (void)call;
  return class_error(RMA_ERR_OTHER, what);
}

namespace {

Status read_remote_table(rma_win_s* win, int target) {
  Context& ctx = *win->ctx;
  const PeerWindow& p = win->peers[static_cast<std::size_t>(target)];
  const std::size_t words = 2 + 3 * kMaxAttach;
  RMA_ASSIGN_OR_RETURN(Context::Scratch s, ctx.scratch(words * 8));
  Endpoint& ep = win->endpoint(target);
  WaitBackoff backoff;  // the target is rewriting its table meanwhile
  for (int attempt = 0; attempt < 1000; ++attempt) {
    endpoint::Request r;
    // The table, then its version word again: equal and even = consistent.
    Sge table{reinterpret_cast<std::uint64_t>(s.a), static_cast<std::uint32_t>(words * 8), s.lkey[ep.rail()]};
    Sge again{reinterpret_cast<std::uint64_t>(s.b), 8, s.lkey[ep.rail()]};
    WorkRequest wr;
    wr.opcode = Opcode::kRdmaRead;
    wr.sgl = {&table, 1};
    wr.remote_addr = p.meta + win->table_word() * 8;
    wr.rkey = p.meta_rkey;
    StatusCode rc = ep.post(wr, OnComplete{&r, {}, nullptr, 0});
    if (rc == StatusCode::kOk) {
      wr.sgl = {&again, 1};
      rc = ep.post(wr, OnComplete{&r, {}, nullptr, 0});
    }
    if (rc == StatusCode::kOk) rc = ctx.eps().wait(r);
    if (rc != StatusCode::kOk || r.failed()) return transport_error(win, "reading the attachment table", target, rc);
    std::uint64_t t[2 + 3 * kMaxAttach];
    std::memcpy(t, s.a, sizeof(t));
    std::uint64_t v2 = 0;
    std::memcpy(&v2, s.b, 8);
    if ((t[0] & 1) != 0 || t[0] != v2) {
      backoff.pause();
      continue;
    }
    auto& out = win->remote_tables[static_cast<std::size_t>(target)];
    out.clear();
    const std::uint64_t n = std::min<std::uint64_t>(t[1], kMaxAttach);
    for (std::uint64_t i = 0; i < n; ++i) out.push_back({t[2 + 3 * i], t[3 + 3 * i], t[4 + 3 * i]});
    return {};
  }
  return class_error(RMA_ERR_OTHER, "the attachment table of rank " + std::to_string(target) +
                                        " kept changing while being read");
}

}  // namespace

Status resolve_target(rma_win_s* win, const char* call, int target, rma_Aint disp, int count,
                      const TypeLayout& tl, rma_Datatype ttype, Target& out) {
  const PeerWindow& p = win->peers[static_cast<std::size_t>(target)];
  const Footprint fp = footprint(tl, count);
  const bool dynamic = win->flavor == RMA_WIN_FLAVOR_DYNAMIC;
  PlacedRange r;
  const Placement where = place(r, dynamic ? 1 : p.disp_unit, dynamic ? ~std::uint64_t{0} : p.size, disp,
                                fp.lo, fp.hi);
  if (where == Placement::kDispOverflow) {
    return class_error(RMA_ERR_RMA_RANGE, "target_disp " + std::to_string(disp) + " x disp_unit " +
                                              std::to_string(p.disp_unit) + " overflows");
  }
  if (where == Placement::kExtentOverflow) {
    return class_error(RMA_ERR_RMA_RANGE, "target_disp " + std::to_string(disp) + " overflows with the datatype's extent");
  }
  const std::int64_t off = r.off, lo = r.lo, hi = r.hi;
  auto describe = [&]() {
    return std::string(call) + " to rank " + std::to_string(target) + ": target range [" +
           std::to_string(lo) + ", " + std::to_string(hi) + ") (target_disp " +
           std::to_string(disp) + (dynamic ? "" : " x disp_unit " + std::to_string(p.disp_unit)) +
           ", " + std::to_string(count) + " x " + type_name(ttype) + ")";
  };
  if (!dynamic) {
    if (where == Placement::kOutside) {
      return class_error(RMA_ERR_RMA_RANGE, describe() + " is outside the window of rank " +
                                                std::to_string(target) + ", which is " +
                                                std::to_string(p.size) + " bytes");
    }
    out.base = p.base + static_cast<std::uint64_t>(off);
    out.rkey = p.rkey;
    return {};
  }
  const auto ulo = static_cast<std::uint64_t>(lo), uhi = static_cast<std::uint64_t>(hi);
  for (int pass = 0; pass < 2; ++pass) {
    for (const Attachment& a : win->remote_tables[static_cast<std::size_t>(target)]) {
      if (lo >= 0 && ulo >= a.addr && uhi <= a.addr + a.len) {
        out.base = static_cast<std::uint64_t>(off);
        out.rkey = win->endpoint(target).rkey(endpoint::RemoteKeys::unpack(a.rkeys));
        return {};
      }
    }
    if (pass == 0) RMA_RETURN_IF_ERROR(read_remote_table(win, target));
  }
  return class_error(RMA_ERR_RMA_RANGE,
                     describe() + " is not inside memory attached to the dynamic window at rank " +
                         std::to_string(target) + " (" +
                         std::to_string(win->remote_tables[static_cast<std::size_t>(target)].size()) +
                         " attachments)");
}

Status post_planned(rma_win_s* win, const char* call, int target, Endpoint& ep,
                    TransferPlanner& planner, Opcode opcode, std::uint32_t rkey,
                    OnComplete&& last) {
  Sge sges[kMaxSgeArray];
  const std::span<Sge> span(sges, std::min(ep.max_sge(), kMaxSgeArray));
  TargetRange tr;
  while (planner.next(span, tr)) {
    WorkRequest wr;
    wr.opcode = opcode;
    wr.flags = 0;
    wr.sgl = {sges, tr.num_sge};
    wr.remote_addr = tr.addr;
    wr.rkey = rkey;
    const bool is_last = planner.planned_bytes() == planner.total_bytes();
    // The operation's last request is signaled: flush waits for it.
    const StatusCode rc = ep.post(wr, is_last ? std::move(last) : OnComplete{}, is_last);
    if (rc != StatusCode::kOk) return transport_error(win, call, target, rc);
  }
  if (planner.state() == TransferPlanner::State::kLkeyFailed) {
    return class_error(RMA_ERR_INTERN, std::string(call) + ": no registration covers origin address " +
                                           std::to_string(planner.failed_addr()));
  }
  return {};
}

}  // namespace rma::api
