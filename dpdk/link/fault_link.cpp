#include "link/fault_link.hpp"

#include <algorithm>
#include <deque>
#include <mutex>
#include <random>
#include <vector>

namespace rma::roce {

namespace {
struct QueuedFrame {
  std::vector<std::uint8_t> bytes;
  std::uint64_t ready_tick = 0;  // deliverable once the receiver polled this often
};

struct Direction {
  FaultConfig cfg;
  std::mt19937_64 rng;
  std::deque<QueuedFrame> queue;
  std::vector<std::vector<std::uint8_t>> pool;  // recycled frame buffers
  std::uint64_t tick = 0;
  std::uint64_t index = 0;
  FaultLink::DropFilter filter;
  FaultCounters faults;
  std::uint64_t tx_frames = 0, tx_bytes = 0, tx_dropped = 0;
  std::uint64_t rx_frames = 0, rx_bytes = 0;

  bool chance(double p) {
    if (p <= 0.0) return false;
    if (p >= 1.0) return true;
    return std::uniform_real_distribution<double>(0.0, 1.0)(rng) < p;
  }
  std::vector<std::uint8_t> take_buffer() {
    if (pool.empty()) return {};
    std::vector<std::uint8_t> v = std::move(pool.back());
    pool.pop_back();
    v.clear();
    return v;
  }
};
}  // namespace

struct FaultLink::Shared {
  std::mutex mutex;
  Direction dir[2];  // dir[i]: frames sent by side i
};

FaultLink::FaultLink(std::shared_ptr<Shared> shared, int side, LinkInfo info) noexcept
    : shared_(std::move(shared)), side_(side), info_(std::move(info)) {
  info_.completes_icrc = true;  // transmit writes every frame out with write_tx_frame
}

FaultLink::~FaultLink() = default;

std::size_t FaultLink::transmit(std::span<const TxFrame> frames) noexcept {
  std::lock_guard lock(shared_->mutex);
  Direction& d = shared_->dir[side_];
  std::size_t taken = 0;
  for (const TxFrame& f : frames) {
    if (d.queue.size() >= d.cfg.capacity) {
      ++d.faults.refused;
      ++d.tx_dropped;
      break;
    }
    ++taken;
    ++d.faults.offered;
    ++d.tx_frames;
    d.tx_bytes += f.size();
    const std::uint64_t index = d.index++;
    if (d.filter && d.filter(index, f.head)) {
      ++d.faults.dropped;
      continue;
    }
    if (d.chance(d.cfg.drop)) {
      ++d.faults.dropped;
      continue;
    }
    QueuedFrame q;
    q.bytes = d.take_buffer();
    q.bytes.resize(f.size());
    (void)write_tx_frame(f, q.bytes.data());
    if (!q.bytes.empty() && d.chance(d.cfg.corrupt)) {
      const std::size_t at = d.rng() % q.bytes.size();
      q.bytes[at] ^= static_cast<std::uint8_t>(1 + d.rng() % 255);
      ++d.faults.corrupted;
    }
    q.ready_tick = d.tick + 1;  // the receiver's next poll
    if (d.cfg.max_delay_polls > 0 && d.chance(d.cfg.delay)) {
      q.ready_tick += 1 + d.rng() % d.cfg.max_delay_polls;
      ++d.faults.delayed;
    }
    const bool dup = d.chance(d.cfg.duplicate);
    if (dup) {
      QueuedFrame copy;
      copy.bytes = q.bytes;
      copy.ready_tick = q.ready_tick;
      ++d.faults.duplicated;
      d.queue.push_back(std::move(copy));
    }
    if (!d.queue.empty() && d.chance(d.cfg.reorder)) {
      // Overtakes the frame queued just before it.
      d.queue.insert(d.queue.end() - 1, std::move(q));
      ++d.faults.reordered;
    } else {
      d.queue.push_back(std::move(q));
    }
  }
  return taken;
}

std::size_t FaultLink::poll(FrameSink& sink, std::size_t max) noexcept {
  std::vector<QueuedFrame> batch;
  {
    std::lock_guard lock(shared_->mutex);
    Direction& d = shared_->dir[1 - side_];
    ++d.tick;
    for (auto it = d.queue.begin(); it != d.queue.end() && batch.size() < max;) {
      if (it->ready_tick <= d.tick) {
        batch.push_back(std::move(*it));
        it = d.queue.erase(it);
      } else {
        ++it;
      }
    }
    d.faults.delivered += batch.size();
    d.rx_frames += batch.size();
    for (const auto& f : batch) d.rx_bytes += f.bytes.size();
  }
  // Outside the lock: the sink may transmit.
  for (const auto& f : batch) sink.on_frame(f.bytes);
  if (!batch.empty()) {
    std::lock_guard lock(shared_->mutex);
    Direction& d = shared_->dir[1 - side_];
    for (auto& f : batch) {
      if (d.pool.size() < 1024) d.pool.push_back(std::move(f.bytes));
    }
  }
  return batch.size();
}

LinkCounters FaultLink::counters() const noexcept {
  std::lock_guard lock(shared_->mutex);
  const Direction& out = shared_->dir[side_];
  const Direction& in = shared_->dir[1 - side_];
  LinkCounters c;
  c.tx_frames = out.tx_frames;
  c.tx_bytes = out.tx_bytes;
  c.tx_dropped = out.tx_dropped;
  c.rx_frames = in.rx_frames;
  c.rx_bytes = in.rx_bytes;
  return c;
}

void FaultLink::set_faults(const FaultConfig& cfg) noexcept {
  std::lock_guard lock(shared_->mutex);
  Direction& d = shared_->dir[side_];
  d.cfg = cfg;
  d.rng.seed(cfg.seed * 2 + static_cast<std::uint64_t>(side_));
}

void FaultLink::set_drop_filter(DropFilter filter) {
  std::lock_guard lock(shared_->mutex);
  shared_->dir[side_].filter = std::move(filter);
}

FaultCounters FaultLink::fault_counters() const noexcept {
  std::lock_guard lock(shared_->mutex);
  return shared_->dir[side_].faults;
}

std::size_t FaultLink::pending_rx() const noexcept {
  std::lock_guard lock(shared_->mutex);
  return shared_->dir[1 - side_].queue.size();
}

FaultLinkPair make_fault_link_pair(const FaultConfig& faults, LinkEndpointConfig a,
                                   LinkEndpointConfig b) {
  auto fill = [](LinkEndpointConfig& c, const char* name, std::uint8_t n) {
    if (c.name.empty()) c.name = name;
    if (c.mac == MacAddress{}) c.mac = MacAddress{0x02, 0, 0, 0, 0, n};
    if (c.ipv4 == 0) c.ipv4 = (10u << 24) | n;
  };
  fill(a, "fault:A", 1);
  fill(b, "fault:B", 2);
  auto shared = std::make_shared<FaultLink::Shared>();
  for (int side = 0; side < 2; ++side) {
    shared->dir[side].cfg = faults;
    shared->dir[side].rng.seed(faults.seed * 2 + static_cast<std::uint64_t>(side));
  }
  FaultLinkPair p;
  p.a = std::make_unique<FaultLink>(shared, 0, LinkInfo{a.name, a.mac, a.ipv4, a.max_frame, a.neighbours_by_arp});
  p.b = std::make_unique<FaultLink>(shared, 1, LinkInfo{b.name, b.mac, b.ipv4, b.max_frame, b.neighbours_by_arp});
  return p;
}

}  // namespace rma::roce
