// Classic pcap: a 24-byte file header, then per frame a 16-byte record
// header and the captured bytes, all in host byte order (readers detect it
// from the magic number). Magic 0xA1B23C4D: nanosecond timestamps.
#include "wire/pcap_writer.hpp"

#include <cerrno>
#include <cstring>

namespace rma::roce {
namespace {

constexpr std::uint32_t kPcapMagicNanos = 0xA1B23C4D;
constexpr std::uint32_t kLinktypeEthernet = 1;

struct FileHeader {
  std::uint32_t magic;
  std::uint16_t version_major;
  std::uint16_t version_minor;
  std::int32_t thiszone;
  std::uint32_t sigfigs;
  std::uint32_t snaplen;
  std::uint32_t network;
};
static_assert(sizeof(FileHeader) == 24);

struct RecordHeader {
  std::uint32_t ts_sec;
  std::uint32_t ts_nsec;
  std::uint32_t incl_len;
  std::uint32_t orig_len;
};
static_assert(sizeof(RecordHeader) == 16);

}  // namespace

PcapWriter::~PcapWriter() { (void)close(); }

Status PcapWriter::open(const std::string& path, std::uint32_t snaplen) {
  std::lock_guard<std::mutex> lock(mu_);
  if (file_ != nullptr) return failed_precondition("pcap writer already open on " + path_);
  if (snaplen == 0) return invalid_argument("pcap snaplen must be positive");
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return io_error("cannot create pcap file " + path, errno);
  const FileHeader fh{kPcapMagicNanos, 2, 4, 0, 0, snaplen, kLinktypeEthernet};
  if (std::fwrite(&fh, sizeof fh, 1, f) != 1) {
    const int err = errno;
    std::fclose(f);
    return io_error("cannot write pcap header to " + path, err);
  }
  file_ = f;
  path_ = path;
  snaplen_ = snaplen;
  frames_ = 0;
  errors_ = 0;
  return Status();
}

bool PcapWriter::is_open() const noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  return file_ != nullptr;
}

void PcapWriter::write(std::chrono::nanoseconds timestamp, std::span<const std::uint8_t> frame) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  write_locked(timestamp, frame, {}, {});
}

void PcapWriter::write(std::chrono::nanoseconds timestamp, const TxFrame& frame) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  write_locked(timestamp, frame.head, frame.payload, frame.tail);
}

void PcapWriter::write_locked(std::chrono::nanoseconds timestamp, std::span<const std::uint8_t> a,
                              std::span<const std::uint8_t> b, std::span<const std::uint8_t> c) noexcept {
  if (file_ == nullptr) return;
  const std::size_t total = a.size() + b.size() + c.size();
  std::size_t room = total < snaplen_ ? total : snaplen_;
  const auto ns = timestamp.count() < 0 ? 0 : static_cast<std::uint64_t>(timestamp.count());
  const RecordHeader rh{static_cast<std::uint32_t>(ns / 1000000000u), static_cast<std::uint32_t>(ns % 1000000000u),
                        static_cast<std::uint32_t>(room),
                        static_cast<std::uint32_t>(total > 0xFFFFFFFFu ? 0xFFFFFFFFu : total)};
  bool ok = std::fwrite(&rh, sizeof rh, 1, file_) == 1;
  for (std::span<const std::uint8_t> piece : {a, b, c}) {
    const std::size_t k = piece.size() < room ? piece.size() : room;
    if (ok && k != 0) ok = std::fwrite(piece.data(), 1, k, file_) == k;
    room -= k;
  }
  if (ok) {
    ++frames_;
  } else {
    ++errors_;
  }
}

Status PcapWriter::flush() {
  std::lock_guard<std::mutex> lock(mu_);
  if (file_ == nullptr) return Status();
  if (std::fflush(file_) != 0) return io_error("cannot flush pcap file " + path_, errno);
  return Status();
}

Status PcapWriter::close() {
  std::lock_guard<std::mutex> lock(mu_);
  if (file_ == nullptr) return Status();
  std::FILE* f = file_;
  file_ = nullptr;
  if (std::fclose(f) != 0) return io_error("cannot close pcap file " + path_, errno);
  if (errors_ != 0) return io_error("pcap file " + path_ + ": " + std::to_string(errors_) + " frames not written", 0);
  return Status();
}

std::uint64_t PcapWriter::frames_written() const noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  return frames_;
}

std::uint64_t PcapWriter::write_errors() const noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  return errors_;
}

}  // namespace rma::roce
