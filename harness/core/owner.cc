// Ownership marks and the reaping of what dead invocations left.
#include "core/owner.h"

#include "core/child.h"
#include "core/ports.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace idem {

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool allDigits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

/// The folders temp folders are made in (TempDir): the private root alone when there is one, else
/// /dev/shm, $TMPDIR, /tmp.
std::vector<fs::path> tempRoots() {
  if (auto own = tempRootScope(); !own.empty()) return {fs::path(own)};
  std::vector<fs::path> roots{"/dev/shm", "/tmp"};
  if (const char* t = std::getenv("TMPDIR"); t && *t && fs::path(t) != "/tmp") roots.emplace_back(t);
  return roots;
}

/// The owner in a temp folder's name "idemproof-<kind>-<pid>.<start>-XXXXXX", if it has one.
std::optional<Owner> ownerOfFolder(const std::string& name) {
  if (name.rfind("idemproof-", 0) != 0) return std::nullopt;
  // The owner is the one dash-separated part of the form <digits>.<digits>.
  size_t pos = 0;
  while (pos < name.size()) {
    size_t end = name.find('-', pos);
    if (end == std::string::npos) end = name.size();
    if (auto o = Owner::parse(name.substr(pos, end - pos))) return o;
    pos = end + 1;
  }
  return std::nullopt;
}

/// NAME's value in an environment block (NUL-separated NAME=VALUE), nullopt when absent.
std::optional<std::string> envValue(const std::string& env, const std::string& name) {
  const std::string prefix = name + "=";
  for (size_t pos = 0; pos < env.size();) {
    size_t end = env.find('\0', pos);
    if (end == std::string::npos) end = env.size();
    if (env.compare(pos, prefix.size(), prefix) == 0) return env.substr(pos + prefix.size(), end - pos - prefix.size());
    pos = end + 1;
  }
  return std::nullopt;
}

std::string environOf(pid_t pid) { return slurp(fmt::format("/proc/{}/environ", pid)); }

/// The fields of /proc/PID/stat read here; nullopt when the process is gone.
struct ProcStat {
  char state = 0;    ///< 'R', 'S', ... 'Z' (zombie), 'X' (dead)
  pid_t ppid = 0;
  pid_t pgrp = 0;
  uint64_t start = 0; ///< clock ticks since boot
  bool live() const { return state != 'Z' && state != 'X'; }
};

std::optional<ProcStat> procStat(pid_t pid) {
  std::string stat = slurp(fmt::format("/proc/{}/stat", pid));
  auto close = stat.rfind(')'); // the name (field 2) may hold anything, up to the last ')'
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(stat.substr(close + 2));
  std::string state, ppid, pgrp, field;
  if (!(rest >> state >> ppid >> pgrp) || state.empty() || !allDigits(ppid) || !allDigits(pgrp)) return std::nullopt;
  for (int i = 6; i <= 22 && rest >> field; ++i) { // fields 6 .. 22 (starttime)
    if (i == 22 && allDigits(field))
      return ProcStat{state[0], static_cast<pid_t>(std::atol(ppid.c_str())), static_cast<pid_t>(std::atol(pgrp.c_str())),
                      std::strtoull(field.c_str(), nullptr, 10)};
  }
  return std::nullopt;
}

/// Every process under /proc but this one.
std::vector<pid_t> otherPids() {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    std::string name = e.path().filename().string();
    if (!allDigits(name)) continue;
    pid_t pid = static_cast<pid_t>(std::atol(name.c_str()));
    if (pid != ::getpid()) out.push_back(pid);
  }
  return out;
}

} // namespace

std::string tempRootScope() {
  const char* own = std::getenv(kTempRootEnv);
  return own ? own : "";
}

std::optional<uint64_t> processStart(pid_t pid) {
  auto st = procStat(pid);
  if (!st || !st->live()) return std::nullopt;
  return st->start;
}

std::optional<pid_t> processGroup(pid_t pid) {
  auto st = procStat(pid);
  if (!st) return std::nullopt;
  return st->pgrp;
}

Owner Owner::self() {
  static const Owner me{::getpid(), processStart(::getpid()).value_or(0)};
  return me;
}

std::string Owner::tag() const { return fmt::format("{}.{}", pid, start); }

std::optional<Owner> Owner::parse(const std::string& tag) {
  auto dot = tag.find('.');
  if (dot == std::string::npos) return std::nullopt;
  std::string p = tag.substr(0, dot), s = tag.substr(dot + 1);
  if (!allDigits(p) || !allDigits(s) || p.size() > 9 || s.size() > 19) return std::nullopt;
  return Owner{static_cast<pid_t>(std::atol(p.c_str())), std::strtoull(s.c_str(), nullptr, 10)};
}

bool Owner::alive() const {
  auto s = processStart(pid);
  return s && *s == start;
}

std::vector<pid_t> withEnv(const std::vector<pid_t>& pids, const std::string& name, const std::string& value) {
  std::vector<pid_t> out;
  for (pid_t pid : pids) {
    auto v = envValue(environOf(pid), name);
    if (v && (value.empty() || *v == value) && processStart(pid)) out.push_back(pid);
  }
  return out;
}

