#include "perftest_wire.hpp"

#include <endian.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace rma::perftest::wire {
namespace {

using Clock = std::chrono::steady_clock;

std::uint64_t double_bits_be(double d) {
  std::uint64_t v;
  std::memcpy(&v, &d, 8);
  return htobe64(v);
}
double double_from_be(std::uint64_t v) {
  v = be64toh(v);
  double d;
  std::memcpy(&d, &v, 8);
  return d;
}

}  // namespace

int mtu_code(std::uint32_t bytes) {
  switch (bytes) {
    case 256: return 1;
    case 512: return 2;
    case 1024: return 3;
    case 2048: return 4;
    case 4096: return 5;
    default: return 0;
  }
}
std::uint32_t mtu_bytes(int code) { return code >= 1 && code <= 5 ? 128u << code : 0; }

std::string format_key(const Key& k, bool with_gid) {
  char msg[128] = {};
  if (!with_gid) {
    std::snprintf(msg, sizeof msg, "%04x:%04x:%06x:%06x:%08x:%016" PRIx64 ":%08x", k.lid, k.out_reads, k.qpn, k.psn,
                  k.rkey, k.vaddr, k.srqn);
    return std::string(msg, 59);
  }
  int n = std::snprintf(msg, sizeof msg, "%04x:%04x:%06x:%06x:%08x:%016" PRIx64 ":", k.lid, k.out_reads, k.qpn, k.psn,
                        k.rkey, k.vaddr);
  for (std::uint8_t b : k.gid) n += std::snprintf(msg + n, sizeof msg - static_cast<std::size_t>(n), "%02x:", b);
  std::snprintf(msg + n, sizeof msg - static_cast<std::size_t>(n), "%08x:", k.srqn);
  return std::string(msg, 108);
}

Result<Key> parse_key(const std::string& msg, bool with_gid) {
  // Fields separated by ':'; the message ends at its NUL.
  std::vector<std::string> f;
  std::string cur;
  for (char c : msg) {
    if (c == '\0') break;
    if (c == ':') {
      f.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) f.push_back(cur);
  const std::size_t want = with_gid ? 6 + 16 + 1 : 7;
  if (f.size() != want) {
    return invalid_argument("perftest key exchange: the peer's key has " + std::to_string(f.size()) +
                            " fields, expected " + std::to_string(want) + (with_gid ? " (with GID)" : " (without GID)") +
                            ": does the peer use a GID (-x) when we do?");
  }
  auto hex = [&](const std::string& s, std::uint64_t max, const char* name) -> Result<std::uint64_t> {
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(s.c_str(), &end, 16);
    if (s.empty() || *end != '\0' || errno != 0 || v > max) {
      return invalid_argument(std::string("perftest key exchange: bad ") + name + " '" + s + "' in the peer's key");
    }
    return static_cast<std::uint64_t>(v);
  };
  Key k;
  RMA_ASSIGN_OR_RETURN(std::uint64_t lid, hex(f[0], 0xffff, "LID"));
  RMA_ASSIGN_OR_RETURN(std::uint64_t outs, hex(f[1], 0xffff, "outstanding reads"));
  RMA_ASSIGN_OR_RETURN(std::uint64_t qpn, hex(f[2], 0xffffff, "QPN"));
  RMA_ASSIGN_OR_RETURN(std::uint64_t psn, hex(f[3], 0xffffff, "PSN"));
  RMA_ASSIGN_OR_RETURN(std::uint64_t rkey, hex(f[4], 0xffffffffu, "rkey"));
  RMA_ASSIGN_OR_RETURN(std::uint64_t va, hex(f[5], ~0ull, "virtual address"));
  k.lid = static_cast<std::uint32_t>(lid);
  k.out_reads = static_cast<std::uint32_t>(outs);
  k.qpn = static_cast<std::uint32_t>(qpn);
  k.psn = static_cast<std::uint32_t>(psn);
  k.rkey = static_cast<std::uint32_t>(rkey);
  k.vaddr = va;
  std::size_t next = 6;
  if (with_gid) {
    for (std::size_t i = 0; i < 16; ++i) {
      RMA_ASSIGN_OR_RETURN(std::uint64_t b, hex(f[6 + i], 0xff, "GID byte"));
      k.gid[i] = static_cast<std::uint8_t>(b);
    }
    next = 22;
  }
  RMA_ASSIGN_OR_RETURN(std::uint64_t srqn, hex(f[next], 0xffffffffu, "SRQ number"));
  k.srqn = static_cast<std::uint32_t>(srqn);
  return k;
}

Status Exchange::write_all(const void* p, std::size_t n, const char* what, Clock::time_point deadline) {
  const auto* b = static_cast<const std::uint8_t*>(p);
  std::size_t off = 0;
  while (off < n) {
    const ssize_t w = ::send(fd_, b + off, n - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      off += static_cast<std::size_t>(w);
      continue;
    }
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return unavailable(std::string("perftest exchange: sending the ") + what + " failed: " + std::strerror(errno));
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return timeout_error(std::string("perftest exchange: the peer did not take the ") + what);
    pollfd pf{fd_, POLLOUT, 0};
    (void)::poll(&pf, 1, static_cast<int>(std::min<long long>(left, 1000)));
  }
  return {};
}

Status Exchange::read_exact(void* p, std::size_t n, const char* what, Clock::time_point deadline) {
  auto* b = static_cast<std::uint8_t*>(p);
  std::size_t off = 0;
  while (off < n) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      return timeout_error(std::string("perftest exchange: no ") + what + " from the peer in time (" +
                               std::to_string(off) + " of " + std::to_string(n) + " bytes arrived)");
    }
    pollfd pf{fd_, POLLIN, 0};
    const int r = ::poll(&pf, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (r <= 0) continue;
    const ssize_t got = ::recv(fd_, b + off, n - off, 0);
    if (got == 0) {
      return unavailable(std::string("perftest exchange: the peer closed the connection before sending the ") + what);
    }
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return unavailable(std::string("perftest exchange: reading the ") + what + " failed: " + std::strerror(errno));
    }
    off += static_cast<std::size_t>(got);
  }
  return {};
}

