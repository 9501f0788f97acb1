#include "verbs/queue_pair.hpp"

#include <arpa/inet.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "rma/sdk/provider_checks.hpp"
#include "rma/sdk/text.hpp"
#include "verbs/connection_manager.hpp"
#include "verbs/endpoint_address.hpp"
#include "verbs/translate.hpp"

namespace rma::verbs {
namespace {

std::uint32_t random_psn() {
  std::random_device rd;
  return rd() & 0xffffffu;
}

const char* step_name(ibv_qp_state s) {
  switch (s) {
    case IBV_QPS_RESET: return "RESET";
    case IBV_QPS_INIT: return "INIT";
    case IBV_QPS_RTR: return "RTR";
    case IBV_QPS_RTS: return "RTS";
    case IBV_QPS_ERR: return "ERROR";
    default: return "?";
  }
}

}  // namespace

QpImpl::QpImpl(std::shared_ptr<PdImpl> pd, const QpConfig& config, std::shared_ptr<CqImpl> scq,
               std::shared_ptr<CqImpl> rcq)
    : pd_(std::move(pd)), scq_(std::move(scq)), rcq_(std::move(rcq)), config_(config) {
  // The CQs are held by scq_/rcq_; the copy in config_ need not keep them too.
  config_.send_cq.reset();
  config_.recv_cq.reset();
  max_msg_size_ = pd_->dev().caps().max_msg_size;
  psn_ = random_psn();
}

Result<std::unique_ptr<QpImpl>> QpImpl::create(std::shared_ptr<PdImpl> pd, const QpConfig& config) {
  DeviceImpl& dev = pd->dev();
  RMA_RETURN_IF_ERROR(check_qp_config(config, dev.caps()));
  auto scq = std::dynamic_pointer_cast<CqImpl>(config.send_cq);
  auto rcq = std::dynamic_pointer_cast<CqImpl>(config.recv_cq);
  if (!scq) return invalid_argument("create_qp: send_cq was not created by the verbs provider");
  if (!rcq) return invalid_argument("create_qp: recv_cq was not created by the verbs provider");
  if (scq->device() != &dev || rcq->device() != &dev) {
    return invalid_argument("create_qp: the completion queues belong to another device than the PD (" +
                            dev.name() + ")");
  }
  std::unique_ptr<QpImpl> qp(new QpImpl(pd, config, scq, rcq));
  ibv_qp_init_attr a{};
  a.send_cq = scq->cq();
  a.recv_cq = rcq->cq();
  a.qp_type = IBV_QPT_RC;
  a.sq_sig_all = 0;
  a.cap.max_send_wr = config.max_send_wr;
  a.cap.max_recv_wr = config.max_recv_wr;
  a.cap.max_send_sge = config.max_send_sge;
  a.cap.max_recv_sge = config.max_recv_sge;
  a.cap.max_inline_data = config.max_inline_data;
  qp->qp_.reset(::ibv_create_qp(pd->pd(), &a));
  if (!qp->qp_) {
    const int e = errno;
    return resource_exhausted("create_qp: ibv_create_qp on " + dev.name() + " (max_send_wr " +
                              dec(config.max_send_wr) + ", max_recv_wr " + dec(config.max_recv_wr) +
                              ", max_send_sge " + dec(config.max_send_sge) + ", max_inline_data " +
                              dec(config.max_inline_data) + ") failed: " + errno_text(e));
  }
  scq->note_use(true, false);
  rcq->note_use(false, true);
  // Lets the async event thread find this object from a QP event.
  dev.events().watch(qp->qp_.get(), qp.get(), qp->qp_->qp_num);
  return qp;
}

QpImpl::~QpImpl() {
  // rdma_cm first says goodbye to the peer; the QP goes before its cm_id
  // (which does not own it) and before the CQs and PD (members above).
  if (cm_) cm_->disconnect();
  if (qp_) pd_->dev().events().unwatch(qp_.get());
  qp_.reset();
  cm_.reset();
}

void QpImpl::adopt_connection(std::unique_ptr<CmConnection> cm) noexcept { cm_ = std::move(cm); }

QpState QpImpl::state() const noexcept {
  const QpState cached = state_.load(std::memory_order_acquire);
  if (cached == QpState::kReset) return cached;
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  if (::ibv_query_qp(qp_.get(), &attr, IBV_QP_STATE, &init) != 0) return cached;
  const QpState s = qp_state_from_ibv(attr.qp_state);
  if (s == QpState::kError) const_cast<std::atomic<QpState>&>(state_).store(s, std::memory_order_release);
  return s;
}

Result<EndpointAddress> QpImpl::local_address() const {
  DeviceImpl& dev = pd_->dev();
  const PortSetup& p = dev.port();
  EndpointFields f;
  f.ethernet = p.ethernet;
  f.qpn = qp_->qp_num;
  f.psn = psn_;
  f.gid = p.gid.gid;
  f.lid = p.lid;
  f.mtu = config_.path_mtu != 0 ? config_.path_mtu : mtu_bytes(p.active_mtu);
  f.gid_index = static_cast<std::uint8_t>(p.gid.index);
  f.max_rd_atomic = static_cast<std::uint8_t>(std::min<std::uint32_t>(config_.max_rd_atomic, 255));
  return encode_endpoint(f);
}

Status QpImpl::modify(ibv_qp_attr& attr, int mask, const char* step) {
  if (int rc = ::ibv_modify_qp(qp_.get(), &attr, mask); rc != 0) {
    return unavailable(std::string("QP ") + dec(qp_->qp_num) + " on " + pd_->dev().name() + ": " + step +
                       " (ibv_modify_qp to " + step_name(attr.qp_state) + ") failed: " + errno_text(rc));
  }
  set_state(qp_state_from_ibv(attr.qp_state));
  return {};
}

Status QpImpl::connect(const EndpointAddress& remote) {
  RMA_ASSIGN_OR_RETURN(EndpointFields f, decode_endpoint(remote));
  const QpState s = state_.load(std::memory_order_acquire);
  if (s != QpState::kReset) {
    return failed_precondition("connect: QP " + dec(qp_->qp_num) + " is in state " +
                               std::string(qp_state_name(s)) +
                               "; only a RESET QP can be connected, and only once");
  }
  DeviceImpl& dev = pd_->dev();
  const PortSetup& p = dev.port();
  if (f.ethernet != p.ethernet) {
    return invalid_argument(std::string("connect: the peer is on an ") +
                            (f.ethernet ? "Ethernet (RoCE)" : "InfiniBand") + " link, " + dev.name() +
                            " port " + dec(p.port) + " is " + (p.ethernet ? "Ethernet (RoCE)" : "InfiniBand"));
  }
  std::uint32_t mtu = mtu_bytes(p.active_mtu);
  if (config_.path_mtu != 0) mtu = std::min(mtu, config_.path_mtu);
  mtu = std::min(mtu, f.mtu);

  Status st = [&]() -> Status {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = p.port;
    a.qp_access_flags =
        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    RMA_RETURN_IF_ERROR(modify(a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
                               "connect RESET->INIT"));

    ibv_qp_attr r{};
    r.qp_state = IBV_QPS_RTR;
    r.path_mtu = *mtu_from_bytes(mtu);
    r.dest_qp_num = f.qpn;
    r.rq_psn = f.psn;
    // Responder resources for the READs/atomics the peer will have in flight.
    r.max_dest_rd_atomic = static_cast<std::uint8_t>(
        std::min<std::uint32_t>(std::max<std::uint32_t>(f.max_rd_atomic, 1), std::max<std::uint32_t>(p.max_qp_rd_atom, 1)));
    r.min_rnr_timer = config_.min_rnr_timer;
    r.ah_attr.port_num = p.port;
    r.ah_attr.dlid = f.lid;
    if (p.ethernet || f.lid == 0) {
      r.ah_attr.is_global = 1;
      std::memcpy(r.ah_attr.grh.dgid.raw, f.gid.data(), 16);
      r.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(p.gid.index);
      r.ah_attr.grh.hop_limit = 64;
    }
    if (Status rtr = modify(r,
                            IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
                            "connect INIT->RTR");
        !rtr.ok()) {
      // On RoCE the kernel resolves the peer's MAC at this step.
      if (p.ethernet) {
        return rtr.with_context("the peer's address did not resolve to a MAC address (no neighbour answered); "
                                "is it reachable from " + dev.name() + "'s netdev?");
      }
      return rtr;
    }

    ibv_qp_attr t{};
    t.qp_state = IBV_QPS_RTS;
    t.timeout = config_.timeout;
    t.retry_cnt = config_.retry_cnt;
    t.rnr_retry = config_.rnr_retry;
    t.sq_psn = psn_;
    t.max_rd_atomic = static_cast<std::uint8_t>(config_.max_rd_atomic);
    return modify(t,
                  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                      IBV_QP_MAX_QP_RD_ATOMIC,
                  "connect RTR->RTS");
  }();
  if (!st.ok()) {
    // Back to RESET so the caller can fix the address and try again.
    ibv_qp_attr back{};
    back.qp_state = IBV_QPS_RESET;
    if (::ibv_modify_qp(qp_.get(), &back, IBV_QP_STATE) == 0) set_state(QpState::kReset);
    return st.with_context("connect to QP " + dec(f.qpn) + " at " + gid_to_string(f.gid));
  }
  return {};
}

Status QpImpl::set_error() {
  if (state_.load(std::memory_order_acquire) == QpState::kError) return {};
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  return modify(a, IBV_QP_STATE, "set_error");
}

PostResult QpImpl::flush_chunk(ibv_send_wr* wrs, std::size_t count, std::size_t first_index) noexcept {
  wrs[count - 1].next = nullptr;
  ibv_send_wr* bad = nullptr;
  const int rc = ::ibv_post_send(qp_.get(), wrs, &bad);
  if (rc == 0) return {};
  const auto at = static_cast<std::uint32_t>(first_index + (bad != nullptr ? static_cast<std::size_t>(bad - wrs) : 0));
  switch (rc) {
    case ENOMEM: return PostResult{StatusCode::kResourceExhausted, at, "send queue full"};
    case EINVAL: return PostResult{StatusCode::kInvalidArgument, at, "rejected by the device (ibv_post_send: EINVAL)"};
    default: return PostResult{StatusCode::kUnavailable, at, "ibv_post_send failed"};
  }
}

PostResult QpImpl::post(std::span<const WorkRequest> wrs) noexcept {
  const QpState s = state_.load(std::memory_order_acquire);
  if (s != QpState::kRts) {
    return PostResult{StatusCode::kFailedPrecondition, 0,
                      s == QpState::kError ? "QP is in the error state" : "QP is not in RTS state"};
  }
  const SendLimits limits{config_.max_send_sge, config_.max_inline_data, max_msg_size_};
  ibv_send_wr out[kPostChunk];
  ibv_sge sges[kPostChunkSges];
  std::size_t n = 0;
  std::size_t ns = 0;
  std::size_t first = 0;
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    const WorkRequest& wr = wrs[i];
    StatusCode code = StatusCode::kOk;
    std::uint64_t total = 0;
    if (const char* why = check_send_wr(wr, limits, &total, code)) {
      // Requests before the bad one are posted, as the contract says.
      if (n > 0) {
        PostResult r = flush_chunk(out, n, first);
        if (!r.ok()) return r;
      }
      return PostResult{code, static_cast<std::uint32_t>(i), why};
    }
    if (n == kPostChunk || ns + wr.sgl.size() > kPostChunkSges) {
      PostResult r = flush_chunk(out, n, first);
      if (!r.ok()) return r;
      n = 0;
      ns = 0;
    }
    if (n == 0) first = i;
    ibv_send_wr& w = out[n];
    w = ibv_send_wr{};
    w.wr_id = wr.wr_id;
    w.sg_list = sges + ns;
    w.num_sge = static_cast<int>(wr.sgl.size());
    for (const Sge& sge : wr.sgl) sges[ns++] = ibv_sge{sge.addr, sge.length, sge.lkey};
    w.opcode = wr_opcode_to_ibv(wr.opcode);
    w.send_flags = send_flags_to_ibv(wr.flags);
    switch (wr.opcode) {
      case Opcode::kRdmaWriteWithImm:
      case Opcode::kSendWithImm:
        w.imm_data = htonl(wr.imm_data);
        if (wr.opcode == Opcode::kSendWithImm) break;
        [[fallthrough]];
      case Opcode::kRdmaWrite:
      case Opcode::kRdmaRead:
        w.wr.rdma.remote_addr = wr.remote_addr;
        w.wr.rdma.rkey = wr.rkey;
        break;
      case Opcode::kAtomicFetchAdd:
      case Opcode::kAtomicCmpSwap:
        w.wr.atomic.remote_addr = wr.remote_addr;
        w.wr.atomic.rkey = wr.rkey;
        w.wr.atomic.compare_add = wr.compare_add;
        w.wr.atomic.swap = wr.swap;
        break;
      default:
        break;
    }
    if (n > 0) out[n - 1].next = &w;
    ++n;
  }
  if (n > 0) return flush_chunk(out, n, first);
  return {};
}

