#pragma once
/// Processes a consumer started that outlived it: found by the marks every consumer process carries in its
/// environment, once every consumer process of a run has stopped (supervisor/execute.cc).
#include "history/history.h"
#include "target/target_env.h" // kRunEnv, kProcessEnv

#include <sys/types.h>

#include <map>
#include <set>
#include <string>

namespace idem {

/// A fresh run mark: "<owner tag>/<n>", unique over idemproof's life.
std::string nextRunTag();

/// idemproof's own environment, the base of every process it starts for a run.
std::map<std::string, std::string> currentEnvironment();

/// Every consumer process of run `runTag` has stopped: a process still carrying the run's mark and outside
/// the consumers' process groups `groups` left its group (setsid, a daemon). Kills it and records an
/// Escape op for the process checker. A process re-parented to idemproof (the subreaper) that carries no
/// run's mark at all cleared its environment: killed too, and noted, since no mark says whose it was
/// (another run may be going on beside this one). Reaps what it killed that was re-parented to idemproof.
void reapEscaped(History& h, const std::string& runTag, const std::set<pid_t>& groups);

} // namespace idem
