// Stateful libFuzzer target for the RC protocol engine (dpdk/rc): a
// requester device A and a responder device B, each an rc::Engine with one
// connected RcQp, joined by an in-memory link (no DPDK). The input is a
// program: each step is one event, either on the wire or on the control
// path:
//
//   progress A / B, deliver everything      post WRITE/SEND/READ/atomic on A
//   post_recv on B                          register / deregister a region
//   "munmap" a registered region            destroy and recreate both QPs
//   inject a crafted frame into A or B      replay a captured frame (mutated)
//   release some frames in flight, drop / duplicate / reorder one,
//   poll the completion queues
//
// Crafted frames are fixed up to be plausible, or the engine would drop them
// at the first check: the legitimate peer's addresses, the live QPN (mostly),
// a PSN near the last one seen on the wire, an rkey that is live, stale
// (deregistered) or random, an address in or near a region, a valid ICRC.
//
// Memory: regions live in slots of an mmap'd arena, each slot between guard
// pages. Every byte that no region with a write right covers (guards,
// unregistered slots, read-only regions) holds a canary, checked after every
// step: the engine must never write outside what is registered writable.
// "munmap" turns a slot PROT_NONE and sets its region's orphaned flag, as
// swkit's OrphanTracker does: any access through it faults (ASan reports it).
//
// Built and run by fuzz/run-fuzz.sh rc_state (clang++ -fsanitize=fuzzer,
// address,undefined).
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "rc/engine.hpp"
#include "rc/qp.hpp"
#include "wire/wire.hpp"

namespace {

using namespace rma;
using namespace rma::roce;
using namespace rma::roce::rc;

[[noreturn]] void fail(const char* what, long detail = 0) {
  std::fprintf(stderr, "rc_state_fuzz: %s (%ld)\n", what, detail);
  std::abort();
}

// ---------------------------------------------------------------- input
class Input {
 public:
  Input(const std::uint8_t* d, std::size_t n) : d_(d), n_(n) {}
  bool empty() const { return i_ >= n_; }
  std::uint8_t u8() { return i_ < n_ ? d_[i_++] : 0; }
  std::uint16_t u16() { return static_cast<std::uint16_t>(u8() | (u8() << 8)); }
  std::uint32_t u32() { return u16() | (std::uint32_t{u16()} << 16); }
  std::uint64_t u64() { return u32() | (std::uint64_t{u32()} << 32); }
  bool bit() { return (u8() & 1) != 0; }

 private:
  const std::uint8_t* d_;
  std::size_t n_, i_ = 0;
};

// ---------------------------------------------------------------- link
struct MemLink final : Link {
  LinkInfo li;
  MemLink* peer = nullptr;
  std::deque<std::vector<std::uint8_t>> wire;        // frames on their way here (the fuzzer releases them)
  std::deque<std::vector<std::uint8_t>> inbox;       // frames arrived, polled by the engine
  std::deque<std::vector<std::uint8_t>>* capture = nullptr;  // recent frames, for replays

