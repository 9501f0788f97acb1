// Setup, exit and query; the symmetric heap; teams; contexts.
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "rma/version.hpp"
#include "shmem/api.hpp"
#include "shmem/collectives.hpp"

using rma::shmem::Lock;
using rma::shmem::Runtime;
using rma::shmem::rt;

namespace {

void init_or_exit(const char* routine, int requested) {
  const rma::Status s = Runtime::init(requested);
  if (!s.ok()) {
    std::fprintf(stderr, "shmem: %s failed: %s\n", routine, s.to_string().c_str());
    std::fflush(stderr);
    std::exit(1);
  }
}

}  // namespace

SHMEM_DEFINE(void, init, (void)) { init_or_exit("shmem_init", SHMEM_THREAD_SINGLE); }

SHMEM_DEFINE(int, init_thread, (int requested, int* provided)) {
  if (requested < SHMEM_THREAD_SINGLE || requested > SHMEM_THREAD_MULTIPLE) {
    std::fprintf(stderr,
                 "shmem: shmem_init_thread: requested thread level %d is not SHMEM_THREAD_SINGLE, FUNNELED, "
                 "SERIALIZED or MULTIPLE\n",
                 requested);
    return -1;
  }
  init_or_exit("shmem_init_thread", requested);
  if (provided != nullptr) *provided = rma::shmem::runtime()->thread_level;
  return 0;
}

SHMEM_DEFINE(void, query_thread, (int* provided)) {
  Runtime& r = rt("shmem_query_thread");
  if (provided != nullptr) *provided = r.thread_level;
}

SHMEM_DEFINE(void, finalize, (void)) { Runtime::finalize(); }

SHMEM_DEFINE(void, global_exit, (int status)) {
  Runtime* r = rma::shmem::runtime();
  if (r == nullptr) std::exit(status);
  std::fflush(stdout);
  r->boot->abort(status, "shmem_global_exit(" + std::to_string(status) + ") called on PE " + std::to_string(r->me));
}

SHMEM_DEFINE(int, my_pe, (void)) { return rt("shmem_my_pe").me; }
SHMEM_DEFINE(int, n_pes, (void)) { return rt("shmem_n_pes").npes; }
SHMEM_DEFINE(int, pe_accessible, (int pe)) {
  Runtime& r = rt("shmem_pe_accessible");
  return pe >= 0 && pe < r.npes ? 1 : 0;
}
SHMEM_DEFINE(int, addr_accessible, (const void* addr, int pe)) {
  Runtime& r = rt("shmem_addr_accessible");
  return pe >= 0 && pe < r.npes && r.is_symmetric(addr, 1) ? 1 : 0;
}
// The heaps of the PEs on this machine are mapped into every one of them
// (SHMEM_TEAM_SHARED); global and static variables are reachable through
// the NIC only, except the PE's own.
SHMEM_DEFINE(void*, ptr, (const void* dest, int pe)) {
  Runtime& r = rt("shmem_ptr");
  return r.local_pointer(dest, pe);
}
SHMEM_DEFINE(void*, team_ptr, (shmem_team_t team, const void* dest, int pe)) {
  Runtime& r = rt("shmem_team_ptr");
  Lock lock(r);
  const shmem_team_s* t = r.team("shmem_team_ptr", team);
  if (pe < 0 || pe >= t->size) return nullptr;
  return r.local_pointer(dest, t->world_pe(pe));
}

SHMEM_DEFINE(void, info_get_version, (int* major, int* minor)) {
  if (major != nullptr) *major = SHMEM_MAJOR_VERSION;
  if (minor != nullptr) *minor = SHMEM_MINOR_VERSION;
}
SHMEM_DEFINE(void, info_get_name, (char* name)) {
  if (name == nullptr) return;
  std::snprintf(name, SHMEM_MAX_NAME_LEN, "%s %s", SHMEM_VENDOR_STRING, rma::version_string());
}
// Profiling control: librma has no profiling levels of its own; the level is
// for tools that intercept the shmem_ names.
SHMEM_DEFINE(void, pcontrol, (const int level, ...)) { (void)level; }

extern "C" void start_pes(int npes) {
  (void)npes;  // the job's size comes from the launcher, as the spec says
  pshmem_init();
}
extern "C" void pstart_pes(int npes) { start_pes(npes); }
extern "C" int _my_pe(void) { return rt("_my_pe").me; }
extern "C" int p_my_pe(void) { return _my_pe(); }
extern "C" int _num_pes(void) { return rt("_num_pes").npes; }
extern "C" int p_num_pes(void) { return _num_pes(); }

