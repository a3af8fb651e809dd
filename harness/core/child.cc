// Child processes: spawned with Boost.Process v1, then detached and owned by pid (waitpid), because
// bp::child::exit_code() cannot tell SIGKILL from exit(9).
//
// All forks happen on one long-lived thread (core/spawner.h).
//
// Reaping protocol (shared with Cleanup): the owner first notices the exit without reaping
// (waitid WNOWAIT), kills whatever is left of the group while the zombie still pins the pgid, then
// unregisters its Cleanup action (Cleanup::remove waits if that action is running on the signal
// thread), and only then reaps. So a Cleanup action never signals a pgid that may have been reused.
#include "core/child.h"

#include "core/log_sink.h"
#include "core/owner.h"
#include "core/cleanup.h"

#include "core/spawner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <grp.h>

#include <boost/process/child.hpp>
#include <boost/process/env.hpp>
#include <boost/process/environment.hpp>
#include <boost/process/exe.hpp>
#include <boost/process/args.hpp>
#include <boost/process/extend.hpp>
#include <boost/process/posix.hpp>
#include <boost/process/search_path.hpp>
#include <fmt/format.h>

#include <mutex>
#include <set>

#include <cerrno>
#include <thread>

namespace bp = boost::process;

namespace idem {
namespace {

/// Everything the child does before execve. It is a vfork child (Boost.Process's use_vfork: no copy of
/// idemproof's page tables, which made each spawn cost ~10 ms in a large idemproof): only system calls,
/// nothing that writes the parent's memory but the error report Boost.Process reads after a failure.
/// Order matters: PR_SET_PDEATHSIG is cleared by setuid/setgid, so it comes last.
struct ChildSetup : bp::extend::handler {
  const char* cwd = nullptr;
  int stdinFd = -1, stdoutFd = -1, logFd = -1;
  std::optional<uid_t> uid;
  std::optional<gid_t> gid;
  pid_t parent = 0;

  template <class Exec> void fail(Exec& exec, const char* what) const {
    exec.set_error(std::error_code(errno, std::system_category()), what);
    _exit(127);
  }

  template <class Exec> void on_exec_setup(Exec& exec) const {
    if (::setpgid(0, 0) != 0) fail(exec, "setpgid");
    // The harness may block SIGINT/SIGTERM/SIGHUP (Cleanup) or ignore SIGPIPE: both survive execve. The
    // dispositions first, then the mask: this runs in a vfork child, on the parent's memory, and no handler
    // of the parent may run here (the spawner thread forks with every signal blocked).
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) ::sigaction(sig, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (::dup2(stdinFd, 0) < 0 || ::dup2(stdoutFd, 1) < 0 || ::dup2(logFd, 2) < 0) fail(exec, "dup2");
    // Listening sockets of the proxies must not leak into consumers; the error pipe is CLOEXEC already.
    ::syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */);
    // bp::start_dir ignores a failing chdir (1.81), so chdir is done here.
    if (cwd && *cwd && ::chdir(cwd) != 0) fail(exec, "chdir");
    if (gid || uid) {
      if (::setgroups(0, nullptr) != 0) fail(exec, "setgroups");
      if (gid && ::setgid(*gid) != 0) fail(exec, "setgid");
      if (uid && ::setuid(*uid) != 0) fail(exec, "setuid");
    }
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(127); // idemproof died before prctl
  }

  template <class Exec> void on_error(Exec& exec, const std::error_code&) const {
    // bp reaps a failed child with WNOHANG only; it may not have exited yet.
    if (exec.pid > 0) {
      int st = 0;
      while (::waitpid(exec.pid, &st, 0) < 0 && errno == EINTR) {
      }
    }
  }
};

/// Resolves argv[0] the way execvp would: a name without '/' is searched on PATH (the child's PATH
/// if the spec sets one, else ours); a path is left as is (relative to the child's cwd).
std::string resolveExe(const ChildSpec& spec) {
  const std::string& name = spec.argv[0];
  if (name.find('/') != std::string::npos) return name;
  std::vector<bp::filesystem::path> dirs;
  auto it = spec.env.find("PATH");
  if (it != spec.env.end()) {
    std::string p = it->second;
    size_t start = 0;
    while (start <= p.size()) {
      size_t end = p.find(':', start);
      if (end == std::string::npos) end = p.size();
      dirs.emplace_back(end > start ? p.substr(start, end - start) : std::string("."));
      start = end + 1;
    }
  } else {
    dirs = ::boost::this_process::path();
  }
  return bp::search_path(name, dirs).string();
}

std::string errnoText(int err) { return std::error_code(err, std::system_category()).message(); }

int openOrThrow(const std::string& path, int flags, const ChildSpec& spec, const char* what) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0600); // a log: for idemproof's user only
  if (fd >= 0 && fd < 3) { // stdio closed in idemproof: keep clear of 0-2, which the child dup2s onto
    int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
    ::close(fd);
    fd = high;
  }
  if (fd < 0) {
    throw SpawnError(fmt::format("{}: cannot run '{}': {} '{}': {}", spec.what, spec.argv[0], what, path,
                                 errnoText(errno)));
  }
  return fd;
}