  std::size_t transmit(std::span<const TxFrame> frames) noexcept override {
    for (const TxFrame& f : frames) {
      std::vector<std::uint8_t> v;
      v.reserve(f.size());
      v.insert(v.end(), f.head.begin(), f.head.end());
      v.insert(v.end(), f.payload.begin(), f.payload.end());
      v.insert(v.end(), f.tail.begin(), f.tail.end());
      if (capture != nullptr) {
        capture->push_back(v);
        if (capture->size() > 64) capture->pop_front();
      }
      if (peer->wire.size() < 4096) peer->wire.push_back(std::move(v));
    }
    return frames.size();
  }
  std::size_t poll(FrameSink& sink, std::size_t max) noexcept override {
    std::size_t n = 0;
    while (n < max && !inbox.empty()) {
      const std::vector<std::uint8_t> f = std::move(inbox.front());
      inbox.pop_front();
      sink.on_frame(f);
      ++n;
    }
    return n;
  }
  const LinkInfo& info() const noexcept override { return li; }
  LinkCounters counters() const noexcept override { return {}; }
};

// ---------------------------------------------------------------- memory
constexpr std::size_t kSlots = 8;      // 0..3 on B (responder), 4..7 on A (requester)
constexpr std::uint8_t kCanary = 0xC5;

struct Slot {
  std::uint8_t* base = nullptr;
  std::size_t len = 0;
  bool registered = false, writable = false, orphaned_mem = false;
  std::uint32_t lkey = 0, rkey = 0;
  std::uint64_t reg_addr = 0, reg_len = 0;
  std::atomic<bool> orphaned{false};
};

struct Device {
  MemLink* link = nullptr;  // owned by the engine
  std::unique_ptr<Engine> engine;
  CompletionRing cq;
  std::unique_ptr<RcQp> qp;
  int pd = 0;  // identity of its protection domain
  int other_pd = 0;
  std::vector<std::uint32_t> stale_keys;
  std::uint32_t last_psn_seen = 0;  // PSN of the last frame sent to this device
};

class World {
 public:
  World() {
    page_ = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    stride_ = 3 * page_;  // one guard page, two slot pages
    arena_len_ = kSlots * stride_ + page_;
    void* p = ::mmap(nullptr, arena_len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) fail("mmap");
    arena_ = static_cast<std::uint8_t*>(p);
    std::memset(arena_, kCanary, arena_len_);
    for (std::size_t i = 0; i < kSlots; ++i) {
      slots_[i].base = arena_ + i * stride_ + page_;
      slots_[i].len = 2 * page_;
    }
    a_.pd = 1;
    b_.pd = 2;
    a_.other_pd = b_.other_pd = 3;
    make_device(a_, 0x0a000001, 0x01);
    make_device(b_, 0x0a000002, 0x02);
    a_.link->peer = b_.link;
    b_.link->peer = a_.link;
    a_.link->capture = &captured_;
    b_.link->capture = &captured_;
    connect();
  }

  ~World() {
    a_.qp.reset();
    b_.qp.reset();
    for (std::size_t i = 0; i < kSlots; ++i) deregister(i);
    ::munmap(arena_, arena_len_);
  }

  void step(Input& in) {
    switch (in.u8() % 16) {
      case 0: note_psns(); a_.engine->progress(); break;
      case 1: note_psns(); b_.engine->progress(); break;
      case 2: deliver(4); break;
      case 3: post(in); break;
      case 4: post_recv(in); break;
      case 5: register_slot(in.u8() % kSlots, in); break;
      case 6: deregister(in.u8() % kSlots); break;
      case 7: unmap(in.u8() % kSlots); break;
      case 8: if ((in.u8() & 7) == 0) recreate_qps(); break;
      case 9: inject(b_, a_, in); break;
      case 10: inject(a_, b_, in); break;
      case 11: replay(in); break;
      case 12: drop(in); break;
      case 13: duplicate_or_reorder(in); break;
      case 14: poll_cqs(); break;
      default: release(in); break;
    }
    if ((++steps_ & 15) == 0) check_canaries();
  }

  void finish() {
    deliver(8);
    poll_cqs();
    check_canaries();
  }

 private:
  void make_device(Device& d, std::uint32_t ip, std::uint8_t mac_last) {
    auto link = std::make_unique<MemLink>();
    link->li.name = "mem";
    link->li.mac = MacAddress{0x02, 0, 0, 0, 0, mac_last};
    link->li.ipv4 = ip;
    link->li.max_frame = 1024 + 128;
    d.link = link.get();
    EngineOptions o;
    o.path_mtu = 1024;
    o.max_unacked_psns = 16;
    o.ack_req_every = 4;
    o.tx_ring = 32;
    o.max_qp = 8;
    o.max_read_request_packets = 3;
    auto e = Engine::create(std::move(link), o);
    if (!e.ok()) fail("Engine::create");
    d.engine = std::move(e).value();
    if (!d.cq.init(64, 64).ok()) fail("cq");
  }