PostResult QpImpl::post_recv(std::span<const RecvRequest> wrs) noexcept {
  const QpState s = state_.load(std::memory_order_acquire);
  if (s == QpState::kReset) return PostResult{StatusCode::kFailedPrecondition, 0, "QP is in RESET state"};
  if (s == QpState::kError) return PostResult{StatusCode::kFailedPrecondition, 0, "QP is in the error state"};
  ibv_recv_wr out[kPostChunk];
  ibv_sge sges[kPostChunkSges];
  std::size_t i = 0;
  while (i < wrs.size()) {
    std::size_t n = 0;
    std::size_t ns = 0;
    const std::size_t first = i;
    for (; i < wrs.size() && n < kPostChunk; ++i) {
      const RecvRequest& rr = wrs[i];
      if (rr.sgl.size() > config_.max_recv_sge) {
        if (n == 0) return PostResult{StatusCode::kInvalidArgument, static_cast<std::uint32_t>(i), "too many SGEs"};
        break;  // posted below; the next round reports it
      }
      if (ns + rr.sgl.size() > kPostChunkSges) break;
      ibv_recv_wr& w = out[n];
      w = ibv_recv_wr{};
      w.wr_id = rr.wr_id;
      w.sg_list = sges + ns;
      w.num_sge = static_cast<int>(rr.sgl.size());
      for (const Sge& sge : rr.sgl) sges[ns++] = ibv_sge{sge.addr, sge.length, sge.lkey};
      if (n > 0) out[n - 1].next = &w;
      ++n;
    }
    out[n - 1].next = nullptr;
    ibv_recv_wr* bad = nullptr;
    if (const int rc = ::ibv_post_recv(qp_.get(), out, &bad); rc != 0) {
      const auto at = static_cast<std::uint32_t>(first + (bad != nullptr ? static_cast<std::size_t>(bad - out) : 0));
      if (rc == ENOMEM) return PostResult{StatusCode::kResourceExhausted, at, "receive queue full"};
      if (rc == EINVAL) return PostResult{StatusCode::kInvalidArgument, at, "rejected by the device (ibv_post_recv: EINVAL)"};
      return PostResult{StatusCode::kUnavailable, at, "ibv_post_recv failed"};
    }
  }
  return {};
}

}  // namespace rma::verbs
