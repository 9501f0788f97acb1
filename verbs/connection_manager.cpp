// rdma_cm connections (include/rma/verbs.hpp). The provider creates the QP
// on its own ibv_context (rdma_create_qp would demand a PD of librdmacm's
// context), so the cm_id has no QP attached: each state transition takes
// its attributes from rdma_init_qp_attr(), the active side finishes with
// rdma_establish(), and every wait on the event channel is bounded.
#include "verbs/connection_manager.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "rma/sdk/text.hpp"
#include "rma/sdk/verbs.hpp"
#include "verbs/device.hpp"
#include "verbs/queue_pair.hpp"
#include "verbs/translate.hpp"

namespace rma::verbs {
namespace {

using Clock = std::chrono::steady_clock;


Result<EventChannelPtr> make_channel() {
  EventChannelPtr ch(::rdma_create_event_channel());
  if (!ch) {
    return unavailable("rdma_create_event_channel failed: " + errno_text(errno) +
                       "; rdma_cm needs the rdma_ucm kernel module (/dev/infiniband/rdma_cm)");
  }
  const int flags = ::fcntl(ch->fd, F_GETFL);
  if (flags < 0 || ::fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return io_error("rdma_cm: cannot make the event channel non-blocking", errno);
  }
  return ch;
}

Result<sockaddr_in> make_addr(const std::string& ip, std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (::inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1) {
    return invalid_argument("rdma_cm: \"" + ip + "\" is not an IPv4 address (expected a.b.c.d)");
  }
  return a;
}

struct CmEvent {
  rdma_cm_event_type type = RDMA_CM_EVENT_ADDR_ERROR;
  int status = 0;
  rdma_cm_id* id = nullptr;
  std::uint8_t initiator_depth = 0;
  std::uint8_t responder_resources = 0;
};

// The next event of `ch`, acknowledged, or kTimeout after `timeout`.
Result<CmEvent> next_event(rdma_event_channel* ch, std::chrono::milliseconds timeout, const std::string& what) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    rdma_cm_event* ev = nullptr;
    if (::rdma_get_cm_event(ch, &ev) == 0) {
      CmEvent out;
      out.type = ev->event;
      out.status = ev->status;
      out.id = ev->id;
      out.initiator_depth = ev->param.conn.initiator_depth;
      out.responder_resources = ev->param.conn.responder_resources;
      ::rdma_ack_cm_event(ev);
      return out;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return io_error("rdma_cm: " + what + ": rdma_get_cm_event failed", errno);
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return timeout_error("rdma_cm: " + what + " timed out after " + dec(static_cast<std::uint64_t>(timeout.count())) + " ms");
    }
    pollfd p{ch->fd, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 1000)));
  }
}

Status unexpected(const CmEvent& ev, const std::string& what, const std::string& peer) {
  const std::string name = ::rdma_event_str(ev.type);
  const std::string st = " (event " + name + ", status " + std::to_string(ev.status) + ")";
  switch (ev.type) {
    case RDMA_CM_EVENT_REJECTED:
      return unavailable("rdma_cm: " + what + ": " + peer + " rejected the connection; is anyone listening there?" + st);
    case RDMA_CM_EVENT_UNREACHABLE:
      return unavailable("rdma_cm: " + what + ": " + peer + " is unreachable" + st);
    case RDMA_CM_EVENT_ADDR_ERROR:
      return unavailable("rdma_cm: " + what + ": cannot resolve " + peer +
                         " to a local RDMA device (no route, or the route's netdev has no RDMA device)" + st);
    case RDMA_CM_EVENT_ROUTE_ERROR:
      return unavailable("rdma_cm: " + what + ": no route to " + peer + st);
    case RDMA_CM_EVENT_CONNECT_ERROR:
      return unavailable("rdma_cm: " + what + ": connection to " + peer + " failed" + st);
    default:
      return unavailable("rdma_cm: " + what + " with " + peer + ": unexpected event" + st);
  }
}

Result<CmEvent> expect(rdma_event_channel* ch, rdma_cm_event_type wanted, std::chrono::milliseconds timeout,
                       const std::string& what, const std::string& peer) {
  RMA_ASSIGN_OR_RETURN(CmEvent ev, next_event(ch, timeout, what + " with " + peer));
  if (ev.type != wanted) return unexpected(ev, what, peer);
  return ev;
}

Status check_device(const rdma_cm_id* id, PdImpl& pd, const std::string& peer) {
  if (id->verbs == nullptr) {
    return unavailable("rdma_cm: " + peer + " is not reached through any RDMA device");
  }
  const std::string via = ::ibv_get_device_name(id->verbs->device);
  if (via != pd.dev().name()) {
    return invalid_argument("rdma_cm: " + peer + " is reached through RDMA device " + via +
                            ", but the protection domain belongs to " + pd.dev().name());
  }
  return {};
}

