// Protocol soak: two softroce devices over the fault link at 0 %, 1 % and
// 10 % loss (plus reordering, duplication, delay and corruption), both
// directions busy with a random mix of WRITE and READ (1 B .. 1 MiB, large
// ones rare), FETCH_ADD and CMP_SWAP. Every byte and every atomic result is
// verified, every operation completes exactly once, nothing else completes.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <random>

#include "harness.hpp"

namespace rma::softroce::testing {
namespace {

constexpr std::size_t kSlots = 48;          // outstanding operations per direction
constexpr std::size_t kSlotBytes = 1u << 20;
constexpr std::size_t kCounters = 8;

struct Op {
  Opcode op = Opcode::kRdmaWrite;
  std::uint32_t len = 0;
  std::uint64_t expect_orig = 0;  // atomics
  std::uint64_t seed = 0;
  bool busy = false;
};

// One direction: `req` issues operations on `resp`'s memory.
struct Flow {
  Side* req = nullptr;
  Side* resp = nullptr;
  Buffer local, remote, results, counters;
  std::uint64_t model[kCounters] = {};
  Op ops[kSlots];
  std::uint64_t issued = 0, completed = 0, target = 0;
  std::mt19937_64 rng;

  void init(Side& r, Side& p, std::uint64_t seed, std::uint64_t n) {
    req = &r;
    resp = &p;
    rng.seed(seed);
    target = n;
    local = make_buffer(*r.pd, kSlots * kSlotBytes);
    remote = make_buffer(*p.pd, kSlots * kSlotBytes);
    results = make_buffer(*r.pd, kSlots * 8);
    counters = make_buffer(*p.pd, kCounters * 8);
    for (std::size_t i = 0; i < kCounters; ++i) {
      model[i] = rng();
      counters.set_u64(i * 8, model[i]);
    }
  }

  std::uint32_t pick_len() {
    const std::uint64_t r = rng() % 10000;
    if (r < 7500) return 1 + static_cast<std::uint32_t>(rng() % 256);
    if (r < 9500) return 257 + static_cast<std::uint32_t>(rng() % 4096);
    if (r < 9990) return 4353 + static_cast<std::uint32_t>(rng() % (60 * 1024));
    return 65536 + static_cast<std::uint32_t>(rng() % (kSlotBytes - 65536 + 1));
  }

  // Posts a new operation into `slot`.
  void issue(std::size_t slot) {
    Op& o = ops[slot];
    o = Op{};
    o.busy = true;
    o.seed = issued * 7919 + slot;
    const std::uint64_t kind = rng() % 100;
    std::uint8_t* lp = local.data + slot * kSlotBytes;
    std::uint8_t* rp = remote.data + slot * kSlotBytes;
    Sge sge;
    WorkRequest w;
    w.wr_id = slot;
    w.flags = kWrSignaled;
    if (kind < 40) {
      o.op = Opcode::kRdmaWrite;
      o.len = pick_len();
      fill_pattern(lp, o.len, o.seed);
      sge = local.sge(slot * kSlotBytes, o.len);
      w.remote_addr = remote.addr(slot * kSlotBytes);
      w.rkey = remote.rkey();
    } else if (kind < 80) {
      o.op = Opcode::kRdmaRead;
      o.len = pick_len();
      fill_pattern(rp, o.len, o.seed);
      std::memset(lp, 0, o.len);
      sge = local.sge(slot * kSlotBytes, o.len);
      w.remote_addr = remote.addr(slot * kSlotBytes);
      w.rkey = remote.rkey();
    } else {
      const std::size_t k = rng() % kCounters;
      sge = results.sge(slot * 8, 8);
      results.set_u64(slot * 8, 0xDEAD);
      w.remote_addr = counters.addr(k * 8);
      w.rkey = counters.rkey();
      o.len = 8;
      o.expect_orig = model[k];
      if (kind < 90) {
        o.op = Opcode::kAtomicFetchAdd;
        w.compare_add = rng() % 1000;
        model[k] += w.compare_add;
      } else {
        o.op = Opcode::kAtomicCmpSwap;
        const bool hit = rng() % 2 == 0;
        w.compare_add = hit ? model[k] : model[k] + 1;
        w.swap = rng();
        if (hit) model[k] = w.swap;
      }
    }
    w.opcode = o.op;
    w.sgl = {&sge, 1};
    PostResult pr = req->qp->post({&w, 1});
    if (!pr.ok()) {
      Completion c[64];
      const int n = req->cq->poll({c, 64});
      for (int i = 0; i < n; ++i) {
        if (c[i].status != WcStatus::kSuccess && c[i].status != WcStatus::kWrFlushErr) {
          ADD_FAILURE() << "QP failed: " << wc_status_name(c[i].status) << " vendor_err " << c[i].vendor_err
                        << " op " << opcode_name(c[i].opcode) << " len " << ops[c[i].wr_id].len;
        }
      }
    }
    ASSERT_TRUE(pr.ok()) << pr.reason;
    ++issued;
  }

