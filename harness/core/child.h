#pragma once
/// Child processes of idemproof: consumers under test and embedded servers. Spawned from one long-lived
/// thread (spawner.h), each in its own process group, stdout+stderr appended to a log file, registered with
/// Cleanup so that no child outlives idemproof, whatever the exit (normal, error, SIGINT, SIGTERM, SIGHUP).
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace idem {

class LogSink;

struct ExitStatus {
  int code = -1;  ///< exit status when the process exited by itself, else -1
  int signal = 0; ///< the signal that ended it, else 0
  /// "exit 0", "exit 1", "signal 9 (SIGKILL)"
  std::string str() const;
  bool killedBy(int sig) const { return signal == sig; }
};

struct ChildSpec {
  std::vector<std::string> argv;             ///< argv[0] is a path or a name searched on PATH
  std::filesystem::path cwd;
  std::map<std::string, std::string> env;    ///< the whole environment of the child
  std::filesystem::path log;                 ///< stdout and stderr, appended; empty: /dev/null
  /// > 0: the log holds at most this many bytes of the child's output, its first and last halves
  /// (core/log_sink.h: for output idemproof does not control); 0: every byte, written by the child itself.
  size_t logCap = 0;
  std::optional<uid_t> uid;                  ///< drop to this user (and gid, no supplementary groups)
  std::optional<gid_t> gid;
  std::string what;                          ///< for messages: "consumer c1 (targets/simple)"
  /// >= 0: the child's stdin / stdout is this descriptor (e.g. one end of a pipe the caller made, for a
  /// child that takes commands and answers them), instead of /dev/null / the log. The caller keeps its own
  /// and closes it after spawn(); stderr still goes to the log.
  int stdinFd = -1;
  int stdoutFd = -1;
};

/// A running (or finished) child in its own process group (pgid == pid).
class Child {
public:
  /// Starts the child. Throws SpawnError with a one-line message naming spec.what and argv[0] when it
  /// cannot be started (no such file, not executable, bad cwd).
  static Child spawn(const ChildSpec& spec);
  Child();
  Child(Child&&) noexcept;
  Child& operator=(Child&&) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  /// Kills the group with SIGKILL and reaps, if still running.
  ~Child();

  pid_t pid() const { return pid_; }
  bool valid() const { return pid_ > 0; }
  /// Non-blocking: the exit status once the child has exited (reaped exactly once, then cached).
  std::optional<ExitStatus> poll();
  /// Waits up to `timeout`; nullopt if still running.
  std::optional<ExitStatus> waitFor(std::chrono::milliseconds timeout);
  /// Sends `sig` to the whole process group (a grandchild too). No-op once reaped.
  void signalGroup(int sig);
  /// SIGTERM to the group, wait up to `grace`, then SIGKILL and reap. Returns the exit status.
  ExitStatus stop(std::chrono::milliseconds grace);
  /// Whether `pid` is a child spawned here and not reaped yet (core/owner.h: adoptedOrphans()).
  static bool started(pid_t pid);
  /// Holds off spawns while held: every child of idemproof is then either registered or not forked yet.
  static std::unique_lock<std::mutex> pauseSpawns();

private:
  pid_t pid_ = -1;
  std::optional<ExitStatus> status_;
  int cleanupId_ = -1;
  std::unique_ptr<LogSink> sink_; ///< when spec.logCap > 0; finished once the child is reaped
};

struct SpawnError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

} // namespace idem
