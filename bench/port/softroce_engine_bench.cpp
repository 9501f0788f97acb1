// rma_softroce_bench: what the software RoCE NIC itself costs per message,
// without DPDK. Two softroce devices in one thread, joined by an in-memory
// link that copies each frame once into a preallocated slot (as a copying
// PMD would) and allocates nothing, so the figures are the protocol engine's
// and the provider's work on both sides together on one core: building,
// ICRC, parsing, placing, acknowledging, completing. rma_frame_pump measures
// the link; bench/port/softroce_vs_pump.sh puts the two side by side. Single
// threaded and free of system calls in the loop, so it also runs under
// callgrind to count instructions per message.
#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "link/link.hpp"
#include "provider/softroce_device.hpp"
#include "rma/sdk/provider.hpp"

namespace {

using namespace rma;

// Frames sent by one side, waiting for the other: a ring of fixed slots.
struct Direction {
  static constexpr std::size_t kSlots = 1024;
  static constexpr std::size_t kSlotBytes = 4096 + 256;
  std::vector<std::uint8_t> bytes = std::vector<std::uint8_t>(kSlots * kSlotBytes);
  std::array<std::uint32_t, kSlots> len{};
  std::size_t head = 0, count = 0;
};

struct Wire {
  Direction dir[2];
};

class MemoryLink final : public roce::Link {
 public:
  MemoryLink(std::shared_ptr<Wire> wire, int side) : wire_(std::move(wire)), side_(side) {
    info_.name = side == 0 ? "memory:a" : "memory:b";
    info_.mac = {0x02, 0, 0, 0, 0, static_cast<std::uint8_t>(side + 1)};
    info_.ipv4 = 0xC6120001u + static_cast<std::uint32_t>(side);  // 198.18.0.1/2
    info_.max_frame = static_cast<std::uint32_t>(Direction::kSlotBytes);
  }
  std::size_t transmit(std::span<const roce::TxFrame> frames) noexcept override {
    Direction& d = wire_->dir[side_];
    std::size_t n = 0;
    for (const roce::TxFrame& f : frames) {
      if (d.count == Direction::kSlots || f.size() > Direction::kSlotBytes) break;
      const std::size_t slot = (d.head + d.count) % Direction::kSlots;
      std::uint8_t* p = d.bytes.data() + slot * Direction::kSlotBytes;
      std::memcpy(p, f.head.data(), f.head.size());
      if (!f.payload.empty()) std::memcpy(p + f.head.size(), f.payload.data(), f.payload.size());
      if (!f.tail.empty()) std::memcpy(p + f.head.size() + f.payload.size(), f.tail.data(), f.tail.size());
      d.len[slot] = static_cast<std::uint32_t>(f.size());
      ++d.count;
      ++n;
      ++c_.tx_frames;
      c_.tx_bytes += f.size();
    }
    return n;
  }
  std::size_t poll(roce::FrameSink& sink, std::size_t max) noexcept override {
    Direction& d = wire_->dir[1 - side_];
    std::size_t n = 0;
    while (n < max && d.count > 0) {
      const std::size_t slot = d.head;
      d.head = (d.head + 1) % Direction::kSlots;
      if (--d.count == 0) d.head = 0;  // an idle link starts again at the first slot, still in cache
      ++n;
      ++c_.rx_frames;
      c_.rx_bytes += d.len[slot];
      sink.on_frame({d.bytes.data() + slot * Direction::kSlotBytes, d.len[slot]});
    }
    return n;
  }
  const roce::LinkInfo& info() const noexcept override { return info_; }
  roce::LinkCounters counters() const noexcept override { return c_; }

 private:
  std::shared_ptr<Wire> wire_;
  int side_;
  roce::LinkInfo info_;
  roce::LinkCounters c_;
};

struct Side {
  std::shared_ptr<Device> dev;
  std::shared_ptr<ProtectionDomain> pd;
  std::shared_ptr<CompletionQueue> cq;
  std::unique_ptr<QueuePair> qp;
  std::vector<std::uint8_t> buf;
  std::unique_ptr<MemoryRegion> mr;
};

struct Pair {
  Side a, b;
  bool ok = false;
  std::string error;

  explicit Pair(std::size_t bytes) {
    auto wire = std::make_shared<Wire>();
    ok = open(a, std::make_unique<MemoryLink>(wire, 0), bytes) && open(b, std::make_unique<MemoryLink>(wire, 1), bytes) &&
         connect();
  }

