#include "core/ports.h"

#include "core/error.h"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

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

/// A bindable port of [base, base + size) that no other idemproof process holds, tried in steps of 7 from
/// `next` (which each process starts at a place of its own, so that processes side by side rarely try the
/// same ports); freePort()'s when none is.
PortLease freeIn(int base, uint32_t size, std::atomic<uint32_t>& next) {
  for (int i = 0; i < 2000; ++i) {
    int port = base + static_cast<int>(next.fetch_add(7) % size);
    auto lease = PortLease::of(port); // first: once held, no other idemproof process checks it bindable
    if (lease && bindable(port)) return lease;
  }
  for (int i = 0; i < 100; ++i)
    if (auto lease = PortLease::of(freePort())) return lease;
  throw std::runtime_error("no free port on 127.0.0.1");
}

} // namespace

PortLease PortLease::of(int port) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw sysError("PortLease: socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  // An abstract name (a leading NUL): no file, and gone with the socket.
  std::string name = "idemproof-port-" + std::to_string(port);
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    int err = errno;
    ::close(fd);
    if (err == EADDRINUSE) return {};
    throw std::system_error(err, std::generic_category(), "PortLease: bind " + name);
  }
  return PortLease(port, fd);
}

PortLease::PortLease(PortLease&& o) noexcept : port_(std::exchange(o.port_, 0)), fd_(std::exchange(o.fd_, -1)) {}

PortLease& PortLease::operator=(PortLease&& o) noexcept {
  if (this != &o) {
    release();
    port_ = std::exchange(o.port_, 0);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

PortLease::~PortLease() { release(); }

void PortLease::release() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  port_ = 0;
}

PortLease freeListenPort() {
  // Below the kernel's ephemeral range (32768 and up on Linux), which freePort draws from and which every
  // outgoing connection takes its source port from: a port handed out there can be taken by a connection
  // before the program binds it.
  static std::atomic<uint32_t> next{static_cast<uint32_t>(::getpid()) * 7919u};
  return freeIn(20000, 12000, next);
}

PortLease freeServerPort() {
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

std::set<unsigned long> listeningInodes(std::string_view text, int port) {
  // "  sl  local_address rem_address   st ... uid  timeout inode": the local address's port in hex, state 0A
  // LISTEN, the inode the tenth field.
  std::set<unsigned long> out;
  std::istringstream in{std::string(text)};
  std::string line;
  std::getline(in, line); // the header
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string sl, local, remote, state, queues, timer, retr, uid, timeout, inode;
    if (!(f >> sl >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode)) continue;
    auto colon = local.rfind(':');
    if (state != "0A" || colon == std::string::npos) continue;
    try {
      if (std::stoi(local.substr(colon + 1), nullptr, 16) == port) out.insert(std::stoul(inode));
    } catch (const std::exception&) {
    }
  }
  return out;
}

void readDiagListeners(std::string_view datagram, int port, DiagListeners& out) {
  size_t off = 0;
  while (off + sizeof(nlmsghdr) <= datagram.size()) {
    nlmsghdr h{};
    std::memcpy(&h, datagram.data() + off, sizeof h);
    if (h.nlmsg_len < sizeof h || h.nlmsg_len > datagram.size() - off) {
      out.failed = true;
      return;
    }
    if (h.nlmsg_type == NLMSG_DONE) {
      out.done = true;
      return;
    }
    if (h.nlmsg_type == NLMSG_ERROR) {
      out.failed = true;
      return;
    }
    if (h.nlmsg_type == SOCK_DIAG_BY_FAMILY && h.nlmsg_len >= NLMSG_LENGTH(sizeof(inet_diag_msg))) {
      inet_diag_msg m{};
      std::memcpy(&m, datagram.data() + off + NLMSG_HDRLEN, sizeof m);
      if (m.idiag_state == TCP_LISTEN && ntohs(m.id.idiag_sport) == port) out.inodes.insert(m.idiag_inode);
    }
    off += NLMSG_ALIGN(h.nlmsg_len);
  }
  if (off != datagram.size()) out.failed = true; // a cut message
}

std::optional<std::set<unsigned long>> listeningInodes(int port) {
  if (port <= 0 || port > 65535) return std::set<unsigned long>{};
  std::set<unsigned long> out;
  for (int family : {AF_INET, AF_INET6}) {
    const int fd = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd < 0) return std::nullopt;
    struct {
      nlmsghdr h;
      inet_diag_req_v2 r;
    } req{};
    req.h.nlmsg_len = sizeof req;
    req.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    req.r.sdiag_family = static_cast<uint8_t>(family);
    req.r.sdiag_protocol = IPPROTO_TCP;
    req.r.idiag_states = 1u << TCP_LISTEN; // the listeners alone: no connection is looked at
    req.r.id.idiag_sport = htons(static_cast<uint16_t>(port));
    DiagListeners got;
    if (::send(fd, &req, sizeof req, 0) == static_cast<ssize_t>(sizeof req)) {
      std::string buf(32768, '\0');
      while (!got.done && !got.failed) {
        const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
        if (n <= 0) {
          if (n < 0 && errno == EINTR) continue;
          got.failed = true;
          break;
        }
        readDiagListeners(std::string_view(buf.data(), static_cast<size_t>(n)), port, got);
      }
    } else {
      got.failed = true;
    }
    ::close(fd);
    if (got.failed) return std::nullopt;
    out.insert(got.inodes.begin(), got.inodes.end());
  }
  return out;
}

} // namespace idem
