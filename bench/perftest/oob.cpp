#include "oob.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

namespace rma::perftest {
namespace {

using Clock = std::chrono::steady_clock;

void put_u(std::string& out, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  bool get(std::uint64_t& v, int bytes) {
    if (pos_ + static_cast<std::size_t>(bytes) > s_.size()) return false;
    v = 0;
    for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<std::uint8_t>(s_[pos_++]);
    return true;
  }
  bool get_bytes(std::uint8_t* out, std::size_t n) {
    if (pos_ + n > s_.size()) return false;
    std::memcpy(out, s_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool done() const { return pos_ == s_.size(); }

 private:
  const std::string& s_;
  std::size_t pos_ = 0;
};

std::string errno_text(int e) { return std::strerror(e); }

}  // namespace

const char* frame_type_name(FrameType t) {
  switch (t) {
    case FrameType::kVersion: return "version";
    case FrameType::kSettings: return "settings";
    case FrameType::kQpInfo: return "QP info";
    case FrameType::kSync: return "sync";
    case FrameType::kHeartbeat: return "heartbeat";
    case FrameType::kReport: return "report";
    case FrameType::kDone: return "done";
    case FrameType::kError: return "error";
    case FrameType::kOk: return "ok";
  }
  return "unknown";
}

std::string encode_qp_info(const QpInfo& q) {
  std::string out;
  put_u(out, q.address.size, 1);
  out.append(reinterpret_cast<const char*>(q.address.bytes.data()), q.address.size);
  put_u(out, q.qpn, 4);
  put_u(out, q.psn, 4);
  put_u(out, q.rkey, 4);
  put_u(out, q.vaddr, 8);
  put_u(out, q.size, 8);
  put_u(out, q.out_reads, 4);
  put_u(out, q.lid, 2);
  out.append(reinterpret_cast<const char*>(q.gid.data()), q.gid.size());
  return out;
}

Result<QpInfo> decode_qp_info(const std::string& payload) {
  QpInfo q;
  Reader r(payload);
  std::uint64_t len = 0, v = 0;
  if (!r.get(len, 1) || len > EndpointAddress::kMaxSize) {
    return invalid_argument("malformed QP info from the peer: bad endpoint address length");
  }
  q.address.size = static_cast<std::uint32_t>(len);
  bool ok = r.get_bytes(q.address.bytes.data(), len);
  ok = ok && r.get(v, 4);
  q.qpn = static_cast<std::uint32_t>(v);
  ok = ok && r.get(v, 4);
  q.psn = static_cast<std::uint32_t>(v);
  ok = ok && r.get(v, 4);
  q.rkey = static_cast<std::uint32_t>(v);
  ok = ok && r.get(q.vaddr, 8) && r.get(q.size, 8);
  ok = ok && r.get(v, 4);
  q.out_reads = static_cast<std::uint32_t>(v);
  ok = ok && r.get(v, 2);
  q.lid = static_cast<std::uint16_t>(v);
  ok = ok && r.get_bytes(q.gid.data(), q.gid.size());
  if (!ok || !r.done()) return invalid_argument("malformed QP info from the peer (" + std::to_string(payload.size()) + " bytes)");
  return q;
}

OobChannel::OobChannel(OobChannel&& o) noexcept : fd_(o.fd_), timeout_ms_(o.timeout_ms_) { o.fd_ = -1; }
OobChannel& OobChannel::operator=(OobChannel&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    timeout_ms_ = o.timeout_ms_;
    o.fd_ = -1;
  }
  return *this;
}
OobChannel::~OobChannel() {
  if (fd_ >= 0) ::close(fd_);
}

Status OobChannel::send(FrameType type, const std::string& payload) {
  if (fd_ < 0) return failed_precondition("OOB channel is closed");
  if (payload.size() + 1 > kMaxFrame) return invalid_argument("OOB frame too large");
  std::string buf;
  put_u(buf, payload.size() + 1, 4);
  buf.push_back(static_cast<char>(type));
  buf += payload;
  std::size_t off = 0;
  while (off < buf.size()) {
    ssize_t n = ::send(fd_, buf.data() + off, buf.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error(std::string("OOB send of ") + frame_type_name(type) + " to the peer failed", errno);
    }
    off += static_cast<std::size_t>(n);
  }
  return {};
}

Status OobChannel::read_exact(void* buf, std::size_t n, Clock::time_point deadline) {
  auto* p = static_cast<char*>(buf);
  std::size_t off = 0;
  while (off < n) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%g", timeout_ms_ / 1000.0);
      return timeout_error(std::string("the peer sent nothing for ") + secs +
                           " s (OOB read timeout); is it still running?");
    }
    pollfd pfd{fd_, POLLIN, 0};
    int pr = ::poll(&pfd, 1, static_cast<int>(left));
    if (pr < 0) {
      if (errno == EINTR) continue;
      return io_error("poll on the OOB socket failed", errno);
    }
    if (pr == 0) continue;
    ssize_t got = ::recv(fd_, p + off, n - off, 0);
    if (got == 0) return unavailable("the peer closed the OOB connection");
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return io_error("OOB receive failed", errno);
    }
    off += static_cast<std::size_t>(got);
    last_rx_ = Clock::now();
  }
  return {};
}

Result<Frame> OobChannel::recv() {
  for (;;) {
    RMA_ASSIGN_OR_RETURN(Frame f, recv_one());
    if (f.type != FrameType::kHeartbeat) return f;
  }
}

Result<bool> OobChannel::poll_frame(Frame& out) {
  while (readable()) {
    RMA_ASSIGN_OR_RETURN(Frame f, recv_one());
    if (f.type == FrameType::kHeartbeat) continue;
    out = std::move(f);
    return true;
  }
  return false;
}

