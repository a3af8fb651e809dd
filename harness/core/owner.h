#pragma once
/// Ownership marks on what idemproof leaves on the machine while it runs, so that nothing outlives it,
/// even a SIGKILL of idemproof itself (which runs no cleanup):
/// - every temp folder is named idemproof-<kind>-<owner>-XXXXXX (TempDir);
/// - every process it starts (servers, consumers, and what they start, by inheritance) carries
///   IDEMPROOF_OWNER=<owner> in its environment;
/// where <owner> is "<pid>.<start time>" of the idemproof process (the start time tells a reused pid apart).
/// reapOrphans(), at the start of every command, removes the folders and kills the processes of owners
/// that are gone.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace idem {

inline constexpr const char* kOwnerEnv = "IDEMPROOF_OWNER";
/// A private temp root (core/temp_dir.h). It also scopes reaping: every process idemproof starts carries
/// the root it was started under (or none), and reapOrphans() reaps only dead owners' folders in its own
/// roots and their processes started under the same root, so invocations with private roots (tests side
/// by side) never reap each other's leftovers while they are being looked at.
inline constexpr const char* kTempRootEnv = "IDEMPROOF_TMPDIR";
/// This process's IDEMPROOF_TMPDIR ("" when unset).
std::string tempRootScope();

struct Owner {
  pid_t pid = 0;
  uint64_t start = 0; ///< clock ticks since boot (/proc/PID/stat field 22)

  /// This process.
  static Owner self();
  /// "<pid>.<start>"
  std::string tag() const;
  /// From a tag; nullopt when it is not one.
  static std::optional<Owner> parse(const std::string& tag);
  /// Whether the process still runs (same pid, same start time, not a zombie).
  bool alive() const;
};

/// The start time of `pid` (field 22 of /proc/PID/stat), nullopt when it is gone or a zombie.
std::optional<uint64_t> processStart(pid_t pid);

/// The process group of `pid` (field 5 of /proc/PID/stat), nullopt when it is gone.
std::optional<pid_t> processGroup(pid_t pid);

/// Live processes (zombies excluded) whose environment holds NAME=VALUE, or NAME=<anything> when
/// `value` is empty; only those whose environment this process may read (same user, or root).
std::vector<pid_t> processesWithEnv(const std::string& name, const std::string& value = "");

/// The value of NAME in the environment of `pid` ("" when absent or unreadable).
std::string envOf(pid_t pid, const std::string& name);
/// The command line of `pid`, arguments joined by spaces, at most 200 bytes ("" when gone).
std::string commandLine(pid_t pid);

/// Whether a process of process group `pgid` (other than this one) holds a socket that listens on TCP port
/// `port`: whether what answers on 127.0.0.1:port is that group's, or another process's that took the port
/// first.
bool groupListensOn(pid_t pgid, int port);

/// Makes this process the child subreaper of everything it starts (prctl PR_SET_CHILD_SUBREAPER): a
/// process whose parent dies is re-parented to idemproof, not to init, so that no descendant of a
/// consumer can leave idemproof's sight, whatever it does to its process group, session or environment.
void becomeSubreaper();

/// Children of this process that it did not start itself (Child::spawn): descendants of consumers,
/// re-parented to it when their parent died (zombies included: they must be reaped).
std::vector<pid_t> adoptedOrphans();

/// Every descendant of this process (its children, theirs, ...; zombies included), from
/// /proc/<pid>/task/<tid>/children: a walk of idemproof's own tree, not of every process of the machine.
/// Nothing when the kernel lists no children there (built without CONFIG_PROC_CHILDREN).
std::optional<std::vector<pid_t>> descendants();

/// The processes idemproof's own can be among: its descendants, or every other process where /proc lists no
/// children. A consumer's process, whatever it did to its group or session, is a descendant (the subreaper
/// keeps it in the tree).
std::vector<pid_t> ownTree();

/// Those of `pids` whose environment holds NAME=VALUE and that live (zombies excluded); as
/// processesWithEnv, over these processes only.
std::vector<pid_t> withEnv(const std::vector<pid_t>& pids, const std::string& name, const std::string& value);

/// What reapOrphans() removed and killed, for a note.
struct Reaped {
  std::vector<std::string> folders;
  std::vector<pid_t> processes;
};

/// Kills (SIGKILL) the processes and removes the temp folders of idemproof invocations that are gone,
/// within this invocation's temp root scope (kTempRootEnv). Never touches what belongs to a live
/// invocation, nor the template cache.
Reaped reapOrphans();

} // namespace idem
