// Unpredictable numbers for the software providers' protocol identifiers
// (memory keys, QP numbers, initial PSNs): a peer on the same Ethernet
// segment must not be able to guess them and forge a request. Read from the
// kernel's CSPRNG (getrandom(2)); control path only. secure_random_u32()
// hands out a buffer filled by one system call per 64 values (a
// registration draws two keys: one call each cost ~0.5 us per region), and
// a child process never sees the bytes its parent had buffered.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rma::swkit {

// Fills `len` bytes. getrandom never fails after early boot; if the system
// call is missing (ENOSYS, very old kernels) it reads /dev/urandom, and if
// even that fails the process aborts rather than hand out guessable keys.
void secure_random_bytes(void* out, std::size_t len) noexcept;

// One value from the buffer; thread-safe.
std::uint32_t secure_random_u32() noexcept;

}  // namespace rma::swkit