  std::unique_ptr<RcQp> make_qp(Device& d) {
    QpParams p;
    p.pd = &d.pd;
    p.max_send_wr = 16;
    p.max_recv_wr = 16;
    p.max_send_sge = 2;
    p.max_recv_sge = 2;
    p.max_rd_atomic = 4;
    p.timeout = 0;  // no retransmission timer: runs stay deterministic
    p.retry_cnt = 7;
    p.rnr_retry = 1;
    p.min_rnr_timer = 1;
    p.path_mtu = 1024;
    p.send_cq = &d.cq;
    p.recv_cq = &d.cq;
    auto qp = std::make_unique<RcQp>(*d.engine, p);
    std::lock_guard lock(d.engine->mutex());
    if (!qp->init().ok()) fail("qp init");
    return qp;
  }

  void connect() {
    a_.qp = make_qp(a_);
    b_.qp = make_qp(b_);
    auto peer_of = [](Device& d) {
      PeerParams p;
      p.mac = d.link->li.mac;
      p.ipv4 = d.link->li.ipv4;
      p.qpn = d.qp->qpn();
      p.psn = d.qp->local_psn();
      p.mtu = 1024;
      return p;
    };
    if (!a_.qp->connect(peer_of(b_)).ok() || !b_.qp->connect(peer_of(a_)).ok()) fail("connect");
    a_.last_psn_seen = b_.qp->local_psn();
    b_.last_psn_seen = a_.qp->local_psn();
  }

  void recreate_qps() {
    a_.qp.reset();
    b_.qp.reset();
    connect();
  }

  Device& owner(std::size_t slot) { return slot < kSlots / 2 ? b_ : a_; }

  void register_slot(std::size_t i, Input& in) {
    Slot& s = slots_[i];
    if (s.registered) return;
    const std::uint8_t r = in.u8();
    Access acc = Access::kNone;
    if (r & 1) acc |= Access::kLocalWrite;
    if ((r & 2) && (r & 1)) acc |= Access::kRemoteWrite;
    if (r & 4) acc |= Access::kRemoteRead;
    if ((r & 8) && (r & 1)) acc |= Access::kRemoteAtomic;
    const std::uint64_t off = in.u16() % s.len;
    const std::uint64_t len = 1 + in.u16() % (s.len - off);
    Device& d = owner(i);
    const void* pd = (r & 0x80) ? static_cast<const void*>(&d.other_pd) : &d.pd;
    s.orphaned.store(false);
    auto keys = d.engine->keys().insert(
        MrEntry{reinterpret_cast<std::uint64_t>(s.base) + off, len, acc, pd, &s.orphaned}, 64);
    if (!keys.ok()) return;
    s.registered = true;
    s.writable = (acc & (Access::kLocalWrite | Access::kRemoteWrite | Access::kRemoteAtomic)) != Access::kNone;
    s.lkey = keys->lkey;
    s.rkey = keys->rkey;
    s.reg_addr = reinterpret_cast<std::uint64_t>(s.base) + off;
    s.reg_len = len;
  }

  void deregister(std::size_t i) {
    Slot& s = slots_[i];
    if (!s.registered) return;
    Device& d = owner(i);
    d.engine->keys().erase(s.lkey);
    d.stale_keys.push_back(s.rkey);
    d.stale_keys.push_back(s.lkey);
    if (d.stale_keys.size() > 32) d.stale_keys.erase(d.stale_keys.begin(), d.stale_keys.begin() + 2);
    s.registered = false;
    if (s.orphaned_mem) {
      if (::mprotect(s.base, s.len, PROT_READ | PROT_WRITE) != 0) fail("mprotect");
      s.orphaned_mem = false;
    }
    // From now on nothing may write here: back to the canary.
    std::memset(s.base, kCanary, s.len);
    s.writable = false;
  }

