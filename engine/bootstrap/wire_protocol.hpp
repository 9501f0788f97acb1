// The rmarun bootstrap protocol over a Unix stream socket. A message is a
// 4-byte little-endian length (of what follows), a 1-byte op, and fields:
// u32 little-endian, or bytes as u32 length + data. Ranks send requests;
// rmarun answers those that wait (fence, get, barrier, allgather, finalize).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rma/sdk/status.hpp"

namespace rma::bootstrap::wire {

enum class Op : std::uint8_t {
  kHello = 1,     // u32 rank, u32 pid                      -> kOk | kError
  kPut,           // bytes key, bytes value                  (no answer)
  kFence,         //                                         -> kOk | kError
  kGet,           // u32 rank, bytes key                     -> kValue | kNotFound | kError
  kBarrier,       //                                         -> kOk | kError
  kAllgather,     // bytes mine                              -> kGathered | kError
  kAbort,         // u32 exit code, bytes message            (no answer; the job ends)
  kFinalize,      //                                         -> kOk
  kOk = 64,
  kError,         // bytes message
  kValue,         // bytes value
  kNotFound,      // bytes message
  kGathered,      // u32 count, count x bytes
};

constexpr std::uint32_t kMaxMessage = 64u << 20;  // a peer claiming more is broken

class Writer {
 public:
  explicit Writer(Op op) { buf_.resize(4); buf_.push_back(static_cast<std::uint8_t>(op)); }
  Writer& u32(std::uint32_t v);
  Writer& bytes(std::span<const std::uint8_t> b);
  Writer& str(std::string_view s) {
    return bytes({reinterpret_cast<const std::uint8_t*>(s.data()), s.size()});
  }
  // The finished message, length prefix filled in.
  std::vector<std::uint8_t>& finish();

 private:
  std::vector<std::uint8_t> buf_;
};

class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> body) : p_(body) {}
  Result<std::uint32_t> u32();
  Result<std::vector<std::uint8_t>> bytes();
  Result<std::string> str();
  bool done() const noexcept { return off_ == p_.size(); }

 private:
  std::span<const std::uint8_t> p_;
  std::size_t off_ = 0;
};

// Blocking whole-message I/O with a deadline (poll). A message is op + body.
struct Message {
  Op op = Op::kOk;
  std::vector<std::uint8_t> body;
};
Status send_all(int fd, std::span<const std::uint8_t> data, int timeout_ms);
Result<Message> receive(int fd, int timeout_ms);

// Incremental framing for the server's non-blocking sockets: append what
// read() returned; take whole messages out.
class Framer {
 public:
  void append(const std::uint8_t* p, std::size_t n) { buf_.insert(buf_.end(), p, p + n); }
  // A whole message when one is buffered; an error when the length is absurd.
  Result<bool> next(Message& out);

 private:
  std::vector<std::uint8_t> buf_;
};

}  // namespace rma::bootstrap::wire
