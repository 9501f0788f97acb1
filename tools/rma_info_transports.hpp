// rma_info --transports (rma_info_transports.cpp).
#pragma once

namespace rma_info {

// Collective over the job's bootstrap: plans and connects the transports,
// and rank 0 prints which provider serves which peer. 0 on success.
int print_transports();

}  // namespace rma_info