// ------------------------------------------------------------------ heap
// Every routine is collective: it runs the same allocator step on every PE,
// then synchronizes, so the block is allocated everywhere before anyone
// uses it (and freed nowhere before everyone stopped using it).
namespace {

constexpr std::size_t kMinAlign = 64;

// Where a block starts. A block of 2 KiB or more that the caller did not ask
// to align (shmem_malloc, calloc, realloc) starts 2064 bytes past a page
// boundary: 16 bytes past a cache line, where glibc's malloc puts the data of
// a large block, so a copy between the two moves whole lines on both sides;
// and half a page from both a page-aligned buffer and glibc's page + 16, so
// neither a get into such a buffer nor a put from it has its destination just
// ahead of its source modulo 4 KiB. There the CPU takes each load as
// depending on the store just made ("4K aliasing"): a get of 8 KiB from a
// page-aligned block into a malloc'd buffer, between two PEs of this
// machine, took 0.17-0.28 us against 0.09-0.13 us from a block at page +
// 2064 (bench/README.md). 16-byte alignment is what malloc promises too.
struct Placement {
  std::size_t alignment, phase;
};
constexpr std::size_t kColouredMin = 2048;
constexpr Placement kColoured{4096, 2048 + 16};

constexpr std::size_t kUnaligned = 0;  // the caller asked for no alignment

Placement placement(std::size_t bytes, std::size_t alignment) {
  if (alignment == kUnaligned && bytes >= kColouredMin) return kColoured;
  return {std::max(alignment, kMinAlign), 0};
}

void* heap_allocate(const char* routine, std::size_t bytes, std::size_t alignment, bool zero = false) {
  Runtime& r = rt(routine);
  Lock lock(r);
  void* out = nullptr;
  if (bytes != 0) {
    const Placement at = placement(bytes, alignment);
    if (auto off = r.alloc.allocate(bytes, at.alignment, at.phase)) {
      out = r.heap + *off;
      // Before the barrier: once it returns, other PEs may write here.
      if (zero) std::memset(out, 0, bytes);
    } else {
      // Every PE runs the same allocator step, so every PE gets here.
      char what[256];
      std::snprintf(what, sizeof what,
                    "the symmetric heap cannot hold %zu more bytes (largest free block %zu of %zu bytes; raise "
                    "SHMEM_SYMMETRIC_SIZE)",
                    bytes, r.alloc.largest_free(), r.alloc.capacity());
      if (!rma::shmem::heap_exhaustion_returns_null()) {
        r.fail(routine, -1, std::string(what) + "; RMA_SHMEM_HEAP_EXHAUSTED=null returns NULL instead");
      }
      std::fprintf(stderr, "shmem: %s on PE %d: %s: returning NULL (RMA_SHMEM_HEAP_EXHAUSTED=null)\n", routine, r.me,
                   what);
    }
  }
  r.quiet(routine);
  rma::shmem::barrier(r, rma::shmem::team_set(*r.world));
  return out;
}

std::size_t heap_offset(Runtime& r, const char* routine, void* ptr) {
  auto* p = static_cast<std::byte*>(ptr);
  const std::size_t off = static_cast<std::size_t>(p - r.heap);
  if (p < r.heap || p >= r.heap + r.heap_bytes || r.alloc.size_of(off) == 0) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%p was not returned by shmem_malloc/calloc/align/realloc (or was freed already)",
                  ptr);
    r.fail(routine, -1, buf);
  }
  return off;
}

}  // namespace

