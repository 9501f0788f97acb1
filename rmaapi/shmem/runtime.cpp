#include "shmem/runtime.hpp"

#include <elf.h>
#include <link.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "rma/sdk/config.hpp"
#include "rma/sdk/registry.hpp"
#include "rma/version.hpp"
#include "shmem/direct.hpp"
#include "window/direct_copy.hpp"

// The predefined handles: fixed objects, so the handles are constants that
// exist before shmem_init (their contents are filled in by it).
static shmem_team_s g_world_team;
static shmem_team_s g_shared_team;
static shmem_ctx_s g_default_ctx;
extern "C" {
shmem_team_t SHMEM_TEAM_WORLD = &g_world_team;
shmem_team_t SHMEM_TEAM_SHARED = &g_shared_team;
shmem_ctx_t SHMEM_CTX_DEFAULT = &g_default_ctx;
}

namespace rma::shmem {
namespace {

Runtime* g_runtime = nullptr;
constexpr std::size_t kDefaultHeapBytes = std::size_t{128} << 20;
constexpr std::size_t kPage = 4096;

// SHMEM_SYMMETRIC_SIZE: bytes with an optional K/M/G/T scaling suffix
// (powers of 1024), as the specification describes the variable.
Result<std::size_t> symmetric_size() {
  const char* v = std::getenv("SHMEM_SYMMETRIC_SIZE");
  if (v == nullptr || *v == '\0') return kDefaultHeapBytes;
  char* end = nullptr;
  errno = 0;
  const double number = std::strtod(v, &end);
  double scale = 1;
  if (end != nullptr && *end != '\0') {
    switch (*end) {
      case 'k': case 'K': scale = 1024.0; break;
      case 'm': case 'M': scale = 1024.0 * 1024; break;
      case 'g': case 'G': scale = 1024.0 * 1024 * 1024; break;
      case 't': case 'T': scale = 1024.0 * 1024 * 1024 * 1024; break;
      default: end = nullptr;
    }
    if (end != nullptr && end[1] != '\0' && !((end[1] == 'b' || end[1] == 'B') && end[2] == '\0')) end = nullptr;
  }
  if (end == nullptr || end == v || errno != 0 || !(number > 0) || number * scale > 1e15) {
    return invalid_argument(std::string("SHMEM_SYMMETRIC_SIZE=") + v +
                            ": expected a positive number of bytes with an optional K, M, G or T suffix "
                            "(e.g. 64M)");
  }
  return static_cast<std::size_t>(number * scale);
}

// The writable PT_LOAD segments of the executable (data and bss), minus the
// part that becomes read-only after relocation (PT_GNU_RELRO), in whole
// pages. The loader write-protects the RELRO pages up to the page that holds
// its end (glibc rounds that end down), and a segment need not start on a
// page: ld.bfd pads the writable data to the next page, lld starts it right
// after the RELRO part in the same page as the file offset, so the page a
// segment starts in is part of it.
struct SegmentSearch {
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> ranges;
};
int find_segments(struct dl_phdr_info* info, std::size_t, void* data) {
  auto* s = static_cast<SegmentSearch*>(data);
  std::uintptr_t relro_end = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_GNU_RELRO) relro_end = info->dlpi_addr + ph.p_vaddr + ph.p_memsz;
  }
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || (ph.p_flags & PF_W) == 0 || ph.p_memsz == 0) continue;
    std::uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    std::uintptr_t hi = lo + ph.p_memsz;
    lo = std::max(lo & ~(kPage - 1), relro_end & ~(kPage - 1));
    hi = (hi + kPage - 1) & ~(kPage - 1);
    if (hi > lo) s->ranges.emplace_back(lo, hi);
  }
  return 1;  // the first object is the executable: stop
}

constexpr const char* kPrivateContextsVar = "RMA_SHMEM_PRIVATE_CONTEXTS";
constexpr const char* kMaxInlineVar = "RMA_SHMEM_MAX_INLINE";
constexpr const char* kHeapExhaustedVar = "RMA_SHMEM_HEAP_EXHAUSTED";
Status declare_variables() {
  RMA_RETURN_IF_ERROR(config::declare(
      {kPrivateContextsVar, "4",
       "OpenSHMEM private contexts (SHMEM_CTX_PRIVATE) that get connections of their own, "
       "made at shmem_init (0..64; further private contexts share the PE's, locked)"}));
  RMA_RETURN_IF_ERROR(config::declare(
      {kHeapExhaustedVar, "exit",
       "what shmem_malloc/calloc/align/realloc do when the symmetric heap cannot hold the block: "
       "exit (print what was asked and what is free, then end the job as shmem_global_exit does) or "
       "null (return NULL, as the specification allows, for programs that check)"}));
  return config::declare({kMaxInlineVar, "256",
                          "largest OpenSHMEM put carried inline in the work request (capped by the device; "
                          "larger ones up to 256 bytes are copied to a registered bounce slot)"});
}
// Declared at load time so that rma_info lists it without a shmem_init.
const bool kDeclared = declare_variables().ok();

