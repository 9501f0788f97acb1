#include "link/mesh_link.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

namespace rma::roce {

namespace {
std::string mac_text(const MacAddress& m) {
  char b[24];
  std::snprintf(b, sizeof b, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return b;
}
}  // namespace

Result<std::unique_ptr<MeshLink>> MeshLink::create(LinkInfo self, std::vector<MeshMember> members,
                                                   std::unique_ptr<Link> uplink, std::uint32_t loopback_slots) {
  if (loopback_slots == 0) return invalid_argument("mesh link " + self.name + ": loopback_slots must be at least 1");
  if (self.max_frame < 64) {
    return invalid_argument("mesh link " + self.name + ": max_frame " + std::to_string(self.max_frame) +
                            " is smaller than a minimal Ethernet frame");
  }
  bool learning = false;
  // Open ICRCs only where every link a frame may take completes them (the
  // loopback writes frames out with write_tx_frame).
  bool completes_icrc = true;
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (!members[i].link) return invalid_argument("mesh link " + self.name + ": member " + std::to_string(i) + " has no link");
    self.max_frame = std::min(self.max_frame, members[i].link->info().max_frame);
    completes_icrc = completes_icrc && members[i].link->info().completes_icrc;
    if (members[i].learn) {
      learning = true;
      members[i].peer = MacAddress{};
      continue;
    }
    if (members[i].peer == self.mac) {
      return invalid_argument("mesh link " + self.name + ": member " + members[i].link->info().name +
                              " leads to this device's own MAC " + mac_text(self.mac));
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (!members[j].learn && members[j].peer == members[i].peer) {
        return invalid_argument("mesh link " + self.name + ": members " + members[j].link->info().name + " and " +
                                members[i].link->info().name + " both lead to MAC " + mac_text(members[i].peer));
      }
    }
  }
  if (uplink) {
    self.max_frame = std::min(self.max_frame, uplink->info().max_frame);
    learning = learning || uplink->info().neighbours_by_arp;
    completes_icrc = completes_icrc && uplink->info().completes_icrc;
    // A job across hosts: most of this device's traffic (the peers on this
    // host take shm unless softroce is forced) leaves through the uplink.
    self.transmit_enters_kernel = uplink->info().transmit_enters_kernel;
  }
  self.neighbours_by_arp = learning;
  self.completes_icrc = completes_icrc;
  return std::unique_ptr<MeshLink>(new MeshLink(std::move(self), std::move(members), std::move(uplink), loopback_slots));
}

MeshLink::MeshLink(LinkInfo self, std::vector<MeshMember> members, std::unique_ptr<Link> uplink,
                   std::uint32_t loopback_slots)
    : info_(std::move(self)),
      members_(std::move(members)),
      uplink_(std::move(uplink)),
      loop_store_(static_cast<std::size_t>(loopback_slots) * info_.max_frame),
      loop_len_(loopback_slots) {}

template <typename Step>
void MeshLink::on_every_member(Step step) noexcept {
  std::vector<std::thread> workers;
  try {
    workers.reserve(members_.size());
  } catch (...) {
  }
  for (MeshMember& m : members_) {
    try {
      workers.emplace_back([&m, &step] { step(m); });
    } catch (...) {
      step(m);  // no thread to spare: do it here
    }
  }
  for (std::thread& t : workers) t.join();
}

void MeshLink::shutdown() noexcept {
  if (shut_down_) return;
  shut_down_ = true;
  // The uplink (a kernel interface) has no peer to tell; it shuts down
  // beside the members' handshakes.
  if (uplink_) uplink_->shutdown();
  on_every_member([](MeshMember& m) {
    if (m.link) m.link->shutdown();
  });
}

MeshLink::~MeshLink() {
  shutdown();
  on_every_member([](MeshMember& m) { m.link.reset(); });
  uplink_.reset();
}

std::size_t MeshLink::route(const TxFrame& f) const noexcept {
  if (f.head.size() < 6) return kUnroutable;
  MacAddress dst;
  std::memcpy(dst.data(), f.head.data(), 6);
  if (dst == info_.mac) return kLoopback;
  if ((dst[0] & 1u) != 0) return kFlood;  // broadcast or multicast: everybody on every link
  for (std::size_t i = 0; i < members_.size(); ++i) {
    if (!members_[i].learn && members_[i].peer == dst) return i;
  }
  return uplink_ ? kUplink : kUnroutable;
}

Link* MeshLink::link_for(std::size_t to) noexcept {
  if (to == kUplink) return uplink_.get();
  return members_[to].link.get();
}

// Best effort, like a switch flooding a broadcast: a link with no room now
// misses this one frame (an ARP request, which its sender repeats).
void MeshLink::flood(const TxFrame& f) noexcept {
  ++mesh_.flooded_frames;
  for (MeshMember& m : members_) (void)m.link->transmit({&f, 1});
  if (uplink_) (void)uplink_->transmit({&f, 1});
}

bool MeshLink::loop_back(const TxFrame& f) noexcept {
  if (loop_count_ == loop_len_.size()) return false;
  const std::size_t slot = (loop_head_ + loop_count_) % loop_len_.size();
  std::uint8_t* p = loop_store_.data() + slot * info_.max_frame;
  const std::size_t n = write_tx_frame(f, p);
  loop_len_[slot] = static_cast<std::uint32_t>(n);
  ++loop_count_;
  ++loop_counters_.tx_frames;
  loop_counters_.tx_bytes += n;
  ++mesh_.loopback_frames;
  return true;
}

std::size_t MeshLink::transmit(std::span<const TxFrame> frames) noexcept {
  std::size_t done = 0;
  while (done < frames.size()) {
    const std::size_t to = route(frames[done]);
    if (to == kUnroutable || frames[done].size() > info_.max_frame) {
      // Taken and dropped: nothing could ever carry it (no member owns the
      // MAC and there is no uplink, or it is larger than the mesh's max_frame).
      ++mesh_.unroutable_frames;
      ++done;
      continue;
    }
    if (to == kLoopback) {
      if (!loop_back(frames[done])) {
        ++mesh_.loopback_full;
        return done;
      }
      ++done;
      continue;
    }
    if (to == kFlood) {
      flood(frames[done]);
      ++done;
      continue;
    }
    // The run of consecutive frames for the same link goes in one burst.
    std::size_t end = done + 1;
    while (end < frames.size() && frames[end].size() <= info_.max_frame && route(frames[end]) == to) ++end;
    const std::size_t want = end - done;
    const std::size_t taken = link_for(to)->transmit(frames.subspan(done, want));
    done += taken;
    if (taken < want) return done;  // that link is full: later frames wait, in order
  }
  return done;
}

// Delivers a learning member's frames to the engine, first taking the
// member's peer MAC from the first one that carries a usable source MAC.
class MeshLink::LearningSink final : public FrameSink {
 public:
  LearningSink(MeshLink& mesh, std::size_t member, FrameSink& next) noexcept
      : mesh_(mesh), member_(member), next_(next) {}
  void on_frame(std::span<const std::uint8_t> frame) noexcept override {
    if (mesh_.members_[member_].learn) mesh_.learn(member_, frame);
    next_.on_frame(frame);
  }