SHMEM_DEFINE(void*, malloc, (size_t size)) { return heap_allocate("shmem_malloc", size, kUnaligned); }
SHMEM_DEFINE(void*, malloc_with_hints, (size_t size, long hints)) {
  if ((hints & ~(SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE)) != 0) {
    rt("shmem_malloc_with_hints").fail("shmem_malloc_with_hints", -1, "unknown hint bits " + std::to_string(hints));
  }
  return heap_allocate("shmem_malloc_with_hints", size, kUnaligned);
}
SHMEM_DEFINE(void*, calloc, (size_t count, size_t size)) {
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(count, size, &bytes)) {
    Runtime& r = rt("shmem_calloc");
    std::fprintf(stderr, "shmem: shmem_calloc on PE %d: %zu x %zu bytes overflows: returning NULL\n", r.me, count, size);
    return nullptr;
  }
  return heap_allocate("shmem_calloc", bytes, kUnaligned, true);
}
SHMEM_DEFINE(void*, align, (size_t alignment, size_t size)) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    Runtime& r = rt("shmem_align");
    std::fprintf(stderr, "shmem: shmem_align on PE %d: alignment %zu is not a power of two: returning NULL\n", r.me,
                 alignment);
    return nullptr;
  }
  return heap_allocate("shmem_align", size, alignment);
}
SHMEM_DEFINE(void, free, (void* ptr)) {
  Runtime& r = rt("shmem_free");
  Lock lock(r);
  // Nobody may still be using the block: synchronize first.
  r.quiet("shmem_free");
  rma::shmem::barrier(r, rma::shmem::team_set(*r.world));
  if (ptr == nullptr) return;
  r.alloc.release(heap_offset(r, "shmem_free", ptr));
}
SHMEM_DEFINE(void*, realloc, (void* ptr, size_t size)) {
  if (ptr == nullptr) return pshmem_malloc(size);
  if (size == 0) {
    pshmem_free(ptr);
    return nullptr;
  }
  Runtime& r = rt("shmem_realloc");
  Lock lock(r);
  r.quiet("shmem_realloc");
  rma::shmem::barrier(r, rma::shmem::team_set(*r.world));
  const std::size_t off = heap_offset(r, "shmem_realloc", ptr);
  void* out = ptr;
  if (!r.alloc.resize_in_place(off, size)) {
    const std::size_t old = r.alloc.size_of(off);
    const Placement at = placement(size, kUnaligned);
    if (auto fresh = r.alloc.allocate(size, at.alignment, at.phase)) {
      out = r.heap + *fresh;
      std::memcpy(out, ptr, std::min(old, size));
      r.alloc.release(off);
    } else {
      if (!rma::shmem::heap_exhaustion_returns_null()) {
        r.fail("shmem_realloc", -1,
               "the symmetric heap cannot hold " + std::to_string(size) + " bytes (largest free block " +
                   std::to_string(r.alloc.largest_free()) +
                   "; raise SHMEM_SYMMETRIC_SIZE); RMA_SHMEM_HEAP_EXHAUSTED=null returns NULL instead");
      }
      std::fprintf(stderr,
                   "shmem: shmem_realloc on PE %d: the symmetric heap cannot hold %zu bytes (largest free block "
                   "%zu; raise SHMEM_SYMMETRIC_SIZE): returning NULL, the old block stays\n",
                   r.me, size, r.alloc.largest_free());
      out = nullptr;
    }
  }
  rma::shmem::barrier(r, rma::shmem::team_set(*r.world));
  return out;
}
extern "C" void* shmalloc(size_t size) { return pshmem_malloc(size); }
extern "C" void* shmemalign(size_t alignment, size_t size) { return pshmem_align(alignment, size); }
extern "C" void* shrealloc(void* ptr, size_t size) { return pshmem_realloc(ptr, size); }
extern "C" void shfree(void* ptr) { pshmem_free(ptr); }

// ------------------------------------------------------------------ teams
namespace {

// Completes the context's operations, returns its connections to the pool
// and keeps the object (magic cleared) so a stale handle is reported, not
// dereferenced after free. Runtime lock held.
void retire_context(Runtime& r, const char* routine, shmem_ctx_s* c) {
  r.quiet(routine, c->channel);
  if (c->channel != nullptr) c->channel->taken = false;
  c->channel = nullptr;
  c->magic = 0;
  r.retired_ctxs.push_back(c);
}

shmem_team_t make_team(Runtime& r, int start, int stride, int size, const shmem_team_config_t* config, long mask) {
  auto* t = new shmem_team_s();
  t->start = start;
  t->stride = size == 1 ? 1 : stride;
  t->size = size;
  t->my_pe = t->team_pe(r.me);
  if (config != nullptr && (mask & SHMEM_TEAM_NUM_CONTEXTS) != 0) t->config = *config;
  t->config_mask = mask;
  r.live_teams.insert(t);
  return t;
}

}  // namespace

