#pragma once
/// A worker's namespace on the servers and the executor of schedules in it. A workspace owns a database
/// (embedded servers) or a schema (external servers), a Valkey db and a stream + group, creates the
/// scenario's and the target's tables once, and resets them cheaply (DELETE, FLUSHDB) before each
/// schedule. execute() runs one schedule end to end and returns its history; it never judges.
#include "history/history.h"
#include "plan/schedule.h"
#include "scenario/scenario.h"
#include "servers/servers.h"
#include "target/manifest.h"

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace idem {

/// The timing of one execution; every flag and default is documented in docs/timing.md.
struct RunOptions {
  /// The whole schedule, wall clock; it bounds every wait of the harness. A consumer still busy then makes
  /// the run unknown (never a violation of the target).
  std::chrono::milliseconds deadline{120000};
  /// Work left while every live consumer is idle for CLAIM_IDLE_MS + this: restart once; again: stuck.
  std::chrono::milliseconds stall{3000};
  std::chrono::milliseconds grace{2000};          ///< SIGTERM -> SIGKILL
  /// Everything acknowledged and every consumer idle: the run ends once no work was done for this long.
  std::chrono::milliseconds settle{50};
  /// A consumer that makes no request for this long after it started: the run is unknown.
  std::chrono::milliseconds start_timeout{60000};
  int claim_idle_ms = 20;                         ///< CLAIM_IDLE_MS given to consumers; a replacement's requests wait it out
  int max_processes = 20;                         ///< consumer processes per schedule
};

/// Where the wall time of one execution went, in milliseconds per phase (bench/check_bench prints it):
/// reset (tables, stream, initial state), send (the producer), proxies (a process's listening ports),
/// spawn (fork and exec, the environment, the log pipe),
/// start-up (a process's spawn to its first request: loading, connecting), claim-wait (a replacement's
/// requests held until the killed one's entries are claimable, beyond its start-up), kill (a killed
/// process's death), settle (everything acknowledged until the run is proven over), stop (the SIGTERM of
/// the live processes at the end), observe (the final state), work (the rest: the target's own work and the
/// harness's bookkeeping around it). Phases of processes that run at once overlap.
using PhaseTimes = std::map<std::string, double>;

class Workspace {
public:
  /// Creates the namespace and the tables. `logDir` receives one log per consumer process (cleared at
  /// each execute). Throws UsageError when the scenario's or the target's SQL fails.
  Workspace(const ServerEndpoints& servers, const Scenario& scenario, const Target& target, int worker,
            RunOptions options, std::filesystem::path logDir);
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  /// Runs one schedule: reset, plan op, initial state, producer, consumers (with kills and restarts),
  /// final state. An execution that cannot be judged ends with an "error" op.
  History execute(const Schedule& schedule);

  const std::filesystem::path& logDir() const;
  /// The phases of the latest execute().
  const PhaseTimes& phases() const;

  /// Restarts this workspace's PostgreSQL ("pg") or Valkey ("valkey") for restart faults; set by the session
  /// when the workspace's worker has servers of its own (docs/faults.md). Without one, a restart fault is an
  /// error. `restarts`, when given, counts the restarts of those servers by any workspace of the worker (one
  /// per target, run one after another): a workspace whose servers another restarted reconnects its own
  /// connections before its next schedule.
  using Restarter = std::function<void(const std::string& which)>;
  void setRestarter(Restarter r, std::function<uint64_t()> restarts = {});

  struct Impl; ///< private to supervisor/ (workspace_impl.h)

private:
  std::unique_ptr<Impl> impl_;
};

/// libpq URI for `database` on (host, port), with `query` ("options=..." etc.) appended when non-empty.
std::string pgUrl(const ServerEndpoints& s, const std::string& host, int port, const std::string& database,
                  const std::string& query);

} // namespace idem