  bool fail(const Status& s) {
    error = s.to_string();
    return false;
  }
  bool open(Side& s, std::unique_ptr<roce::Link> link, std::size_t bytes) {
    auto dev = softroce::open_softroce_device(std::move(link));
    if (!dev.ok()) return fail(dev.status());
    s.dev = *dev;
    auto pd = s.dev->alloc_pd();
    if (!pd.ok()) return fail(pd.status());
    s.pd = *pd;
    auto cq = s.dev->create_cq(4096);
    if (!cq.ok()) return fail(cq.status());
    s.cq = *cq;
    QpConfig c;
    c.send_cq = c.recv_cq = s.cq;
    c.max_send_wr = 256;
    c.serialized = true;
    auto qp = s.pd->create_qp(c);
    if (!qp.ok()) return fail(qp.status());
    s.qp = std::move(qp).value();
    s.buf.assign(bytes, 0);
    auto mr = s.pd->register_memory(s.buf.data(), bytes, kAllAccess);
    if (!mr.ok()) return fail(mr.status());
    s.mr = std::move(mr).value();
    return true;
  }
  bool connect() {
    auto aa = a.qp->local_address();
    auto ba = b.qp->local_address();
    if (!aa.ok()) return fail(aa.status());
    if (!ba.ok()) return fail(ba.status());
    if (Status st = a.qp->connect(*ba); !st.ok()) return fail(st);
    if (Status st = b.qp->connect(*aa); !st.ok()) return fail(st);
    return true;
  }
};

WorkRequest write_to(Side& from, Side& to, const Sge& sge, std::uint32_t flags) {
  WorkRequest w;
  w.opcode = Opcode::kRdmaWrite;
  w.flags = flags;
  w.sgl = {&sge, 1};
  w.remote_addr = reinterpret_cast<std::uint64_t>(to.buf.data());
  w.rkey = to.mr->rkey();
  (void)from;
  return w;
}

// A WRITE stream as rma_write_bw -l 32 drives it: lists of 32 WRITEs of
// range(0) bytes, the last of each signalled, up to 128 outstanding; the
// responder progresses between the requester's calls.
void BM_WriteStream(benchmark::State& state) {
  const auto size = static_cast<std::uint32_t>(state.range(0));
  constexpr std::uint32_t kList = 32, kDepth = 128;
  Pair p(size);
  if (!p.ok) {
    state.SkipWithError(p.error.c_str());
    return;
  }
  const Sge sge{reinterpret_cast<std::uint64_t>(p.a.buf.data()), size, p.a.mr->lkey()};
  std::array<WorkRequest, kList> list;
  for (std::uint32_t i = 0; i < kList; ++i) list[i] = write_to(p.a, p.b, sge, i + 1 == kList ? std::uint32_t{kWrSignaled} : 0u);
  auto* sdev_b = dynamic_cast<softroce::SoftRoceDevice*>(p.b.dev.get());
  std::uint64_t posted = 0, completed = 0;
  std::array<Completion, 16> wc;
  for (auto _ : state) {
    while (posted - completed >= kDepth) {
      sdev_b->progress();
      const int n = p.a.cq->poll(wc);
      if (n < 0) {
        state.SkipWithError("CQ overrun");
        return;
      }
      for (int i = 0; i < n; ++i) {
        if (wc[static_cast<std::size_t>(i)].status != WcStatus::kSuccess) {
          state.SkipWithError("a WRITE failed");
          return;
        }
      }
      completed += static_cast<std::uint64_t>(n) * kList;
    }
    if (PostResult r = p.a.qp->post(list); !r.ok()) {
      state.SkipWithError(r.to_status().to_string().c_str());
      return;
    }
    posted += kList;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kList);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * kList * size);
}
BENCHMARK(BM_WriteStream)->Arg(8)->Arg(4096)->Arg(65536);

// One hop of the ping-pong below: `from` writes `turn` into `to`'s buffer,
// and both are polled until it arrives. Not inlined, so that callgrind can
// count it alone (--toggle-collect='*ping_pong_hop*').
[[gnu::noinline]] bool ping_pong_hop(Side& from, Side& to, std::uint8_t turn) {
  constexpr std::uint32_t kSize = 8;
  static std::array<Completion, 16> wc;  // static: a local would be zeroed on every hop
  from.buf[0] = turn;
  const Sge sge{reinterpret_cast<std::uint64_t>(from.buf.data()), kSize, from.mr->lkey()};
  const WorkRequest w = write_to(from, to, sge, kWrSignaled);
  if (!from.qp->post({&w, 1}).ok()) return false;
  while (to.buf[0] != turn) {
    if (to.cq->poll(wc) < 0 || from.cq->poll(wc) < 0) return false;
  }
  return true;
}

// An 8-byte WRITE ping-pong as rma_write_lat drives it: each side posts a
// signalled WRITE of the next counter value and polls (progresses) until
// the peer's arrives. One iteration is a round trip of both sides' work.
void BM_WritePingPong(benchmark::State& state) {
  constexpr std::uint32_t kSize = 8;
  Pair p(kSize);
  if (!p.ok) {
    state.SkipWithError(p.error.c_str());
    return;
  }
  std::uint8_t turn = 0;
  for (auto _ : state) {
    ++turn;
    if (!ping_pong_hop(p.a, p.b, turn) || !ping_pong_hop(p.b, p.a, turn)) {
      state.SkipWithError("post or poll failed");
      return;
    }
  }
}
BENCHMARK(BM_WritePingPong);

}  // namespace
