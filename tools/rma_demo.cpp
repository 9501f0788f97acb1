// rma_demo: two endpoints exchange RDMA writes, reads and atomics and print
// what moved. Runs on the in-process provider unless told otherwise; every
// transfer is checked byte for byte.
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "rma/sdk/config.hpp"
#include "rma/sdk/provider.hpp"
#include "rma/sdk/registration_cache.hpp"
#include "rma/sdk/registry.hpp"

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "Usage: rma_demo [options]\n"
               "Two endpoints exchange RDMA WRITE, READ, FETCH_AND_ADD and CMP_AND_SWP and print what moved.\n\n"
               "  -s, --size=BYTES      message size for WRITE and READ (default 65536; K/M suffixes)\n"
               "  -n, --iters=N         repetitions of each transfer (default 1000)\n"
               "  -P, --provider=NAME   provider (default self: both endpoints in this process)\n"
               "  -h, --help            this text\n");
}

struct Endpoint {
  std::shared_ptr<rma::CompletionQueue> cq;
  std::unique_ptr<rma::QueuePair> qp;
};

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "rma_demo: %s\n", what.c_str());
  std::exit(1);
}

template <typename T>
T must(rma::Result<T> r, const char* what) {
  if (!r.ok()) die(std::string(what) + ": " + r.status().to_string());
  return std::move(r).value();
}

