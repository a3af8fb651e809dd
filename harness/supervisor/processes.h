#pragma once
/// The target's processes of one execution, whatever the workload (stream consumers: execute.cc; an HTTP
/// server: http_execute.cc): one path to start a process behind its proxies and record it, one to record
/// how it ended, and at the end the reaping of whatever left their process groups. The workloads decide
/// when a process starts, what it is told and what its end means.
#include "history/history.h"
#include "proxy/hub.h"
#include "supervisor/controller.h"
#include "supervisor/workspace_impl.h"

#include "core/child.h"

#include <sys/types.h>

#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace idem {

/// One process of the target: its owner number (its proxies'), its label in the history (c1, s1) and the
/// child itself.
struct TargetProcess {
  int owner = 0;
  std::string label;
  Child child;
  std::vector<std::string> argv; ///< its program: empty for the target's command (a relay's is its own)
};

class TargetProcesses : public GroupSignals {
public:
  using Clock = std::chrono::steady_clock;
  TargetProcesses(Workspace::Impl& ws, History& h, Controller& ctl, proxy::Hub& hub);

  /// The run's mark, carried in every process's environment (escapes.h).
  const std::string& runTag() const { return runTag_; }

  struct Started {
    proxy::Hub::Ports ports;
    Clock::time_point execed; ///< when its spawn returned: its start-up begins
  };
  /// Opens `p.owner`'s proxies and starts the target as `p.label`, told `vars` (besides the connection
  /// variables of its proxies); records the spawn (`consumer`: the name it was given, `why`: first,
  /// after-kill, …). A program that cannot be started is a UsageError, its proxies closed.
  Started start(TargetProcess& p, const std::string& consumer, std::map<std::string, std::string> vars,
                size_t logCap, const char* role, const char* why);

  /// Records that `p` ended with `es` (`by`: "self", "harness" for a kill or a stop of its own, or
  /// "port-taken" for a server that exited unready while another process held its port).
  void ended(const TargetProcess& p, const ExitStatus& es, const char* by);
  /// Stops `p` (SIGTERM, then SIGKILL after `grace`) and records it, a SIGKILL noted as SIGTERM ignored.
  ExitStatus stop(TargetProcess& p, std::chrono::milliseconds grace);

  /// A pause (plan/faults/pause.cc): SIGSTOP of the group of the process with owner `owner`, and its SIGCONT.
  /// A stopped process acts on no signal but SIGKILL and SIGCONT: stop() wakes it before its SIGTERM.
  int stopGroup(int owner) override;
  bool continueGroup(int owner) override;

  /// Once every process of the run has stopped: kills and records what left their process groups.
  void reapEscaped();

  static ops::Exit exitOf(const ExitStatus& es, const char* by);

private:
  Workspace::Impl& ws_;
  History& h_;
  Controller& ctl_;
  proxy::Hub& hub_;
  const std::map<std::string, std::string> baseEnv_;
  const std::string runTag_;
  std::set<pid_t> groups_; ///< the process groups of every process of the run (pgid == pid)
  std::mutex mu_;           ///< guards the two below (the proxies' thread pauses, the supervisor's wakes)
  std::map<int, pid_t> owners_; ///< owner -> its process group
  std::set<int> stopped_;       ///< owners whose group is stopped by a pause
};

} // namespace idem
