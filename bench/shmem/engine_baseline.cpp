// The reference of the "SHMEM layer adds at most 10%" target: one 8-byte
// RDMA WRITE posted on the connection shmem_putmem uses (the runtime's
// endpoint to PE 1, same transport, same QP), then the CQ polled until its
// completion, with no OpenSHMEM code in between: the engine's own
// post + poll. shmem_osu's put_lat at 8 B is shmem_putmem + shmem_quiet of
// the same WRITE.
#include <chrono>
#include <cstdint>

#include "shmem/runtime.hpp"

extern "C" double shmem_osu_engine_put_lat_us(int iterations) {
  rma::shmem::Runtime& r = rma::shmem::rt("engine baseline");
  const int target = 1;
  // The first symmetric heap word past the runtime's reserved area on PE 1.
  std::uint64_t value = 42;
  const rma::shmem::Area& heap = r.main().peers[target].areas[0];
  rma::Sge sge{reinterpret_cast<std::uint64_t>(&value), 8, 0};
  rma::WorkRequest wr;
  wr.opcode = rma::Opcode::kRdmaWrite;
  wr.flags = rma::kWrInline;
  wr.sgl = {&sge, 1};
  wr.remote_addr = heap.base + r.reserved;
  rma::endpoint::Endpoint& ep = r.eps->endpoint(target);
  wr.rkey = ep.rkey(heap.rkeys);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) {
    rma::endpoint::Request req;
    if (ep.post(wr, rma::endpoint::OnComplete{&req, {}, nullptr, 0}, true) != rma::StatusCode::kOk) return -1;
    if (r.eps->wait(req) != rma::StatusCode::kOk) return -1;
  }
  const std::chrono::duration<double, std::micro> d = std::chrono::steady_clock::now() - t0;
  return d.count() / iterations;
}