// One state transition with rdma_cm's attributes, plus what the QP's
// configuration says about access, timers and path MTU.
Status cm_transition(QpImpl& qp, rdma_cm_id* id, ibv_qp_state target, const char* step) {
  ibv_qp_attr a{};
  int mask = 0;
  a.qp_state = target;
  if (::rdma_init_qp_attr(id, &a, &mask) != 0) {
    return unavailable(std::string("rdma_cm: rdma_init_qp_attr for ") + step + " failed: " + errno_text(errno));
  }
  const QpConfig& c = qp.config();
  switch (target) {
    case IBV_QPS_INIT:
      a.qp_access_flags =
          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
      mask |= IBV_QP_ACCESS_FLAGS;
      break;
    case IBV_QPS_RTR:
      a.min_rnr_timer = c.min_rnr_timer;
      mask |= IBV_QP_MIN_RNR_TIMER;
      if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) == 0) {
        a.max_dest_rd_atomic = 1;
        mask |= IBV_QP_MAX_DEST_RD_ATOMIC;
      }
      if (c.path_mtu != 0 && mtu_bytes(a.path_mtu) > c.path_mtu) a.path_mtu = *mtu_from_bytes(c.path_mtu);
      break;
    case IBV_QPS_RTS:
      a.timeout = c.timeout;
      a.retry_cnt = c.retry_cnt;
      a.rnr_retry = c.rnr_retry;
      mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY;
      break;
    default:
      break;
  }
  return qp.modify(a, mask, step);
}

rdma_conn_param conn_param(const QpImpl& qp, std::uint32_t initiator_depth, std::uint32_t responder_resources) {
  rdma_conn_param p{};
  p.qp_num = qp.qp()->qp_num;
  p.initiator_depth = static_cast<std::uint8_t>(std::min<std::uint32_t>(initiator_depth, 255));
  p.responder_resources = static_cast<std::uint8_t>(std::min<std::uint32_t>(responder_resources, 255));
  p.retry_count = qp.config().retry_cnt;
  p.rnr_retry_count = qp.config().rnr_retry;
  p.flow_control = 1;
  return p;
}

class ListenerImpl final : public CmListener {
 public:
  ListenerImpl(EventChannelPtr ch, CmIdPtr id, std::string where, std::uint16_t port)
      : channel_(std::move(ch)), id_(std::move(id)), where_(std::move(where)), port_(port) {}
  ~ListenerImpl() override {
    id_.reset();  // before its channel
    channel_.reset();
  }
  std::uint16_t port() const noexcept override { return port_; }

  Result<std::unique_ptr<QueuePair>> accept(const std::shared_ptr<ProtectionDomain>& pd, const QpConfig& config,
                                            std::chrono::milliseconds timeout) override {
    auto vpd = std::dynamic_pointer_cast<PdImpl>(pd);
    if (!vpd) return invalid_argument("rdma_cm accept: the PD was not created by the verbs provider");
    const auto deadline = Clock::now() + timeout;
    auto left = [&] {
      return std::max(std::chrono::milliseconds(0),
                      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
    };
    // The connection's own channel, declared before its cm_id: destroyed after it.
    RMA_ASSIGN_OR_RETURN(EventChannelPtr ch, make_channel());
    RMA_ASSIGN_OR_RETURN(CmEvent req,
                         expect(channel_.get(), RDMA_CM_EVENT_CONNECT_REQUEST, timeout, "accept", "listener " + where_));
    CmIdPtr conn(req.id);  // ours now; rejected when anything below fails
    const std::string peer = "the connection request on " + where_;
    auto reject = [&](Status st) {
      ::rdma_reject(conn.get(), nullptr, 0);
      return st;
    };
    if (::rdma_migrate_id(conn.get(), ch.get()) != 0) {
      return reject(io_error("rdma_cm accept: rdma_migrate_id failed", errno));
    }
    if (Status st = check_device(conn.get(), *vpd, peer); !st.ok()) return reject(st);
    auto created = QpImpl::create(vpd, config);
    if (!created.ok()) return reject(created.status());
    std::unique_ptr<QpImpl> qp = std::move(created).value();
    for (auto [state, step] : {std::pair{IBV_QPS_INIT, "accept RESET->INIT"}, std::pair{IBV_QPS_RTR, "accept INIT->RTR"},
                               std::pair{IBV_QPS_RTS, "accept RTR->RTS"}}) {
      if (Status st = cm_transition(*qp, conn.get(), state, step); !st.ok()) return reject(st);
    }
    const PortSetup& port = vpd->dev().port();
    rdma_conn_param p = conn_param(*qp, std::min<std::uint32_t>(config.max_rd_atomic, req.responder_resources),
                                   std::min<std::uint32_t>(req.initiator_depth, port.max_qp_rd_atom));
    if (::rdma_accept(conn.get(), &p) != 0) {
      return reject(unavailable("rdma_cm accept: rdma_accept failed: " + errno_text(errno)));
    }
    RMA_ASSIGN_OR_RETURN(CmEvent est, expect(ch.get(), RDMA_CM_EVENT_ESTABLISHED, left(), "accept", peer));
    (void)est;
    qp->adopt_connection(std::make_unique<CmConnection>(std::move(ch), std::move(conn)));
    return std::unique_ptr<QueuePair>(std::move(qp));
  }

 private:
  EventChannelPtr channel_;
  CmIdPtr id_;
  std::string where_;
  std::uint16_t port_;
};

}  // namespace

