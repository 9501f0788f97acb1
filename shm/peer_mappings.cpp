#include "shm/peer_mappings.hpp"

#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "rma/sdk/log.hpp"

namespace rma::shm {

namespace {

struct Mappings {
  std::mutex mutex;
  std::map<std::string, std::weak_ptr<node::SharedMemory>> by_name;
};
Mappings& mappings() {
  static Mappings* m = new Mappings;  // immortal: QPs may go during static destruction
  return *m;
}

}  // namespace

std::shared_ptr<node::SharedMemory> map_peer_segment(const node::SegmentRef& ref) noexcept {
  try {
    const std::string name(ref.name, strnlen(ref.name, sizeof ref.name));
    Mappings& m = mappings();
    std::shared_ptr<node::SharedMemory> held;  // released after the lock if it is the last
    std::lock_guard lock(m.mutex);
    if (auto it = m.by_name.find(name); it != m.by_name.end()) {
      held = it->second.lock();
      if (held && !held->freed() && held->ref().nonce == ref.nonce && held->ref().size == ref.size) return held;
      m.by_name.erase(it);
    }
    auto attached = node::SharedMemory::attach(ref);
    if (!attached.ok()) {
      RMA_LOG_DEBUG("shm: cannot map the peer's segment %s (%s); reaching its regions by cross-memory attach",
                    name.c_str(), attached.status().message().c_str());
      return nullptr;
    }
    std::shared_ptr<node::SharedMemory> mem(std::move(attached).value());
    // Forget segments nobody maps any more (a miss is rare: this is cheap).
    std::erase_if(m.by_name, [](const auto& kv) { return kv.second.expired(); });
    m.by_name[name] = mem;
    return mem;
  } catch (...) {
    return nullptr;  // out of memory: the caller falls back
  }
}

}  // namespace rma::shm