// Posts one work request and waits for its completion (bounded).
void run(Endpoint& ep, const rma::WorkRequest& wr, const char* what) {
  rma::PostResult pr = ep.qp->post({&wr, 1});
  if (!pr.ok()) die(std::string(what) + ": " + pr.to_status().to_string());
  rma::Completion c;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    int n = ep.cq->poll({&c, 1});
    if (n < 0) die(std::string(what) + ": completion queue overrun: " + ep.cq->overrun_reason());
    if (n == 1) break;
    if (std::chrono::steady_clock::now() > deadline) die(std::string(what) + ": no completion within 10 s");
  }
  if (c.status != rma::WcStatus::kSuccess) {
    die(std::string(what) + " failed: " + std::string(rma::wc_status_name(c.status)) + " (" +
        std::string(rma::wc_status_description(c.status)) + ")");
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t size = 65536, iters = 1000;
  std::string provider = "self";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const std::string& longname, char shortname) -> const char* {
      if (a == std::string("-") + shortname || a == "--" + longname) {
        if (i + 1 >= argc) die("option " + a + " needs a value");
        return argv[++i];
      }
      if (a.rfind("--" + longname + "=", 0) == 0) return argv[i] + longname.size() + 3;
      return nullptr;
    };
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (const char* v = value("size", 's')) {
      auto r = rma::config::parse_size(v);
      if (!r.ok()) die("--size: " + r.status().message());
      size = *r;
    } else if (const char* v2 = value("iters", 'n')) {
      auto r = rma::config::parse_size(v2);
      if (!r.ok() || *r == 0) die(std::string("--iters: '") + v2 + "' is not a positive count");
      iters = *r;
    } else if (const char* v3 = value("provider", 'P')) {
      provider = v3;
    } else {
      std::fprintf(stderr, "rma_demo: unknown option '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }

  auto device = must(rma::ProviderRegistry::global().open(provider), "open device");
  const rma::DeviceCaps& caps = device->caps();
  if (size == 0 || size > caps.max_msg_size) {
    die("--size " + std::to_string(size) + " is outside 1.." + std::to_string(caps.max_msg_size) +
        " (the device's max_msg_size)");
  }
  auto pd = must(device->alloc_pd(), "allocate protection domain");
  auto cache = must(rma::RegistrationCache::create(pd), "create registration cache");

  Endpoint a, b;
  for (Endpoint* ep : {&a, &b}) {
    ep->cq = must(device->create_cq(64), "create completion queue");
    rma::QpConfig cfg;
    cfg.send_cq = cfg.recv_cq = ep->cq;
    cfg.max_rd_atomic = std::min<std::uint32_t>(4, caps.max_qp_rd_atom);
    ep->qp = must(pd->create_qp(cfg), "create queue pair");
  }
  if (auto s = a.qp->connect(must(b.qp->local_address(), "address of B")); !s.ok()) die("connect A: " + s.to_string());
  if (auto s = b.qp->connect(must(a.qp->local_address(), "address of A")); !s.ok()) die("connect B: " + s.to_string());

  std::vector<std::uint8_t> a_buf(size), b_buf(size);
  alignas(8) std::uint64_t a_word = 0, b_word = 0;
  using rma::Access;
  const Access remote = Access::kLocalWrite | Access::kRemoteWrite | Access::kRemoteRead | Access::kRemoteAtomic;
  auto a_reg = must(cache->acquire(a_buf.data(), size, Access::kLocalWrite), "register A's buffer");
  auto b_reg = must(cache->acquire(b_buf.data(), size, remote), "register B's buffer");
  auto aw_reg = must(cache->acquire(&a_word, 8, Access::kLocalWrite), "register A's word");
  auto bw_reg = must(cache->acquire(&b_word, 8, remote), "register B's word");

  std::printf("librma demo: provider %s, device %s (%s)\n", provider.c_str(), device->name().c_str(),
              device->info().transport.c_str());
  std::printf("endpoint A: QPN %#08x   endpoint B: QPN %#08x   connected\n", a.qp->qp_num(), b.qp->qp_num());
  std::printf("%-22s %-8s %12s %12s %14s   %s\n", "operation", "path", "bytes/op", "ops", "total bytes", "check");

  // WRITE: A's buffer -> B's buffer, a new pattern each time.
  rma::Sge sge{reinterpret_cast<std::uint64_t>(a_buf.data()), static_cast<std::uint32_t>(size), a_reg.lkey()};
  rma::WorkRequest wr;
  wr.sgl = {&sge, 1};
  wr.remote_addr = reinterpret_cast<std::uint64_t>(b_buf.data());
  wr.rkey = b_reg.rkey();
  wr.opcode = rma::Opcode::kRdmaWrite;
  for (std::uint64_t i = 0; i < iters; ++i) {
    for (std::uint64_t k = 0; k < size; ++k) a_buf[k] = static_cast<std::uint8_t>(k * 31 + i);
    run(a, wr, "RDMA_WRITE");
    if (std::memcmp(a_buf.data(), b_buf.data(), size) != 0) die("RDMA_WRITE: B's buffer differs from A's");
  }
  std::printf("%-22s %-8s %12" PRIu64 " %12" PRIu64 " %14" PRIu64 "   ok\n", "RDMA_WRITE", "A -> B", size, iters,
              size * iters);

  // READ: B's buffer -> A's buffer.
  wr.opcode = rma::Opcode::kRdmaRead;
  for (std::uint64_t i = 0; i < iters; ++i) {
    for (std::uint64_t k = 0; k < size; ++k) b_buf[k] = static_cast<std::uint8_t>(k * 7 + i * 3);
    std::memset(a_buf.data(), 0, size);
    run(a, wr, "RDMA_READ");
    if (std::memcmp(a_buf.data(), b_buf.data(), size) != 0) die("RDMA_READ: A's buffer differs from B's");
  }
  std::printf("%-22s %-8s %12" PRIu64 " %12" PRIu64 " %14" PRIu64 "   ok\n", "RDMA_READ", "A <- B", size, iters,
              size * iters);

  // FETCH_AND_ADD: A adds i to B's word and gets the old value back.
  rma::Sge wsge{reinterpret_cast<std::uint64_t>(&a_word), 8, aw_reg.lkey()};
  rma::WorkRequest awr;
  awr.sgl = {&wsge, 1};
  awr.remote_addr = reinterpret_cast<std::uint64_t>(&b_word);
  awr.rkey = bw_reg.rkey();
  awr.opcode = rma::Opcode::kAtomicFetchAdd;
  std::uint64_t expect = 0;
  for (std::uint64_t i = 1; i <= iters; ++i) {
    awr.compare_add = i;
    run(a, awr, "ATOMIC_FETCH_AND_ADD");
    if (a_word != expect) die("FETCH_AND_ADD returned " + std::to_string(a_word) + ", expected " + std::to_string(expect));
    expect += i;
  }
  if (b_word != expect) die("FETCH_AND_ADD: B's word is " + std::to_string(b_word));
  std::printf("%-22s %-8s %12d %12" PRIu64 " %14" PRIu64 "   ok: B's word = %" PRIu64 "\n", "ATOMIC_FETCH_AND_ADD",
              "A -> B", 8, iters, 8 * iters, b_word);

  // CMP_AND_SWP: swap only when the compare matches; half the attempts miss.
  awr.opcode = rma::Opcode::kAtomicCmpSwap;
  std::uint64_t swapped = 0;
  for (std::uint64_t i = 0; i < iters; ++i) {
    std::uint64_t before = b_word;
    bool should_match = i % 2 == 0;
    awr.compare_add = should_match ? before : before + 1;
    awr.swap = before * 3 + 1;
    run(a, awr, "ATOMIC_CMP_AND_SWP");
    if (a_word != before) die("CMP_AND_SWP returned " + std::to_string(a_word) + ", expected " + std::to_string(before));
    if (b_word != (should_match ? before * 3 + 1 : before)) die("CMP_AND_SWP: B's word is wrong");
    swapped += should_match;
  }
  std::printf("%-22s %-8s %12d %12" PRIu64 " %14" PRIu64 "   ok: %" PRIu64 " swapped, %" PRIu64 " compared unequal\n",
              "ATOMIC_CMP_AND_SWP", "A -> B", 8, iters, 8 * iters, swapped, iters - swapped);

  auto st = cache->stats();
  std::printf("registration cache (%s): %" PRIu64 " regions, %" PRIu64 " misses, %" PRIu64 " hits\n",
              std::string(rma::memory_monitor_name(cache->monitor())).c_str(), st.regions, st.misses, st.hits);
  return 0;
}
