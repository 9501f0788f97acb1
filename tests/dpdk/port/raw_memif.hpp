// A memif server driven through ethdev directly, for the tests of how our
// memif client meets a server that exists but has not started (DPDK 22.11
// refuses the handshake then), and a capture of DPDK's memif log to see
// that refusal happen. Used by port_memif_test and rma_port_peer.
#pragma once

#include <unistd.h>

#include <rte_bus_vdev.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_mbuf.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "port/memif_gate.hpp"

namespace rma::roce::testing {

using namespace std::chrono_literals;

// DPDK's memif log lines (debug level, this process) into a file the test
// reads. The file is never closed: DPDK's interrupt thread may still hold
// it for a line it is writing when the capture ends.
class MemifLogCapture {
 public:
  MemifLogCapture() : file_(shared_file()) {
    old_level_ = rte_log_get_level(rte_log_register("pmd.net.memif"));
    old_global_ = rte_log_get_global_level();
    if (file_ == nullptr) return;
    rte_log_set_global_level(RTE_LOG_DEBUG);  // a plain --log-level=N would hide memif's debug lines
    std::fflush(file_);
    from_ = lseek(fileno(file_), 0, SEEK_END);
    rte_openlog_stream(file_);
    (void)rte_log_set_level_pattern("pmd.net.memif*", RTE_LOG_DEBUG);
  }
  ~MemifLogCapture() {
    (void)rte_log_set_level_pattern("pmd.net.memif*", old_level_ > 0 ? static_cast<std::uint32_t>(old_level_)
                                                                      : static_cast<std::uint32_t>(RTE_LOG_WARNING));
    rte_log_set_global_level(old_global_);
    rte_openlog_stream(nullptr);
  }
  MemifLogCapture(const MemifLogCapture&) = delete;
  MemifLogCapture& operator=(const MemifLogCapture&) = delete;

