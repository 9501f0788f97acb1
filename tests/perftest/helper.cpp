// Test helper for the perftest end-to-end tests:
//   perftest_test_helper free-port            prints a free TCP port on 127.0.0.1
//   perftest_test_helper listen <port> <s>    holds 127.0.0.1:<port> listening for <s> seconds
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: perftest_test_helper free-port | listen <port> <seconds>\n");
    return 2;
  }
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (std::strcmp(argv[1], "free-port") == 0) {
    if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return 1;
    socklen_t len = sizeof sa;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
    std::printf("%u\n", ntohs(sa.sin_port));
    ::close(fd);
    return 0;
  }
  if (std::strcmp(argv[1], "listen") == 0 && argc == 4) {
    sa.sin_port = htons(static_cast<std::uint16_t>(std::atoi(argv[2])));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(fd, 1) != 0) {
      std::perror("listen");
      return 1;
    }
    std::printf("listening\n");
    std::fflush(stdout);
    ::sleep(static_cast<unsigned>(std::atoi(argv[3])));
    return 0;
  }
  std::fprintf(stderr, "perftest_test_helper: bad arguments\n");
  return 2;
}
