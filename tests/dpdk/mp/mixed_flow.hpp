// The mixed workload of the two-process softroce tests, shared by the test
// (one process) and rma_softroce_mp_peer (the other). No gtest here: the peer
// reports through its exit code and the out-of-band socket.
//
// Each process exposes a target region (kSlots slots of kSlotBytes, filled
// with a known pattern) and kCounters 8-byte counters, and runs a MixedFlow
// against the other process's region: one operation in flight per slot,
// RDMA WRITE / RDMA READ at random offsets, FETCH_ADD and CMP_SWAP on the
// counters. The requester keeps a shadow copy of the remote region, so:
//  - every READ is compared byte for byte with the shadow;
//  - every WRITE is read back (the slot's next operation is a READ of the
//    written range), so every written byte is verified on the remote side;
//  - every atomic's returned value is compared with a model (atomics on one
//    QP execute in posting order), and the counters are read back at the end;
//  - every completion must belong to a busy slot (nothing completes twice,
//    nothing completes that was not posted).
//
// Sizes (WRITE and READ, not read-backs): log-uniform, so every order of
// magnitude is equally likely: 97 % in [1 B, 64 KiB], 3 % in (64 KiB, 1 MiB].
#pragma once

#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "rma/sdk/provider.hpp"

namespace rma::softroce::mp {

constexpr std::size_t kSlots = 32;
constexpr std::size_t kSlotBytes = 1u << 20;
constexpr std::size_t kCounters = 8;
constexpr std::uint32_t kMagic = 0x524D4D50;  // "RMMP"

using Clock = std::chrono::steady_clock;

inline void fill_pattern(std::uint8_t* p, std::size_t n, std::uint64_t seed) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (std::size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p[i] = static_cast<std::uint8_t>(x);
  }
}
inline std::uint64_t initial_counter(std::size_t k) { return 0x1000000ull * (k + 1) + 17; }
inline std::uint64_t slot_seed(std::size_t slot) { return 1000003ull + slot; }

// ---------------------------------------------------------------- out of band
// Fixed-size messages over a socketpair, every read bounded by a deadline.
struct Hello {
  std::uint32_t magic = kMagic;
  std::uint32_t addr_size = 0;
  std::uint8_t addr[EndpointAddress::kMaxSize] = {};
  std::uint64_t region = 0, counters = 0;
  std::uint32_t region_rkey = 0, counters_rkey = 0;
};
struct Done {
  std::uint32_t magic = kMagic;
  std::uint32_t ok = 0;
  std::uint64_t completed = 0;
  char error[200] = {};
};