SHMEM_DEFINE(int, team_my_pe, (shmem_team_t team)) {
  if (team == SHMEM_TEAM_INVALID) return -1;
  Runtime& r = rt("shmem_team_my_pe");
  Lock lock(r);
  return r.team("shmem_team_my_pe", team)->my_pe;
}
SHMEM_DEFINE(int, team_n_pes, (shmem_team_t team)) {
  if (team == SHMEM_TEAM_INVALID) return -1;
  Runtime& r = rt("shmem_team_n_pes");
  Lock lock(r);
  return r.team("shmem_team_n_pes", team)->size;
}
SHMEM_DEFINE(int, team_get_config, (shmem_team_t team, long config_mask, shmem_team_config_t* config)) {
  Runtime& r = rt("shmem_team_get_config");
  Lock lock(r);
  const shmem_team_s* t = r.team("shmem_team_get_config", team);
  if (config == nullptr) return -1;
  if ((config_mask & SHMEM_TEAM_NUM_CONTEXTS) != 0) config->num_contexts = t->config.num_contexts;
  return 0;
}
SHMEM_DEFINE(int, team_translate_pe, (shmem_team_t src_team, int src_pe, shmem_team_t dest_team)) {
  if (src_team == SHMEM_TEAM_INVALID || dest_team == SHMEM_TEAM_INVALID) return -1;
  Runtime& r = rt("shmem_team_translate_pe");
  Lock lock(r);
  const shmem_team_s* s = r.team("shmem_team_translate_pe", src_team);
  const shmem_team_s* d = r.team("shmem_team_translate_pe", dest_team);
  if (src_pe < 0 || src_pe >= s->size) return -1;
  return d->team_pe(s->world_pe(src_pe));
}

SHMEM_DEFINE(int, team_split_strided,
             (shmem_team_t parent_team, int start, int stride, int size, const shmem_team_config_t* config,
              long config_mask, shmem_team_t* new_team)) {
  constexpr const char* kRoutine = "shmem_team_split_strided";
  if (new_team != nullptr) *new_team = SHMEM_TEAM_INVALID;
  if (parent_team == SHMEM_TEAM_INVALID) return -1;
  Runtime& r = rt(kRoutine);
  Lock lock(r);
  const shmem_team_s* p = r.team(kRoutine, parent_team);
  if (new_team == nullptr) r.fail(kRoutine, -1, "new_team is NULL");
  const long last = start + static_cast<long>(size - 1) * stride;
  if (size < 1 || start < 0 || start >= p->size || (size > 1 && stride < 1) || last >= p->size) {
    r.fail(kRoutine, -1,
           "start " + std::to_string(start) + ", stride " + std::to_string(stride) + ", size " + std::to_string(size) +
               " do not describe PEs of the parent team (size " + std::to_string(p->size) + ")");
  }
  // Collective over the parent: nobody uses the new team before all made it.
  rma::shmem::barrier(r, rma::shmem::team_set(*p));
  const int wstart = p->world_pe(start);
  const int wstride = p->stride * (size > 1 ? stride : 1);
  shmem_team_s probe;
  probe.start = wstart;
  probe.stride = wstride;
  probe.size = size;
  if (probe.team_pe(r.me) < 0) return 0;  // not a member: SHMEM_TEAM_INVALID
  *new_team = make_team(r, wstart, wstride, size, config, config_mask);
  return 0;
}

SHMEM_DEFINE(int, team_split_2d,
             (shmem_team_t parent_team, int xrange, const shmem_team_config_t* xaxis_config, long xaxis_mask,
              shmem_team_t* xaxis_team, const shmem_team_config_t* yaxis_config, long yaxis_mask,
              shmem_team_t* yaxis_team)) {
  constexpr const char* kRoutine = "shmem_team_split_2d";
  if (xaxis_team != nullptr) *xaxis_team = SHMEM_TEAM_INVALID;
  if (yaxis_team != nullptr) *yaxis_team = SHMEM_TEAM_INVALID;
  if (parent_team == SHMEM_TEAM_INVALID) return -1;
  Runtime& r = rt(kRoutine);
  Lock lock(r);
  const shmem_team_s* p = r.team(kRoutine, parent_team);
  if (xaxis_team == nullptr || yaxis_team == nullptr) r.fail(kRoutine, -1, "xaxis_team or yaxis_team is NULL");
  if (xrange < 1) r.fail(kRoutine, -1, "xrange " + std::to_string(xrange) + " is not positive");
  const int n = p->size;
  const int x = std::min(xrange, n);
  const int me = p->my_pe;
  rma::shmem::barrier(r, rma::shmem::team_set(*p));
  // x-axis: parent PEs [row * x, row * x + x) (the last row may be shorter);
  // y-axis: parent PEs with the same column, stride x.
  const int row = me / x, col = me % x;
  const int xsize = std::min(x, n - row * x);
  const int ysize = (n - col + x - 1) / x;
  *xaxis_team = make_team(r, p->world_pe(row * x), p->stride, xsize, xaxis_config, xaxis_mask);
  *yaxis_team = make_team(r, p->world_pe(col), p->stride * x, ysize, yaxis_config, yaxis_mask);
  return 0;
}

