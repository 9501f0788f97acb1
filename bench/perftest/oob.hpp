// Out-of-band exchange over TCP, as perftest does it: the server listens on
// -p, the client connects, and the two swap a version string, the test
// settings and one record per QP (librma EndpointAddress plus rkey, vaddr,
// size), then synchronise around the measurement.
//
// Wire format (librma's own, not perftest's): frames of
//   u32 length (big endian, counts type + payload) | u8 type | payload
// The first frame each side sends is kVersion with kProtocolVersion.
// Every read has a deadline; heartbeats from a busy peer restart it.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/status.hpp"

namespace rma::perftest {

inline constexpr const char* kProtocolVersion = "rma-perftest 1";
inline constexpr std::uint32_t kMaxFrame = 1u << 16;

enum class FrameType : std::uint8_t {
  kVersion = 1,
  kSettings = 2,
  kQpInfo = 3,
  kSync = 4,
  kHeartbeat = 5,
  kReport = 6,
  kDone = 7,
  kError = 8,
  kOk = 9,
};
const char* frame_type_name(FrameType t);

struct Frame {
  FrameType type = FrameType::kSync;
  std::string payload;
};

// What one side tells the other about one of its QPs.
struct QpInfo {
  EndpointAddress address;
  std::uint32_t qpn = 0;
  std::uint32_t psn = 0;
  std::uint32_t rkey = 0;
  std::uint64_t vaddr = 0;
  std::uint64_t size = 0;
  std::uint32_t out_reads = 0;
  std::uint16_t lid = 0;
  std::array<std::uint8_t, 16> gid{};
};
std::string encode_qp_info(const QpInfo& q);
Result<QpInfo> decode_qp_info(const std::string& payload);

// A connected TCP stream with deadline-bounded framed reads.
class OobChannel {
 public:
  OobChannel() = default;
  explicit OobChannel(int fd, std::uint32_t timeout_ms = 10000) : fd_(fd), timeout_ms_(timeout_ms) {}
  OobChannel(OobChannel&& o) noexcept;
  OobChannel& operator=(OobChannel&& o) noexcept;
  OobChannel(const OobChannel&) = delete;
  OobChannel& operator=(const OobChannel&) = delete;
  ~OobChannel();

  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void set_timeout_ms(std::uint32_t ms) { timeout_ms_ = ms; }
  std::uint32_t timeout_ms() const { return timeout_ms_; }

  Status send(FrameType type, const std::string& payload = {});
  // Next frame other than a heartbeat; heartbeats restart the deadline.
  // A kError frame from the peer becomes an error Status with its text.
  Result<Frame> recv();
  // recv() that insists on `type`.
  Result<std::string> expect(FrameType type);
  // True when a frame (or EOF) is waiting; never blocks.
  bool readable();
  // Reads the frames already waiting without blocking on an idle socket:
  // true with `out` set when one other than a heartbeat arrived, false when
  // none did; the peer's kError or EOF is an error.
  Result<bool> poll_frame(Frame& out);

  // Sends kVersion and checks the peer's.
  Status exchange_version(const std::string& mine = kProtocolVersion);
  // Both sides send kSync and wait for the peer's.
  Status sync();
  // Sends a heartbeat when the last one is older than a second.
  void heartbeat_if_due();
  // When the last byte arrived from the peer (or the channel was made).
  std::chrono::steady_clock::time_point last_rx() const { return last_rx_; }

 private:
  Result<Frame> recv_one();
  Status read_exact(void* buf, std::size_t n, std::chrono::steady_clock::time_point deadline);
  int fd_ = -1;
  std::uint32_t timeout_ms_ = 10000;
  std::chrono::steady_clock::time_point last_heartbeat_{};
  std::chrono::steady_clock::time_point last_rx_ = std::chrono::steady_clock::now();
};

// A listening socket on addr:port (SO_REUSEADDR). Port in use -> clear error.
Result<int> oob_listen(const std::string& addr, std::uint16_t port);
// Waits for one client (forever when timeout_ms is 0).
Result<OobChannel> oob_accept(int listen_fd, std::uint32_t read_timeout_ms, std::uint32_t accept_timeout_ms = 0);
// Connects to host:port, retrying refused/unreachable for up to retry_ms.
Result<OobChannel> oob_connect(const std::string& host, std::uint16_t port, std::uint32_t retry_ms,
                               std::uint32_t read_timeout_ms);

}  // namespace rma::perftest