ExitStatus fromWaitStatus(int st) {
  ExitStatus s;
  if (WIFEXITED(st)) s.code = WEXITSTATUS(st);
  if (WIFSIGNALED(st)) s.signal = WTERMSIG(st);
  return s;
}

enum class State { Running, Zombie, Gone };

/// Whether `pid` has exited, without reaping it (the zombie keeps pid and pgid reserved). Gone: a
/// Cleanup action already reaped it.
State childState(pid_t pid) {
  siginfo_t info{};
  while (::waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) < 0) {
    if (errno != EINTR) return State::Gone;
  }
  return info.si_pid == pid ? State::Zombie : State::Running;
}

/// Blocks until `pid` exits or `timeout` passes, without reaping.
void awaitExit(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  auto pause = std::chrono::microseconds(100);
  while (childState(pid) == State::Running) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() < 0) break;
    if (pidfd >= 0) {
      pollfd p{pidfd, POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count() + 1, 1000)));
    } else {
      std::this_thread::sleep_for(std::min<std::chrono::microseconds>(pause, left + std::chrono::milliseconds(1)));
      pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(5));
    }
  }
  if (pidfd >= 0) ::close(pidfd);
}

} // namespace

std::string ExitStatus::str() const {
  if (signal != 0) {
    const char* abbrev = ::sigabbrev_np(signal);
    return abbrev ? fmt::format("signal {} (SIG{})", signal, abbrev) : fmt::format("signal {}", signal);
  }
  if (code >= 0) return fmt::format("exit {}", code);
  return "unknown exit status";
}

namespace {

/// The pids of children spawned here and not reaped yet; spawnMu is held from the fork until the pid is
/// in startedPids, so that a scan for adopted orphans (pauseSpawns) never sees a child not registered yet.
std::mutex startedMu, spawnMu;
std::set<pid_t> startedPids;

void forget(pid_t pid) {
  std::lock_guard<std::mutex> lock(startedMu);
  startedPids.erase(pid);
}

} // namespace

std::unique_lock<std::mutex> Child::pauseSpawns() { return std::unique_lock<std::mutex>(spawnMu); }

bool Child::started(pid_t pid) {
  std::lock_guard<std::mutex> lock(startedMu);
  return startedPids.count(pid) > 0;
}