 private:
  MeshLink& mesh_;
  std::size_t member_;
  FrameSink& next_;
};

void MeshLink::learn(std::size_t member, std::span<const std::uint8_t> frame) noexcept {
  if (frame.size() < 12) return;
  MacAddress src;
  std::memcpy(src.data(), frame.data() + 6, 6);
  const bool zero = std::all_of(src.begin(), src.end(), [](std::uint8_t b) { return b == 0; });
  if (zero || (src[0] & 1u) != 0 || src == info_.mac) return;
  // Another member already leads there: the first route stays.
  for (const MeshMember& m : members_) {
    if (!m.learn && m.peer == src) return;
  }
  members_[member].peer = src;
  members_[member].learn = false;
  ++mesh_.peers_learned;
}

std::size_t MeshLink::poll(FrameSink& sink, std::size_t max) noexcept {
  std::size_t got = 0;
  // Loopback first: only frames queued before this call (a frame looped
  // back while one is delivered waits for the next poll).
  for (std::size_t n = loop_count_; n > 0 && got < max; --n) {
    const std::size_t slot = loop_head_;
    const std::uint32_t len = loop_len_[slot];
    sink.on_frame({loop_store_.data() + slot * info_.max_frame, len});
    loop_head_ = (loop_head_ + 1) % loop_len_.size();
    --loop_count_;
    ++loop_counters_.rx_frames;
    loop_counters_.rx_bytes += len;
    ++got;
  }
  // The members, then the uplink, starting one further each call.
  const std::size_t m = members_.size();
  const std::size_t links = m + (uplink_ ? 1 : 0);
  for (std::size_t k = 0; k < links && got < max; ++k) {
    const std::size_t i = (next_member_ + k) % links;
    if (i == m) {
      got += uplink_->poll(sink, max - got);
    } else if (members_[i].learn) {
      LearningSink learning(*this, i, sink);
      got += members_[i].link->poll(learning, max - got);
    } else {
      got += members_[i].link->poll(sink, max - got);
    }
  }
  if (links != 0) next_member_ = (next_member_ + 1) % links;
  return got;
}

LinkCounters MeshLink::counters() const noexcept {
  LinkCounters c = loop_counters_;
  auto add = [&c](const LinkCounters& l) {
    c.tx_frames += l.tx_frames;
    c.tx_bytes += l.tx_bytes;
    c.tx_dropped += l.tx_dropped;
    c.rx_frames += l.rx_frames;
    c.rx_bytes += l.rx_bytes;
    c.rx_control_dropped += l.rx_control_dropped;
    c.tx_loss_injected += l.tx_loss_injected;
  };
  for (const MeshMember& mm : members_) add(mm.link->counters());
  if (uplink_) add(uplink_->counters());
  return c;
}

}  // namespace rma::roce