inline bool send_all(int fd, const void* p, std::size_t n) {
  const auto* b = static_cast<const std::uint8_t*>(p);
  while (n > 0) {
    const ssize_t w = ::send(fd, b, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    b += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}
// Reads exactly n bytes; 1 = done, 0 = not yet complete by the deadline or
// (with wait_ms 0) nothing there, -1 = closed or error.
inline int recv_all(int fd, void* p, std::size_t n, int wait_ms) {
  auto* b = static_cast<std::uint8_t*>(p);
  std::size_t got = 0;
  const auto end = Clock::now() + std::chrono::milliseconds(wait_ms);
  while (got < n) {
    pollfd pfd{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
    const int pr = ::poll(&pfd, 1, got == 0 && wait_ms == 0 ? 0 : static_cast<int>(std::max<long long>(left, 1)));
    if (pr == 0) {
      if (got == 0 && (wait_ms == 0 || Clock::now() >= end)) return 0;
      if (Clock::now() >= end) return -1;  // a half message that stopped: broken peer
      continue;
    }
    if (pr < 0) return -1;
    const ssize_t r = ::recv(fd, b + got, n - got, 0);
    if (r <= 0) return -1;
    got += static_cast<std::size_t>(r);
  }
  return 1;
}

// ---------------------------------------------------------------- one process's side
struct Side {
  std::shared_ptr<Device> dev;
  std::shared_ptr<ProtectionDomain> pd;
  std::shared_ptr<CompletionQueue> cq;
  std::unique_ptr<QueuePair> qp;
  // Aligned storage: local slots (sources and READ destinations), the
  // target region peers access, the counters, atomic results.
  std::vector<std::uint8_t> local_store, region_store, counter_store, result_store;
  std::uint8_t *local = nullptr, *region = nullptr, *counters = nullptr, *results = nullptr;
  std::unique_ptr<MemoryRegion> local_mr, region_mr, counter_mr, result_mr;
};

inline std::uint8_t* aligned(std::vector<std::uint8_t>& v, std::size_t n) {
  v.assign(n + 4096, 0);
  auto a = reinterpret_cast<std::uintptr_t>(v.data());
  return v.data() + ((4096 - a % 4096) % 4096);
}

// Opens the softroce provider (RMA_SOFTROCE_PORT must name the port) and
// builds the side; returns an error text or "".
inline std::string make_side(Side& s, std::shared_ptr<Device> dev) {
  s.dev = std::move(dev);
  auto pd = s.dev->alloc_pd();
  if (!pd.ok()) return pd.status().to_string();
  s.pd = *pd;
  auto cq = s.dev->create_cq(4 * kSlots);
  if (!cq.ok()) return cq.status().to_string();
  s.cq = *cq;
  s.local = aligned(s.local_store, kSlots * kSlotBytes);
  s.region = aligned(s.region_store, kSlots * kSlotBytes);
  s.counters = aligned(s.counter_store, kCounters * 8);
  s.results = aligned(s.result_store, kSlots * 8);
  for (std::size_t i = 0; i < kSlots; ++i) fill_pattern(s.region + i * kSlotBytes, kSlotBytes, slot_seed(i));
  for (std::size_t k = 0; k < kCounters; ++k) {
    const std::uint64_t v = initial_counter(k);
    std::memcpy(s.counters + k * 8, &v, 8);
  }
  auto reg = [&](std::uint8_t* p, std::size_t n, std::unique_ptr<MemoryRegion>& out) -> std::string {
    auto mr = s.pd->register_memory(p, n, kAllAccess);
    if (!mr.ok()) return mr.status().to_string();
    out = std::move(mr).value();
    return "";
  };
  for (auto e : {reg(s.local, kSlots * kSlotBytes, s.local_mr), reg(s.region, kSlots * kSlotBytes, s.region_mr),
                 reg(s.counters, kCounters * 8, s.counter_mr), reg(s.results, kSlots * 8, s.result_mr)}) {
    if (!e.empty()) return e;
  }
  QpConfig c;
  c.send_cq = s.cq;
  c.recv_cq = s.cq;
  c.max_send_wr = kSlots;
  c.max_recv_wr = 1;
  c.max_rd_atomic = 16;
  // Two busy-polling processes share two (loaded) cores: a peer may not run
  // for a scheduler tick or more, so the ACK timeout is generous (134 ms).
  c.timeout = 15;
  c.retry_cnt = 7;
  auto qp = s.pd->create_qp(c);
  if (!qp.ok()) return qp.status().to_string();
  s.qp = std::move(qp).value();
  return "";
}

inline Hello make_hello(const Side& s) {
  Hello h;
  auto a = s.qp->local_address();
  if (a.ok()) {
    h.addr_size = a->size;
    std::memcpy(h.addr, a->bytes.data(), a->size);
  }
  h.region = reinterpret_cast<std::uint64_t>(s.region);
  h.region_rkey = s.region_mr->rkey();
  h.counters = reinterpret_cast<std::uint64_t>(s.counters);
  h.counters_rkey = s.counter_mr->rkey();
  return h;
}

inline std::string connect_side(Side& s, const Hello& peer) {
  if (peer.magic != kMagic || peer.addr_size > EndpointAddress::kMaxSize) return "bad hello from the peer";
  EndpointAddress a;
  a.size = peer.addr_size;
  std::memcpy(a.bytes.data(), peer.addr, peer.addr_size);
  Status st = s.qp->connect(a);
  return st.ok() ? "" : st.to_string();
}

// ---------------------------------------------------------------- the flow
class MixedFlow {
 public:
  struct Stats {
    std::uint64_t writes = 0, reads = 0, readbacks = 0, fetch_adds = 0, cmp_swaps = 0;
    std::uint64_t bytes_written = 0, bytes_read = 0;
    std::uint64_t completed = 0;
  };

  MixedFlow(Side& s, const Hello& peer, std::uint64_t seed, std::uint64_t target)
      : s_(s), peer_(peer), target_(target), rng_(seed), shadow_(kSlots * kSlotBytes) {
    for (std::size_t i = 0; i < kSlots; ++i) fill_pattern(shadow_.data() + i * kSlotBytes, kSlotBytes, slot_seed(i));
    for (std::size_t k = 0; k < kCounters; ++k) model_[k] = initial_counter(k);
  }

  const std::string& error() const { return error_; }
  bool slot_busy(std::size_t slot) const { return ops_[slot].busy; }
  std::size_t busy() const { return busy_; }
  const Stats& stats() const { return st_; }
  bool finished() const { return !error_.empty() || (busy_ == 0 && final_done_); }

  // Posts the first operation of every slot.
  void start() {
    for (std::size_t s = 0; s < kSlots && error_.empty(); ++s) issue(s);
  }

  // Polls the CQ once (driving the device) and handles what arrived.
  void step() {
    Completion wc[32];
    const int n = s_.cq->poll({wc, 32});
    if (n < 0) {
      fail(std::string("CQ overrun: ") + s_.cq->overrun_reason());
      return;
    }
    for (int i = 0; i < n && error_.empty(); ++i) on_completion(wc[i]);
  }

 private:
  struct Op {
    Opcode op = Opcode::kRdmaWrite;
    std::uint32_t len = 0;
    std::uint64_t off = 0;
    std::uint64_t expect = 0;
    bool busy = false;
    bool unverified_write = false;  // the remote bytes of the last WRITE not yet read back
    bool final_read = false;
  };

  void fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
  }

  std::uint32_t pick_len() {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const bool large = rng_() % 100 < 3;
    const double lo = large ? 16.0 : 0.0, hi = large ? 20.0 : 16.0;  // log2 bounds
    auto len = static_cast<std::uint64_t>(std::floor(std::exp2(lo + u(rng_) * (hi - lo))));
    if (large && len <= 65536) len = 65537;
    if (len < 1) len = 1;
    if (len > kSlotBytes) len = kSlotBytes;
    return static_cast<std::uint32_t>(len);
  }

  // Posts the slot's next operation: the read-back of its last WRITE if that
  // is pending, else a random one, or (final) the counters read-back.
  void issue(std::size_t slot, bool final = false) {
    Op& o = ops_[slot];
    o.busy = true;
    ++busy_;
    o.final_read = false;
    Sge sge;
    WorkRequest w;
    w.wr_id = slot;
    w.flags = kWrSignaled;
    std::uint8_t* lp = s_.local + slot * kSlotBytes;
    auto remote = [&](std::uint64_t off) { return peer_.region + slot * kSlotBytes + off; };
    if (final) {
      // After the last atomic was posted: read every counter back (RC
      // executes it after all earlier requests; verified by the model).
      final_posted_ = true;
      o.op = Opcode::kRdmaRead;
      o.final_read = true;
      o.len = kCounters * 8;
      o.off = 0;
      std::memset(lp, 0, o.len);
      sge = Sge{reinterpret_cast<std::uint64_t>(lp), o.len, s_.local_mr->lkey()};
      w.remote_addr = peer_.counters;
      w.rkey = peer_.counters_rkey;
    } else if (o.unverified_write) {
      o.op = Opcode::kRdmaRead;  // read back what the last WRITE put there
      o.unverified_write = false;
      ++st_.readbacks;
      std::memset(lp, 0xA5, o.len);
      sge = Sge{reinterpret_cast<std::uint64_t>(lp), o.len, s_.local_mr->lkey()};
      w.remote_addr = remote(o.off);
      w.rkey = peer_.region_rkey;
    } else {
      const std::uint64_t kind = rng_() % 100;
      if (kind < 80) {
        o.len = pick_len();
        o.off = rng_() % (kSlotBytes - o.len + 1);
        sge = Sge{reinterpret_cast<std::uint64_t>(lp), o.len, s_.local_mr->lkey()};
        w.remote_addr = remote(o.off);
        w.rkey = peer_.region_rkey;
        if (kind < 40) {
          o.op = Opcode::kRdmaWrite;
          fill_pattern(lp, o.len, rng_());
          std::memcpy(shadow_.data() + slot * kSlotBytes + o.off, lp, o.len);
          o.unverified_write = true;
          ++st_.writes;
          st_.bytes_written += o.len;
        } else {
          o.op = Opcode::kRdmaRead;
          std::memset(lp, 0xA5, o.len);
          ++st_.reads;
        }
      } else {
        const std::size_t k = rng_() % kCounters;
        o.len = 8;
        o.expect = model_[k];
        std::memset(s_.results + slot * 8, 0xEE, 8);
        sge = Sge{reinterpret_cast<std::uint64_t>(s_.results + slot * 8), 8, s_.result_mr->lkey()};
        w.remote_addr = peer_.counters + k * 8;
        w.rkey = peer_.counters_rkey;
        if (kind < 90) {
          o.op = Opcode::kAtomicFetchAdd;
          w.compare_add = rng_() % 100000;
          model_[k] += w.compare_add;
          ++st_.fetch_adds;
        } else {
          o.op = Opcode::kAtomicCmpSwap;
          const bool hit = rng_() % 2 == 0;
          w.compare_add = hit ? model_[k] : model_[k] ^ 1;
          w.swap = rng_();
          if (hit) model_[k] = w.swap;
          ++st_.cmp_swaps;
        }
      }
    }
    w.opcode = o.op;
    w.sgl = {&sge, 1};
    const PostResult pr = s_.qp->post({&w, 1});
    if (!pr.ok()) {
      fail(std::string("post failed: ") + pr.reason);
      return;
    }
    ++issued_;
  }

  void on_completion(const Completion& c) {
    if (c.wr_id >= kSlots) return fail("completion with a wr_id never posted: " + std::to_string(c.wr_id));
    Op& o = ops_[c.wr_id];
    if (!o.busy) return fail("completion for idle slot " + std::to_string(c.wr_id) + " (completed twice?)");
    const std::string what = std::string(opcode_name(o.op)) + " of " + std::to_string(o.len) + " B at offset " +
                             std::to_string(o.off) + " (completion " + std::to_string(st_.completed) + ")";
    if (c.status != WcStatus::kSuccess) {
      return fail(what + " completed with " + std::string(wc_status_name(c.status)) + " vendor_err " +
                  std::to_string(c.vendor_err));
    }
    if (c.opcode != o.op) return fail(what + ": completion opcode " + std::string(opcode_name(c.opcode)));
    const std::size_t slot = c.wr_id;
    const std::uint8_t* lp = s_.local + slot * kSlotBytes;
    if (o.final_read) {
      for (std::size_t k = 0; k < kCounters; ++k) {
        std::uint64_t v;
        std::memcpy(&v, lp + k * 8, 8);
        if (v != model_[k]) return fail("counter " + std::to_string(k) + " ends at " + std::to_string(v) +
                                        ", model says " + std::to_string(model_[k]));
      }
      final_done_ = true;
    } else if (o.op == Opcode::kRdmaRead) {
      if (c.byte_len != o.len) return fail(what + ": byte_len " + std::to_string(c.byte_len));
      const std::uint8_t* want = shadow_.data() + slot * kSlotBytes + o.off;
      if (std::memcmp(lp, want, o.len) != 0) {
        std::size_t i = 0;
        while (lp[i] == want[i]) ++i;
        return fail(what + ": byte " + std::to_string(i) + " differs from the remote region's expected content");
      }
      st_.bytes_read += o.len;
    } else if (o.op == Opcode::kAtomicFetchAdd || o.op == Opcode::kAtomicCmpSwap) {
      std::uint64_t v;
      std::memcpy(&v, s_.results + slot * 8, 8);
      if (v != o.expect) return fail(what + " returned " + std::to_string(v) + ", expected " + std::to_string(o.expect));
    }
    o.busy = false;
    --busy_;
    ++st_.completed;
    if (issued_ < target_ || o.unverified_write) {
      issue(slot);
    } else if (!final_posted_) {
      issue(slot, true);
    }
  }

  Side& s_;
  Hello peer_;
  std::uint64_t target_;
  std::uint64_t issued_ = 0;
  bool final_posted_ = false, final_done_ = false;
  std::size_t busy_ = 0;
  std::mt19937_64 rng_;
  std::vector<std::uint8_t> shadow_;
  std::uint64_t model_[kCounters] = {};
  Op ops_[kSlots];
  Stats st_;
  std::string error_;
};

// ---------------------------------------------------------------- the whole run of one side
// After its own flow, a side keeps serving the peer (polling drives the
// responder) until the peer's Done arrives, so neither closes its port while
// the other still has work in flight.
struct RunResult {
  std::string error;
  MixedFlow::Stats stats;
  Done peer_done;
  double seconds = 0;
};

inline RunResult run_side(Side& s, int oob, std::uint64_t seed, std::uint64_t ops, int timeout_ms) {
  RunResult r;
  Hello mine = make_hello(s), theirs;
  if (!send_all(oob, &mine, sizeof mine)) {
    r.error = "cannot send hello";
    return r;
  }
  if (recv_all(oob, &theirs, sizeof theirs, timeout_ms) != 1) {
    r.error = "no hello from the peer";
    return r;
  }
  if (std::string e = connect_side(s, theirs); !e.empty()) {
    r.error = "connect: " + e;
    return r;
  }
  // Both QPs must be connected before either sends: a request reaching a QP
  // still in RESET is dropped (and retried, but slowly).
  std::uint32_t go = kMagic, their_go = 0;
  if (!send_all(oob, &go, 4) || recv_all(oob, &their_go, 4, timeout_ms) != 1 || their_go != kMagic) {
    r.error = "no go from the peer";
    return r;
  }
  MixedFlow flow(s, theirs, seed, ops);
  const auto t0 = Clock::now();
  const auto deadline = t0 + std::chrono::milliseconds(timeout_ms);
  flow.start();
  while (!flow.finished() && Clock::now() < deadline) flow.step();
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.stats = flow.stats();
  r.error = flow.error();
  if (r.error.empty() && !flow.finished()) {
    r.error = "timed out after " + std::to_string(r.stats.completed) + " of " + std::to_string(ops) + " operations";
  }
  Done d;
  d.ok = r.error.empty() ? 1 : 0;
  d.completed = r.stats.completed;
  std::snprintf(d.error, sizeof d.error, "%s", r.error.c_str());
  if (!send_all(oob, &d, sizeof d)) {
    if (r.error.empty()) r.error = "cannot send done";
    return r;
  }
  // Serve the peer until it is done too; nothing may complete meanwhile.
  Completion wc[8];
  int got = 0;
  while (got == 0 && Clock::now() < deadline) {
    const int n = s.cq->poll({wc, 8});
    if (n != 0 && r.error.empty()) {
      r.error = n < 0 ? "CQ overrun after the flow" : "a completion arrived after every operation had completed";
    }
    got = recv_all(oob, &r.peer_done, sizeof r.peer_done, 0);
    if (got < 0) {
      if (r.error.empty()) r.error = "peer closed the out-of-band socket before it was done";
      break;
    }
  }
  if (got == 0 && r.error.empty()) r.error = "timed out waiting for the peer to finish";
  return r;
}

}  // namespace rma::softroce::mp
