#pragma once
/// Whether a consumer process is *parked*: every thread of it blocked in the kernel reading one of its
/// sockets to idemproof's proxies, and no other process in its tree. Such a process cannot act until bytes
/// reach it on one of those sockets, and only the proxies send them (a reply to what it has in flight).
/// With every live consumer parked, everything acknowledged, and no request in flight but blocking reads,
/// nothing more can happen in the run until the producer sends again or a read's BLOCK times out: the run
/// ends at once instead of waiting out --settle (execute.cc). Anything else — a thread sleeping on a
/// timer, an event loop waiting on several descriptors (Node, asyncio, Go), a child process, a read on a
/// pipe — is not parked, and the settle time applies.
///
/// Linux only (/proc/<pid>/task/<tid>/syscall, /proc/<pid>/fd, the socket itself through pidfd_getfd, or
/// /proc/<pid>/net/tcp{,6} where that is refused); anywhere else, or when /proc can't be read, nothing is
/// parked. The parsers are pure functions of /proc's text.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace idem {

/// /proc/<pid>/task/<tid>/syscall: "running", or the number of the system call the thread is blocked in
/// and its six arguments.
struct BlockedCall {
  long nr = -1;
  std::vector<uint64_t> args;
};
std::optional<BlockedCall> parseSyscallLine(const std::string& text);

/// /proc/<pid>/net/tcp or tcp6: socket inode -> the remote port of a connection to the loopback address.
std::map<uint64_t, int> loopbackPeers(const std::string& procNetTcp);

/// "socket:[12345]" -> 12345.
std::optional<uint64_t> socketInode(const std::string& fdLink);

/// Process `pid` (a consumer's process group leader) and every descendant: each thread blocked reading a
/// socket connected to 127.0.0.1 on one of `peerPorts` (read, readv, recvfrom, recvmsg on it; poll or ppoll
/// on it alone). False when any thread runs or waits on anything else, or /proc can't tell.
bool parked(pid_t pid, const std::set<int>& peerPorts);

} // namespace idem
