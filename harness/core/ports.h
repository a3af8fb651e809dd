#pragma once
/// Ports for the servers idemproof starts.

#include <optional>
#include <set>
#include <string_view>

namespace idem {

/// A free TCP port on 127.0.0.1 (bind to port 0, read it, close).
int freePort();

/// A port of 127.0.0.1 that no other idemproof process on the host hands out while this value lives.
/// A port checked free is free when asked for, not when the program it is for binds it (a Node server binds
/// a second later): two commands side by side (a test suite, shards on one machine) could otherwise hand
/// one port to two programs, and the one that binds second exits with "address in use". The value holds an
/// abstract Unix socket named after the port; the kernel releases it when the value goes or the process
/// ends, however it ends, and leaves no file behind.
class PortLease {
public:
  PortLease() = default;
  /// Port `port` when no other process holds it; an empty lease (port() 0) when one does.
  static PortLease of(int port);
  PortLease(PortLease&& o) noexcept;
  PortLease& operator=(PortLease&& o) noexcept;
  PortLease(const PortLease&) = delete;
  PortLease& operator=(const PortLease&) = delete;
  ~PortLease();

  int port() const { return port_; }
  explicit operator bool() const { return port_ != 0; }

private:
  PortLease(int port, int fd) : port_(port), fd_(fd) {}
  void release();
  int port_ = 0;
  int fd_ = -1;
};

/// A free port on 127.0.0.1 for a program that binds it itself later (an HTTP target's PORT): outside the
/// kernel's ephemeral range, so that no outgoing connection takes it meanwhile, and leased (PortLease) so
/// that no other idemproof command hands it out meanwhile.
PortLease freeListenPort();

/// A free port on 127.0.0.1 for a server that binds it seconds later (a RabbitMQ node boots for several
/// seconds): from a range of its own, 10000-19999, apart from the ephemeral range (where the proxies' listening
/// ports and every outgoing connection's source port come from) and from freeListenPort's (HTTP targets), so
/// that nothing idemproof starts meanwhile takes it; leased like freeListenPort's.
PortLease freeServerPort();

/// The socket inodes that listen on TCP port `port` (any local address) in the text of /proc/net/tcp or
/// /proc/net/tcp6 (core/owner.h groupListensOn).
std::set<unsigned long> listeningInodes(std::string_view procNetTcp, int port);

/// What a SOCK_DIAG_BY_FAMILY dump of TCP sockets (netlink, linux/inet_diag.h) answered so far.
struct DiagListeners {
  std::set<unsigned long> inodes; ///< of the sockets in LISTEN on the port
  bool done = false;              ///< NLMSG_DONE came: the dump is whole
  bool failed = false;            ///< an error message, or bytes that are no netlink messages
};
/// Reads one datagram of such a dump: the inodes of the listeners on `port` into `out`. A pure function of
/// the bytes, tested on written messages.
void readDiagListeners(std::string_view datagram, int port, DiagListeners& out);

/// The socket inodes that listen on TCP port `port`, IPv4 and IPv6, asked of the kernel (sock_diag): unlike
/// /proc/net/tcp, which prints every connection of the machine (those in TIME_WAIT too) and costs
/// milliseconds of the kernel's time on a busy one. Nothing when the kernel does not answer (no sock_diag):
/// the caller reads /proc then.
std::optional<std::set<unsigned long>> listeningInodes(int port);

} // namespace idem
