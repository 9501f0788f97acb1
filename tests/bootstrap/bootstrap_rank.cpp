// One rank of a bootstrap test job, started by rmarun. argv[1] picks what it
// does, argv[2] the bootstrap it expects (rmarun, pmix); rank 1 misbehaves in
// the failure modes.
//   ok     put/fence/get of every rank, barrier, allgather; all checked
//   exit3  rank 1 exits with status 3 after the first barrier
//   kill   rank 1 kills itself with SIGKILL after the first barrier
//   hang   rank 1 never reaches the barrier (sleeps)
//   abort  rank 1 aborts the job with exit code 5
//   leave  rank 1 closes its bootstrap without finalizing and keeps running
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "rma/sdk/bootstrap.hpp"

namespace {
int fail(const char* what, const rma::Status& st) {
  std::fprintf(stderr, "rank: %s failed: %s\n", what, st.to_string().c_str());
  return 10;
}
std::vector<std::uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }
}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "ok";
  const std::string want_kind = argc > 2 ? argv[2] : "rmarun";
  auto b = rma::open_bootstrap();
  if (!b.ok()) return fail("open_bootstrap", b.status());
  rma::Bootstrap& boot = **b;
  const int me = boot.rank(), n = boot.size();
  if (boot.kind() != want_kind) {
    std::fprintf(stderr, "rank: expected the %s bootstrap, got %.*s\n", want_kind.c_str(), static_cast<int>(boot.kind().size()),
                 boot.kind().data());
    return 11;
  }
  const std::string mine = "addr-of-rank-" + std::to_string(me) + std::string(static_cast<std::size_t>(me) * 100, 'x');
  if (auto st = boot.put("ep", bytes_of(mine)); !st.ok()) return fail("put", st);
  if (auto st = boot.fence(); !st.ok()) return fail("fence", st);
  for (int r = 0; r < n; ++r) {
    auto v = boot.get(r, "ep");
    if (!v.ok()) return fail("get", v.status());
    const std::string want = "addr-of-rank-" + std::to_string(r) + std::string(static_cast<std::size_t>(r) * 100, 'x');
    if (std::string(v->begin(), v->end()) != want) {
      std::fprintf(stderr, "rank %d: get(%d) returned the wrong value\n", me, r);
      return 12;
    }
  }
  if (boot.get(0, "nosuchkey").status().code() != rma::StatusCode::kNotFound) return 13;
  if (me == 1 && mode == "hang") {
    ::sleep(600);
    return 0;
  }
  if (me == 1 && mode == "abort") boot.abort(5, "rank 1 found the data inconsistent");
  if (me == 1 && mode == "leave") {
    b->reset();  // finalizes: a clean leave is not an error...
    ::sleep(600);  // ...but the others then wait for this rank in vain (killed when rmarun stops the job)
    return 0;
  }
  if (auto st = boot.barrier(); !st.ok()) return fail("barrier", st);
  if (me == 1 && mode == "exit3") return 3;
  if (me == 1 && mode == "kill") ::raise(SIGKILL);
  auto all = boot.allgather(bytes_of(std::to_string(me * me)));
  if (!all.ok()) return fail("allgather", all.status());
  for (int r = 0; r < n; ++r) {
    if (std::string((*all)[static_cast<std::size_t>(r)].begin(), (*all)[static_cast<std::size_t>(r)].end()) !=
        std::to_string(r * r)) {
      return 14;
    }
  }
  if (auto st = boot.barrier(); !st.ok()) return fail("final barrier", st);
  std::printf("rank %d of %d: ok\n", me, n);
  return 0;
}
