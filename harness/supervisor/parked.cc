#include "supervisor/parked.h"

#include <poll.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>
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
    if (!peers) peers = loopbackPeers(slurp(proc / "net" / "tcp") + slurp(proc / "net" / "tcp6"));
    auto it = peers->find(*inode);
    if (it == peers->end() || peerPorts.count(it->second) == 0) return false;
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