Result<std::uint64_t> private_context_pool() {
  (void)kDeclared;
  RMA_RETURN_IF_ERROR(declare_variables());
  RMA_ASSIGN_OR_RETURN(std::uint64_t n, config::get_size(kPrivateContextsVar));
  if (n > 64) {
    return invalid_argument(std::string(kPrivateContextsVar) + "=" + std::to_string(n) +
                            ": expected a number of contexts 0..64");
  }
  return n;
}

}  // namespace

Runtime* runtime() noexcept { return g_runtime; }

bool heap_exhaustion_returns_null() {
  (void)kDeclared;
  auto v = config::get_string(kHeapExhaustedVar);
  return v.ok() && *v == "null";
}

// Maps the heap of every PE on this host (the engine's host identity: same
// kernel boot, pid and network namespace) by /proc/<pid>/fd/<memfd>, which
// needs the same user, and makes SHMEM_TEAM_SHARED the PEs that all of them
// could map: a strided set holding this PE, or this PE alone.
Status Runtime::map_peer_heaps() {
  struct NodeInfo {
    std::int32_t pid;
    std::int32_t fd;
  } mine{};
  mine.pid = static_cast<std::int32_t>(::getpid());
  mine.fd = heap_fd;
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(&mine);
  RMA_ASSIGN_OR_RETURN(auto all, boot->allgather({bytes, sizeof mine}));
  peer_heaps.assign(static_cast<std::size_t>(npes), nullptr);
  peer_heaps[static_cast<std::size_t>(me)] = heap;
  std::vector<int> local_pes;
  bool mapped_all = heap_fd >= 0;
  for (int pe = 0; pe < npes; ++pe) {
    NodeInfo theirs{};
    if (all[static_cast<std::size_t>(pe)].size() != sizeof theirs) return internal_error("malformed node info");
    std::memcpy(&theirs, all[static_cast<std::size_t>(pe)].data(), sizeof theirs);
    if (!eps->same_host(pe)) continue;
    local_pes.push_back(pe);
    if (pe == me) continue;
    void* p = MAP_FAILED;
    if (theirs.fd >= 0 && heap_fd >= 0) {
      const std::string path = "/proc/" + std::to_string(theirs.pid) + "/fd/" + std::to_string(theirs.fd);
      const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
      if (fd >= 0) {
        p = ::mmap(nullptr, heap_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
        ::close(fd);
      }
    }
    if (p == MAP_FAILED) {
      mapped_all = false;
    } else {
      peer_heaps[static_cast<std::size_t>(pe)] = static_cast<std::byte*>(p);
    }
  }
  // The shared team must be the same on all its members: it is the
  // machine's PEs only if every one of them mapped every other.
  const std::uint8_t ok = mapped_all ? 1 : 0;
  RMA_ASSIGN_OR_RETURN(auto oks, boot->allgather({&ok, 1}));
  bool everyone = true;
  for (int pe : local_pes) everyone = everyone && oks[static_cast<std::size_t>(pe)].size() == 1 && oks[static_cast<std::size_t>(pe)][0] == 1;
  const int stride = local_pes.size() > 1 ? local_pes[1] - local_pes[0] : 1;
  for (std::size_t i = 1; i < local_pes.size(); ++i) {
    everyone = everyone && local_pes[i] - local_pes[i - 1] == stride;
  }
  if (everyone && !local_pes.empty()) {
    shared->start = local_pes.front();
    shared->stride = stride;
    shared->size = static_cast<int>(local_pes.size());
  } else {
    shared->start = me;
    shared->stride = 1;
    shared->size = 1;
  }
  shared->my_pe = shared->team_pe(me);
  return {};
}

void Runtime::choose_direct_heaps() {
  direct_heaps.assign(static_cast<std::size_t>(npes), nullptr);
  any_direct = false;
  if (eps->plan().forced) return;  // everything on the forced provider's endpoints
  for (int pe = 0; pe < npes; ++pe) {
    std::byte* h = peer_heaps[static_cast<std::size_t>(pe)];
    if (h == nullptr || eps->endpoint(pe).rail() != endpoint::kNodeRail) continue;
    direct_heaps[static_cast<std::size_t>(pe)] = h;
    any_direct = true;
  }
}

void* Runtime::local_pointer(const void* addr, int wpe) const noexcept {
  if (wpe == me) return is_symmetric(addr, 1) ? const_cast<void*>(addr) : nullptr;
  if (wpe < 0 || wpe >= npes || shared->team_pe(wpe) < 0) return nullptr;
  const auto* a = static_cast<const std::byte*>(addr);
  if (a < heap || a >= heap + heap_bytes) return nullptr;  // globals are private to each process
  std::byte* base = peer_heaps[static_cast<std::size_t>(wpe)];
  return base == nullptr ? nullptr : base + (a - heap);
}

Status Runtime::open_channel(const endpoint::TransportPlan& plan, const std::string& key) {
  auto ch = std::make_unique<Channel>();
  endpoint::EndpointOptions eo;
  eo.bootstrap_key = key;
  RMA_ASSIGN_OR_RETURN(std::uint64_t max_inline, config::get_size(kMaxInlineVar));
  eo.max_inline = static_cast<std::uint32_t>(std::min<std::uint64_t>(max_inline, 1u << 20));
  RMA_ASSIGN_OR_RETURN(ch->eps, endpoint::EndpointManager::create(*boot, plan, eo));
  PeerAreas mine = local;
  for (std::uint32_t i = 0; i < local.count; ++i) {
    auto reg = ch->eps->expose(reinterpret_cast<void*>(local.areas[i].base), local.areas[i].length, kAllAccess);
    if (!reg.ok()) {
      return reg.status().with_context(i == 0 ? std::string("registering the symmetric heap")
                                              : "registering the program's data segment " + std::to_string(i));
    }
    mine.areas[i].rkeys = reg->rkeys();
    ch->regs.push_back(std::move(reg).value());
  }
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(&mine);
  RMA_ASSIGN_OR_RETURN(auto all, boot->allgather({bytes, sizeof(PeerAreas)}));
  ch->peers.resize(static_cast<std::size_t>(npes));
  for (int pe = 0; pe < npes; ++pe) {
    const auto& v = all[static_cast<std::size_t>(pe)];
    if (v.size() != sizeof(PeerAreas)) return internal_error("PE " + std::to_string(pe) + " sent a malformed area table");
    std::memcpy(&ch->peers[static_cast<std::size_t>(pe)], v.data(), sizeof(PeerAreas));
    const PeerAreas& p = ch->peers[static_cast<std::size_t>(pe)];
    if (p.count != local.count) {
      return failed_precondition("PE " + std::to_string(pe) + " has " + std::to_string(p.count) +
                                 " symmetric areas, PE " + std::to_string(me) + " has " + std::to_string(local.count) +
                                 ": every PE must run the same executable");
    }
    for (std::uint32_t i = 0; i < p.count; ++i) {
      if (p.areas[i].length != local.areas[i].length) {
        return failed_precondition("symmetric area " + std::to_string(i) + " is " +
                                   std::to_string(p.areas[i].length) + " bytes on PE " + std::to_string(pe) +
                                   " but " + std::to_string(local.areas[i].length) + " on PE " +
                                   std::to_string(me) +
                                   ": every PE must run the same executable with the same SHMEM_SYMMETRIC_SIZE");
      }
    }
  }
  channels.push_back(std::move(ch));
  return {};
}

Runtime& rt(const char* routine) {
  Runtime* r = g_runtime;
  if (r == nullptr) [[unlikely]] {
    std::fprintf(stderr,
                 "shmem: %s called before shmem_init (or after shmem_finalize): call shmem_init first\n",
                 routine);
    std::fflush(stderr);
    std::_Exit(1);
  }
  return *r;
}

Status Runtime::init(int requested) {
  if (g_runtime != nullptr) return {};
  auto r = std::make_unique<Runtime>();
  RMA_RETURN_IF_ERROR(r->setup(requested));
  g_runtime = r.release();
  return {};
}

Status Runtime::setup(int requested) {
  thread_level = std::clamp(requested, SHMEM_THREAD_SINGLE, SHMEM_THREAD_MULTIPLE);
  RMA_ASSIGN_OR_RETURN(boot, open_bootstrap());
  me = boot->rank();
  npes = boot->size();
  RMA_ASSIGN_OR_RETURN(heap_bytes, symmetric_size());
  heap_bytes = (heap_bytes + kPage - 1) & ~(kPage - 1);
  RMA_ASSIGN_OR_RETURN(endpoint::TransportPlan plan, endpoint::plan_transports(*boot));
  for (const auto& dev : plan.devices) {
    if (dev && !dev->caps().atomics) {
      return failed_precondition("device " + dev->name() + " has no 8-byte atomics, which OpenSHMEM's AMOs need");
    }
  }
  // The reserved part of the heap: signal counters, then collective scratch.
  const std::size_t signal_bytes = (static_cast<std::size_t>(npes) * 8 + 63) & ~std::size_t{63};
  // One reduction slot per source PE (a tree child writes only its own
  // slot, so collectives of different teams never share a slot).
  slot_bytes = std::clamp<std::size_t>((std::size_t{8} << 20) / static_cast<std::size_t>(npes), 1024, 64 * 1024) &
               ~std::size_t{63};
  reserved = signal_bytes + (static_cast<std::size_t>(npes) + 1) * slot_bytes;
  reserved = (reserved + kPage - 1) & ~(kPage - 1);
  heap_bytes += reserved;
  // The heap lives in a memfd so that PEs on the same machine can map each
  // other's (shmem_ptr, SHMEM_TEAM_SHARED); anonymous memory when that fails.
  heap_fd = ::memfd_create("rma-shmem-heap", MFD_CLOEXEC);
  if (heap_fd >= 0 && ::ftruncate(heap_fd, static_cast<off_t>(heap_bytes)) != 0) {
    ::close(heap_fd);
    heap_fd = -1;
  }
  void* mem = heap_fd >= 0 ? ::mmap(nullptr, heap_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, heap_fd, 0)
                           : ::mmap(nullptr, heap_bytes, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mem == MAP_FAILED) {
    return io_error("cannot map a symmetric heap of " + std::to_string(heap_bytes) + " bytes (SHMEM_SYMMETRIC_SIZE)");
  }
  heap = static_cast<std::byte*>(mem);
  signal_in = reinterpret_cast<volatile std::uint64_t*>(heap);
  scratch = heap + signal_bytes;
  accumulator = scratch + static_cast<std::size_t>(npes) * slot_bytes;
  alloc.reset(reserved, heap_bytes);
  sent.assign(static_cast<std::size_t>(npes), 0);
  consumed.assign(static_cast<std::size_t>(npes), 0);

  SegmentSearch search;
  dl_iterate_phdr(find_segments, &search);
  if (search.ranges.size() + 1 > static_cast<std::size_t>(kMaxAreas)) search.ranges.resize(kMaxAreas - 1);
  local.count = 0;
  local.areas[local.count++] = Area{reinterpret_cast<std::uint64_t>(heap), heap_bytes, 0};
  for (auto [lo, hi] : search.ranges) local.areas[local.count++] = Area{lo, hi - lo, 0};

  // Channel 0 (shared), then the private contexts' pool.
  RMA_ASSIGN_OR_RETURN(std::uint64_t pool, private_context_pool());
  RMA_RETURN_IF_ERROR(open_channel(plan, "rma.endpoints"));
  for (std::uint64_t i = 0; i < pool; ++i) {
    RMA_RETURN_IF_ERROR(open_channel(plan, "rma.shmem.ctx" + std::to_string(i))
                            .with_context("connections of private context " + std::to_string(i) +
                                          " (RMA_SHMEM_PRIVATE_CONTEXTS)"));
  }
  eps = channels[0]->eps.get();
  for (std::uint32_t i = 0; i < local.count; ++i) local.areas[i].rkeys = channels[0]->regs[i].rkeys();

  world = &g_world_team;
  shared = &g_shared_team;
  world->magic = shmem_team_s::kMagic;
  world->start = 0;
  world->stride = 1;
  world->size = npes;
  world->my_pe = me;
  world->predefined = true;
  RMA_RETURN_IF_ERROR(map_peer_heaps());
  choose_direct_heaps();
  shared->magic = shmem_team_s::kMagic;
  shared->predefined = true;
  g_default_ctx.magic = shmem_ctx_s::kMagic;
  g_default_ctx.team = world;
  g_default_ctx.options = 0;
  live_teams = {world, shared};
  live_ctxs = {&g_default_ctx};
  RMA_RETURN_IF_ERROR(boot->barrier());
  report_environment();
  return {};
}

// The specification's environment variables SHMEM_VERSION, SHMEM_INFO and
// SHMEM_DEBUG: set (to anything) they print the library's version, what
// the variables do, and (every PE) how this PE was set up.
void Runtime::report_environment() const {
  auto set = [](const char* name) { return std::getenv(name) != nullptr; };
  if (me == 0 && (set("SHMEM_VERSION") || set("SHMEM_INFO"))) {
    std::printf("%s %d.%d (librma %s)\n", SHMEM_VENDOR_STRING, SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION,
                version_string());
  }
  if (me == 0 && set("SHMEM_INFO")) {
    std::printf(
        "  SHMEM_SYMMETRIC_SIZE  bytes of symmetric heap per PE, with an optional K/M/G/T suffix (now %zu)\n"
        "  SHMEM_VERSION         print the library version at start-up\n"
        "  SHMEM_INFO            print this text at start-up\n"
        "  SHMEM_DEBUG           print how every PE was set up (device, channels, areas, shared team)\n"
        "  RMA_SHMEM_PRIVATE_CONTEXTS  private contexts with connections of their own (now %zu)\n"
        "  RMA_PROVIDER, RMA_SOFTROCE_PORT, ...  the engine's variables: run rma_info\n",
        heap_bytes - reserved, channels.size() - 1);
  }
  if (set("SHMEM_DEBUG")) {
    std::fprintf(stderr,
                 "shmem: PE %d of %d: bootstrap %.*s, transports: %s, %zu channel(s), heap %zu bytes (+%zu reserved) "
                 "%s, %u symmetric areas, shared team %d PE(s) from PE %d stride %d\n",
                 me, npes, static_cast<int>(boot->kind().size()), boot->kind().data(), eps->plan().summary.c_str(),
                 channels.size(), heap_bytes - reserved, reserved, heap_fd >= 0 ? "in a memfd" : "anonymous",
                 local.count, shared->size, shared->start, shared->stride);
  }
  std::fflush(stdout);
}

void Runtime::finalize() {
  Runtime* r = g_runtime;
  if (r == nullptr) return;
  {
    Lock lock(*r);
    r->quiet("shmem_finalize");
  }
  (void)r->boot->barrier();
  g_runtime = nullptr;
  for (shmem_ctx_s* c : r->retired_ctxs) delete c;
  for (const void* c : r->live_ctxs) {
    if (c != &g_default_ctx) delete static_cast<const shmem_ctx_s*>(c);
  }
  r->eps = nullptr;
  r->channels.clear();
  for (std::byte* p : r->peer_heaps) {
    if (p != nullptr && p != r->heap) ::munmap(p, r->heap_bytes);
  }
  if (r->heap != nullptr) ::munmap(r->heap, r->heap_bytes);
  if (r->heap_fd >= 0) ::close(r->heap_fd);
  g_default_ctx.magic = 0;
  g_world_team.magic = 0;
  g_shared_team.magic = 0;
  delete r;
}

// ------------------------------------------------------------------ checks

void Runtime::fail(const char* routine, int pe, const std::string& what) {
  std::string msg = std::string(routine) + " on PE " + std::to_string(me) +
                    (pe >= 0 ? " (target PE " + std::to_string(pe) + ")" : std::string()) + ": " + what;
  // The bootstrap prints the message with this PE's number and ends every
  // PE of the job (shmem_global_exit semantics).
  std::fflush(stdout);
  boot->abort(1, "shmem: " + msg);
  std::_Exit(1);  // not reached: abort does not return
}

int Runtime::world_pe(const char* routine, shmem_ctx_t c, int pe) {
  const shmem_team_s* t = c == SHMEM_CTX_DEFAULT ? world : context(routine, c)->team;
  if (pe < 0 || pe >= t->size) [[unlikely]] {
    fail(routine, -1,
         "PE " + std::to_string(pe) + " is out of range: the " +
             (t == world ? std::string("job") : std::string("context's team")) + " has " + std::to_string(t->size) +
             " PEs (0.." + std::to_string(t->size - 1) + ")");
  }
  return t->world_pe(pe);
}

shmem_team_s* Runtime::team(const char* routine, shmem_team_t t) {
  if (t == SHMEM_TEAM_INVALID) fail(routine, -1, "the team is SHMEM_TEAM_INVALID");
  if (live_teams.count(t) == 0 || t->magic != shmem_team_s::kMagic) {
    fail(routine, -1, "the team handle is not a live team (destroyed by shmem_team_destroy, or never created)");
  }
  return t;
}

shmem_ctx_s* Runtime::context(const char* routine, shmem_ctx_t c) {
  if (c == SHMEM_CTX_INVALID) fail(routine, -1, "the context is SHMEM_CTX_INVALID");
  // Destroyed contexts are kept (retired_ctxs) with their magic cleared, so
  // this read is safe and needs no lock (private contexts take none).
  if (c->magic != shmem_ctx_s::kMagic) {
    fail(routine, -1, "the context handle is not a live context (destroyed by shmem_ctx_destroy, or never created)");
  }
  return c;
}

Channel* Runtime::channel_of(const char* routine, shmem_ctx_t c) {
  if (c == SHMEM_CTX_DEFAULT) return nullptr;
  return context(routine, c)->channel;
}

bool Runtime::is_symmetric(const void* addr, std::size_t bytes) const noexcept {
  const auto a = reinterpret_cast<std::uint64_t>(addr);
  for (std::uint32_t i = 0; i < local.count; ++i) {
    const Area& ar = local.areas[i];
    if (a >= ar.base && bytes <= ar.length && a - ar.base <= ar.length - bytes) return true;
  }
  return false;
}

bool Runtime::local_key(const void* addr, std::size_t bytes, int rail, std::uint32_t& lkey,
                        const Channel& ch) const noexcept {
  const auto a = reinterpret_cast<std::uint64_t>(addr);
  for (std::uint32_t i = 0; i < local.count; ++i) {
    const Area& ar = local.areas[i];
    if (a >= ar.base && bytes <= ar.length && a - ar.base <= ar.length - bytes) {
      lkey = ch.regs[i].lkey(rail);
      return true;
    }
  }
  return false;
}

Remote Runtime::remote(const char* routine, const void* local_addr, std::size_t bytes, int wpe, const Channel& ch) {
  const auto a = reinterpret_cast<std::uint64_t>(local_addr);
  for (std::uint32_t i = 0; i < local.count; ++i) {
    const Area& ar = local.areas[i];
    if (a >= ar.base && bytes <= ar.length && a - ar.base <= ar.length - bytes) [[likely]] {
      const Area& theirs = ch.peers[static_cast<std::size_t>(wpe)].areas[i];
      return Remote{theirs.base + (a - ar.base), ch.eps->endpoint(wpe).rkey(theirs.rkeys)};
    }
  }
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "address %p (+%zu bytes) is not symmetric: it is neither in the symmetric heap (shmem_malloc) "
                "nor in the program's global or static variables",
                local_addr, bytes);
  fail(routine, wpe, buf);
}