  void unmap(std::size_t i) {
    Slot& s = slots_[i];
    if (!s.registered || s.orphaned_mem) return;
    if (::mprotect(s.base, s.len, PROT_NONE) != 0) fail("mprotect");
    s.orphaned_mem = true;
    s.orphaned.store(true, std::memory_order_release);
  }

  // An address for a request: inside a slot's region (mostly), near it, or
  // anywhere.
  std::uint64_t pick_va(Input& in, std::size_t first_slot, std::size_t& slot) {
    slot = first_slot + in.u8() % (kSlots / 2);
    const Slot& s = slots_[slot];
    const std::uint8_t how = in.u8();
    const std::uint64_t base = s.registered ? s.reg_addr : reinterpret_cast<std::uint64_t>(s.base);
    switch (how % 8) {
      case 0: return in.u64();
      case 1: return base - (in.u8() + 1);
      case 2: return base + (s.registered ? s.reg_len : s.len) - in.u8();
      default: return base + in.u16() % (s.registered ? s.reg_len : s.len);
    }
  }
  std::uint32_t pick_key(Input& in, Device& d, std::size_t slot, bool remote) {
    const Slot& s = slots_[slot];
    switch (in.u8() % 6) {
      case 0: return in.u32();
      case 1: return d.stale_keys.empty() ? in.u32() : d.stale_keys[in.u8() % d.stale_keys.size()];
      case 2: return remote ? s.lkey : s.rkey;  // the other kind
      default: return remote ? s.rkey : s.lkey;
    }
  }

  void post(Input& in) {
    static constexpr VerbOp kOps[] = {VerbOp::kRdmaWrite, VerbOp::kRdmaWriteWithImm, VerbOp::kSend,
                                      VerbOp::kSendWithImm, VerbOp::kRdmaRead, VerbOp::kAtomicFetchAdd,
                                      VerbOp::kAtomicCmpSwap};
    WorkRequest w;
    w.opcode = kOps[in.u8() % std::size(kOps)];
    w.wr_id = in.u16();
    w.flags = kWrSignaled | (in.bit() ? kWrFence : 0u);
    std::size_t lslot, rslot;
    Sge sge[2];
    const std::size_t n = 1 + in.u8() % 2;
    for (std::size_t k = 0; k < n; ++k) {
      const std::uint64_t va = pick_va(in, kSlots / 2, lslot);
      sge[k] = Sge{va, static_cast<std::uint32_t>(in.bit() ? in.u16() % 5000 : 8), pick_key(in, a_, lslot, false)};
    }
    w.sgl = {sge, n};
    w.remote_addr = pick_va(in, 0, rslot);
    if (w.opcode == VerbOp::kAtomicFetchAdd || w.opcode == VerbOp::kAtomicCmpSwap) w.remote_addr &= ~7ull;
    w.rkey = pick_key(in, b_, rslot, true);
    w.compare_add = in.u64();
    w.swap = in.u64();
    w.imm_data = in.u32();
    std::lock_guard lock(a_.engine->mutex());
    // Half the posts as the provider's post() makes them (begin_post, post,
    // the doorbell kick: frames leave at once, no receive, no timers), the
    // others left for the next progress().
    const bool doorbell = (w.wr_id & 1) != 0;
    if (doorbell) a_.engine->begin_post();
    (void)a_.qp->post({&w, 1});
    if (doorbell) a_.engine->kick(a_.qp.get());
  }

  void post_recv(Input& in) {
    std::size_t slot;
    Sge sge[2];
    const std::size_t n = 1 + in.u8() % 2;
    for (std::size_t k = 0; k < n; ++k) {
      const std::uint64_t va = pick_va(in, 0, slot);
      sge[k] = Sge{va, static_cast<std::uint32_t>(in.u16() % 5000), pick_key(in, b_, slot, false)};
    }
    RecvRequest r;
    r.wr_id = in.u16();
    r.sgl = {sge, n};
    std::lock_guard lock(b_.engine->mutex());
    (void)b_.qp->post_recv({&r, 1});
  }

