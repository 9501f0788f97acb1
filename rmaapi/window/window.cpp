// Window life cycle: create, allocate, create_dynamic, attach, detach, free.
#include "window/window.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "comm/collectives.hpp"
#include "datatype/errors.hpp"
#include "rma/sdk/log.hpp"

namespace rma::api {
namespace {

constexpr Access kWindowAccess = kAllAccess;

void store(std::uint64_t* w, std::uint64_t v) noexcept { __atomic_store_n(w, v, __ATOMIC_RELEASE); }

// Rewrites this rank's attachment table (a seqlock: readers retry while the
// version is odd or changed under them).
void publish_table(rma_win_s* win) noexcept {
  std::uint64_t* t = win->meta + win->table_word();
  const std::uint64_t v = __atomic_load_n(&t[0], __ATOMIC_RELAXED);
  store(&t[0], v + 1);
  store(&t[1], win->attached.size());
  for (std::size_t i = 0; i < kMaxAttach; ++i) {
    const bool used = i < win->attached.size();
    store(&t[2 + 3 * i], used ? win->attached[i].addr : 0);
    store(&t[3 + 3 * i], used ? win->attached[i].len : 0);
    store(&t[4 + 3 * i], used ? win->attached[i].reg.rkeys().pack() : 0);
  }
  store(&t[0], v + 2);
}

}  // namespace

Status check_window(rma_win_s* win) {
  if (win == nullptr) return class_error(RMA_ERR_WIN, "the window is RMA_WIN_NULL");
  if (win->magic != rma_win_s::kMagic) {
    return class_error(RMA_ERR_WIN, "the handle is not a window (freed or corrupt)");
  }
  if (win->ctx != current_context()) {
    return class_error(RMA_ERR_WIN,
                       "the window belongs to another rank's context (or librma was finalized)");
  }
  return {};
}

Result<rma_win_s*> create_window(Context& ctx, const rma_comm_s& comm, int flavor, void* base,
                                 rma_Aint size, int disp_unit, const WindowHints& hints) {
  const int n = comm.size();
  auto win = std::make_unique<rma_win_s>();
  win->ctx = &ctx;
  win->comm = comm;
  win->comm.errhandler = RMA_ERRORS_ARE_FATAL;  // the window's own handler reports
  win->flavor = flavor;
  win->size = flavor == RMA_WIN_FLAVOR_DYNAMIC ? 0 : size;
  win->disp_unit = disp_unit;
  win->base = base;
  win->hints = hints;
  win->peers.resize(static_cast<std::size_t>(n));
  win->npeers = n;
  win->meta_words = 2 + 2 * static_cast<std::size_t>(n) +
                    (flavor == RMA_WIN_FLAVOR_DYNAMIC ? 2 + 3 * kMaxAttach : 0);

  // Memory and metadata (window_memory.hpp), then their registrations on
  // every rail. A rank that fails here still takes part in the descriptor
  // exchange, saying so, so that the others fail too instead of waiting.
  endpoint::EndpointManager& eps = ctx.eps();
  Status local = allocate_storage(ctx, comm, flavor, size, win->meta_words, hints.alloc_shared_noncontig,
                                  win->storage);
  if (local.ok()) {
    win->meta = win->storage.meta;
    if (flavor == RMA_WIN_FLAVOR_ALLOCATE || flavor == RMA_WIN_FLAVOR_SHARED) win->base = win->storage.data;
    if (win->size > 0) {
      // Exactly the window's bytes: a cached registration is page-rounded and
      // merged with its neighbours, and its rkey would reach them too.
      auto reg = eps.expose(win->base, static_cast<std::size_t>(win->size), kWindowAccess);
      if (reg.ok()) {
        win->win_reg = std::move(reg).value();
      } else {
        local = class_error(RMA_ERR_OTHER, "registering the window memory: " + reg.status().message());
      }
    }
  }
  if (local.ok()) {
    auto mreg = eps.expose(win->meta, win->meta_words * 8, kWindowAccess);
    if (mreg.ok()) {
      win->meta_reg = std::move(mreg).value();
    } else {
      local = class_error(RMA_ERR_OTHER, "registering window metadata: " + mreg.status().message());
    }
  }

  WindowDescriptor mine;
  mine.failed = local.ok() ? 0 : 1;
  if (local.ok()) {
    mine.base = reinterpret_cast<std::uint64_t>(win->base);
    mine.size = static_cast<std::uint64_t>(win->size);
    mine.meta = reinterpret_cast<std::uint64_t>(win->meta);
    mine.rkeys = win->win_reg ? win->win_reg.rkeys() : endpoint::RemoteKeys{};
    mine.meta_rkeys = win->meta_reg.rkeys();
    describe_storage(win->storage, mine);
  }
  mine.disp_unit = disp_unit;
  mine.flavor = flavor;
  auto all = comm_allgather(ctx, comm, {reinterpret_cast<const std::uint8_t*>(&mine), sizeof(mine)});
  if (!all.ok()) return class_error(RMA_ERR_OTHER, "exchanging window descriptors: " + all.status().message());
  RMA_RETURN_IF_ERROR(local);
  std::vector<WindowDescriptor> descriptors(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    const auto& b = (*all)[static_cast<std::size_t>(r)];
    if (b.size() != sizeof(WindowDescriptor)) {
      return class_error(RMA_ERR_OTHER, "rank " + std::to_string(r) + " sent a window descriptor of " +
                                            std::to_string(b.size()) + " bytes");
    }
    WindowDescriptor& d = descriptors[static_cast<std::size_t>(r)];
    std::memcpy(&d, b.data(), sizeof(WindowDescriptor));
    if (d.failed != 0) {
      return class_error(flavor == RMA_WIN_FLAVOR_SHARED ? RMA_ERR_RMA_SHARED : RMA_ERR_OTHER,
                         "rank " + std::to_string(r) +
                             " could not allocate or register its window memory (its error says why)");
    }
    if (d.flavor != flavor) {
      return class_error(RMA_ERR_RMA_FLAVOR,
                         "rank " + std::to_string(r) + " created its window with another call (flavor " +
                             std::to_string(d.flavor) + ", this rank " + std::to_string(flavor) + ")");
    }
    PeerWindow& p = win->peers[static_cast<std::size_t>(r)];
    p.base = d.base;
    p.size = d.size;
    p.meta = d.meta;
    p.rkeys = d.rkeys;
    p.meta_rkeys = d.meta_rkeys;
    p.disp_unit = d.disp_unit;
    p.flavor = d.flavor;
    p.rkey = win->endpoint(r).rkey(p.rkeys);
    p.meta_rkey = win->endpoint(r).rkey(p.meta_rkeys);
  }
  RMA_RETURN_IF_ERROR(map_peer_storage(ctx, comm, flavor, win->meta_words, descriptors, win->storage, win->peers));
  win->locks.assign(static_cast<std::size_t>(n), 0);
  win->access_count.assign(static_cast<std::size_t>(n), 0);
  win->starts_with.assign(static_cast<std::size_t>(n), 0);
  win->completes_expected.assign(static_cast<std::size_t>(n), 0);
  if (flavor == RMA_WIN_FLAVOR_DYNAMIC) win->remote_tables.resize(static_cast<std::size_t>(n));
  rma_win_s* w = win.release();
  ctx.windows.push_back(w);
  return w;
}

void release_window_memory(rma_win_s* win) noexcept {
  // Registrations before the memory they name.
  win->attached.clear();
  win->win_reg.reset();
  win->meta_reg.reset();
  win->storage = WindowStorage{};
  win->meta = nullptr;
}

Status check_free(rma_win_s* win) {
  if (win->lock_all || win->start_active || win->post_active ||
      std::any_of(win->locks.begin(), win->locks.end(), [](std::uint8_t l) { return l != 0; })) {
    return class_error(RMA_ERR_RMA_SYNC,
                       "the window still has an open lock, lock_all, start or post epoch: "
                       "close it before rma_win_free");
  }
  return {};
}

Status free_window(rma_win_s* win) {
  Context& ctx = *win->ctx;
  // Epochs are closed (check_free), so nothing is recorded; run it anyway.
  const Status deferred = run_deferred_accumulates(win, "rma_win_free");
  const StatusCode fc = ctx.eps().flush_all();
  // Collective: nobody may still access this rank's memory once it is gone
  // (peers that map it load and store until they reach this barrier).
  Status b = comm_barrier(ctx, win->comm);
  // The window's own registrations are exact (never cached): releasing them
  // below deregisters them, so a peer's stale rkey reaches nothing. Cached
  // origin registrations of the same memory are dropped too, since the
  // memory may be freed next.
  endpoint::EndpointManager& eps = ctx.eps();
  for (const auto& l : win->attached) eps.invalidate(reinterpret_cast<void*>(l.addr), l.len);
  if (win->size > 0) eps.invalidate(win->base, static_cast<std::size_t>(win->size));
  eps.invalidate(win->meta, win->meta_words * 8);
  release_window_memory(win);
  auto& ws = ctx.windows;
  ws.erase(std::remove(ws.begin(), ws.end(), win), ws.end());
  win->magic = 0;
  delete win;
  if (fc != StatusCode::kOk) {
    return class_error(RMA_ERR_OTHER, "operations on the window failed before it was freed (" +
                                          std::string(status_code_name(fc)) + ")");
  }
  if (!b.ok()) return class_error(RMA_ERR_OTHER, "barrier of rma_win_free: " + b.message());
  return deferred;
}

Status attach(rma_win_s* win, void* base, rma_Aint size) {
  if (win->flavor != RMA_WIN_FLAVOR_DYNAMIC) {
    return class_error(RMA_ERR_RMA_FLAVOR, "only windows made by rma_win_create_dynamic take attachments");
  }
  if (size < 0) return class_error(RMA_ERR_SIZE, "size " + std::to_string(size) + " is negative");
  if (size == 0) return {};
  if (base == nullptr) return class_error(RMA_ERR_BASE, "base is null");
  const auto a = reinterpret_cast<std::uint64_t>(base);
  const auto len = static_cast<std::uint64_t>(size);
  if (a + len < a) return class_error(RMA_ERR_SIZE, "base + size wraps the address space");
  for (const auto& l : win->attached) {
    if (a < l.addr + l.len && l.addr < a + len) {
      return class_error(RMA_ERR_RMA_ATTACH,
                         "[" + std::to_string(a) + ", " + std::to_string(a + len) +
                             ") overlaps memory already attached at " + std::to_string(l.addr) +
                             " (" + std::to_string(l.len) + " bytes)");
    }
  }
  if (win->attached.size() >= kMaxAttach) {
    return class_error(RMA_ERR_RMA_ATTACH, "a window holds at most " + std::to_string(kMaxAttach) +
                                               " attachments; detach one first");
  }
  auto reg = win->ctx->eps().expose(base, static_cast<std::size_t>(size), kWindowAccess);
  if (!reg.ok()) return class_error(RMA_ERR_RMA_ATTACH, "registering the memory: " + reg.status().message());
  win->attached.push_back({a, len, std::move(reg).value()});
  publish_table(win);
  return {};
}

Status detach(rma_win_s* win, const void* base) {
  if (win->flavor != RMA_WIN_FLAVOR_DYNAMIC) {
    return class_error(RMA_ERR_RMA_FLAVOR, "only windows made by rma_win_create_dynamic have attachments");
  }
  const auto a = reinterpret_cast<std::uint64_t>(base);
  auto it = std::find_if(win->attached.begin(), win->attached.end(),
                         [a](const rma_win_s::Local& l) { return l.addr == a; });
  if (it == win->attached.end()) {
    return class_error(RMA_ERR_RMA_ATTACH, "no memory is attached at " + std::to_string(a));
  }
  // Our own operations from this memory must be done before it goes.
  const StatusCode fc = win->ctx->eps().flush_all();
  win->ctx->eps().invalidate(reinterpret_cast<void*>(it->addr), it->len);
  win->attached.erase(it);
  publish_table(win);
  if (fc != StatusCode::kOk) {
    return class_error(RMA_ERR_OTHER, std::string("flushing before detach failed (") +
                                          std::string(status_code_name(fc)) + ")");
  }
  return {};
}

}  // namespace rma::api
