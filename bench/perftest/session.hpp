// One run of a perftest-compatible tool: the OOB connection, the opened
// device, the registered buffer, the CQ and QPs connected to the peer's.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "clock.hpp"
#include "oob.hpp"
#include "perftest_wire.hpp"
#include "options.hpp"
#include "report.hpp"
#include "rma/sdk/node.hpp"
#include "rma/sdk/provider.hpp"
#include "rma/sdk/registration_cache.hpp"

namespace rma::perftest {

struct QpCtx {
  std::unique_ptr<QueuePair> qp;
  QpInfo local;
  QpInfo remote;
  std::uint8_t* target = nullptr;  // this QP's half that the peer reads/writes/atomics
  std::uint8_t* local_buf = nullptr;  // source of WRITEs, sink of READs and atomic results
};

struct Session {
  Options opt;
  OobChannel oob;
  std::string provider;
  std::shared_ptr<Device> dev;
  std::shared_ptr<ProtectionDomain> pd;
  std::unique_ptr<RegistrationCache> cache;
  std::shared_ptr<CompletionQueue> cq;
  std::vector<QpCtx> qps;
  // The buffer lives in a node-local shared segment (as ucx_perftest's
  // comes from ucp_mem_map): a peer on this host reaches it through a
  // mapping (the shm provider), any other provider sees plain memory.
  std::unique_ptr<node::SharedMemory> memory;
  std::uint8_t* buffer = nullptr;
  std::size_t slot = 0;  // bytes per half
  std::size_t buffer_bytes = 0;
  RegistrationCache::Handle reg;
  HeaderInfo header;
  // perftest's exchange instead of librma's frames (use_perftest_protocol).
  std::unique_ptr<wire::Exchange> perftest;
  bool perftest_gid = false;       // keys carry the GID (RoCE)
  std::uint32_t path_mtu = 0;      // negotiated with a perftest peer
  // The latency loops' poll buffer. Not on the stack: a local array of
  // Completions is zeroed on every call (a 640-byte `rep stos`), which was a
  // fifth of an 8-byte shm ping-pong's time.
  std::array<Completion, 16> polled;
  std::int64_t last_keep_alive_ns = 0;  // keep_alive's last socket poll (now_ns)

  Session() = default;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session();
};

// Prints "<tool>: <message>" on stderr, tells the peer (best effort) and exits 1.
[[noreturn]] void fatal(Session& s, const std::string& message);
// The message for a failed completion:
// "completion error: RETRY_EXC_ERR (transport retry counter exceeded) on QP 0x1a2".
std::string completion_error(const Completion& c);
// The perftest key (the wire record ib_write_bw exchanges) of one of our QPs.
wire::Key perftest_key(const QpInfo& q);
// An 8-byte atomic work request as perftest posts it (-A): FETCH_AND_ADD
// adds 1, CMP_AND_SWAP compares with 0 and swaps in 0.
void set_perftest_atomic(WorkRequest& wr, Sge& sge, AtomicType type);

// Connects, checks versions and settings, opens the device, creates and
// connects the QPs and prints the header block and address lines.
void setup(Session& s);

// The measurement loops; each prints its table rows (and writes the JSON file).
void run_bw(Session& s);
void run_lat(Session& s);

// --out_json: writes the report file (perftest's layout); errors are fatal.
void write_json_file(Session& s, const std::vector<BwResult>& bw, const std::vector<LatResult>& lat,
                     const std::vector<LatDurationResult>& lat_dur);
// Between iterations of a loop: heartbeat to the peer, and fail when the
// peer reported an error or went away. Cheap: it reads the socket at most
// every 10 ms; call it every thousand spins or so.
void keep_alive(Session& s);

// The passive side's wait for the peer's next frame of `type`: keeps polling
// the CQ meanwhile (a software NIC such as softroce answers the peer's
// requests only while its owner polls), fails on completion errors and when
// the peer is silent for the OOB timeout (heartbeats count as traffic).
std::string passive_wait(Session& s, FrameType type);

// Both sides send kSync and wait for the peer's, polling the CQ meanwhile.
void progress_sync(Session& s);

// Closing handshake and the final separator.
void finish(Session& s);

// Entry point of the six tools.
int run_tool(const Tool& tool, int argc, char** argv);


}  // namespace rma::perftest