Status Exchange::swap(const void* mine, void* theirs, std::size_t n, const char* what,
                      std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  if (client_) {
    RMA_RETURN_IF_ERROR(write_all(mine, n, what, deadline));
    return read_exact(theirs, n, what, deadline);
  }
  RMA_RETURN_IF_ERROR(read_exact(theirs, n, what, deadline));
  return write_all(mine, n, what, deadline);
}

Status Exchange::versions() {
  char mine[16] = {};
  char theirs[17] = {};
  std::snprintf(mine, sizeof mine, "%s", kVersion);
  RMA_RETURN_IF_ERROR(swap(mine, theirs, 16, "version", timeout_));
  peer_version_ = std::string(theirs, strnlen(theirs, 16));
  const double v = std::atof(peer_version_.c_str());
  if (v < kOldestPeerVersion) {
    return failed_precondition("the peer speaks perftest version '" + peer_version_ +
                               "'; this tool speaks perftest's exchange of version " + kVersion +
                               " and needs a peer of 5.70 or newer (is the peer an rma_* tool on another "
                               "transport? both sides need --transport=verbs)");
  }
  return {};
}

Status Exchange::sys_data(std::uint32_t page_size, std::uint32_t cache_line) {
  std::uint32_t mine = htobe32(page_size), theirs = 0;
  RMA_RETURN_IF_ERROR(swap(&mine, &theirs, 4, "page size", timeout_));
  mine = htobe32(cache_line);
  return swap(&mine, &theirs, 4, "cache line size", timeout_);
}

Result<std::uint32_t> Exchange::mtu(std::uint32_t ours) {
  const int code = mtu_code(ours);
  if (code == 0) return invalid_argument("path MTU " + std::to_string(ours) + " is not an IB MTU (256..4096)");
  char mine[2] = {static_cast<char>('0' + code), '\0'};
  char theirs[3] = {};
  RMA_RETURN_IF_ERROR(swap(mine, theirs, 2, "path MTU", timeout_));
  const int peer = std::atoi(theirs);
  const int use = (peer >= 1 && peer <= 5 && peer < code) ? peer : code;
  return mtu_bytes(use);
}

Result<Key> Exchange::keys_after(const Key& mine, bool with_gid, std::chrono::milliseconds limit) {
  const std::string out = format_key(mine, with_gid);
  std::string in(out.size(), '\0');
  RMA_RETURN_IF_ERROR(swap(out.data(), in.data(), out.size(), "QP key", limit));
  return parse_key(in, with_gid);
}

Result<Key> Exchange::keys(const Key& mine, bool with_gid) { return keys_after(mine, with_gid, timeout_); }

Result<BwResult> Exchange::bw_report(const BwResult& mine) {
  BwResult r;
  std::uint64_t out = htobe64(mine.size), in = 0;
  RMA_RETURN_IF_ERROR(swap(&out, &in, 8, "report (size)", timeout_));
  r.size = be64toh(in);
  out = htobe64(mine.iters);
  RMA_RETURN_IF_ERROR(swap(&out, &in, 8, "report (iterations)", timeout_));
  r.iters = be64toh(in);
  out = double_bits_be(mine.bw_peak);
  RMA_RETURN_IF_ERROR(swap(&out, &in, 8, "report (peak bandwidth)", timeout_));
  r.bw_peak = double_from_be(in);
  out = double_bits_be(mine.bw_avg);
  RMA_RETURN_IF_ERROR(swap(&out, &in, 8, "report (average bandwidth)", timeout_));
  r.bw_avg = double_from_be(in);
  out = double_bits_be(mine.msg_rate);
  RMA_RETURN_IF_ERROR(swap(&out, &in, 8, "report (message rate)", timeout_));
  r.msg_rate = double_from_be(in);
  return r;
}

Status Exchange::close(const Key& mine, bool with_gid) {
  RMA_RETURN_IF_ERROR(keys(mine, with_gid).status());
  static const char kDone[] = "done";
  return write_all(kDone, sizeof kDone, "final \"done\"", Clock::now() + timeout_);
}

}  // namespace rma::perftest::wire
