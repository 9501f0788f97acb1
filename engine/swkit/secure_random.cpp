#include "swkit/secure_random.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>

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

// Values not yet handed out are buffer[used..kValues). Consumed values are
// never returned again; after fork() the child empties its copy, so parent
// and child never share a key.
struct Buffered {
  static constexpr std::size_t kValues = 64;
  std::mutex mutex;
  std::uint32_t values[kValues];
  std::size_t used = kValues;
};

Buffered& buffered() noexcept {
  static Buffered* b = [] {
    auto* p = new Buffered;  // never destroyed: usable during static destruction
    pthread_atfork(nullptr, nullptr, [] { buffered().used = Buffered::kValues; });
    return p;
  }();
  return *b;
}

}  // namespace

std::uint32_t secure_random_u32() noexcept {
  Buffered& b = buffered();
  std::lock_guard<std::mutex> lock(b.mutex);
  if (b.used == Buffered::kValues) {
    secure_random_bytes(b.values, sizeof b.values);
    b.used = 0;
  }
  return b.values[b.used++];
}

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