  // Checks one completion; returns false on a failure already reported.
  void complete(const Completion& c) {
    ASSERT_LT(c.wr_id, kSlots) << "stray completion";
    Op& o = ops[c.wr_id];
    ASSERT_TRUE(o.busy) << "completion for an idle slot " << c.wr_id << " (duplicate completion)";
    ASSERT_EQ(c.status, WcStatus::kSuccess) << wc_status_name(c.status) << " vendor_err " << c.vendor_err
                                            << " op " << opcode_name(o.op) << " len " << o.len << " after " << completed;
    ASSERT_EQ(c.opcode, o.op);
    const std::size_t slot = c.wr_id;
    if (o.op == Opcode::kRdmaWrite) {
      ASSERT_EQ(std::memcmp(local.data + slot * kSlotBytes, remote.data + slot * kSlotBytes, o.len), 0)
          << "write of " << o.len << " bytes corrupted";
    } else if (o.op == Opcode::kRdmaRead) {
      ASSERT_EQ(c.byte_len, o.len);
      ASSERT_EQ(std::memcmp(local.data + slot * kSlotBytes, remote.data + slot * kSlotBytes, o.len), 0)
          << "read of " << o.len << " bytes corrupted";
    } else {
      ASSERT_EQ(results.u64(slot * 8), o.expect_orig) << opcode_name(o.op) << " returned a wrong value";
    }
    o.busy = false;
    ++completed;
  }