std::vector<pid_t> processesWithEnv(const std::string& name, const std::string& value) {
  return withEnv(otherPids(), name, value);
}

namespace {

/// The children of `pid`, each of its threads' (a thread's children are those it forked), or nothing when
/// /proc does not list them.
std::optional<std::vector<pid_t>> childrenOf(pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  bool listed = false;
  for (const auto& task : fs::directory_iterator(fmt::format("/proc/{}/task", pid), ec)) {
    std::ifstream in(task.path() / "children");
    if (!in) continue;
    listed = true;
    for (pid_t child; in >> child;) out.push_back(child);
  }
  if (!listed) return std::nullopt;
  return out;
}

} // namespace

std::optional<std::vector<pid_t>> descendants() {
  static const bool listsChildren = fs::exists(fmt::format("/proc/{}/task/{}/children", ::getpid(), ::getpid()));
  if (!listsChildren) return std::nullopt;
  std::vector<pid_t> out;
  std::set<pid_t> seen{::getpid()};
  std::vector<pid_t> pending{::getpid()};
  while (!pending.empty()) {
    const pid_t pid = pending.back();
    pending.pop_back();
    // A process that ended meanwhile lists nothing: its children, re-parented, are found under their new parent.
    for (pid_t child : childrenOf(pid).value_or(std::vector<pid_t>{}))
      if (seen.insert(child).second) {
        out.push_back(child);
        pending.push_back(child);
      }
  }
  return out;
}

std::vector<pid_t> ownTree() {
  if (auto mine = descendants()) return *mine;
  return otherPids();
}

bool groupListensOn(pid_t pgid, int port) {
  std::set<std::string> sockets; // as /proc/PID/fd/N links name them
  auto inodes = listeningInodes(port);
  if (!inodes) {
    inodes.emplace();
    for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"})
      for (unsigned long inode : listeningInodes(slurp(table), port)) inodes->insert(inode);
  }
  for (unsigned long inode : *inodes) sockets.insert(fmt::format("socket:[{}]", inode));
  if (sockets.empty()) return false;
  for (pid_t pid : ownTree()) { // the group is one idemproof started
    auto st = procStat(pid);
    if (!st || st->pgrp != pgid) continue;
    std::error_code ec;
    for (const auto& fd : fs::directory_iterator(fmt::format("/proc/{}/fd", pid), ec)) {
      std::error_code lec;
      auto target = fs::read_symlink(fd.path(), lec);
      if (!lec && sockets.count(target.string())) return true;
    }
  }
  return false;
}

void becomeSubreaper() { ::prctl(PR_SET_CHILD_SUBREAPER, 1); }

std::vector<pid_t> adoptedOrphans() {
  auto paused = Child::pauseSpawns(); // a child forked but not registered yet is not an orphan
  std::vector<pid_t> out;
  if (auto children = childrenOf(::getpid())) { // this process's children, without a look at every other
    for (pid_t pid : *children)
      if (!Child::started(pid)) out.push_back(pid);
    return out;
  }
  for (pid_t pid : otherPids()) {
    auto st = procStat(pid);
    if (st && st->ppid == ::getpid() && !Child::started(pid)) out.push_back(pid);
  }
  return out;
}

std::string envOf(pid_t pid, const std::string& name) { return envValue(environOf(pid), name).value_or(""); }

std::string commandLine(pid_t pid) {
  std::string cmd = slurp(fmt::format("/proc/{}/cmdline", pid));
  while (!cmd.empty() && cmd.back() == '\0') cmd.pop_back();
  for (char& c : cmd)
    if (c == '\0' || static_cast<unsigned char>(c) < 0x20) c = ' ';
  if (cmd.size() > 200) cmd = cmd.substr(0, 197) + "...";
  return cmd;
}

Reaped reapOrphans() {
  Reaped r;
  // Processes first (a server still running would keep writing into its folder).
  const std::string me = Owner::self().tag();
  const std::string scope = tempRootScope();
  std::error_code ec;
  for (pid_t pid : processesWithEnv(kOwnerEnv)) {
    const std::string env = environOf(pid);
    std::string tag = envValue(env, kOwnerEnv).value_or("");
    auto owner = Owner::parse(tag);
    if (!owner || tag == me || envValue(env, kTempRootEnv).value_or("") != scope || owner->alive()) continue;
    if (::kill(pid, SIGKILL) == 0) r.processes.push_back(pid);
  }
  for (const auto& root : tempRoots()) {
    for (const auto& e : fs::directory_iterator(root, ec)) {
      std::string name = e.path().filename().string();
      auto owner = ownerOfFolder(name);
      if (!owner || owner->tag() == me || owner->alive()) continue;
      std::error_code rm;
      fs::remove_all(e.path(), rm);
      if (!rm) r.folders.push_back(e.path().string());
    }
  }
  return r;
}

} // namespace idem