Child Child::spawn(const ChildSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty()) throw SpawnError(fmt::format("{}: empty command", spec.what));
  auto failure = [&](const std::string& why) {
    return SpawnError(fmt::format("{}: cannot run '{}': {}", spec.what, spec.argv[0], why));
  };
  if (!spec.cwd.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(spec.cwd, ec)) {
      throw failure(fmt::format("working directory '{}': {}", spec.cwd.string(),
                                ec ? ec.message() : errnoText(ENOTDIR)));
    }
  }
  std::string exe = resolveExe(spec);
  if (exe.empty()) throw failure("not found on PATH");

  int nullFd = openOrThrow("/dev/null", O_RDWR, spec, "open");
  int logFd = nullFd;
  std::unique_ptr<LogSink> sink;
  if (!spec.log.empty() && spec.logCap > 0) {
    try {
      sink = std::make_unique<LogSink>(spec.log, spec.logCap / 2, spec.logCap - spec.logCap / 2);
    } catch (const std::system_error& e) {
      ::close(nullFd);
      throw SpawnError(fmt::format("{}: cannot run '{}': {}", spec.what, spec.argv[0], e.what()));
    }
    logFd = sink->writeFd();
  } else if (!spec.log.empty()) {
    try {
      logFd = openOrThrow(spec.log.string(), O_WRONLY | O_CREAT | O_APPEND, spec, "log file");
    } catch (...) {
      ::close(nullFd);
      throw;
    }
  }
  ChildSetup setup;
  std::string cwd = spec.cwd.string();
  setup.cwd = cwd.c_str();
  // A caller's descriptor below 3 (idemproof's own stdio closed) would be dup2'd onto itself and keep its
  // close-on-exec flag: a copy above 2 is passed instead.
  int ownIn = -1, ownOut = -1;
  auto high = [](int fd) { return fd >= 3 ? -1 : ::fcntl(fd, F_DUPFD_CLOEXEC, 3); };
  if (spec.stdinFd >= 0) ownIn = high(spec.stdinFd);
  if (spec.stdoutFd >= 0) ownOut = high(spec.stdoutFd);
  setup.stdinFd = spec.stdinFd < 0 ? nullFd : ownIn >= 0 ? ownIn : spec.stdinFd;
  setup.stdoutFd = spec.stdoutFd < 0 ? logFd : ownOut >= 0 ? ownOut : spec.stdoutFd;
  setup.logFd = logFd;
  setup.uid = spec.uid;
  setup.gid = spec.gid;

  bp::environment env;
  for (const auto& [k, v] : spec.env) env[k] = v;
  env[kOwnerEnv] = Owner::self().tag(); // reapOrphans() finds it, and what it starts, if idemproof dies
  if (auto scope = tempRootScope(); !scope.empty()) env[kTempRootEnv] = scope; // ... within this root's scope
  else env.erase(kTempRootEnv);
  std::vector<std::string> args(spec.argv.begin() + 1, spec.argv.end());
  std::error_code ec;
  bp::child c;
  std::unique_lock<std::mutex> spawning(spawnMu);
  detail::runOnSpawnerThread([&] {
    setup.parent = ::getpid();
    c = bp::child(bp::exe = exe, bp::args = args, env, setup, bp::posix::use_vfork, ec);
  });
  ::close(nullFd);
  if (ownIn >= 0) ::close(ownIn);
  if (ownOut >= 0) ::close(ownOut);
  if (sink) sink->closeWriteFd(); // the child holds its own copy now
  else if (logFd != nullFd) ::close(logFd);
  if (ec || !c.valid()) throw failure(ec ? errnoText(ec.value()) : "spawn failed");
  c.detach();

  Child child;
  child.pid_ = c.id();
  child.sink_ = std::move(sink);
  {
    std::lock_guard<std::mutex> lock(startedMu);
    startedPids.insert(child.pid_);
  }
  spawning.unlock();
  pid_t pid = child.pid_;
  child.cleanupId_ = Cleanup::instance().add(fmt::format("kill {} (pid {})", spec.what, pid), [pid] {
    ::killpg(pid, SIGKILL);
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
  });
  return child;
}

Child::Child() = default;

Child::Child(Child&& o) noexcept
    : pid_(o.pid_), status_(std::move(o.status_)), cleanupId_(o.cleanupId_), sink_(std::move(o.sink_)) {
  o.pid_ = -1;
  o.status_.reset();
  o.cleanupId_ = -1;
}

Child& Child::operator=(Child&& o) noexcept {
  if (this != &o) {
    if (valid() && !status_) stop(std::chrono::milliseconds(0));
    pid_ = o.pid_;
    status_ = std::move(o.status_);
    cleanupId_ = o.cleanupId_;
    sink_ = std::move(o.sink_);
    o.pid_ = -1;
    o.status_.reset();
    o.cleanupId_ = -1;
  }
  return *this;
}

Child::~Child() {
  if (valid() && !status_) {
    ::killpg(pid_, SIGKILL);
    waitFor(std::chrono::hours(1));
  }
}

std::optional<ExitStatus> Child::poll() {
  if (status_ || !valid()) return status_;
  State state = childState(pid_);
  if (state == State::Running) return std::nullopt;
  // The leader is a zombie, so the pgid cannot have been reused: sweep stray group members.
  if (state == State::Zombie) ::killpg(pid_, SIGKILL);
  Cleanup::instance().remove(cleanupId_);
  cleanupId_ = -1;
  int st = 0;
  pid_t r;
  while ((r = ::waitpid(pid_, &st, 0)) < 0 && errno == EINTR) {
  }
  // ECHILD: a Cleanup action killed and reaped it first.
  status_ = r == pid_ ? fromWaitStatus(st) : ExitStatus{-1, SIGKILL};
  forget(pid_);
  // Its output is complete once every writer closed the pipe; a process it started and left running may
  // hold it open: wait a little, not for that one.
  if (sink_) sink_->finish(std::chrono::milliseconds(200));
  return status_;
}

std::optional<ExitStatus> Child::waitFor(std::chrono::milliseconds timeout) {
  if (status_ || !valid()) return status_;
  awaitExit(pid_, timeout);
  return poll();
}

void Child::signalGroup(int sig) {
  if (valid() && !status_) ::killpg(pid_, sig);
}

ExitStatus Child::stop(std::chrono::milliseconds grace) {
  if (!valid()) return ExitStatus{};
  if (status_) return *status_;
  signalGroup(SIGTERM);
  if (auto s = waitFor(grace)) return *s;
  signalGroup(SIGKILL);
  return *waitFor(std::chrono::hours(1));
}

} // namespace idem
