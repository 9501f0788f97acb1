// Classic libpcap capture files (LINKTYPE_ETHERNET, nanosecond timestamps)
// of the frames a software NIC sends and receives. Wireshark and tshark
// decode them as RoCE v2 by UDP port 4791. Any thread may write: rx and tx
// paths share one writer. No DPDK here.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <span>
#include <string>

#include "wire/frame.hpp"
#include "rma/sdk/status.hpp"

namespace rma::roce {

class PcapWriter {
 public:
  static constexpr std::uint32_t kDefaultSnaplen = 65535;

  PcapWriter() = default;
  ~PcapWriter();  // flushes and closes
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  // Creates (truncates) `path` and writes the file header. Frames longer
  // than `snaplen` are cut to it (their original length is recorded).
  // Fails if already open or the file cannot be written.
  Status open(const std::string& path, std::uint32_t snaplen = kDefaultSnaplen);
  bool is_open() const noexcept;

  // Appends one frame (Ethernet header first, no FCS). `timestamp` is time
  // since the Unix epoch. Does nothing when not open; a failed write is
  // counted (write_errors) and the writer keeps going.
  void write(std::chrono::nanoseconds timestamp, std::span<const std::uint8_t> frame) noexcept;
  // A frame in up to three pieces, as handed to Link::transmit.
  void write(std::chrono::nanoseconds timestamp, const TxFrame& frame) noexcept;
  // Stamped with the current system time.
  void write(std::span<const std::uint8_t> frame) noexcept { write(now(), frame); }
  void write(const TxFrame& frame) noexcept { write(now(), frame); }

  // Pushes buffered records to the file. close() also flushes.
  Status flush();
  Status close();

  std::uint64_t frames_written() const noexcept;
  std::uint64_t write_errors() const noexcept;

  static std::chrono::nanoseconds now() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::system_clock::now().time_since_epoch());
  }

 private:
  void write_locked(std::chrono::nanoseconds timestamp, std::span<const std::uint8_t> a,
                    std::span<const std::uint8_t> b, std::span<const std::uint8_t> c) noexcept;

  mutable std::mutex mu_;
  std::FILE* file_ = nullptr;
  std::string path_;
  std::uint32_t snaplen_ = kDefaultSnaplen;
  std::uint64_t frames_ = 0;
  std::uint64_t errors_ = 0;
};

}  // namespace rma::roce
