// Bootstrap: how the processes of one job find each other before any RDMA
// connection exists. It gives each process its rank and the job's size, and a
// small out-of-band service to exchange endpoint addresses and window
// descriptors: a key-value store with fence (PMIx_Put/Commit/Fence/Get), a
// barrier and an allgather.
//
// Implementations (engine/bootstrap/): the local launcher `rmarun` (a socket
// it serves), PMIx (mpirun, srun --mpi=pmix, prterun), a singleton (one
// process, no launcher), and an in-process group whose ranks are threads (for
// unit tests on the self provider). open_bootstrap() picks one from the
// environment. Control path only: every call may block on other ranks, and
// every blocking call gives up after RMA_BOOTSTRAP_TIMEOUT with kTimeout
// naming the ranks that did not arrive, never hanging.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rma/sdk/status.hpp"

// librma is built with hidden visibility: what this header declares is
// part of its exported interface.
#pragma GCC visibility push(default)

namespace rma {

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;

  virtual int rank() const noexcept = 0;
  virtual int size() const noexcept = 0;
  // "rmarun", "pmix", "singleton", "threads".
  virtual std::string_view kind() const noexcept = 0;

  // Publishes `value` under `key` for this rank. Other ranks can read it
  // after the next fence() that both took part in.
  virtual Status put(std::string_view key, std::span<const std::uint8_t> value) = 0;
  // Collective: makes every rank's earlier puts visible to all, then returns.
  virtual Status fence() = 0;
  // Reads what `rank` put under `key` before the last fence; kNotFound when
  // it put nothing under that key.
  virtual Result<std::vector<std::uint8_t>> get(int rank, std::string_view key) = 0;

  // Collective: returns when every rank has called it.
  virtual Status barrier() = 0;
  // Collective: element r of the result is what rank r passed (sizes may differ).
  virtual Result<std::vector<std::vector<std::uint8_t>>> allgather(std::span<const std::uint8_t> mine) = 0;

  // Stops the whole job: the launcher ends every rank and exits non-zero,
  // printing `message` with this rank's number. Does not return.
  [[noreturn]] virtual void abort(int exit_code, std::string_view message) noexcept = 0;
};

// The bootstrap this process was started under: rmarun's (RMA_RANK,
// RMA_SIZE, RMA_BOOTSTRAP_ADDR set), PMIx's (PMIX_RANK / PMIX_NAMESPACE set),
// else a singleton of size 1. RMA_BOOTSTRAP=rmarun|pmix|singleton forces one
// and fails clearly when its environment is missing.
Result<std::unique_ptr<Bootstrap>> open_bootstrap();

// `size` connected bootstraps for ranks 0..size-1 of one in-process job; each
// is meant to be used by its own thread.
Result<std::vector<std::unique_ptr<Bootstrap>>> make_thread_bootstrap_group(int size);

}  // namespace rma

#pragma GCC visibility pop