Result<Frame> OobChannel::recv_one() {
  if (fd_ < 0) return failed_precondition("OOB channel is closed");
  {
    auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms_);
    unsigned char hdr[4];
    RMA_RETURN_IF_ERROR(read_exact(hdr, 4, deadline));
    std::uint32_t len = (std::uint32_t{hdr[0]} << 24) | (std::uint32_t{hdr[1]} << 16) | (std::uint32_t{hdr[2]} << 8) | hdr[3];
    if (len == 0 || len > kMaxFrame) {
      return invalid_argument("the peer does not speak the " + std::string(kProtocolVersion) +
                              " protocol (bad frame length " + std::to_string(len) +
                              "); is it perftest's ib_* tool or another program?");
    }
    std::string body(len, '\0');
    RMA_RETURN_IF_ERROR(read_exact(body.data(), len, deadline));
    Frame f;
    f.type = static_cast<FrameType>(static_cast<std::uint8_t>(body[0]));
    f.payload = body.substr(1);
    if (f.type == FrameType::kError) return failed_precondition("the peer reported: " + f.payload);
    return f;
  }
}

Result<std::string> OobChannel::expect(FrameType type) {
  RMA_ASSIGN_OR_RETURN(Frame f, recv());
  if (f.type != type) {
    return invalid_argument(std::string("OOB protocol error: expected ") + frame_type_name(type) + " from the peer, got " +
                            frame_type_name(f.type));
  }
  return std::move(f.payload);
}

bool OobChannel::readable() {
  if (fd_ < 0) return false;
  pollfd pfd{fd_, POLLIN, 0};
  return ::poll(&pfd, 1, 0) > 0;
}

Status OobChannel::exchange_version(const std::string& mine) {
  RMA_RETURN_IF_ERROR(send(FrameType::kVersion, mine));
  auto theirs = expect(FrameType::kVersion);
  if (!theirs.ok()) return theirs.status().with_context("version exchange");
  if (*theirs != mine) {
    return failed_precondition("version mismatch: this side speaks '" + mine + "', the peer '" + *theirs +
                               "'; run the same librma build on both sides");
  }
  return {};
}

Status OobChannel::sync() {
  RMA_RETURN_IF_ERROR(send(FrameType::kSync));
  auto r = expect(FrameType::kSync);
  return r.ok() ? Status() : r.status();
}

void OobChannel::heartbeat_if_due() {
  auto now = Clock::now();
  if (now - last_heartbeat_ < std::chrono::seconds(1)) return;
  last_heartbeat_ = now;
  (void)send(FrameType::kHeartbeat);
}

Result<int> oob_listen(const std::string& addr, std::uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  if (::inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1) {
    return invalid_argument("--bind: '" + addr + "' is not an IPv4 address");
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return io_error("cannot create the OOB socket", errno);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    int e = errno;
    ::close(fd);
    if (e == EADDRINUSE) {
      return unavailable("cannot listen on " + addr + ":" + std::to_string(port) +
                         ": port already in use (another server running? pick one with -p)");
    }
    return io_error("cannot listen on " + addr + ":" + std::to_string(port), e);
  }
  if (::listen(fd, 1) != 0) {
    int e = errno;
    ::close(fd);
    return io_error("cannot listen on " + addr + ":" + std::to_string(port), e);
  }
  return fd;
}

Result<OobChannel> oob_accept(int listen_fd, std::uint32_t read_timeout_ms, std::uint32_t accept_timeout_ms) {
  auto deadline = Clock::now() + std::chrono::milliseconds(accept_timeout_ms);
  for (;;) {
    int wait = -1;
    if (accept_timeout_ms != 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return timeout_error("no client connected within " + std::to_string(accept_timeout_ms) + " ms");
      wait = static_cast<int>(left);
    }
    pollfd pfd{listen_fd, POLLIN, 0};
    int pr = ::poll(&pfd, 1, wait);
    if (pr < 0 && errno != EINTR) return io_error("poll on the listening socket failed", errno);
    if (pr <= 0) continue;
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN) continue;
      return io_error("accept on the OOB socket failed", errno);
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return OobChannel(fd, read_timeout_ms);
  }
}

Result<OobChannel> oob_connect(const std::string& host, std::uint16_t port, std::uint32_t retry_ms,
                               std::uint32_t read_timeout_ms) {
  const std::string where = host + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int gai = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (gai != 0 || res == nullptr) {
    return not_found("cannot reach server " + where + ": cannot resolve '" + host + "': " + ::gai_strerror(gai));
  }
  sockaddr_in sa{};
  std::memcpy(&sa, res->ai_addr, sizeof sa);
  ::freeaddrinfo(res);

  auto deadline = Clock::now() + std::chrono::milliseconds(retry_ms);
  int last_err = 0;
  for (;;) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return io_error("cannot create the OOB socket", errno);
    int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    if (rc != 0 && errno == EINPROGRESS) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      pollfd pfd{fd, POLLOUT, 0};
      int pr = ::poll(&pfd, 1, static_cast<int>(std::max<long long>(left, 100)));
      if (pr <= 0) {
        rc = -1;
        errno = ETIMEDOUT;
      } else {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        errno = err;
      }
    }
    if (rc == 0) {
      int flags = ::fcntl(fd, F_GETFL);
      ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return OobChannel(fd, read_timeout_ms);
    }
    last_err = errno;
    ::close(fd);
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  char secs[32];
  std::snprintf(secs, sizeof secs, "%g", retry_ms / 1000.0);
  return unavailable("cannot reach server " + where + ": " + errno_text(last_err) + " (retried for " + secs + " s)");
}

}  // namespace rma::perftest