// ------------------------------------------------------------------ data path

void Runtime::transport_failure(Channel& ch, const char* routine, int wpe, StatusCode code) {
  endpoint::Endpoint& ep = ch.eps->endpoint(wpe);
  std::string what;
  if (ep.broken()) {
    what = "the connection failed: " + endpoint::describe_error(ep.error(), ep.vendor_err());
  } else if (code == StatusCode::kTimeout) {
    what = "the NIC did not complete within " + std::to_string(ch.eps->options().timeout.count()) + " ms";
  } else if (ep.last_reject() != nullptr) {
    what = std::string("the provider rejected a work request: ") + ep.last_reject();
  } else {
    what = "posting failed (" + std::string(status_code_name(code)) + ")";
  }
  fail(routine, wpe, what);
}

void Runtime::post_or_fail(Channel& ch, const char* routine, int wpe, WorkRequest& wr, endpoint::OnComplete&& oc) {
  const StatusCode rc = ch.eps->endpoint(wpe).post(wr, std::move(oc), true);
  if (rc != StatusCode::kOk) [[unlikely]] transport_failure(ch, routine, wpe, rc);
}

void Runtime::wait_or_fail(Channel& ch, const char* routine, int wpe, const endpoint::Request& r) {
  const StatusCode rc = ch.eps->wait(r);
  if (rc != StatusCode::kOk || r.failed()) [[unlikely]] {
    transport_failure(ch, routine, r.error_peer >= 0 ? r.error_peer : wpe, rc);
  }
}