  // Some of the frames on the way to one side arrive (a peer that pauses
  // mid-message is this with few frames).
  void release(Input& in) {
    Device& d = in.bit() ? a_ : b_;
    for (int n = 1 + in.u8() % 8; n > 0 && !d.link->wire.empty(); --n) {
      d.link->inbox.push_back(std::move(d.link->wire.front()));
      d.link->wire.pop_front();
    }
  }

  void deliver(int rounds) {
    for (int i = 0; i < rounds; ++i) {
      for (Device* d : {&a_, &b_}) {
        while (!d->link->wire.empty()) {
          d->link->inbox.push_back(std::move(d->link->wire.front()));
          d->link->wire.pop_front();
        }
      }
      note_psns();
      a_.engine->progress();
      note_psns();
      b_.engine->progress();
    }
  }

  // The PSN of the newest frame waiting for each side: where crafted frames
  // aim, so they land near the expected PSN rather than being dropped as far
  // out of sequence.
  void note_psns() {
    for (Device* d : {&a_, &b_}) {
      const auto& q = !d->link->wire.empty() ? d->link->wire : d->link->inbox;
      if (q.empty()) continue;
      Packet p;
      if (parse_packet(q.back(), p) == ParseError::kOk) d->last_psn_seen = p.h.psn;
    }
  }

  void inject(Device& to, Device& from, Input& in) {
    Headers h;
    h.src_mac = from.link->li.mac;
    h.dst_mac = to.link->li.mac;
    h.src_ip = from.link->li.ipv4;
    h.dst_ip = to.link->li.ipv4;
    h.ip_id = static_cast<std::uint16_t>(1 + in.u8());
    const std::uint8_t sel = in.u8();
    h.opcode = sel < 0xF0 ? static_cast<std::uint8_t>(sel % 0x15) : in.u8();
    h.dest_qp = in.u8() < 0xF8 ? to.qp->qpn() : (in.u32() & 0xFFFFFF);
    h.psn = psn_add(to.last_psn_seen, static_cast<std::uint32_t>(static_cast<std::int8_t>(in.u8()) / 16) & kPsnMask);
    h.ack_req = in.bit();
    h.pkey = in.u8() < 0xF8 ? kDefaultPkey : in.u16();
    std::size_t slot;
    const std::size_t first = &to == &b_ ? 0 : kSlots / 2;
    const std::uint64_t va = pick_va(in, first, slot);
    h.reth_va = va;
    h.atomic_va = in.bit() ? va & ~7ull : va;
    h.reth_rkey = h.atomic_rkey = pick_key(in, to, slot, true);
    const std::uint8_t lsel = in.u8();
    h.reth_length = lsel < 0xF0 ? lsel * 37u : in.u32();
    h.aeth_syndrome = in.u8();
    h.aeth_msn = in.u32() & 0xFFFFFF;
    h.atomic_swap_add = in.u64();
    h.atomic_compare = in.u64();
    h.atomic_ack_orig = in.u64();
    h.imm = in.u32();
    const std::size_t hl = header_length(h.opcode);
    if (hl == 0) return;
    std::vector<std::uint8_t> payload(in.u16() % 1100, in.u8());
    std::vector<std::uint8_t> f(hl + payload.size() + 8);
    const std::size_t tl = build_packet(h, {f.data(), hl}, payload, {f.data() + hl + payload.size(), 8});
    if (tl == 0) return;
    if (!payload.empty()) std::memcpy(f.data() + hl, payload.data(), payload.size());
    f.resize(hl + payload.size() + tl);
    if (in.u8() == 0xFF && !f.empty()) f[in.u16() % f.size()] ^= 0x20;  // a corrupt one now and then
    if (in.u8() == 0xFE) f.resize(in.u16() % (f.size() + 1));        // or a truncated one
    to.link->inbox.push_back(std::move(f));
  }