SHMEM_DEFINE(void, team_destroy, (shmem_team_t team)) {
  constexpr const char* kRoutine = "shmem_team_destroy";
  if (team == SHMEM_TEAM_INVALID) return;
  Runtime& r = rt(kRoutine);
  Lock lock(r);
  shmem_team_s* t = r.team(kRoutine, team);
  if (t->predefined) r.fail(kRoutine, -1, "SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED cannot be destroyed");
  // Contexts created on the team are destroyed with it (the spec leaves
  // using them afterwards undefined; here it is an error naming the call).
  for (auto it = r.live_ctxs.begin(); it != r.live_ctxs.end();) {
    auto* c = static_cast<shmem_ctx_s*>(const_cast<void*>(*it));
    if (c->team == t) {
      retire_context(r, kRoutine, c);
      it = r.live_ctxs.erase(it);
    } else {
      ++it;
    }
  }
  r.quiet(kRoutine);
  rma::shmem::barrier(r, rma::shmem::team_set(*t));
  r.live_teams.erase(t);
  t->magic = 0;
  delete t;
}

// ------------------------------------------------------------------ contexts
// A context is a team plus options. A private context (SHMEM_CTX_PRIVATE)
// gets connections of its own from the pool made at shmem_init
// (RMA_SHMEM_PRIVATE_CONTEXTS, default 4) while one is free, and then takes
// no lock at all; other contexts use the PE's shared connections.
SHMEM_DEFINE(int, team_create_ctx, (shmem_team_t team, long options, shmem_ctx_t* ctx)) {
  constexpr const char* kRoutine = "shmem_team_create_ctx";
  if (ctx != nullptr) *ctx = SHMEM_CTX_INVALID;
  if (team == SHMEM_TEAM_INVALID) return -1;
  Runtime& r = rt(kRoutine);
  Lock lock(r);
  shmem_team_s* t = r.team(kRoutine, team);
  if (ctx == nullptr) r.fail(kRoutine, -1, "ctx is NULL");
  if ((options & ~(SHMEM_CTX_PRIVATE | SHMEM_CTX_SERIALIZED | SHMEM_CTX_NOSTORE)) != 0) {
    r.fail(kRoutine, -1, "unknown option bits in " + std::to_string(options));
  }
  if ((t->config_mask & SHMEM_TEAM_NUM_CONTEXTS) != 0 && t->contexts.load() >= t->config.num_contexts) {
    return -1;  // the team was created for fewer contexts
  }
  auto* c = new shmem_ctx_s();
  c->team = t;
  c->options = options;
  if ((options & SHMEM_CTX_PRIVATE) != 0) {
    for (std::size_t i = 1; i < r.channels.size(); ++i) {
      if (!r.channels[i]->taken) {
        r.channels[i]->taken = true;
        c->channel = r.channels[i].get();
        break;
      }
    }
  }
  ++t->contexts;
  r.live_ctxs.insert(c);
  *ctx = c;
  return 0;
}
SHMEM_DEFINE(int, ctx_create, (long options, shmem_ctx_t* ctx)) {
  return pshmem_team_create_ctx(SHMEM_TEAM_WORLD, options, ctx);
}
SHMEM_DEFINE(void, ctx_destroy, (shmem_ctx_t ctx)) {
  constexpr const char* kRoutine = "shmem_ctx_destroy";
  if (ctx == SHMEM_CTX_INVALID) return;
  Runtime& r = rt(kRoutine);
  Lock lock(r);
  shmem_ctx_s* c = r.context(kRoutine, ctx);
  if (c == SHMEM_CTX_DEFAULT) r.fail(kRoutine, -1, "SHMEM_CTX_DEFAULT cannot be destroyed");
  --c->team->contexts;
  r.live_ctxs.erase(c);
  retire_context(r, kRoutine, c);
}
SHMEM_DEFINE(int, ctx_get_team, (shmem_ctx_t ctx, shmem_team_t* team)) {
  if (team == nullptr) return -1;
  if (ctx == SHMEM_CTX_INVALID) {
    *team = SHMEM_TEAM_INVALID;
    return -1;
  }
  Runtime& r = rt("shmem_ctx_get_team");
  Lock lock(r);
  *team = r.context("shmem_ctx_get_team", ctx)->team;
  return 0;
}