namespace {
constexpr std::size_t kMaxChunk = std::size_t{1} << 30;
}

void Runtime::put(const char* routine, void* dest, const void* src, std::size_t bytes, int wpe, bool nbi,
                  Channel* channel) {
  if (bytes == 0) return;
  if (std::byte* mapped = direct(dest, bytes, wpe)) [[likely]] {
    api::direct::copy_mapped(mapped, src, bytes);
    return;
  }
  Channel& ch = channel != nullptr ? *channel : main();
  const Remote r = remote(routine, dest, bytes, wpe, ch);
  endpoint::Endpoint& ep = ch.eps->endpoint(wpe);
  if (bytes <= ep.max_inline()) {
    // The payload travels in the work request: the source is free on return.
    Sge s{reinterpret_cast<std::uint64_t>(src), static_cast<std::uint32_t>(bytes), 0};
    WorkRequest wr;
    wr.opcode = Opcode::kRdmaWrite;
    wr.flags = kWrInline;
    wr.sgl = {&s, 1};
    wr.remote_addr = r.addr;
    wr.rkey = r.rkey;
    post_or_fail(ch, routine, wpe, wr, {});
    return;
  }
  if (bytes <= ep.bounce_bytes()) {
    // A device with little or no inline data: the payload is copied into
    // the endpoint's registered bounce slot, so the source (perhaps a
    // caller's stack variable, as for signals) is free on return too.
    if (const StatusCode rc = ep.reserve(false); rc != StatusCode::kOk) transport_failure(ch, routine, wpe, rc);
    const Sge s = ep.bounce(static_cast<std::uint32_t>(bytes));
    std::memcpy(reinterpret_cast<void*>(s.addr), src, bytes);
    WorkRequest wr;
    wr.opcode = Opcode::kRdmaWrite;
    wr.flags = 0;
    wr.sgl = {&s, 1};
    wr.remote_addr = r.addr;
    wr.rkey = r.rkey;
    post_or_fail(ch, routine, wpe, wr, {});
    return;
  }
  endpoint::Request req;
  const auto* p = static_cast<const std::byte*>(src);
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t n = std::min(bytes - done, kMaxChunk);
    endpoint::OnComplete oc;
    oc.request = nbi ? nullptr : &req;
    std::uint32_t lkey = 0;
    if (!local_key(p + done, n, ep.rail(), lkey, ch)) {
      auto h = ep.rcache().acquire(p + done, n, Access::kLocalWrite);
      if (!h.ok()) fail(routine, wpe, "cannot register the source buffer: " + h.status().message());
      lkey = h->lkey();
      oc.handle = std::move(h).value();
    }
    Sge s{reinterpret_cast<std::uint64_t>(p + done), static_cast<std::uint32_t>(n), lkey};
    WorkRequest wr;
    wr.opcode = Opcode::kRdmaWrite;
    wr.flags = 0;
    wr.sgl = {&s, 1};
    wr.remote_addr = r.addr + done;
    wr.rkey = r.rkey;
    post_or_fail(ch, routine, wpe, wr, std::move(oc));
    done += n;
  }
  if (!nbi) wait_or_fail(ch, routine, wpe, req);
}

