// Address arithmetic of MPI 4.x 5.1.5: rma_get_address, rma_aint_add,
// rma_aint_diff. Addresses from rma_get_address are absolute; types built
// from them describe buffers relative to RMA_BOTTOM.
#include <cstdint>

#include "datatype/datatype.hpp"
#include "datatype/errors.hpp"
#include "rma/rma_datatype.h"

extern "C" {

int rma_get_address(const void* location, rma_Aint* address) {
  if (address == nullptr) {
    rma::api::set_last_error_message("invalid argument: rma_get_address: address is null");
    return RMA_ERR_ARG;
  }
  *address = static_cast<rma_Aint>(reinterpret_cast<std::uintptr_t>(location));
  rma::api::set_last_error_message("");
  return RMA_SUCCESS;
}

// Wrapping (unsigned) arithmetic: MPI defines these for addresses anywhere
// in the address space, where signed overflow would be undefined.
rma_Aint rma_aint_add(rma_Aint base, rma_Aint disp) {
  return static_cast<rma_Aint>(static_cast<std::uintptr_t>(base) + static_cast<std::uintptr_t>(disp));
}

rma_Aint rma_aint_diff(rma_Aint addr1, rma_Aint addr2) {
  return static_cast<rma_Aint>(static_cast<std::uintptr_t>(addr1) - static_cast<std::uintptr_t>(addr2));
}

}  // extern "C"