  void replay(Input& in) {
    if (captured_.empty()) return;
    std::vector<std::uint8_t> f = captured_[in.u8() % captured_.size()];
    if (f.size() < 14) return;
    Device& to = f[5] == a_.link->li.mac[5] ? a_ : b_;
    const std::uint8_t m = in.u8();
    if (m < 64 && f.size() > 60) {
      // Rewrite a header byte and refresh the ICRC, so the change gets past it.
      Packet p;
      if (parse_packet(f, p) == ParseError::kOk) {
        Headers h = p.h;
        switch (m % 4) {
          case 0: h.psn = psn_add(h.psn, in.u8() % 8); break;
          case 1: h.reth_rkey ^= in.u32(); break;
          case 2: h.reth_va += static_cast<std::int16_t>(in.u16()); break;
          default: h.reth_length = in.u32(); break;
        }
        const std::size_t hl = header_length(h.opcode);
        std::vector<std::uint8_t> payload(p.payload.begin(), p.payload.end());
        std::vector<std::uint8_t> g(hl + payload.size() + 8);
        const std::size_t tl = build_packet(h, {g.data(), hl}, payload, {g.data() + hl + payload.size(), 8});
        if (tl == 0) return;
        if (!payload.empty()) std::memcpy(g.data() + hl, payload.data(), payload.size());
        g.resize(hl + payload.size() + tl);
        f = std::move(g);
      }
    }
    to.link->inbox.push_back(std::move(f));
  }

  void drop(Input& in) {
    Device& d = in.bit() ? a_ : b_;
    if (!d.link->wire.empty()) d.link->wire.erase(d.link->wire.begin() + in.u8() % d.link->wire.size());
  }
  void duplicate_or_reorder(Input& in) {
    Device& d = in.bit() ? a_ : b_;
    auto& q = d.link->wire;
    if (q.empty()) return;
    const std::size_t i = in.u8() % q.size();
    if (in.bit()) {
      q.push_back(q[i]);
    } else {
      std::swap(q[i], q.back());
    }
  }

  void poll_cqs() {
    for (Device* d : {&a_, &b_}) {
      Completion wc[16];
      d->cq.poll(wc, [&](const CqEntry& e) {
        if (RcQp* qp = d->engine->find_qp(e.wc.qp_num)) qp->retire(e.send_queue, e.seq);
      });
    }
  }

  void check_canaries() {
    // Guard pages, and every slot no writable region covers.
    for (std::size_t g = 0; g <= kSlots; ++g) {
      const std::uint8_t* p = arena_ + g * stride_;
      for (std::size_t k = 0; k < page_; ++k) {
        if (p[k] != kCanary) fail("guard page written", static_cast<long>(g));
      }
    }
    for (std::size_t i = 0; i < kSlots; ++i) {
      const Slot& s = slots_[i];
      if (s.orphaned_mem) continue;  // PROT_NONE: nothing can have written
      if (s.registered && s.writable) {
        // Only the registered range may change.
        for (std::uint8_t* p = s.base; p < s.base + s.len; ++p) {
          const auto a = reinterpret_cast<std::uint64_t>(p);
          if ((a < s.reg_addr || a >= s.reg_addr + s.reg_len) && *p != kCanary) {
            fail("byte outside a writable region written", static_cast<long>(i));
          }
        }
        continue;
      }
      for (std::size_t k = 0; k < s.len; ++k) {
        if (s.base[k] != kCanary) fail("unregistered or read-only memory written", static_cast<long>(i));
      }
    }
  }

  std::size_t page_ = 4096, stride_ = 0, arena_len_ = 0;
  std::uint8_t* arena_ = nullptr;
  std::array<Slot, kSlots> slots_;
  Device a_, b_;
  std::deque<std::vector<std::uint8_t>> captured_;
  unsigned steps_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 4096) return 0;
  Input in(data, size);
  World w;
  int steps = 0;
  while (!in.empty() && ++steps <= 512) w.step(in);
  w.finish();
  return 0;
}