void Runtime::get(const char* routine, void* dest, const void* src, std::size_t bytes, int wpe, bool nbi,
                  Channel* channel) {
  if (bytes == 0) return;
  if (const std::byte* mapped = direct(src, bytes, wpe)) [[likely]] {
    api::direct::copy_mapped(dest, mapped, bytes);
    return;
  }
  Channel& ch = channel != nullptr ? *channel : main();
  const Remote r = remote(routine, src, bytes, wpe, ch);
  endpoint::Endpoint& ep = ch.eps->endpoint(wpe);
  endpoint::Request req;
  if (bytes <= ep.bounce_bytes()) {
    if (const StatusCode rc = ep.reserve(true); rc != StatusCode::kOk) transport_failure(ch, routine, wpe, rc);
    const Sge s = ep.bounce(static_cast<std::uint32_t>(bytes));
    WorkRequest wr;
    wr.opcode = Opcode::kRdmaRead;
    wr.sgl = {&s, 1};
    wr.remote_addr = r.addr;
    wr.rkey = r.rkey;
    post_or_fail(ch, routine, wpe, wr, endpoint::OnComplete{nbi ? nullptr : &req, {}, dest, static_cast<std::uint32_t>(bytes)});
  } else {
    auto* p = static_cast<std::byte*>(dest);
    for (std::size_t done = 0; done < bytes;) {
      const std::size_t n = std::min(bytes - done, kMaxChunk);
      endpoint::OnComplete oc;
      oc.request = nbi ? nullptr : &req;
      std::uint32_t lkey = 0;
      if (!local_key(p + done, n, ep.rail(), lkey, ch)) {
        auto h = ep.rcache().acquire(p + done, n, Access::kLocalWrite);
        if (!h.ok()) fail(routine, wpe, "cannot register the destination buffer: " + h.status().message());
        lkey = h->lkey();
        oc.handle = std::move(h).value();
      }
      Sge s{reinterpret_cast<std::uint64_t>(p + done), static_cast<std::uint32_t>(n), lkey};
      WorkRequest wr;
      wr.opcode = Opcode::kRdmaRead;
      wr.sgl = {&s, 1};
      wr.remote_addr = r.addr + done;
      wr.rkey = r.rkey;
      post_or_fail(ch, routine, wpe, wr, std::move(oc));
      done += n;
    }
  }
  if (!nbi) wait_or_fail(ch, routine, wpe, req);
}