  bool wait_for(const std::string& text, std::chrono::milliseconds budget) {
    const auto end = std::chrono::steady_clock::now() + budget;
    do {
      if (contents().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(5ms);
    } while (std::chrono::steady_clock::now() < end);
    return false;
  }
  // What DPDK logged since the capture began (for a failing test's message).
  std::string contents() const {
    std::string out;
    if (file_ == nullptr) return out;
    char buf[4096];
    off_t off = from_;
    for (ssize_t n; (n = pread(fileno(file_), buf, sizeof buf, off)) > 0; off += n) out.append(buf, n);
    return out;
  }

 private:
  static std::FILE* shared_file() {
    static std::FILE* const f = std::tmpfile();
    return f;
  }
  std::FILE* file_;
  off_t from_ = 0;
  int old_level_ = 0;
  std::uint32_t old_global_ = RTE_LOG_DEBUG;
};

// A memif server device driven through ethdev directly, so that the test
// decides when it starts (open_port creates, configures and starts at once).
// Once started it takes the memif gate as DpdkPort does (memif_gate.hpp):
// DPDK's disconnect handler must not unmap the rings under a burst, nor run
// beside the teardown.
class RawMemifServer {
 public:
  explicit RawMemifServer(const std::string& sock) {
    static int n = 0;
    const std::string tag = std::to_string(getpid()) + "_" + std::to_string(++n);
    vdev_ = "net_memif_raw" + tag;
    pool_ = rte_pktmbuf_pool_create(("rawmemif" + tag).c_str(), 1023, 0, 0, 10240, SOCKET_ID_ANY);
    if (pool_ == nullptr) return;
    const std::string args = "role=server,socket=/" + sock + ",socket-abstract=yes,id=0,bsize=9216";
    if (rte_vdev_init(vdev_.c_str(), args.c_str()) != 0) {
      vdev_.clear();
      return;
    }
    created_ = rte_eth_dev_get_port_by_name(vdev_.c_str(), &port_) == 0;
  }
  ~RawMemifServer() {
    // Never started (a test that failed early): a gate user all the same, so
    // that no memif handler (a client's connection) runs beside the close.
    if (created_ && !gated_) gated_ = port::MemifGate::instance().add_user(port_).ok();
    const bool held = gated_ && port::MemifGate::instance().enter_wait(std::chrono::milliseconds(2000));
    if (gated_) port::MemifGate::instance().remove_user(port_);
    if (started_) (void)rte_eth_dev_stop(port_);
    if (created_) (void)rte_eth_dev_close(port_);
    if (!vdev_.empty()) (void)rte_vdev_uninit(vdev_.c_str());
    if (held) port::MemifGate::instance().leave();
    if (pool_ != nullptr) rte_mempool_free(pool_);
  }
  RawMemifServer(const RawMemifServer&) = delete;
  RawMemifServer& operator=(const RawMemifServer&) = delete;
  bool created() const { return created_; }
  bool start() {
    rte_eth_conf conf{};
    if (rte_eth_dev_configure(port_, 1, 1, &conf) != 0) return false;
    if (rte_eth_rx_queue_setup(port_, 0, 256, SOCKET_ID_ANY, nullptr, pool_) != 0) return false;
    if (rte_eth_tx_queue_setup(port_, 0, 256, SOCKET_ID_ANY, nullptr) != 0) return false;
    gated_ = port::MemifGate::instance().add_user(port_).ok();
    started_ = gated_ && rte_eth_dev_start(port_) == 0;
    return started_;
  }
  bool link_up() const {
    rte_eth_link l{};
    return started_ && rte_eth_link_get_nowait(port_, &l) == 0 && l.link_status == RTE_ETH_LINK_UP;
  }
  void send(const std::vector<std::uint8_t>& f) {
    const port::GateHold gate(true);
    if (!gate.held()) return;  // a memif handler runs: the caller sends again
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    if (m == nullptr) return;
    auto* p = static_cast<std::uint8_t*>(static_cast<void*>(rte_pktmbuf_append(m, static_cast<std::uint16_t>(f.size()))));
    if (p == nullptr) {
      rte_pktmbuf_free(m);
      return;
    }
    std::memcpy(p, f.data(), f.size());
    if (rte_eth_tx_burst(port_, 0, &m, 1) != 1) rte_pktmbuf_free(m);
  }
  std::vector<std::uint8_t> receive(std::chrono::milliseconds budget) {
    const auto end = std::chrono::steady_clock::now() + budget;
    while (std::chrono::steady_clock::now() < end) {
      rte_mbuf* m = nullptr;
      std::uint16_t n = 0;
      {
        const port::GateHold gate(true);
        if (gate.held()) n = rte_eth_rx_burst(port_, 0, &m, 1);
      }
      if (n == 1) {
        std::vector<std::uint8_t> out(rte_pktmbuf_pkt_len(m));
        const void* d = rte_pktmbuf_read(m, 0, static_cast<std::uint32_t>(out.size()), out.data());
        if (d != nullptr && d != out.data()) std::memcpy(out.data(), d, out.size());
        rte_pktmbuf_free(m);
        return out;
      }
      std::this_thread::sleep_for(100us);
    }
    return {};
  }

 private:
  std::string vdev_;
  rte_mempool* pool_ = nullptr;
  std::uint16_t port_ = 0;
  bool created_ = false;
  bool gated_ = false;
  bool started_ = false;
};

// True once a memif socket of this name exists in this network namespace:
// /proc/net/unix lists the abstract socket as "@/name" (memif puts the "/").
inline bool memif_socket_listens(const std::string& name) {
  std::ifstream in("/proc/net/unix");
  std::string line;
  const std::string want = " @/" + name;
  while (std::getline(in, line)) {
    if (line.size() >= want.size() && line.compare(line.size() - want.size(), want.size(), want) == 0) return true;
  }
  return false;
}

}  // namespace rma::roce::testing
