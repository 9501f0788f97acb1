#include "bootstrap/launcher_client.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bootstrap/timeout.hpp"
#include "bootstrap/wire_protocol.hpp"

namespace rma::bootstrap {
namespace {

using Bytes = std::vector<std::uint8_t>;
using wire::Op;

Result<int> env_int(const char* name, int lo, int hi) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return not_found(std::string(name) + " is not set (start the program with rmarun)");
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < lo || n > hi) {
    return invalid_argument(std::string(name) + "=" + v + ": expected an integer in " + std::to_string(lo) + ".." +
                            std::to_string(hi));
  }
  return static_cast<int>(n);
}

class LauncherRank final : public Bootstrap {
 public:
  LauncherRank(int fd, int rank, int size, int timeout_ms) : fd_(fd), rank_(rank), size_(size), timeout_ms_(timeout_ms) {}
  ~LauncherRank() override {
    // Tell rmarun this rank finished on purpose; a closed connection without
    // it means the rank failed.
    if (send(wire::Writer(Op::kFinalize)).ok()) (void)wire::receive(fd_, 5000);
    ::close(fd_);
  }
  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  std::string_view kind() const noexcept override { return "rmarun"; }

  Status put(std::string_view key, std::span<const std::uint8_t> value) override {
    if (key.empty()) return invalid_argument("bootstrap put: empty key");
    wire::Writer w(Op::kPut);
    w.str(key).bytes(value);
    return send(w);
  }
  Status fence() override { return simple("fence", Op::kFence); }
  Status barrier() override { return simple("barrier", Op::kBarrier); }
  Result<Bytes> get(int rank, std::string_view key) override {
    if (rank < 0 || rank >= size_) {
      return invalid_argument("bootstrap get: rank " + std::to_string(rank) + " is outside 0.." + std::to_string(size_ - 1));
    }
    wire::Writer w(Op::kGet);
    w.u32(static_cast<std::uint32_t>(rank)).str(key);
    RMA_ASSIGN_OR_RETURN(wire::Message m, request("get", w));
    wire::Reader r(m.body);
    if (m.op == Op::kValue) return r.bytes();
    RMA_ASSIGN_OR_RETURN(std::string why, r.str());
    return m.op == Op::kNotFound ? not_found(why) : failed_precondition(why);
  }
  Result<std::vector<Bytes>> allgather(std::span<const std::uint8_t> mine) override {
    wire::Writer w(Op::kAllgather);
    w.bytes(mine);
    RMA_ASSIGN_OR_RETURN(wire::Message m, request("allgather", w));
    wire::Reader r(m.body);
    if (m.op != Op::kGathered) {
      RMA_ASSIGN_OR_RETURN(std::string why, r.str());
      return failed_precondition(why);
    }
    RMA_ASSIGN_OR_RETURN(std::uint32_t n, r.u32());
    if (n != static_cast<std::uint32_t>(size_)) return internal_error("allgather: rmarun returned " + std::to_string(n) + " parts");
    std::vector<Bytes> out;
    for (std::uint32_t i = 0; i < n; ++i) {
      RMA_ASSIGN_OR_RETURN(Bytes b, r.bytes());
      out.push_back(std::move(b));
    }
    return out;
  }
  [[noreturn]] void abort(int exit_code, std::string_view message) noexcept override {
    wire::Writer w(Op::kAbort);
    w.u32(static_cast<std::uint32_t>(exit_code)).str(message);
    (void)send(w);
    // rmarun stops every rank; if it is gone, stop this one anyway.
    std::fprintf(stderr, "rma: rank %d aborted the job: %.*s\n", rank_, static_cast<int>(message.size()), message.data());
    std::fflush(nullptr);
    ::sleep(10);
    std::_Exit(exit_code == 0 ? 1 : exit_code);
  }

 private:
  Status send(wire::Writer& w) { return wire::send_all(fd_, w.finish(), timeout_ms_); }
  Status send(wire::Writer&& w) { return send(w); }
  // rmarun enforces RMA_BOOTSTRAP_TIMEOUT and names the missing ranks; the
  // margin here only covers rmarun itself being gone or stuck.
  Result<wire::Message> request(const char* what, wire::Writer& w) {
    RMA_RETURN_IF_ERROR(send(w).with_context(std::string("bootstrap ") + what));
    auto m = wire::receive(fd_, timeout_ms_ + 5000);
    if (!m.ok()) return m.status().with_context(std::string("bootstrap ") + what);
    return m;
  }
  Status simple(const char* what, Op op) {
    wire::Writer w(op);
    RMA_ASSIGN_OR_RETURN(wire::Message m, request(what, w));
    if (m.op == Op::kOk) return {};
    wire::Reader r(m.body);
    RMA_ASSIGN_OR_RETURN(std::string why, r.str());
    return m.op == Op::kError && why.find("timed out") != std::string::npos ? timeout_error(why) : failed_precondition(why);
  }

  int fd_;
  int rank_, size_;
  int timeout_ms_;
};

}  // namespace

Result<std::unique_ptr<Bootstrap>> connect_to_launcher() {
  RMA_ASSIGN_OR_RETURN(int size, env_int("RMA_SIZE", 1, 1 << 20));
  RMA_ASSIGN_OR_RETURN(int rank, env_int("RMA_RANK", 0, size - 1));
  const char* addr = std::getenv("RMA_BOOTSTRAP_ADDR");
  if (addr == nullptr || *addr == '\0') return not_found("RMA_BOOTSTRAP_ADDR is not set (start the program with rmarun)");
  RMA_ASSIGN_OR_RETURN(auto timeout, configured_timeout());
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (std::strlen(addr) >= sizeof sa.sun_path) return invalid_argument(std::string("RMA_BOOTSTRAP_ADDR=") + addr + ": path too long");
  std::strcpy(sa.sun_path, addr);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return io_error("bootstrap: socket() failed", errno);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    const int e = errno;
    ::close(fd);
    return io_error(std::string("bootstrap: cannot reach rmarun at RMA_BOOTSTRAP_ADDR=") + addr, e);
  }
  auto b = std::make_unique<LauncherRank>(fd, rank, size, static_cast<int>(timeout.count()));
  wire::Writer hello(Op::kHello);
  hello.u32(static_cast<std::uint32_t>(rank)).u32(static_cast<std::uint32_t>(::getpid()));
  RMA_RETURN_IF_ERROR(wire::send_all(fd, hello.finish(), 5000));
  RMA_ASSIGN_OR_RETURN(wire::Message m, wire::receive(fd, 10000));
  if (m.op != Op::kOk) {
    wire::Reader r(m.body);
    auto why = r.str();
    return failed_precondition("bootstrap: rmarun refused rank " + std::to_string(rank) + ": " +
                               (why.ok() ? *why : std::string("?")));
  }
  return std::unique_ptr<Bootstrap>(std::move(b));
}

}  // namespace rma::bootstrap