  void finish_check() {
    for (std::size_t i = 0; i < kCounters; ++i) EXPECT_EQ(counters.u64(i * 8), model[i]) << "counter " << i;
  }
};

struct SoakParam {
  const char* name;
  double loss;
  // At 10 % loss most of the time is ACK timeouts (about one per 24
  // operations, 16.8 ms each: 70 s for 100,000 operations), so that level
  // runs a fifth as many, still hundreds of timeouts and thousands of
  // fast retries, NAKs and replays.
  std::uint64_t per_direction;
};

class RcSoak : public ::testing::TestWithParam<SoakParam> {};

TEST_P(RcSoak, MixedOperationsBothDirections) {
  const SoakParam prm = GetParam();
  PairOptions o = default_options();
  o.faults.drop = prm.loss;
  o.faults.duplicate = prm.loss / 2;
  o.faults.reorder = prm.loss / 2;
  o.faults.delay = prm.loss / 2;
  o.faults.corrupt = prm.loss / 2;
  o.faults.max_delay_polls = 4;
  o.faults.seed = 1234;
  o.qp.max_send_wr = kSlots;
  // The local ACK timeout must exceed the round trip, which sanitizers and
  // a loaded machine (this one thread descheduled for milliseconds between
  // polls) stretch: 2.1 ms ran out of retries under load.
  o.qp.timeout = 12;  // 16.8 ms
  o.cq_depth = 4 * kSlots;
  auto pair = Pair::make(o);
  ASSERT_NE(pair, nullptr);
  const std::uint64_t kPerDirection = prm.per_direction;
  Flow ab, ba;
  ab.init(pair->a, pair->b, 1, kPerDirection);
  ba.init(pair->b, pair->a, 2, kPerDirection);
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t s = 0; s < kSlots; ++s) {
    ab.issue(s);
    ba.issue(s);
  }
  auto dump = [&](const char* when) {
    for (Side* s : {&pair->a, &pair->b}) {
      auto c = s->sdev->counters();
      std::printf("[ %s %s ] %s: tx %llu rx %llu retx %llu tmo %llu fast %llu bad_resp %llu dup_resp %llu "
                  "dup_req %llu oos %llu nak_seq_tx %llu rd_replay %llu at_replay %llu dropped_state %llu "
                  "ring_full %llu link_full %llu unknown_qpn %llu wrong_peer %llu naks_tx inv/acc/op %llu/%llu/%llu badseq %llu stale_dup %llu\n",
                  prm.name, when, s->dev->name().c_str(), (unsigned long long)c.tx_frames,
                  (unsigned long long)c.rx_frames, (unsigned long long)c.qp.retransmitted_packets,
                  (unsigned long long)c.qp.retry_timeouts, (unsigned long long)c.qp.fast_retries,
                  (unsigned long long)c.qp.bad_responses, (unsigned long long)c.qp.duplicate_responses,
                  (unsigned long long)c.qp.duplicate_requests, (unsigned long long)c.qp.out_of_sequence,
                  (unsigned long long)c.qp.naks_sent[0], (unsigned long long)c.qp.read_replays,
                  (unsigned long long)c.qp.atomic_replays, (unsigned long long)c.qp.dropped_state,
                  (unsigned long long)c.tx_ring_full, (unsigned long long)c.tx_link_full,
                  (unsigned long long)c.unknown_qpn, (unsigned long long)c.wrong_peer,
                  (unsigned long long)c.qp.naks_sent[1], (unsigned long long)c.qp.naks_sent[2],
                  (unsigned long long)c.qp.naks_sent[3], (unsigned long long)c.qp.bad_opcode_sequence,
                  (unsigned long long)c.qp.stale_duplicates);
    }
  };
  struct DumpOnFailure {
    std::function<void()> fn;
    ~DumpOnFailure() {
      if (::testing::Test::HasFailure()) fn();
    }
  } dump_on_failure{[&] { dump("failure"); }};
  Completion wc[64];
  const auto deadline = t0 + std::chrono::seconds(300);
  while ((ab.completed < ab.target || ba.completed < ba.target) && std::chrono::steady_clock::now() < deadline) {
    for (Flow* f : {&ab, &ba}) {
      const int n = f->req->cq->poll({wc, 64});
      ASSERT_GE(n, 0) << f->req->cq->overrun_reason();
      for (int i = 0; i < n; ++i) {
        f->complete(wc[i]);
        if (::testing::Test::HasFatalFailure()) return;
        if (f->issued < f->target) f->issue(wc[i].wr_id);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
  ASSERT_EQ(ab.completed, ab.target) << "timed out";
  ASSERT_EQ(ba.completed, ba.target) << "timed out";
  // Nothing else completes afterwards.
  pair->run_for(std::chrono::milliseconds(30));
  EXPECT_EQ(pair->a.cq->poll({wc, 64}), 0);
  EXPECT_EQ(pair->b.cq->poll({wc, 64}), 0);
  ab.finish_check();
  ba.finish_check();
  const auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto ca = pair->a.sdev->counters();
  auto cb = pair->b.sdev->counters();
  auto fa = pair->a.link->fault_counters();
  std::printf("[ soak %s ] %llu ops in %.1f s; A: retransmitted %llu, timeouts %llu, fast retries %llu, "
              "seq NAKs rx %llu, icrc errors %llu, read replays(B) %llu, atomic replays(B) %llu; "
              "link A->B dropped %llu dup %llu reordered %llu corrupted %llu\n",
              prm.name, static_cast<unsigned long long>(ab.completed + ba.completed), secs,
              static_cast<unsigned long long>(ca.qp.retransmitted_packets),
              static_cast<unsigned long long>(ca.qp.retry_timeouts),
              static_cast<unsigned long long>(ca.qp.fast_retries),
              static_cast<unsigned long long>(ca.qp.naks_received[0]),
              static_cast<unsigned long long>(cb.icrc_errors),
              static_cast<unsigned long long>(cb.qp.read_replays),
              static_cast<unsigned long long>(cb.qp.atomic_replays),
              static_cast<unsigned long long>(fa.dropped), static_cast<unsigned long long>(fa.duplicated),
              static_cast<unsigned long long>(fa.reordered), static_cast<unsigned long long>(fa.corrupted));
  dump("end");
  if (prm.loss > 0) {
    EXPECT_GT(ca.qp.retransmitted_packets, 0u);
    EXPECT_GT(cb.icrc_errors + cb.parse_errors[static_cast<int>(roce::ParseError::kBadIpHeader)], 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Loss, RcSoak,
                         ::testing::Values(SoakParam{"0pct", 0.0, 50000}, SoakParam{"1pct", 0.01, 50000},
                                           SoakParam{"10pct", 0.10, 10000}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace rma::softroce::testing
