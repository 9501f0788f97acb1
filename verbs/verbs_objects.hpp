// Owning handles for libibverbs and librdmacm objects: every ibv_*/rdma_*
// resource is released by a destructor, on every error path too.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <memory>

namespace rma::verbs {

struct DeviceListDeleter {
  void operator()(ibv_device** l) const noexcept { ::ibv_free_device_list(l); }
};
struct ContextDeleter {
  void operator()(ibv_context* c) const noexcept { ::ibv_close_device(c); }
};
struct PdDeleter {
  void operator()(ibv_pd* p) const noexcept { ::ibv_dealloc_pd(p); }
};
struct CqDeleter {
  void operator()(ibv_cq* c) const noexcept { ::ibv_destroy_cq(c); }
};
struct QpDeleter {
  void operator()(ibv_qp* q) const noexcept { ::ibv_destroy_qp(q); }
};
struct MrDeleter {
  void operator()(ibv_mr* m) const noexcept { ::ibv_dereg_mr(m); }
};
struct EventChannelDeleter {
  void operator()(rdma_event_channel* c) const noexcept { ::rdma_destroy_event_channel(c); }
};
struct CmIdDeleter {
  void operator()(rdma_cm_id* id) const noexcept { ::rdma_destroy_id(id); }
};

using DeviceList = std::unique_ptr<ibv_device*, DeviceListDeleter>;
using ContextPtr = std::unique_ptr<ibv_context, ContextDeleter>;
using IbvPdPtr = std::unique_ptr<ibv_pd, PdDeleter>;
using IbvCqPtr = std::unique_ptr<ibv_cq, CqDeleter>;
using IbvQpPtr = std::unique_ptr<ibv_qp, QpDeleter>;
using IbvMrPtr = std::unique_ptr<ibv_mr, MrDeleter>;
using EventChannelPtr = std::unique_ptr<rdma_event_channel, EventChannelDeleter>;
using CmIdPtr = std::unique_ptr<rdma_cm_id, CmIdDeleter>;

}  // namespace rma::verbs
