#include "rma/sdk/endpoint_manager.hpp"

#include <algorithm>
#include <cstring>

#include "rma/sdk/wait_backoff.hpp"

namespace rma::endpoint {

namespace {
using Clock = std::chrono::steady_clock;
// Per-peer record in the published blob: the address's 4-byte length, the
// READs/atomics the publishing rank's device answers at once on this QP
// (4 bytes: its max_qp_rd_atom), then the address bytes.
constexpr std::size_t kRecordHead = 8;
constexpr std::size_t kRecord = kRecordHead + EndpointAddress::kMaxSize;
// The most READs/atomics an endpoint keeps in flight (verbs carries the
// number in 8 bits; rdma_rxe and the software NIC answer 128).
constexpr std::uint32_t kMaxReadsInFlight = 128;
}  // namespace

std::string describe_error(WcStatus status, std::uint32_t vendor_err) {
  std::string s(wc_status_name(status));
  s += " (";
  s += wc_status_description(status);
  if (vendor_err != 0) s += ", vendor error " + std::to_string(vendor_err);
  s += ")";
  return s;
}

// ------------------------------------------------------------------ Endpoint

StatusCode Endpoint::reserve(bool read_or_atomic) noexcept {
  EndpointManager& m = *mgr_;
  auto guard = m.lock();
  Clock::time_point start{};
  std::uint32_t spins = 0;
  WaitBackoff backoff;
  for (;;) {
    if (broken_) return StatusCode::kFailedPrecondition;
    const bool sq_ok = next_seq_ - retired_ < depth_;
    const bool cq_ok = rail_->cq_outstanding < rail_->cq_depth;
    const bool rd_ok = !read_or_atomic || reads_ < max_rd_atomic_;
    // A free send slot needs a free pending entry too: at most depth_ are signaled.
    if (sq_ok && cq_ok && rd_ok && tail_ - head_ < depth_) return StatusCode::kOk;
    if (m.progress_locked() < 0) return StatusCode::kFailedPrecondition;
    if ((++spins & 255u) == 0) {
      if (start == Clock::time_point{}) start = Clock::now();
      else if (m.expired(start)) return StatusCode::kTimeout;
      backoff.pause();
    }
  }
}

std::uint32_t Endpoint::bounce_bytes() const noexcept { return mgr_->options_.bounce_bytes; }

Sge Endpoint::bounce(std::uint32_t len) const noexcept {
  const std::uint32_t bb = mgr_->options_.bounce_bytes;
  std::uint8_t* p = bounce_base_ + (next_seq_ & mask_) * bb;
  return Sge{reinterpret_cast<std::uint64_t>(p), std::min(len, bb), rail_->lkey_bounce};
}

StatusCode Endpoint::post(WorkRequest& wr, OnComplete&& on_complete, bool signal) noexcept {
  auto guard = mgr_->lock();
  const bool rd = wr.opcode == Opcode::kRdmaRead || wr.opcode == Opcode::kAtomicFetchAdd ||
                  wr.opcode == Opcode::kAtomicCmpSwap;
  const StatusCode rc = reserve(rd);
  if (rc != StatusCode::kOk) return rc;
  const bool has_action = on_complete.request != nullptr || on_complete.handle ||
                          on_complete.copy_to != nullptr;
  const bool signaled = signal || has_action || rd ||
                        next_seq_ + 1 - last_signaled_ >= signal_interval_;
  const std::uint64_t seq = next_seq_;
  wr.wr_id = seq;
  wr.flags = signaled ? (wr.flags | kWrSignaled) : (wr.flags & ~static_cast<std::uint32_t>(kWrSignaled));
  if (signaled) {
    // Field by field: most posts carry no registration, and moving an empty
    // handle over another still costs a release check.
    Pending& p = ring_[tail_ & mask_];
    p.seq = seq;
    p.read_or_atomic = rd;
    p.action.request = on_complete.request;
    p.action.copy_to = on_complete.copy_to;
    p.action.copy_len = on_complete.copy_len;
    if (on_complete.handle) p.action.handle = std::move(on_complete.handle);
    if (p.action.request != nullptr) ++p.action.request->pending;
  }
  const PostResult pr = qp_->post({&wr, 1});
  if (!pr.ok()) {
    last_reject_ = pr.reason;
    if (signaled) {
      Pending& p = ring_[tail_ & mask_];
      if (p.action.request != nullptr) --p.action.request->pending;
      if (p.action.handle) on_complete.handle = std::move(p.action.handle);  // the caller's again
      p.action.request = nullptr;
      p.action.copy_to = nullptr;
    }
    return pr.code;
  }
  ++next_seq_;
  // A payload copied at post time (inline or from the bounce area) leaves
  // no local memory in use; anything else does until it completes.
  const bool copied = (wr.opcode == Opcode::kRdmaWrite || wr.opcode == Opcode::kRdmaWriteWithImm ||
                       wr.opcode == Opcode::kSend) &&
                      ((wr.flags & kWrInline) != 0 || mgr_->in_bounce(wr.sgl));
  if (!copied) local_seq_ = next_seq_;
  if (signaled) {
    ++tail_;
    last_signaled_ = next_seq_;
    ++rail_->cq_outstanding;
    if (rd) ++reads_;
  }
  return StatusCode::kOk;
}

StatusCode Endpoint::post_atomic(Opcode op, std::uint64_t remote_addr, std::uint32_t rkey,
                                 std::uint64_t compare_add, std::uint64_t swap,
                                 OnComplete&& on_complete) noexcept {
  auto guard = mgr_->lock();  // no other thread may take the reserved slot
  const StatusCode rc = reserve(true);
  if (rc != StatusCode::kOk) return rc;
  const Sge s = bounce(8);
  WorkRequest wr;
  wr.opcode = op;
  wr.sgl = {&s, 1};
  wr.remote_addr = remote_addr;
  wr.rkey = rkey;
  wr.compare_add = compare_add;
  wr.swap = swap;
  return post(wr, std::move(on_complete));
}

StatusCode Endpoint::flush() noexcept {
  const StatusCode rc = mgr_->progress_until([this] { return idle(); });
  if (rc != StatusCode::kOk) return rc;
  auto guard = mgr_->lock();
  return broken_ ? StatusCode::kFailedPrecondition : StatusCode::kOk;
}

StatusCode Endpoint::flush_local() noexcept {
  // A broken endpoint has failed (or flushed) everything it held: its
  // buffers are free, and the error is what the caller must hear.
  const StatusCode rc = mgr_->progress_until([this] { return broken_ || locally_idle(); });
  if (rc != StatusCode::kOk) return rc;
  auto guard = mgr_->lock();
  return broken_ ? StatusCode::kFailedPrecondition : StatusCode::kOk;
}

void Endpoint::finish(Pending& p, WcStatus status, std::uint32_t vendor_err) noexcept {
  OnComplete& a = p.action;
  if (status == WcStatus::kSuccess && a.copy_to != nullptr) {
    const std::uint32_t bb = mgr_->options_.bounce_bytes;
    std::memcpy(a.copy_to, bounce_base_ + (p.seq & mask_) * bb, a.copy_len);
  }
  if (a.request != nullptr) {
    if (status != WcStatus::kSuccess && !a.request->failed()) {
      a.request->error = status;
      a.request->vendor_err = vendor_err;
      a.request->error_peer = peer_;
    }
    --a.request->pending;
  }
  if (a.handle) a.handle.reset();
  a.request = nullptr;
  a.copy_to = nullptr;
  if (p.read_or_atomic) --reads_;
  if (rail_->cq_outstanding > 0) --rail_->cq_outstanding;
}

void Endpoint::complete(std::uint64_t seq, WcStatus status, std::uint32_t vendor_err) noexcept {
  // Everything signaled before `seq` has completed (RC completes in order).
  while (head_ != tail_ && ring_[head_ & mask_].seq < seq) {
    finish(ring_[head_ & mask_], WcStatus::kSuccess, 0);
    ++head_;
  }
  if (status == WcStatus::kSuccess) {
    if (head_ != tail_ && ring_[head_ & mask_].seq == seq) {
      finish(ring_[head_ & mask_], status, 0);
      ++head_;
    }
    retired_ = std::max(retired_, seq + 1);
    return;
  }
  // The QP is in the error state: this request failed and every later one is
  // flushed. Fail them all now with the first error; their flush completions,
  // if the provider produces them, find nothing left to do.
  fail_all(status, vendor_err);
}

void Endpoint::fail_all(WcStatus status, std::uint32_t vendor_err) noexcept {
  if (!broken_) {
    broken_ = true;
    error_ = status;
    vendor_err_ = vendor_err;
  }
  while (head_ != tail_) {
    finish(ring_[head_ & mask_], error_, vendor_err_);
    ++head_;
  }
  retired_ = next_seq_;
}

RegistrationCache& Endpoint::rcache() noexcept { return *rail_->rcache; }
const DeviceCaps& Endpoint::caps() const noexcept { return rail_->device->caps(); }

// ------------------------------------------------------------------ exposed regions

RemoteKeys ExposedRegion::rkeys() const noexcept {
  RemoteKeys k;
  for (int r = 0; r < kMaxRails; ++r) k.key[r] = handles_[r] ? handles_[r].rkey() : 0;
  return k;
}

void ExposedRegion::reset() noexcept {
  for (auto& h : handles_) h.reset();
  any_ = false;
}

// ------------------------------------------------------------------ manager

EndpointManager::~EndpointManager() {
  // Nothing may still be written into bounce buffers or user memory once we
  // are gone: move every QP to the error state before releasing anything.
  for (Endpoint& e : endpoints_) {
    if (e.qp_ && !e.idle()) (void)e.qp_->set_error();
  }
  for (Endpoint& e : endpoints_) {
    if (e.ring_) e.fail_all(WcStatus::kWrFlushErr, 0);
    e.qp_.reset();
  }
  bounce_reg_.reset();
}

Result<std::unique_ptr<EndpointManager>> EndpointManager::create(Bootstrap& bootstrap,
                                                                 std::shared_ptr<Device> device,
                                                                 EndpointOptions options) {
  if (!device) return invalid_argument("endpoint manager: no device");
  PlanRequest req;
  req.device_object = std::move(device);
  RMA_ASSIGN_OR_RETURN(TransportPlan plan, plan_transports(bootstrap, req));
  return create(bootstrap, plan, std::move(options));
}

std::string EndpointManager::transport_of(int peer) const {
  if (peer < 0 || peer >= size()) return "none";
  const Device& d = *rails_[endpoints_[static_cast<std::size_t>(peer)].rail_index_].device;
  return d.info().provider + " (" + d.name() + ")";
}

Result<ExposedRegion> EndpointManager::expose(const void* addr, std::size_t length, Access access) {
  ExposedRegion out;
  for (int r = 0; r < kMaxRails; ++r) {
    if (!has_rail(r)) continue;
    auto h = rails_[r].rcache->acquire_exact(addr, length, access);
    if (!h.ok()) {
      return h.status().with_context("registering on " + rails_[r].device->info().provider + " (" +
                                     rails_[r].device->name() + ")");
    }
    out.handles_[r] = std::move(h).value();
    out.any_ = true;
  }
  return out;
}

void EndpointManager::invalidate(const void* addr, std::size_t length) noexcept {
  for (int r = 0; r < kMaxRails; ++r) {
    if (has_rail(r)) rails_[r].rcache->invalidate(addr, length);
  }
}

Result<std::unique_ptr<EndpointManager>> EndpointManager::create(Bootstrap& bootstrap,
                                                                 const TransportPlan& plan,
                                                                 EndpointOptions options) {
  if (options.sq_depth < 2) {
    return invalid_argument("endpoint manager: sq_depth " + std::to_string(options.sq_depth) +
                            " is below 2");
  }
  if (options.bounce_bytes < 8) {
    return invalid_argument("endpoint manager: bounce_bytes " +
                            std::to_string(options.bounce_bytes) + " is below 8");
  }
  const int n = bootstrap.size();
  const int me = bootstrap.rank();
  if (n <= 0 || me < 0 || me >= n) {
    return invalid_argument("endpoint manager: bootstrap gives rank " + std::to_string(me) +
                            " of " + std::to_string(n));
  }
  if (plan.rail_of.size() != static_cast<std::size_t>(n) || plan.host_of.size() != static_cast<std::size_t>(n)) {
    return invalid_argument("endpoint manager: the transport plan is for " + std::to_string(plan.rail_of.size()) +
                            " ranks, the job has " + std::to_string(n));
  }
  std::uint32_t peers_on[kMaxRails] = {0, 0};
  for (int p = 0; p < n; ++p) {
    const int r = plan.rail_of[static_cast<std::size_t>(p)];
    if (r < 0 || r >= kMaxRails || !plan.devices[r]) {
      return invalid_argument("endpoint manager: the transport plan gives rank " + std::to_string(p) +
                              " rail " + std::to_string(r) + ", which has no device");
    }
    ++peers_on[r];
  }
  std::unique_ptr<EndpointManager> m(new EndpointManager());
  m->poll_buf_ = std::make_unique<Completion[]>(kPollBatch);
  m->rank_ = me;
  m->plan_ = plan;
  // The smallest limits of the rails in use bind every endpoint alike, so
  // that what a layer above sizes (SGE lists, inline puts) fits any peer.
  // Outstanding READs/atomics are per endpoint instead (its rail's device
  // and the peer's, below): nothing above sizes anything by them.
  std::uint32_t max_qp_wr = 0, max_sge = 0, max_inline = ~0u;
  bool first = true;
  for (int r = 0; r < kMaxRails; ++r) {
    if (peers_on[r] == 0) continue;
    const DeviceCaps& c = plan.devices[r]->caps();
    if (c.max_qp_wr != 0) max_qp_wr = max_qp_wr == 0 ? c.max_qp_wr : std::min(max_qp_wr, c.max_qp_wr);
    max_sge = first ? c.max_sge : std::min(max_sge, c.max_sge);
    max_inline = std::min(max_inline, c.max_inline_data);
    first = false;
  }
  if (max_qp_wr != 0) options.sq_depth = std::min(options.sq_depth, max_qp_wr);
  if (options.signal_interval == 0) options.signal_interval = std::max(1u, options.sq_depth / 4);
  options.signal_interval = std::min(options.signal_interval, options.sq_depth);
  options.max_sge = std::max(1u, std::min(options.max_sge, std::max(1u, max_sge)));
  options.max_inline = std::min(options.max_inline, max_inline);
  m->options_ = options;
  m->thread_safe_ = options.thread_safe;

  bool any = false;
  for (int r = 0; r < kMaxRails; ++r) {
    if (peers_on[r] == 0) continue;
    Rail& rail = m->rails_[r];
    rail.device = plan.devices[r];
    const DeviceCaps& caps = rail.device->caps();
    const std::string where = rail.device->info().provider + " (" + rail.device->name() + ")";
    auto pd = rail.device->alloc_pd();
    if (!pd.ok()) return pd.status().with_context(where);
    rail.pd = std::move(pd).value();
    auto rc = RegistrationCache::create(rail.pd);
    if (!rc.ok()) return rc.status().with_context(where);
    rail.rcache = std::move(rc).value();
    // Each QP has at most sq_depth signaled requests in flight, so this depth
    // can never overrun; a device with fewer CQEs gets CQ credits instead.
    std::uint64_t want = std::uint64_t{options.sq_depth} * peers_on[r] + 16;
    if (caps.max_cqe != 0) want = std::min<std::uint64_t>(want, caps.max_cqe);
    rail.cq_depth = static_cast<std::uint32_t>(want);
    auto cq = rail.device->create_cq(rail.cq_depth);
    if (!cq.ok()) return cq.status().with_context(where);
    rail.cq = std::move(cq).value();
    if (!any) m->first_rail_ = r;
    m->last_rail_ = r;
    any = true;
  }

  // Ring and bounce slots: a power of two >= sq_depth, so slot = seq & mask.
  std::uint32_t slots = 1;
  while (slots < options.sq_depth) slots <<= 1;
  const std::size_t per_ep = std::size_t{slots} * options.bounce_bytes;
  m->bounce_.assign(per_ep * static_cast<std::size_t>(n), 0);
  RMA_ASSIGN_OR_RETURN(m->bounce_reg_, m->expose(m->bounce_.data(), m->bounce_.size(), Access::kLocalWrite));
  for (int r = 0; r < kMaxRails; ++r) m->rails_[r].lkey_bounce = m->bounce_reg_.lkey(r);

  m->endpoints_.resize(static_cast<std::size_t>(n));
  std::vector<std::uint8_t> blob(kRecord * static_cast<std::size_t>(n), 0);
  for (int p = 0; p < n; ++p) {
    const int r = plan.rail_of[static_cast<std::size_t>(p)];
    Rail& rail = m->rails_[r];
    QpConfig qc;
    qc.send_cq = rail.cq;
    qc.recv_cq = rail.cq;
    qc.max_send_wr = options.sq_depth;
    qc.max_recv_wr = 1;
    qc.max_send_sge = options.max_sge;
    qc.max_recv_sge = 1;
    qc.max_inline_data = options.max_inline;
    const std::uint32_t rd_answered = rail.device->caps().max_qp_rd_atom;
    qc.max_rd_atomic = std::max(1u, std::min(kMaxReadsInFlight, rd_answered));
    Endpoint& e = m->endpoints_[static_cast<std::size_t>(p)];
    e.mgr_ = m.get();
    e.rail_ = &rail;
    e.rail_index_ = r;
    e.peer_ = p;
    e.depth_ = options.sq_depth;
    e.signal_interval_ = options.signal_interval;
    e.max_rd_atomic_ = qc.max_rd_atomic;
    e.max_inline_ = options.max_inline;
    e.max_sge_ = options.max_sge;
    e.bounce_base_ = m->bounce_.data() + per_ep * static_cast<std::size_t>(p);
    e.mask_ = slots - 1;
    e.ring_ = std::make_unique<Endpoint::Pending[]>(slots);
    auto qp = rail.pd->create_qp(qc);
    if (!qp.ok()) return qp.status().with_context("endpoint to rank " + std::to_string(p) + " over " + m->transport_of(p));
    e.qp_ = std::move(qp).value();
    rail.by_qpn[e.qp_->qp_num()] = p;
    RMA_ASSIGN_OR_RETURN(EndpointAddress addr, e.qp_->local_address());
    std::uint8_t* rec = blob.data() + kRecord * static_cast<std::size_t>(p);
    std::memcpy(rec, &addr.size, 4);
    std::memcpy(rec + 4, &rd_answered, 4);
    std::memcpy(rec + kRecordHead, addr.bytes.data(), addr.size);
  }
  RMA_RETURN_IF_ERROR(bootstrap.put(options.bootstrap_key, blob).with_context("publishing endpoint addresses"));
  RMA_RETURN_IF_ERROR(bootstrap.fence().with_context("exchanging endpoint addresses"));
  for (int p = 0; p < n; ++p) {
    auto theirs = bootstrap.get(p, options.bootstrap_key);
    if (!theirs.ok()) {
      return theirs.status().with_context("endpoint addresses of rank " + std::to_string(p));
    }
    const std::vector<std::uint8_t>& b = *theirs;
    if (b.size() != blob.size()) {
      return invalid_argument("rank " + std::to_string(p) + " published " +
                              std::to_string(b.size()) + " bytes of endpoint addresses, expected " +
                              std::to_string(blob.size()) + " (different job size?)");
    }
    const std::uint8_t* rec = b.data() + kRecord * static_cast<std::size_t>(me);
    std::uint32_t len = 0;
    std::memcpy(&len, rec, 4);
    if (len > EndpointAddress::kMaxSize) {
      return invalid_argument("rank " + std::to_string(p) + " published an endpoint address of " +
                              std::to_string(len) + " bytes (max " +
                              std::to_string(EndpointAddress::kMaxSize) + ")");
    }
    std::uint32_t peer_answers = 0;
    std::memcpy(&peer_answers, rec + 4, 4);
    if (peer_answers == 0) {
      return invalid_argument("rank " + std::to_string(p) +
                              " published a device that answers no READ or atomic (max_qp_rd_atom 0)");
    }
    RMA_ASSIGN_OR_RETURN(EndpointAddress addr, EndpointAddress::from_bytes({rec + kRecordHead, len}));
    Endpoint& e = m->endpoints_[static_cast<std::size_t>(p)];
    // More in flight than the peer's device keeps responder resources for
    // would make it drop the oldest (verbs sizes the peer's side from our
    // QP's number, up to its device's).
    e.max_rd_atomic_ = std::min(e.max_rd_atomic_, peer_answers);
    Status s = e.qp_->connect(addr);
    if (!s.ok()) return s.with_context("connecting to rank " + std::to_string(p) + " over " + m->transport_of(p));
  }
  RMA_RETURN_IF_ERROR(bootstrap.barrier().with_context("waiting for every rank to connect"));
  return m;
}

int EndpointManager::progress() noexcept {
  auto guard = lock();
  return progress_locked();
}

int EndpointManager::progress_locked() noexcept {
  if (cq_overrun_) return -1;
  int total = 0;
  for (int r = first_rail_; r <= last_rail_; ++r) {
    if (rails_[r].cq == nullptr) continue;
    const int n = poll_rail(rails_[r]);
    if (n < 0) return -1;
    total += n;
  }
  return total;
}

int EndpointManager::poll_rail(Rail& rail) noexcept {
  Completion* wc = poll_buf_.get();
  const int n = rail.cq->poll({wc, kPollBatch});
  if (n < 0) {
    // A lost completion means lost bookkeeping: nothing can be trusted.
    cq_overrun_ = true;
    for (Endpoint& e : endpoints_) {
      if (!e.broken_) (void)e.qp_->set_error();
      e.fail_all(WcStatus::kGeneralErr, 0);
    }
    return -1;
  }
  for (int i = 0; i < n; ++i) {
    int idx = rail.last_peer;
    if (wc[i].qp_num != rail.last_qpn) {
      auto it = rail.by_qpn.find(wc[i].qp_num);
      if (it == rail.by_qpn.end()) continue;
      idx = rail.last_peer = it->second;
      rail.last_qpn = wc[i].qp_num;
    }
    Endpoint& e = endpoints_[static_cast<std::size_t>(idx)];
    // Completions of requests already failed (flushes after an error) and
    // stray ones carry nothing left to do.
    if (e.broken_ && wc[i].status == WcStatus::kWrFlushErr) continue;
    e.complete(wc[i].wr_id, wc[i].status, wc[i].vendor_err);
  }
  return n;
}

template <typename Done>
StatusCode EndpointManager::progress_until(Done&& done) noexcept {
  Clock::time_point start{};
  std::uint32_t spins = 0;
  WaitBackoff backoff;
  for (;;) {
    {
      auto guard = lock();  // once per poll: other threads post meanwhile
      if (done()) return StatusCode::kOk;
      if (progress_locked() < 0) return StatusCode::kFailedPrecondition;
    }
    if ((++spins & 255u) == 0) {
      if (start == Clock::time_point{}) start = Clock::now();
      else if (expired(start)) return StatusCode::kTimeout;
      backoff.pause();
    }
  }
}

bool EndpointManager::in_bounce(std::span<const Sge> sgl) const noexcept {
  const auto lo = reinterpret_cast<std::uint64_t>(bounce_.data());
  const std::uint64_t hi = lo + bounce_.size();
  for (const Sge& s : sgl) {
    if (s.length == 0) continue;
    if (s.addr < lo || s.addr > hi || s.length > hi - s.addr) return false;
  }
  return true;
}

StatusCode EndpointManager::wait(const Request& request) noexcept {
  return progress_until([&request] { return request.done(); });
}

StatusCode EndpointManager::flush_all() noexcept {
  StatusCode worst = StatusCode::kOk;
  for (Endpoint& e : endpoints_) {
    const StatusCode c = e.flush();
    if (c != StatusCode::kOk && worst == StatusCode::kOk) worst = c;
  }
  return worst;
}

}  // namespace rma::endpoint
