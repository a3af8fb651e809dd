#pragma once
/// A worker's namespace on the servers and the executor of schedules in it. A workspace owns a database
/// (embedded servers) or a schema (external servers), a Valkey db and a stream + group, creates the
/// scenario's and the target's tables once, and resets them cheaply (DELETE, FLUSHDB) before each
/// schedule. execute() runs one schedule end to end and returns its history; it never judges.
#include "core/history.h"
#include "plan/schedule.h"
#include "scenario/scenario.h"
#include "servers/servers.h"
#include "target/manifest.h"

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

namespace idem {

struct RunOptions {
  std::chrono::milliseconds deadline{60000}; ///< whole schedule, wall clock
  std::chrono::milliseconds stall{3000};     ///< no broker progress for this long: restart once, then stop
  std::chrono::milliseconds grace{2000};     ///< SIGTERM -> SIGKILL
  std::chrono::milliseconds settle{50};      ///< silence that counts as idle for a consumer not in a blocking read
  int claim_idle_ms = 20;                    ///< CLAIM_IDLE_MS given to consumers; waited after a kill
  int max_processes = 20;                    ///< consumer processes per schedule
};

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

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// libpq URI for `database` on (host, port), with `query` ("options=..." etc.) appended when non-empty.
std::string pgUrl(const ServerEndpoints& s, const std::string& host, int port, const std::string& database,
                  const std::string& query);

} // namespace idem
