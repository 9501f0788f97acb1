// perftest's own out-of-band exchange (linux-rdma/perftest over a TCP
// socket, no rdma_cm), so that rma_write_bw / rma_read_bw on the verbs
// transport and Debian's ib_write_bw / ib_read_bw run against each other in
// either role. The exchange, in order:
//   version strings (16 bytes), page and cache-line sizes (4 + 4 bytes,
//   big endian), path MTU (2 bytes: the ibv_mtu code as text), then the QP
//   keys ("lid:out_reads:qpn:psn:rkey:vaddr[:gid bytes]:srqn", 59 bytes, or
//   108 with the GID) three times (before connecting, after, and once more
//   for QP 0), then the client runs; afterwards one more key exchange, the
//   BW report (size, iters, peak, average, message rate: 8 bytes each, big
//   endian), and the close (a key exchange and "done").
// In every symmetric exchange the client writes first and the server reads
// first. Every read and write has a deadline.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>

#include "report.hpp"
#include "rma/sdk/status.hpp"

namespace rma::perftest::wire {

// The protocol level we speak: perftest refuses peers older than 5.70.
inline constexpr const char* kVersion = "6.06";
inline constexpr double kOldestPeerVersion = 5.70;

struct Key {
  std::uint32_t lid = 0;
  std::uint32_t out_reads = 0;
  std::uint32_t qpn = 0;
  std::uint32_t psn = 0;  // the first PSN this QP sends
  std::uint32_t rkey = 0;
  std::uint64_t vaddr = 0;
  std::array<std::uint8_t, 16> gid{};
  std::uint32_t srqn = 0;
};
// The key message, NUL included (59 or 108 bytes).
std::string format_key(const Key& k, bool with_gid);
Result<Key> parse_key(const std::string& msg, bool with_gid);

// ibv_mtu codes: 256 -> 1 ... 4096 -> 5; 0 for anything else.
int mtu_code(std::uint32_t bytes);
std::uint32_t mtu_bytes(int code);

class Exchange {
 public:
  Exchange(int fd, bool client, std::chrono::milliseconds timeout) : fd_(fd), client_(client), timeout_(timeout) {}

  // Versions; an error when the peer is older than kOldestPeerVersion.
  Status versions();
  // Page size and cache-line size (perftest takes the larger of each).
  Status sys_data(std::uint32_t page_size, std::uint32_t cache_line);
  // Our path MTU against the peer's: the smaller valid one, in bytes.
  Result<std::uint32_t> mtu(std::uint32_t ours);
  Result<Key> keys(const Key& mine, bool with_gid);
  // The BW report: ours goes out, the peer's comes back.
  Result<BwResult> bw_report(const BwResult& mine);
  // The close: one more key exchange, then "done".
  Status close(const Key& mine, bool with_gid);
  // A key exchange that may wait `limit` for the peer (the server waiting
  // for the client's measurement to end).
  Result<Key> keys_after(const Key& mine, bool with_gid, std::chrono::milliseconds limit);
  const std::string& peer_version() const { return peer_version_; }

 private:
  Status swap(const void* mine, void* theirs, std::size_t n, const char* what,
              std::chrono::milliseconds limit);
  Status write_all(const void* p, std::size_t n, const char* what, std::chrono::steady_clock::time_point deadline);
  Status read_exact(void* p, std::size_t n, const char* what, std::chrono::steady_clock::time_point deadline);
  int fd_;
  bool client_;
  std::chrono::milliseconds timeout_;
  std::string peer_version_;
};

}  // namespace rma::perftest::wire
