// Unpredictable numbers for the software providers' protocol identifiers
// (memory keys, QP numbers, initial PSNs): a peer on the same Ethernet
// segment must not be able to guess them and forge a request. Read from the
// kernel's CSPRNG (getrandom(2)); control path only (one system call per
// call, no state to seed, fork-safe).
#pragma once

#include <cstddef>
#include <cstdint>

namespace rma::swkit {

// Fills `len` bytes. getrandom never fails after early boot; if the system
// call is missing (ENOSYS, very old kernels) it reads /dev/urandom, and if
// even that fails the process aborts rather than hand out guessable keys.
void secure_random_bytes(void* out, std::size_t len) noexcept;

inline std::uint32_t secure_random_u32() noexcept {
  std::uint32_t v;
  secure_random_bytes(&v, sizeof v);
  return v;
}

}  // namespace rma::swkit
