// One rank of the kill -9 job (shm_kill_test.sh): every rank maps its peers
// through the shm provider (a node::SharedMemory buffer each) and runs
// WRITEs and fetch-adds to all of them; the last rank kills itself with
// SIGKILL in the middle of that traffic. The others must notice (an error
// completion, not a hang), say so, go on with the peers that live, and end
// normally: "rank R: peer K died: <status> vendor_err V" then
// "rank R: done, ops to live peers N". Every rank first prints
// "rank R pid P".
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "rma/sdk/bootstrap.hpp"
#include "rma/sdk/node.hpp"
#include "rma/sdk/provider.hpp"
#include "rma/sdk/registry.hpp"

using namespace rma;

namespace {

[[noreturn]] void die(int rank, const std::string& why) {
  std::fprintf(stderr, "rank %d: %s\n", rank, why.c_str());
  std::exit(2);
}

struct Info {
  std::uint64_t addr;
  std::uint32_t rkey;
  std::uint32_t pid;
};

}  // namespace

int main() {
  auto boot = open_bootstrap();
  if (!boot.ok()) die(-1, boot.status().to_string());
  Bootstrap& b = **boot;
  const int me = b.rank(), n = b.size();
  std::printf("rank %d pid %d\n", me, static_cast<int>(::getpid()));
  std::fflush(stdout);
  auto dev = ProviderRegistry::global().open("shm");
  if (!dev.ok()) die(me, dev.status().to_string());
  auto pd = (*dev)->alloc_pd();
  auto cq = (*dev)->create_cq(4096);
  auto mem = node::SharedMemory::allocate(65536, "test");
  if (!pd.ok() || !cq.ok() || !mem.ok()) die(me, "setup");
  auto* buf = reinterpret_cast<std::uint8_t*>((*mem)->data());
  auto mr = (*pd)->register_memory(buf, 65536, kAllAccess);
  if (!mr.ok()) die(me, mr.status().to_string());
  std::vector<std::unique_ptr<QueuePair>> qps(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j) {
    if (j == me) continue;
    QpConfig c;
    c.send_cq = c.recv_cq = *cq;
    c.max_send_wr = 64;
    auto q = (*pd)->create_qp(c);
    if (!q.ok()) die(me, q.status().to_string());
    qps[j] = std::move(q).value();
    auto a = qps[j]->local_address();
    if (!b.put("qp" + std::to_string(j), a->view()).ok()) die(me, "put");
  }
  const Info mine{reinterpret_cast<std::uint64_t>(buf), (*mr)->rkey(), static_cast<std::uint32_t>(::getpid())};
  if (!b.put("info", {reinterpret_cast<const std::uint8_t*>(&mine), sizeof mine}).ok() || !b.fence().ok()) {
    die(me, "put/fence");
  }
  std::vector<Info> peers(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j) {
    if (j == me) continue;
    auto a = b.get(j, "qp" + std::to_string(me));
    auto i = b.get(j, "info");
    if (!a.ok() || !i.ok() || i->size() != sizeof(Info)) die(me, "get");
    std::memcpy(&peers[j], i->data(), sizeof(Info));
    auto addr = EndpointAddress::from_bytes(*a);
    if (!addr.ok() || !qps[j]->connect(*addr).ok()) die(me, "connect to rank " + std::to_string(j));
  }
  if (!b.barrier().ok()) die(me, "barrier");

  const int victim = n - 1;
  std::vector<bool> alive(static_cast<std::size_t>(n), true);
  std::uint64_t ops = 0, live_ops = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  Completion wc[32];
  // Survivors: until they saw the victim die, then 2000 more rounds.
  std::uint64_t after_death = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (me == victim && ops >= 3000) ::kill(::getpid(), SIGKILL);
    for (int j = 0; j < n; ++j) {
      if (j == me || !alive[j]) continue;
      Sge s{reinterpret_cast<std::uint64_t>(buf) + 8 * static_cast<std::uint64_t>(j), 8, (*mr)->lkey()};
      WorkRequest w;
      w.wr_id = static_cast<std::uint64_t>(j);
      w.opcode = ops % 2 == 0 ? Opcode::kAtomicFetchAdd : Opcode::kRdmaWrite;
      w.sgl = {&s, 1};
      w.remote_addr = peers[j].addr + 4096 + 8 * static_cast<std::uint64_t>(me);
      w.rkey = peers[j].rkey;
      w.compare_add = 1;
      if (!qps[j]->post({&w, 1}).ok()) continue;  // the QP broke: its completions say why
      ++ops;
      // One at a time per peer: wait for it.
      for (;;) {
        const int k = (*cq)->poll(wc);
        if (k < 0) die(me, std::string("CQ overrun: ") + (*cq)->overrun_reason());
        bool got = false;
        for (int i = 0; i < k; ++i) {
          const int peer = static_cast<int>(wc[i].wr_id);
          if (wc[i].status == WcStatus::kSuccess) {
            if (peer != victim) ++live_ops;
          } else if (alive[peer]) {
            alive[peer] = false;
            std::printf("rank %d: peer %d died: %s vendor_err %u\n", me, peer,
                        std::string(wc_status_name(wc[i].status)).c_str(), wc[i].vendor_err);
            std::fflush(stdout);
            if (peer != victim) die(me, "a live peer failed");
          }
          got = true;
        }
        if (got) break;
      }
    }
    if (!alive[victim] && ++after_death >= 2000) break;
  }
  if (alive[victim]) die(me, "never noticed the victim's death within 20 s");
  // No bootstrap barrier (the victim never comes): each survivor tells the
  // others it has stopped posting (a flag WRITE into their buffer) and
  // leaves only when they all have, so nobody's QP goes while a live peer
  // still uses it.
  const std::uint64_t one = 1;
  std::memcpy(buf + 16384, &one, 8);
  for (int j = 0; j < n; ++j) {
    if (j == me || !alive[j]) continue;
    Sge s{reinterpret_cast<std::uint64_t>(buf) + 16384, 8, (*mr)->lkey()};
    WorkRequest w;
    w.opcode = Opcode::kRdmaWrite;
    w.sgl = {&s, 1};
    w.remote_addr = peers[j].addr + 8192 + 8 * static_cast<std::uint64_t>(me);
    w.rkey = peers[j].rkey;
    if (!qps[j]->post({&w, 1}).ok()) die(me, "done flag");
  }
  const auto flag_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int j = 0; j < n; ++j) {
    if (j == me || !alive[j]) continue;
    while (__atomic_load_n(reinterpret_cast<std::uint64_t*>(buf + 8192 + 8 * j), __ATOMIC_ACQUIRE) != 1) {
      (void)(*cq)->poll(wc);
      if (std::chrono::steady_clock::now() > flag_deadline) die(me, "rank " + std::to_string(j) + " never finished");
    }
  }
  std::printf("rank %d: done, ops to live peers %" PRIu64 "\n", me, live_ops);
  std::fflush(stdout);
  return 0;
}