std::uint64_t Runtime::nic_atomic(Channel& ch, const char* routine, int wpe, Remote r, bool cas,
                                  std::uint64_t compare_add, std::uint64_t swap) {
  std::uint64_t old = 0;
  endpoint::Request req;
  const StatusCode rc = ch.eps->endpoint(wpe).post_atomic(
      cas ? Opcode::kAtomicCmpSwap : Opcode::kAtomicFetchAdd, r.addr, r.rkey, compare_add, swap,
      endpoint::OnComplete{&req, {}, &old, 8});
  if (rc != StatusCode::kOk) [[unlikely]] transport_failure(ch, routine, wpe, rc);
  wait_or_fail(ch, routine, wpe, req);
  return old;
}

namespace {
std::uint64_t apply(AmoOp op, std::uint64_t old, std::uint64_t operand) {
  switch (op) {
    case AmoOp::kAdd: return old + operand;
    case AmoOp::kAnd: return old & operand;
    case AmoOp::kOr: return old | operand;
    case AmoOp::kXor: return old ^ operand;
    default: return operand;  // set, swap
  }
}
}  // namespace

std::uint64_t Runtime::amo(const char* routine, AmoOp op, void* dest, std::size_t bytes, std::uint64_t operand,
                           std::uint64_t compare, int wpe, bool fetch, Channel* channel) {
  Channel& ch = channel != nullptr ? *channel : main();
  const auto a = reinterpret_cast<std::uintptr_t>(dest);
  if ((a & (bytes - 1)) != 0) [[unlikely]] {
    char buf[128];
    std::snprintf(buf, sizeof buf, "the AMO target %p is not aligned to its %zu-byte type", dest, bytes);
    fail(routine, wpe, buf);
  }
  if (std::byte* mapped = direct(dest, bytes, wpe)) [[likely]] {
    if (bytes == 8) {
      return cpu_amo<std::uint64_t>(op, reinterpret_cast<std::uint64_t*>(mapped), operand, compare);
    }
    return cpu_amo<std::uint32_t>(op, reinterpret_cast<std::uint32_t*>(mapped), static_cast<std::uint32_t>(operand),
                                   static_cast<std::uint32_t>(compare));
  }
  // Every AMO works on the aligned 8-byte word holding its target, with the
  // NIC's 8-byte atomics only, so AMOs of any kind on one location (from any
  // PE, the target itself included, which reaches its own memory through
  // its loopback QP) are atomic with respect to each other.
  void* word_local = reinterpret_cast<void*>(a & ~std::uintptr_t{7});
  const Remote r = remote(routine, word_local, 8, wpe, ch);
  const unsigned shift = bytes == 8 ? 0 : static_cast<unsigned>((a & 7) * 8);
  const std::uint64_t mask = bytes == 8 ? ~std::uint64_t{0} : ((std::uint64_t{1} << (bytes * 8)) - 1) << shift;
  auto field = [&](std::uint64_t word) { return (word & mask) >> shift; };
  if (bytes == 8 && op == AmoOp::kAdd) {
    if (!fetch) {
      // Nothing waits for the result: the add stays in flight until quiet.
      const StatusCode rc = ch.eps->endpoint(wpe).post_atomic(Opcode::kAtomicFetchAdd, r.addr, r.rkey,
                                                              operand, 0, {});
      if (rc != StatusCode::kOk) [[unlikely]] transport_failure(ch, routine, wpe, rc);
      return 0;
    }
    return nic_atomic(ch, routine, wpe, r, false, operand, 0);
  }
  if (op == AmoOp::kFetch) return field(nic_atomic(ch, routine, wpe, r, false, 0, 0));
  if (bytes == 8 && op == AmoOp::kCswap) return nic_atomic(ch, routine, wpe, r, true, compare, operand);
  // Read-modify-write with compare-and-swap on the whole word until no other
  // AMO came in between.
  std::uint64_t word = nic_atomic(ch, routine, wpe, r, false, 0, 0);
  for (;;) {
    const std::uint64_t old = field(word);
    if (op == AmoOp::kCswap && old != (compare & (mask >> shift))) return old;
    const std::uint64_t updated = op == AmoOp::kCswap ? operand : apply(op, old, operand);
    const std::uint64_t next = (word & ~mask) | ((updated << shift) & mask);
    const std::uint64_t seen = nic_atomic(ch, routine, wpe, r, true, word, next);
    if (seen == word) return old;
    word = seen;
  }
}

