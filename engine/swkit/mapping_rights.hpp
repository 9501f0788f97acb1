// Whether memory offered for registration is mapped with the rights the
// registration asks for. A NIC's registration pins the pages and fails
// (EFAULT) on an unmapped range or, when any write right is asked, on a
// read-only mapping; a software provider that skipped the check would crash
// later, inside a remote peer's WRITE, instead of refusing up front.
#pragma once

#include <cstddef>

#include "rma/sdk/provider.hpp"
#include "rma/sdk/status.hpp"

namespace rma::swkit {

// OK when every byte of [addr, addr+length) is mapped readable and, if
// `access` has LOCAL_WRITE, REMOTE_WRITE or REMOTE_ATOMIC, writable. Else an
// invalid-argument status naming the first address that fails and why.
// Control path: reads /proc/self/maps.
Status check_mapping_rights(const void* addr, std::size_t length, Access access);

}  // namespace rma::swkit
