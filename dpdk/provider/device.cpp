// Device, protection domain, memory regions, completion queues and queue
// pairs of the softroce provider, on top of the RC protocol engine.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>

#include "provider/counter_samples.hpp"
#include "provider/progress_thread.hpp"
#include "provider/softroce_device.hpp"
#include "rma/sdk/provider_checks.hpp"
#include "rc/engine.hpp"
#include "rc/neighbour_table.hpp"
#include "rc/qp.hpp"
#include "rma/sdk/text.hpp"
#include "swkit/caps.hpp"
#include "swkit/endpoint_address.hpp"
#include "swkit/mapping_rights.hpp"
#include "swkit/orphan_tracker.hpp"
#include "wire/wire.hpp"

namespace rma::softroce {

namespace {

std::string ip_text(std::uint32_t ip) {
  char b[20];
  std::snprintf(b, sizeof b, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
  return b;
}

// Ethernet + IPv4 + UDP + BTH + RETH + ImmDt + ICRC: the most a packet with
// a full MTU of payload carries besides the payload.
constexpr std::uint32_t kMaxOverhead = 14 + 20 + 8 + 12 + 16 + 4 + 4;

class DeviceImpl;
class PdImpl;

// ---------------------------------------------------------------- device
class DeviceImpl final : public SoftRoceDevice, public std::enable_shared_from_this<DeviceImpl> {
 public:
  DeviceImpl(DeviceInfo info, std::unique_ptr<roce::rc::Engine> engine, DeviceOptions options)
      : info_(std::move(info)), engine_(std::move(engine)), options_(std::move(options)) {}
  const DeviceInfo& info() const noexcept override { return info_; }
  Result<std::shared_ptr<ProtectionDomain>> alloc_pd() override;
  Result<std::shared_ptr<CompletionQueue>> create_cq(std::uint32_t depth) override;

  roce::rc::DeviceCounters counters() const override {
    std::lock_guard lock(engine_->mutex());
    return engine_->counters();
  }
  Result<roce::rc::RcCounters> qp_counters(std::uint32_t qpn) const override {
    std::lock_guard lock(engine_->mutex());
    const roce::rc::RcQp* qp = engine_->find_qp(qpn);
    if (qp == nullptr) return not_found("softroce: no QP " + dec(qpn) + " on " + info_.name);
    return qp->counters();
  }
  roce::LinkCounters link_counters() const override { return engine_->link_counters(); }

  // Under the device lock: the counters move only while it is held, so a
  // reader on another thread sees a consistent snapshot and no data race.
  Result<std::vector<CounterSample>> read_counters() const override {
    std::lock_guard lock(engine_->mutex());
    return device_samples(engine_->counters(), engine_->link_counters());
  }
  Result<std::vector<QpCounters>> read_qp_counters() const override {
    std::lock_guard lock(engine_->mutex());
    std::vector<QpCounters> out;
    out.reserve(live_qps_.size());
    for (std::uint32_t qpn : live_qps_) {
      const roce::rc::RcQp* qp = engine_->find_qp(qpn);
      if (qp == nullptr) continue;
      QpCounters q;
      q.qp_num = qpn;
      append_qp_samples(qp->counters(), q.counters);
      out.push_back(std::move(q));
    }
    return out;
  }
  // Both with the device lock held.
  void qp_created(std::uint32_t qpn) { live_qps_.push_back(qpn); }
  void qp_destroyed(std::uint32_t qpn) noexcept {
    std::erase(live_qps_, qpn);
  }
  const DeviceOptions& options() const noexcept { return options_; }

  void progress() override {
    std::lock_guard lock(engine_->mutex());
    engine_->progress();
  }
  // The MAC of peer `ip` on this device's segment, by ARP: asks, progresses
  // the device (which sends the request and receives the answer) and asks
  // again, releasing the device lock in between so the progress thread and
  // other callers run, until an answer or options_.arp_timeout_ms.
  Result<roce::MacAddress> resolve_neighbour(std::uint32_t ip) {
    using Clock = std::chrono::steady_clock;
    const auto limit = std::chrono::milliseconds(options_.arp_timeout_ms);
    const auto deadline = Clock::now() + limit;
    for (;;) {
      roce::MacAddress mac{};
      roce::rc::NeighbourTable::Step step;
      {
        std::lock_guard lock(engine_->mutex());
        step = engine_->resolve_neighbour(ip, mac);
        if (step != roce::rc::NeighbourTable::Step::kResolved) engine_->progress();
      }
      if (step == roce::rc::NeighbourTable::Step::kResolved) return mac;
      if (step == roce::rc::NeighbourTable::Step::kFull) {
        return resource_exhausted("softroce: " + engine_->link_info().name + ": cannot resolve peer " + ip_text(ip) +
                                  ": the neighbour table holds " + dec(engine_->options().max_neighbours) +
                                  " addresses already");
      }
      if (Clock::now() >= deadline) {
        std::uint32_t asked = 0;
        {
          std::lock_guard lock(engine_->mutex());
          asked = engine_->arp_requests_sent_to(ip);
        }
        return timeout_error("softroce: port " + engine_->link_info().name + ": no ARP reply from peer " +
                             ip_text(ip) + " within " + dec(options_.arp_timeout_ms) +
                             " ms (RMA_SOFTROCE_ARP_TIMEOUT_MS; " + dec(asked) +
                             " requests sent): the peer is not running, or this port's interface does not reach "
                             "it (is it on the same Ethernet segment?)");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  roce::rc::Engine& engine() noexcept { return *engine_; }
  Status start_progress_thread() {
    return progress_.start(engine_.get(), std::chrono::microseconds(options_.progress_interval_us));
  }

 private:
  DeviceInfo info_;
  std::unique_ptr<roce::rc::Engine> engine_;
  ProgressThread progress_;  // after engine_: stops before the engine goes
  DeviceOptions options_;
  std::vector<std::uint32_t> live_qps_;  // guarded by engine_->mutex()
};

// ---------------------------------------------------------------- CQ
class CqImpl final : public CompletionQueue {
 public:
  explicit CqImpl(std::shared_ptr<DeviceImpl> dev) : dev_(std::move(dev)) {}
  Status init(std::uint32_t depth, std::uint32_t max_cqe) { return ring_.init(depth, max_cqe); }
  int poll(std::span<Completion> out) noexcept override {
    roce::rc::Engine& e = dev_->engine();
    std::lock_guard lock(e.mutex());
    if (ring_.overrun()) return -1;
    e.progress();
    if (ring_.overrun()) return -1;
    return static_cast<int>(ring_.poll(out, [&](const swkit::CqEntry& entry) {
      if (roce::rc::RcQp* qp = e.find_qp(entry.wc.qp_num)) qp->retire(entry.send_queue, entry.seq);
    }));
  }
  std::uint32_t depth() const noexcept override { return ring_.depth(); }
  const char* overrun_reason() const noexcept override {
    return ring_.overrun_reason();
  }
  swkit::CompletionRing& ring() noexcept { return ring_; }
  DeviceImpl* device() const noexcept { return dev_.get(); }

 private:
  std::shared_ptr<DeviceImpl> dev_;
  swkit::CompletionRing ring_;
};

// ---------------------------------------------------------------- PD
class PdImpl final : public ProtectionDomain, public std::enable_shared_from_this<PdImpl> {
 public:
  explicit PdImpl(std::shared_ptr<DeviceImpl> dev) : dev_(std::move(dev)) {}
  Device& device() noexcept override { return *dev_; }
  DeviceImpl& dev() noexcept { return *dev_; }
  Result<std::unique_ptr<MemoryRegion>> register_memory(void* addr, std::size_t length,
                                                        Access access) override;
  Result<std::unique_ptr<QueuePair>> create_qp(const QpConfig& config) override;

 private:
  std::shared_ptr<DeviceImpl> dev_;
};

// ---------------------------------------------------------------- MR
class MrImpl final : public MemoryRegion {
 public:
  MrImpl(std::shared_ptr<PdImpl> pd, std::unique_ptr<swkit::RegionWatch> watch, std::uint64_t a,
         std::uint64_t len, std::uint32_t lkey, std::uint32_t rkey, Access access) noexcept
      : MemoryRegion(a, len, lkey, rkey, access), pd_(std::move(pd)), watch_(std::move(watch)) {}
  ~MrImpl() override {
    // Under the device lock: no packet is between checking a key and
    // copying through it when the region goes away.
    {
      roce::rc::Engine& e = pd_->dev().engine();
      std::lock_guard lock(e.mutex());
      e.keys().erase(lkey());
    }
    // watch_ stops after the lock is released: the memory monitor takes the
    // tracker's lock and must never wait for the device's.
  }

 private:
  std::shared_ptr<PdImpl> pd_;
  std::unique_ptr<swkit::RegionWatch> watch_;  // marks the entry orphaned when the memory goes away
};


Result<std::unique_ptr<MemoryRegion>> PdImpl::register_memory(void* addr, std::size_t length,
                                                              Access access) {
  const auto a = reinterpret_cast<std::uint64_t>(addr);
  const DeviceCaps& caps = dev_->caps();
  RMA_RETURN_IF_ERROR(check_registration(addr, length, access, caps));
  // As a NIC's pinning would: no unmapped range, no write rights on a
  // read-only mapping (a remote WRITE there would kill the process).
  RMA_RETURN_IF_ERROR(swkit::check_mapping_rights(addr, length, access));
  auto watch = std::make_unique<swkit::RegionWatch>(a, length);
  roce::rc::Engine& e = dev_->engine();
  swkit::KeyTable::Keys keys;
  {
    std::lock_guard lock(e.mutex());
    RMA_ASSIGN_OR_RETURN(keys, e.keys().insert(swkit::MrEntry{a, length, access, this, watch->orphaned()},
                                               caps.max_mr));
  }
  return std::unique_ptr<MemoryRegion>(
      new MrImpl(shared_from_this(), std::move(watch), a, length, keys.lkey, keys.rkey, access));
}

// ---------------------------------------------------------------- QP
class QpImpl final : public QueuePair {
 public:
  QpImpl(std::shared_ptr<PdImpl> pd, std::shared_ptr<CqImpl> scq, std::shared_ptr<CqImpl> rcq)
      : pd_(std::move(pd)), scq_(std::move(scq)), rcq_(std::move(rcq)) {}
  ~QpImpl() override {
    std::lock_guard lock(engine().mutex());
    if (qp_) pd_->dev().qp_destroyed(qp_->qpn());
    qp_.reset();
  }
  Status init(const roce::rc::QpParams& p) {
    std::lock_guard lock(engine().mutex());
    qp_ = std::make_unique<roce::rc::RcQp>(engine(), p);
    Status st = qp_->init();
    if (!st.ok()) {
      qp_.reset();
      return st;
    }
    pd_->dev().qp_created(qp_->qpn());
    return st;
  }
  Result<std::vector<CounterSample>> read_counters() const override {
    std::lock_guard lock(engine().mutex());
    std::vector<CounterSample> out;
    append_qp_samples(qp_->counters(), out);
    return out;
  }
  std::uint32_t qp_num() const noexcept override { return qp_->qpn(); }
  QpState state() const noexcept override { return qp_->state(); }
  // Drawn at creation and never changed after (rc/qp.hpp).
  std::uint32_t initial_psn() const noexcept override { return qp_->local_psn(); }

  Result<EndpointAddress> local_address() const override {
    const roce::LinkInfo& li = engine().link_info();
    EndpointFields f;
    f.mac = li.mac;
    f.ipv4 = li.ipv4;
    f.qpn = qp_->qpn();
    f.psn = qp_->local_psn();
    f.mtu = qp_->path_mtu();
    return encode_endpoint(f);
  }

  Status connect(const EndpointAddress& remote) override {
    RMA_ASSIGN_OR_RETURN(EndpointFields f, decode_endpoint(remote));
    roce::rc::PeerParams peer;
    peer.mac = f.mac;
    peer.ipv4 = f.ipv4;
    peer.qpn = f.qpn;
    peer.psn = f.psn;
    peer.mtu = f.mtu;
    DeviceImpl& dev = pd_->dev();
    const roce::LinkInfo& li = engine().link_info();
    if (li.neighbours_by_arp && f.ipv4 == li.ipv4) {
      // A QP of this device: its link's loopback, nobody to ask.
      peer.mac = li.mac;
    } else if (li.neighbours_by_arp && dev.options().arp_timeout_ms != 0) {
      {
        // Only a RESET QP connects (its error says so); nothing to resolve otherwise.
        std::lock_guard lock(engine().mutex());
        if (qp_->state() != QpState::kReset) return qp_->connect(peer);
      }
      // On a shared segment the next hop is whoever answers ARP for the
      // peer's address, not the MAC the peer announced (a NIC behind a
      // bridge or a changed MAC would get nothing).
      RMA_ASSIGN_OR_RETURN(peer.mac, dev.resolve_neighbour(f.ipv4));
    }
    std::lock_guard lock(engine().mutex());
    return qp_->connect(peer);
  }

  Status set_error() override {
    std::lock_guard lock(engine().mutex());
    qp_->set_error();
    return {};
  }

  // The doorbell: the requests of one post (a post list) go to the link in
  // one burst before post() returns, or, on a kernel interface, with the
  // next poll's burst; receiving and timers are left to poll() and the
  // progress thread (Engine::kick).
  PostResult post(std::span<const WorkRequest> wrs) noexcept override {
    std::lock_guard lock(engine().mutex());
    engine().begin_post();
    PostResult r = qp_->post(wrs);
    const std::uint32_t frames =
        engine().posts_wait_for_progress() ? request_frames(wrs.first(r.ok() ? wrs.size() : r.bad_index)) : 1;
    engine().kick(qp_.get(), frames);
    return r;
  }
  // The frames the requests put on the wire (a READ or an atomic: one).
  std::uint32_t request_frames(std::span<const WorkRequest> wrs) const noexcept {
    const std::uint64_t mtu = std::max<std::uint64_t>(qp_->path_mtu(), 256);
    std::uint64_t frames = 0;
    for (const WorkRequest& w : wrs) {
      if (w.opcode == Opcode::kRdmaRead || w.opcode == Opcode::kAtomicFetchAdd || w.opcode == Opcode::kAtomicCmpSwap) {
        ++frames;
        continue;
      }
      std::uint64_t bytes = 0;
      for (const Sge& g : w.sgl) bytes += g.length;
      frames += bytes == 0 ? 1 : (bytes + mtu - 1) / mtu;
    }
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(frames, UINT32_MAX));
  }

  PostResult post_recv(std::span<const RecvRequest> wrs) noexcept override {
    std::lock_guard lock(engine().mutex());
    PostResult r = qp_->post_recv(wrs);
    engine().progress();
    return r;
  }

 private:
  roce::rc::Engine& engine() const noexcept { return pd_->dev().engine(); }
  std::shared_ptr<PdImpl> pd_;
  std::shared_ptr<CqImpl> scq_, rcq_;  // children keep parents alive
  std::unique_ptr<roce::rc::RcQp> qp_;
};


Result<std::unique_ptr<QueuePair>> PdImpl::create_qp(const QpConfig& config) {
  RMA_RETURN_IF_ERROR(check_qp_config(config, dev_->caps()));
  auto scq = std::dynamic_pointer_cast<CqImpl>(config.send_cq);
  auto rcq = std::dynamic_pointer_cast<CqImpl>(config.recv_cq);
  if (!scq) return invalid_argument("create_qp: send_cq was not created by the softroce provider");
  if (!rcq) return invalid_argument("create_qp: recv_cq was not created by the softroce provider");
  if (scq->device() != dev_.get() || rcq->device() != dev_.get()) {
    return invalid_argument("create_qp: the completion queues belong to another device");
  }
  roce::rc::QpParams p;
  p.pd = this;
  p.max_send_wr = config.max_send_wr;
  p.max_recv_wr = config.max_recv_wr;
  p.max_send_sge = config.max_send_sge;
  p.max_recv_sge = config.max_recv_sge;
  p.max_inline = config.max_inline_data;
  p.max_rd_atomic = config.max_rd_atomic;
  // The device's configured defaults apply where the caller kept the
  // contract's defaults; a value the caller changed wins.
  const QpConfig contract_defaults;
  const DeviceOptions& o = dev_->options();
  p.timeout = config.timeout == contract_defaults.timeout && o.timeout ? *o.timeout : config.timeout;
  p.retry_cnt = config.retry_cnt == contract_defaults.retry_cnt && o.retry_cnt ? *o.retry_cnt : config.retry_cnt;
  p.rnr_retry = config.rnr_retry == contract_defaults.rnr_retry && o.rnr_retry ? *o.rnr_retry : config.rnr_retry;
  p.min_rnr_timer = config.min_rnr_timer;
  p.path_mtu = config.path_mtu != 0 ? config.path_mtu : dev_->caps().path_mtu;
  p.max_msg_size = dev_->caps().max_msg_size;
  p.send_cq = &scq->ring();
  p.recv_cq = &rcq->ring();
  auto qp = std::make_unique<QpImpl>(shared_from_this(), std::move(scq), std::move(rcq));
  RMA_RETURN_IF_ERROR(qp->init(p));
  return std::unique_ptr<QueuePair>(std::move(qp));
}

Result<std::shared_ptr<ProtectionDomain>> DeviceImpl::alloc_pd() {
  return std::shared_ptr<ProtectionDomain>(std::make_shared<PdImpl>(shared_from_this()));
}

Result<std::shared_ptr<CompletionQueue>> DeviceImpl::create_cq(std::uint32_t depth) {
  auto cq = std::make_shared<CqImpl>(shared_from_this());
  RMA_RETURN_IF_ERROR(cq->init(depth, info_.caps.max_cqe));
  return std::shared_ptr<CompletionQueue>(std::move(cq));
}

// ---------------------------------------------------------------- endpoint address
constexpr char kTag[8] = {'s', 'o', 'f', 't', 'r', 'o', 'c', 'e'};
constexpr std::uint8_t kVersion = 1;
constexpr std::uint32_t kAddrSize = 8 + 1 + 6 + 4 + 4 + 4 + 4;

void put_be(std::uint8_t* p, std::uint32_t v) noexcept {
  p[0] = static_cast<std::uint8_t>(v >> 24);
  p[1] = static_cast<std::uint8_t>(v >> 16);
  p[2] = static_cast<std::uint8_t>(v >> 8);
  p[3] = static_cast<std::uint8_t>(v);
}
std::uint32_t get_be(const std::uint8_t* p) noexcept {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

}  // namespace

EndpointAddress encode_endpoint(const EndpointFields& f) {
  EndpointAddress a;
  std::uint8_t* p = a.bytes.data();
  std::memcpy(p, kTag, 8);
  p[8] = kVersion;
  std::memcpy(p + 9, f.mac.data(), 6);
  put_be(p + 15, f.ipv4);
  put_be(p + 19, f.qpn);
  put_be(p + 23, f.psn);
  put_be(p + 27, f.mtu);
  a.size = kAddrSize;
  return a;
}

Result<EndpointFields> decode_endpoint(const EndpointAddress& a) {
  RMA_RETURN_IF_ERROR(swkit::check_endpoint_header(a, "softroce", {kTag, 8}, kAddrSize, kVersion));
  const std::uint8_t* p = a.bytes.data();
  EndpointFields f;
  std::memcpy(f.mac.data(), p + 9, 6);
  f.ipv4 = get_be(p + 15);
  f.qpn = get_be(p + 19);
  f.psn = get_be(p + 23);
  f.mtu = get_be(p + 27);
  if (f.qpn == 0 || f.qpn > roce::kPsnMask) {
    return invalid_argument("softroce endpoint address: QPN " + dec(f.qpn) + " is outside 1..16777215");
  }
  if (f.psn > roce::kPsnMask) {
    return invalid_argument("softroce endpoint address: PSN " + dec(f.psn) + " does not fit 24 bits");
  }
  if (f.mtu < 256 || f.mtu > 4096 || (f.mtu & (f.mtu - 1)) != 0) {
    return invalid_argument("softroce endpoint address: MTU " + dec(f.mtu) +
                            " is not one of 256, 512, 1024, 2048, 4096");
  }
  if (f.ipv4 == 0) {
    return invalid_argument("softroce endpoint address: the peer has no IPv4 address "
                            "(configure one on its port, e.g. ip=10.0.0.2)");
  }
  if ((f.mac[0] & 1u) != 0) {
    return invalid_argument("softroce endpoint address: MAC is a multicast address");
  }
  return f;
}

DeviceCaps softroce_caps(std::uint32_t mtu, std::uint32_t max_qp) noexcept {
  swkit::QueueLimits l;
  l.max_qp = max_qp;
  l.max_qp_wr = 4096;
  l.max_cqe = 65536;
  l.max_qp_rd_atom = roce::rc::RcQp::kResources;
  l.path_mtu = mtu;
  DeviceCaps c = swkit::software_caps(l);
  c.target_needs_polls = true;  // frames are received in poll()/progress()
  return c;
}

std::uint32_t largest_path_mtu(std::uint32_t max_frame) noexcept {
  for (std::uint32_t mtu = 4096; mtu >= 256; mtu /= 2) {
    if (max_frame >= mtu + kMaxOverhead) return mtu;
  }
  return 0;
}

Result<std::shared_ptr<Device>> open_softroce_device(std::unique_ptr<roce::Link> link, DeviceOptions options) {
  if (!link) return invalid_argument("open_softroce_device: link is null");
  const roce::LinkInfo li = link->info();
  const std::uint32_t fit = largest_path_mtu(li.max_frame);
  if (fit == 0) {
    return invalid_argument("open_softroce_device: link " + li.name + " carries frames of at most " +
                            dec(li.max_frame) + " bytes; RoCE v2 needs " + dec(256 + kMaxOverhead) +
                            " for the smallest path MTU (256)");
  }
  std::uint32_t mtu = options.path_mtu;
  if (mtu == 0) {
    mtu = fit;
  } else if (mtu < 256 || mtu > 4096 || (mtu & (mtu - 1)) != 0) {
    return invalid_argument("open_softroce_device: path MTU " + dec(mtu) +
                            " is not one of 256, 512, 1024, 2048, 4096");
  } else if (mtu > fit) {
    return invalid_argument("open_softroce_device: path MTU " + dec(mtu) + " does not fit link " + li.name +
                            " (max frame " + dec(li.max_frame) + " bytes allows at most " + dec(fit) + ")");
  }
  if (li.ipv4 == 0) {
    return invalid_argument("open_softroce_device: link " + li.name +
                            " has no IPv4 address; RoCE v2 needs one (add ip=a.b.c.d to the port spec)");
  }
  roce::rc::EngineOptions eo;
  eo.path_mtu = mtu;
  eo.max_unacked_psns = options.max_unacked_psns;
  eo.max_read_request_packets = options.max_read_request_packets;
  eo.ack_req_every = options.ack_req_every;
  eo.tx_ring = options.tx_ring;
  eo.initial_psn = options.initial_psn;
  eo.pcap_path = options.pcap_path;
  // Every progress() first sees the unmaps that returned before it, so a
  // frame for a region whose memory went away fails its access check.
  eo.memory_sync = [] { swkit::OrphanTracker::instance().sync(); };
  RMA_ASSIGN_OR_RETURN(auto engine, roce::rc::Engine::create(std::move(link), eo));

  DeviceInfo d;
  d.name = options.name.empty() ? "softroce0" : options.name;
  d.provider = "softroce";
  d.transport = "RoCE v2";
  d.link_layer = "Ethernet";
  d.gid = roce::ipv4_gid(li.ipv4);
  d.mac = li.mac;
  d.caps = softroce_caps(mtu, eo.max_qp);
  const bool background = options.progress_interval_us != 0;
  auto dev = std::make_shared<DeviceImpl>(std::move(d), std::move(engine), std::move(options));
  if (background) RMA_RETURN_IF_ERROR(dev->start_progress_thread());
  return std::shared_ptr<Device>(std::move(dev));
}

}  // namespace rma::softroce