void Runtime::quiet(const char* routine, Channel* channel) {
  Channel& ch = channel != nullptr ? *channel : main();
  if (any_direct) full_fence();  // the direct path's stores are complete and visible
  const StatusCode rc = ch.eps->flush_all();
  for (int pe = 0; pe < npes; ++pe) {
    if (ch.eps->endpoint(pe).broken()) transport_failure(ch, routine, pe, rc);
  }
  if (rc != StatusCode::kOk) transport_failure(ch, routine, me, rc);
}

void Runtime::fence(const char* routine, Channel* channel) {
  if (!any_direct) return;  // one QP per PE delivers in order
  full_fence();
  Channel& ch = channel != nullptr ? *channel : main();
  for (int pe = 0; pe < npes; ++pe) {
    if (direct_heaps[static_cast<std::size_t>(pe)] == nullptr) continue;
    endpoint::Endpoint& ep = ch.eps->endpoint(pe);
    if (ep.idle()) continue;
    // Puts to the PE's globals still in flight must land before any later
    // direct store to its heap.
    const StatusCode rc = ep.flush();
    if (rc != StatusCode::kOk) transport_failure(ch, routine, pe, rc);
  }
}

void Runtime::put_flag(const char* routine, std::uint64_t* dest, std::uint64_t value, int wpe, Channel* channel) {
  if (std::byte* mapped = direct(dest, 8, wpe)) [[likely]] {
    Channel& ch = channel != nullptr ? *channel : main();
    endpoint::Endpoint& ep = ch.eps->endpoint(wpe);
    if (!ep.idle()) {
      // The data went through the endpoint (a global): it lands first.
      const StatusCode rc = ep.flush();
      if (rc != StatusCode::kOk) transport_failure(ch, routine, wpe, rc);
    }
    __atomic_store_n(reinterpret_cast<std::uint64_t*>(mapped), value, __ATOMIC_RELEASE);
    return;
  }
  put(routine, dest, &value, 8, wpe, true, channel);  // inline: `value` may go out of scope
}

