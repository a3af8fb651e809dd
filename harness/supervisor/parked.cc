#include "supervisor/parked.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

namespace idem {

namespace fs = std::filesystem;

std::optional<BlockedCall> parseSyscallLine(const std::string& text) {
  std::istringstream in(text);
  std::string first;
  if (!(in >> first) || first == "running") return std::nullopt;
  BlockedCall c;
  try {
    c.nr = std::stol(first);
    std::string word;
    for (int i = 0; i < 6 && in >> word; ++i) c.args.push_back(std::stoull(word, nullptr, 16));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (c.nr < 0 || c.args.size() < 6) return std::nullopt; // -1: blocked outside a system call
  return c;
}

std::map<uint64_t, int> loopbackPeers(const std::string& procNetTcp) {
  std::map<uint64_t, int> out;
  std::istringstream in(procNetTcp);
  std::string line;
  std::getline(in, line); // the header
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string sl, local, remote, st, queues, timer, retr, uid, timeout, inode;
    if (!(f >> sl >> local >> remote >> st >> queues >> timer >> retr >> uid >> timeout >> inode)) continue;
    auto colon = remote.find(':');
    if (colon == std::string::npos) continue;
    const std::string addr = remote.substr(0, colon);
    // 127.0.0.1 as /proc prints it: host-order words in hex (IPv4), or IPv4-mapped in IPv6.
    if (addr != "0100007F" && addr != "0000000000000000FFFF00000100007F") continue;
    try {
      out[std::stoull(inode)] = static_cast<int>(std::stoul(remote.substr(colon + 1), nullptr, 16));
    } catch (const std::exception&) {
    }
  }
  return out;
}

std::optional<uint64_t> socketInode(const std::string& fdLink) {
  const std::string prefix = "socket:[";
  if (fdLink.rfind(prefix, 0) != 0 || fdLink.back() != ']') return std::nullopt;
  try {
    return std::stoull(fdLink.substr(prefix.size(), fdLink.size() - prefix.size() - 1));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The descriptor a blocked call waits on, when it waits on exactly one for reading.
std::optional<int> readingFd(pid_t pid, const BlockedCall& c) {
  switch (c.nr) {
  case SYS_read:
  case SYS_readv:
  case SYS_recvfrom:
  case SYS_recvmsg: return static_cast<int>(c.args[0]);
#ifdef SYS_poll
  case SYS_poll:
#endif
  case SYS_ppoll: {
    if (c.args[1] != 1) return std::nullopt; // several descriptors: an event loop
    pollfd p{};
    iovec local{&p, sizeof p}, remote{reinterpret_cast<void*>(c.args[0]), sizeof p};
    if (::process_vm_readv(pid, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(sizeof p)) return std::nullopt;
    if ((p.events & POLLIN) == 0) return std::nullopt;
    return p.fd;
  }
  default: return std::nullopt;
  }
}

/// The loopback peers of sockets already looked at, by inode (a connected socket's peer never changes, and
/// socket inodes are not reused while a run lasts): -1 for a socket that is no TCP connection to 127.0.0.1.
class PeerCache {
public:
  std::optional<int> find(uint64_t inode) {
    std::lock_guard<std::mutex> lock(m_);
    auto it = ports_.find(inode);
    if (it == ports_.end()) return std::nullopt;
    return it->second;
  }
  void put(uint64_t inode, int port) {
    std::lock_guard<std::mutex> lock(m_);
    if (ports_.size() >= 65536) ports_.clear();
    ports_[inode] = port;
  }

private:
  std::mutex m_;
  std::map<uint64_t, int> ports_;
};

PeerCache& peerCache() {
  static PeerCache cache;
  return cache;
}

/// The port of 127.0.0.1 that socket `fd` of process `pid` (inode `inode`) is connected to, asked of the
/// socket itself (a copy of the descriptor, pidfd_getfd: the permission process_vm_readv needs too). Reading
/// /proc/<pid>/net/tcp instead costs milliseconds of the kernel's time on a machine with many connections
/// (every socket printed, those in TIME_WAIT too), and the run's end polls this every few milliseconds.
/// -1 for a socket that is no TCP connection to 127.0.0.1; nothing when the copy can't be made (an older
/// kernel, a sandbox) or the socket is not connected yet: the caller reads /proc then.
std::optional<int> loopbackPeerPort(pid_t pid, int fd, uint64_t inode) {
  if (auto known = peerCache().find(inode)) return known;
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return std::nullopt;
  const int copy = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, fd, 0));
  ::close(pidfd);
  if (copy < 0) return std::nullopt;
  int port = -1;
  bool known = false; // the answer is the socket's for good
  struct stat st{};
  int protocol = 0;
  socklen_t plen = sizeof protocol;
  sockaddr_storage peer{};
  socklen_t len = sizeof peer;
  // The same socket the link named (not a descriptor reused since), a TCP one, and connected.
  if (::fstat(copy, &st) == 0 && static_cast<uint64_t>(st.st_ino) == inode &&
      ::getsockopt(copy, SOL_SOCKET, SO_PROTOCOL, &protocol, &plen) == 0) {
    if (protocol != IPPROTO_TCP) {
      known = true;
    } else if (::getpeername(copy, reinterpret_cast<sockaddr*>(&peer), &len) == 0) {
      known = true;
      if (peer.ss_family == AF_INET) {
        const auto* a = reinterpret_cast<const sockaddr_in*>(&peer);
        if (ntohl(a->sin_addr.s_addr) == INADDR_LOOPBACK) port = ntohs(a->sin_port);
      } else if (peer.ss_family == AF_INET6) {
        const auto* a = reinterpret_cast<const sockaddr_in6*>(&peer);
        // 127.0.0.1 as an IPv4-mapped address: ::ffff:127.0.0.1.
        static const unsigned char mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
        if (std::memcmp(&a->sin6_addr, mapped, sizeof mapped) == 0) port = ntohs(a->sin6_port);
      }
    }
  }
  ::close(copy);
  if (!known) return std::nullopt;
  peerCache().put(inode, port);
  return port;
#else
  (void)pid, (void)fd;
  return std::nullopt;
#endif
}

bool parkedProcess(pid_t pid, const std::set<int>& peerPorts, int depth) {
  if (depth > 8) return false;
  const fs::path proc = fs::path("/proc") / std::to_string(pid);
  std::error_code ec;
  std::optional<std::map<uint64_t, int>> peers; // read once, when a thread waits on a socket
  int threads = 0;
  for (const auto& task : fs::directory_iterator(proc / "task", ec)) {
    ++threads;
    auto call = parseSyscallLine(slurp(task.path() / "syscall"));
    if (!call) return false; // running, or /proc can't tell
    auto fd = readingFd(pid, *call);
    if (!fd) return false;
    auto inode = socketInode(fs::read_symlink(proc / "fd" / std::to_string(*fd), ec).string());
    if (ec || !inode) return false;
    auto port = loopbackPeerPort(pid, *fd, *inode);
    if (!port) {
      if (!peers) peers = loopbackPeers(slurp(proc / "net" / "tcp") + slurp(proc / "net" / "tcp6"));
      auto it = peers->find(*inode);
      if (it != peers->end()) port = it->second;
    }
    if (!port || *port < 0 || peerPorts.count(*port) == 0) return false;
    // Its children, if any, must be parked too (without CONFIG_PROC_CHILDREN, /proc can't tell).
    if (!fs::exists(task.path() / "children", ec)) return false;
    std::istringstream children(slurp(task.path() / "children"));
    for (pid_t child; children >> child;)
      if (!parkedProcess(child, peerPorts, depth + 1)) return false;
  }
  return !ec && threads > 0;
}

} // namespace

bool parked(pid_t pid, const std::set<int>& peerPorts) {
  // A process may exit while its /proc entries are read (a directory iterator then throws): not parked.
  try {
    return pid > 0 && parkedProcess(pid, peerPorts, 0);
  } catch (const std::exception&) {
    return false;
  }
}

} // namespace idem