Result<std::unique_ptr<CmListener>> cm_listen(const std::string& ip, std::uint16_t port) {
  RMA_ASSIGN_OR_RETURN(sockaddr_in addr, make_addr(ip, port));
  RMA_ASSIGN_OR_RETURN(EventChannelPtr ch, make_channel());
  rdma_cm_id* raw = nullptr;
  if (::rdma_create_id(ch.get(), &raw, nullptr, RDMA_PS_TCP) != 0) {
    return unavailable("rdma_cm listen: rdma_create_id failed: " + errno_text(errno));
  }
  CmIdPtr id(raw);
  const std::string where = ip + ":" + dec(port);
  if (::rdma_bind_addr(id.get(), reinterpret_cast<sockaddr*>(&addr)) != 0) {
    return unavailable("rdma_cm listen: cannot bind " + where + ": " + errno_text(errno) +
                       " (is it an address of this machine, and the port free?)");
  }
  if (::rdma_listen(id.get(), 16) != 0) {
    return unavailable("rdma_cm listen on " + where + " failed: " + errno_text(errno));
  }
  const std::uint16_t bound = ntohs(::rdma_get_src_port(id.get()));
  return std::unique_ptr<CmListener>(
      new ListenerImpl(std::move(ch), std::move(id), ip + ":" + dec(bound), bound));
}

Result<std::unique_ptr<QueuePair>> cm_connect(const std::shared_ptr<ProtectionDomain>& pd, const QpConfig& config,
                                              const std::string& ip, std::uint16_t port,
                                              std::chrono::milliseconds timeout) {
  auto vpd = std::dynamic_pointer_cast<PdImpl>(pd);
  if (!vpd) return invalid_argument("rdma_cm connect: the PD was not created by the verbs provider");
  if (port == 0) return invalid_argument("rdma_cm connect: port 0 names no listener");
  RMA_ASSIGN_OR_RETURN(sockaddr_in dst, make_addr(ip, port));
  const std::string peer = ip + ":" + dec(port);
  const auto ms = static_cast<int>(std::clamp<std::int64_t>(timeout.count(), 1, 1 << 30));
  RMA_ASSIGN_OR_RETURN(EventChannelPtr ch, make_channel());
  rdma_cm_id* raw = nullptr;
  if (::rdma_create_id(ch.get(), &raw, nullptr, RDMA_PS_TCP) != 0) {
    return unavailable("rdma_cm connect: rdma_create_id failed: " + errno_text(errno));
  }
  CmIdPtr id(raw);
  if (::rdma_resolve_addr(id.get(), nullptr, reinterpret_cast<sockaddr*>(&dst), ms) != 0) {
    return unavailable("rdma_cm connect: rdma_resolve_addr(" + peer + ") failed: " + errno_text(errno));
  }
  RMA_RETURN_IF_ERROR(expect(ch.get(), RDMA_CM_EVENT_ADDR_RESOLVED, timeout, "address resolution", peer).status());
  RMA_RETURN_IF_ERROR(check_device(id.get(), *vpd, peer));
  if (::rdma_resolve_route(id.get(), ms) != 0) {
    return unavailable("rdma_cm connect: rdma_resolve_route(" + peer + ") failed: " + errno_text(errno));
  }
  RMA_RETURN_IF_ERROR(expect(ch.get(), RDMA_CM_EVENT_ROUTE_RESOLVED, timeout, "route resolution", peer).status());

  RMA_ASSIGN_OR_RETURN(std::unique_ptr<QpImpl> qp, QpImpl::create(vpd, config));
  RMA_RETURN_IF_ERROR(cm_transition(*qp, id.get(), IBV_QPS_INIT, "connect RESET->INIT"));
  rdma_conn_param p = conn_param(*qp, config.max_rd_atomic, vpd->dev().port().max_qp_rd_atom);
  if (::rdma_connect(id.get(), &p) != 0) {
    return unavailable("rdma_cm connect: rdma_connect(" + peer + ") failed: " + errno_text(errno));
  }
  RMA_RETURN_IF_ERROR(expect(ch.get(), RDMA_CM_EVENT_CONNECT_RESPONSE, timeout, "connect", peer).status());
  RMA_RETURN_IF_ERROR(cm_transition(*qp, id.get(), IBV_QPS_RTR, "connect INIT->RTR"));
  RMA_RETURN_IF_ERROR(cm_transition(*qp, id.get(), IBV_QPS_RTS, "connect RTR->RTS"));
  if (::rdma_establish(id.get()) != 0) {
    return unavailable("rdma_cm connect: rdma_establish(" + peer + ") failed: " + errno_text(errno));
  }
  qp->adopt_connection(std::make_unique<CmConnection>(std::move(ch), std::move(id)));
  return std::unique_ptr<QueuePair>(std::move(qp));
}

}  // namespace rma::verbs
