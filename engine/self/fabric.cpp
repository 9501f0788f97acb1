#include "self/fabric.hpp"

#include <random>

#include "rma/sdk/text.hpp"

namespace rma::self {

namespace {
std::uint64_t random64() {
  std::random_device rd;
  return (std::uint64_t{rd()} << 32) ^ rd();
}
}  // namespace

Fabric& Fabric::instance() noexcept {
  static Fabric* fabric = new Fabric();  // intentionally immortal (see header)
  return *fabric;
}

Fabric::Fabric()
    : nonce_(random64()),
      // Start somewhere other than 0 so QP numbers do not look like indices.
      next_qpn_(0x100u + static_cast<std::uint32_t>(random64() & 0xFFFFu)) {}

Result<std::uint32_t> Fabric::add_qp(QpImpl* qp, std::uint32_t max_qp) {
  if (qps_.size() >= max_qp) {
    return resource_exhausted("too many queue pairs: " + dec(qps_.size()) + " exist and max_qp is " +
                              dec(max_qp));
  }
  if (next_qpn_ > 0xFFFFFFu) return resource_exhausted("QP numbers exhausted (24 bits)");
  const std::uint32_t qpn = next_qpn_++;
  qps_.emplace(qpn, qp);
  return qpn;
}

void Fabric::remove_qp(std::uint32_t qpn) noexcept { qps_.erase(qpn); }

QpImpl* Fabric::find_qp(std::uint32_t qpn) const noexcept {
  auto it = qps_.find(qpn);
  return it == qps_.end() ? nullptr : it->second;
}

}  // namespace rma::self
