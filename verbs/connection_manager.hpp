// rdma_cm connections (include/rma/verbs.hpp): the QP is created by the
// provider on its own ibv_context, and rdma_cm only carries the connection
// handshake; rdma_init_qp_attr() supplies the attributes of each state
// transition, which the provider applies itself.
#pragma once

#include "verbs/verbs_objects.hpp"

namespace rma::verbs {

// The event channel and cm_id of one connected QP. The QP owns it and
// destroys it after the QP itself.
class CmConnection {
 public:
  CmConnection(EventChannelPtr channel, CmIdPtr id) noexcept
      : channel_(std::move(channel)), id_(std::move(id)) {}
  ~CmConnection() {
    id_.reset();  // before its channel
    channel_.reset();
  }
  CmConnection(const CmConnection&) = delete;
  CmConnection& operator=(const CmConnection&) = delete;
  void disconnect() noexcept {
    if (id_) ::rdma_disconnect(id_.get());
  }

 private:
  EventChannelPtr channel_;
  CmIdPtr id_;
};

}  // namespace rma::verbs
