#include "swkit/secure_random.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace rma::swkit {

namespace {

bool read_urandom(std::uint8_t* p, std::size_t len) noexcept {
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  while (len > 0) {
    const ssize_t n = ::read(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return false;
    }
    p += n;
    len -= static_cast<std::size_t>(n);
  }
  ::close(fd);
  return true;
}

}  // namespace

void secure_random_bytes(void* out, std::size_t len) noexcept {
  auto* p = static_cast<std::uint8_t*>(out);
  while (len > 0) {
    const ssize_t n = ::getrandom(p, len, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      if (errno == ENOSYS && read_urandom(p, len)) return;
      // Guessable keys would let any host on the segment write our memory.
      std::fprintf(stderr, "librma: cannot read the kernel's random generator (getrandom: errno %d); aborting\n",
                   errno);
      std::abort();
    }
    p += n;
    len -= static_cast<std::size_t>(n);
  }
}

}  // namespace rma::swkit
