#include "core/ports.h"

#include "core/error.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <system_error>

namespace idem {

namespace {

/// Whether 127.0.0.1:port can be bound now (no SO_REUSEADDR: a port in TIME_WAIT counts as taken).
bool bindable(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

/// A bindable port of [base, base + size), tried in steps of 7 from `next` (which each process starts at a
/// place of its own, so that processes side by side rarely try the same ports); freePort() when none is.
int freeIn(int base, uint32_t size, std::atomic<uint32_t>& next) {
  for (int i = 0; i < 2000; ++i) {
    int port = base + static_cast<int>(next.fetch_add(7) % size);
    if (bindable(port)) return port;
  }
  return freePort();
}

} // namespace

int freeListenPort() {
  // Below the kernel's ephemeral range (32768 and up on Linux), which freePort draws from and which every
  // outgoing connection takes its source port from: a port handed out there can be taken by a connection
  // before the program binds it.
  static std::atomic<uint32_t> next{static_cast<uint32_t>(::getpid()) * 7919u};
  return freeIn(20000, 12000, next);
}

int freeServerPort() {
  static std::atomic<uint32_t> next{static_cast<uint32_t>(::getpid()) * 104729u};
  return freeIn(10000, 10000, next);
}

int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw sysError("freePort: socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    auto err = sysError("freePort: bind 127.0.0.1:0");
    ::close(fd);
    throw err;
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

} // namespace idem
