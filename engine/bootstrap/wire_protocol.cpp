#include "bootstrap/wire_protocol.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace rma::bootstrap::wire {
namespace {
void put_u32(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
std::uint32_t get_u32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) | (std::uint32_t{p[3]} << 24);
}
using Clock = std::chrono::steady_clock;
int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}
}  // namespace

Writer& Writer::u32(std::uint32_t v) {
  const std::size_t o = buf_.size();
  buf_.resize(o + 4);
  put_u32(buf_.data() + o, v);
  return *this;
}
Writer& Writer::bytes(std::span<const std::uint8_t> b) {
  u32(static_cast<std::uint32_t>(b.size()));
  buf_.insert(buf_.end(), b.begin(), b.end());
  return *this;
}
std::vector<std::uint8_t>& Writer::finish() {
  put_u32(buf_.data(), static_cast<std::uint32_t>(buf_.size() - 4));
  return buf_;
}

Result<std::uint32_t> Reader::u32() {
  if (p_.size() - off_ < 4) return invalid_argument("bootstrap message truncated (expected a 4-byte field)");
  const std::uint32_t v = get_u32(p_.data() + off_);
  off_ += 4;
  return v;
}
Result<std::vector<std::uint8_t>> Reader::bytes() {
  RMA_ASSIGN_OR_RETURN(std::uint32_t n, u32());
  if (p_.size() - off_ < n) {
    return invalid_argument("bootstrap message truncated (field of " + std::to_string(n) + " bytes)");
  }
  std::vector<std::uint8_t> v(p_.begin() + static_cast<std::ptrdiff_t>(off_),
                              p_.begin() + static_cast<std::ptrdiff_t>(off_ + n));
  off_ += n;
  return v;
}
Result<std::string> Reader::str() {
  RMA_ASSIGN_OR_RETURN(auto b, bytes());
  return std::string(b.begin(), b.end());
}

Status send_all(int fd, std::span<const std::uint8_t> data, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      off += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) return io_error("bootstrap: send to rmarun failed", errno);
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, remaining_ms(deadline)) == 0) return timeout_error("bootstrap: rmarun does not take data");
  }
  return {};
}

Result<Message> receive(int fd, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::uint8_t head[4];
  std::vector<std::uint8_t> body;
  std::size_t want = 4, got = 0;
  std::uint8_t* dst = head;
  bool have_len = false;
  for (;;) {
    while (got < want) {
      const ssize_t n = ::recv(fd, dst + got, want - got, MSG_DONTWAIT);
      if (n > 0) {
        got += static_cast<std::size_t>(n);
        continue;
      }
      if (n == 0) return unavailable("bootstrap: rmarun closed the connection (the job is ending)");
      if (errno != EAGAIN && errno != EINTR) return io_error("bootstrap: receive from rmarun failed", errno);
      pollfd p{fd, POLLIN, 0};
      const int left = remaining_ms(deadline);
      if (left == 0 || ::poll(&p, 1, left) == 0) {
        return timeout_error("bootstrap: no answer from rmarun within " + std::to_string(timeout_ms / 1000) + " s");
      }
    }
    if (have_len) break;
    const std::uint32_t len = get_u32(head);
    if (len == 0 || len > kMaxMessage) return invalid_argument("bootstrap: message of " + std::to_string(len) + " bytes");
    body.resize(len);
    dst = body.data();
    want = len;
    got = 0;
    have_len = true;
  }
  Message m;
  m.op = static_cast<Op>(body[0]);
  m.body.assign(body.begin() + 1, body.end());
  return m;
}

Result<bool> Framer::next(Message& out) {
  if (buf_.size() < 4) return false;
  const std::uint32_t len = get_u32(buf_.data());
  if (len == 0 || len > kMaxMessage) {
    return invalid_argument("bootstrap message claims " + std::to_string(len) + " bytes");
  }
  if (buf_.size() < 4 + std::size_t{len}) return false;
  out.op = static_cast<Op>(buf_[4]);
  out.body.assign(buf_.begin() + 5, buf_.begin() + 4 + len);
  buf_.erase(buf_.begin(), buf_.begin() + 4 + len);
  return true;
}

}  // namespace rma::bootstrap::wire