void Runtime::progress() noexcept {
  if (thread_level == SHMEM_THREAD_MULTIPLE) {
    // Others may progress too: never block on the lock here.
    if (!mutex.try_lock()) {
      sched_yield();
      return;
    }
    eps->progress();
    mutex.unlock();
    return;
  }
  eps->progress();
}

void Runtime::wait_turn(std::uint32_t& turns) noexcept {
  progress();
  if ((++turns & 63u) == 0) sched_yield();
}

void Runtime::sync_with_nic() noexcept {
  Lock lock(*this);
  eps->progress();
}

// ------------------------------------------------------------------ signals

void Runtime::signal(int wpe) {
  const std::uint64_t value = ++sent[static_cast<std::size_t>(wpe)];
  put_flag("shmem collective", const_cast<std::uint64_t*>(&signal_in[me]), value, wpe);
}

void Runtime::wait_signal(int wpe) {
  const std::uint64_t want = ++consumed[static_cast<std::size_t>(wpe)];
  volatile std::uint64_t* slot = &signal_in[wpe];
  for (std::uint32_t turns = 0; __atomic_load_n(slot, __ATOMIC_ACQUIRE) < want;) wait_turn(turns);
  eps->progress();  // synchronizes with the NIC's write (see sync_with_nic)
}

}  // namespace rma::shmem
