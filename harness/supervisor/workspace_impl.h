#pragma once
/// Private to the supervisor: the state of a Workspace, shared by workspace.cc (namespace, reset,
/// producer, final state) and execute.cc with its parts (consumer_loop.h: the consumer processes of one schedule).
#include "supervisor/admin.h"
#include "supervisor/sink_server.h"
#include "supervisor/workspace.h"

#include "brokers/broker.h"

#include "core/child.h"
#include "proxy/hub.h"

#include <map>
#include <optional>
#include <vector>

namespace idem {

/// What an `age` fault simulates when neither it nor the scenario says: a day, a retention job's usual period.
inline constexpr int64_t kDefaultAgeMs = 86400000;

/// The least time the final read of a run gets, even past --deadline: the state a limit proves things by.
inline constexpr std::chrono::milliseconds kObserveFloor{1000};

struct Workspace::Impl {
  ServerEndpoints servers;
  Scenario scenario;
  Target target;
  int worker = 0;
  RunOptions options;
  std::filesystem::path logDir;

  std::string database;   ///< PostgreSQL database of this workspace
  std::string schema;     ///< external servers: the schema made for this workspace, else ""
  std::string urlQuery;   ///< extra libpq URI query for consumers (search_path), may be empty
  std::unique_ptr<PgAdmin> pg;
  brokers::BrokerPtr broker; ///< the target's broker: the stream (topic) and group of this workspace
  /// The broker side of a hub of this workspace's proxies.
  proxy::BrokerSide brokerSide() const {
    brokers::Broker* b = broker.get();
    proxy::BrokerSide side{b->name(), b->protocol(), b->upstream(), [b](int port) { return b->tracker(port); }, {}, false, {}};
    if (b->answersErrorsByRequest()) {
      side.errorAnswer = [b](std::string_view request, const std::string& code) { return b->errorAnswer(request, code); };
      side.defaultError = [b](const std::string& verb) { return b->defaultError(verb); };
      side.errorEndsConnection = b->errorEndsConnection();
    }
    return side;
  }
  /// The scenario's sink (null without one): one per workspace, reset for each schedule.
  std::unique_ptr<SinkServer> sink;
  /// The proxies' sink side, when the scenario has a sink: the sink server and what CALL steps name.
  std::optional<proxy::SinkSide> sinkSide() const {
    if (!sink) return std::nullopt;
    return proxy::SinkSide{{"127.0.0.1", sink->port()}, {scenario.sink->keyHeader, scenario.sink->ref}};
  }
  std::vector<std::string> tables; ///< every table of the namespace, emptied on reset
  /// Poison events: the broker's name of the scenario's dead-letter stream or queue ("" without one).
  std::string deadLetterStream;
  /// What a consumer reads of the scenario's poison handling: DEAD_LETTER_STREAM or DEAD_LETTER_TABLE, and
  /// MAX_DELIVERIES (none without poison).
  std::map<std::string, std::string> poisonEnv() const;
  /// The dead-letter destination's messages at the end (Final::deadLetters).
  void readDeadLetters(ops::Final& f);
  int cleanupId = -1;
  PhaseTimes phases; ///< of the execution under way (Workspace::phases)
  /// When the execution under way began: the harness's own queries of it end by this plus --deadline.
  std::chrono::steady_clock::time_point runStarted;
  /// Adds the time since `since` to phase `name`, and returns now.
  std::chrono::steady_clock::time_point phase(const std::string& name, std::chrono::steady_clock::time_point since);
  /// Adds the time from `from` to `to` to phase `name` (nothing when `to` is not after `from`).
  void phase(const std::string& name, std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to);

  void create();
  void reset(); ///< the tables (the broker resets apart: execute)
  /// The rows of the scenario's queries; `budget` is the statement timeout they run under (for the message
  /// when one runs longer: std::runtime_error; any other SQL error: UsageError naming the field).
  Observed observe(std::chrono::milliseconds budget);
  /// Throws UsageError when tables.names names a table tables.create did not make, or an observed query
  /// returns other columns than its invariant's kind reads.
  void checkScenarioShapes();
  /// Publishes the stream entries [from, to) of the schedule's stream at once.
  void send(History& h, const Schedule& s, const std::map<int, std::map<std::string, std::string>>& fields,
            size_t from, size_t to);
  /// An `age` fault: `ms` of simulated time (0: the scenario's retry_window_ms, else a day) pass for the
  /// consumer's dedup state: the broker's keys with a TTL, the scenario's prune statement (workspace.cc).
  ops::Aged age(int64_t ms);
  Workspace::Restarter restarter;
  std::function<uint64_t()> restarts; ///< the servers' restarts so far (Workspace::setRestarter)
  uint64_t restartsSeen = 0;          ///< ... when this workspace's connections were last made
  /// The harness's own connections to PostgreSQL and the broker, made again (after a server restart).
  void reconnect(const std::string& which);
  /// Restarts a server (restart faults) and reconnects the harness's own connection to it. Meanwhile the
  /// server's ports of `hub` refuse connections, as the server's own port would.
  void restartServer(const std::string& which, proxy::Hub& hub);
  /// The final state (observed rows, pending and undelivered entries); the caller says how the run ended.
  /// Its queries get what is left of --deadline since runStarted (at least kObserveFloor); one that
  /// runs longer throws std::runtime_error naming the query and the time it had: the run can't be judged.
  ops::Final finalState();
  /// A target with a relay: what its "outbox.pending" query counts now (unsent outbox rows); nullopt without a
  /// relay. A query that fails or returns no count is a UsageError naming the manifest's field.
  std::optional<int64_t> outboxPending();
  /// The spec of a target process `label` (a consumer, an HTTP server) behind its proxy ports: the base
  /// environment, DATABASE_URL and the broker's variables (VALKEY_URL, STREAM, ...) through the proxies,
  /// the run's marks (escapes.h),
  /// `vars` (STREAM, PORT, ...), then the manifest's env expanded from them; `argv` (the target's command when
  /// empty: a relay's is its own) resolved against the target's folder, which is its working directory; its log under logDir, capped at `logCap`.
  ChildSpec targetSpec(const proxy::Hub::Ports& ports, const std::string& label, const std::string& runTag,
                       const std::map<std::string, std::string>& baseEnv, std::map<std::string, std::string> vars,
                       size_t logCap, const std::string& what, const std::vector<std::string>& argv = {}) const;
  /// The server process and the client's requests of one HTTP schedule (http_execute.cc).
  void runServer(History& h, const Schedule& s, const std::map<int, std::map<std::string, std::string>>& fields);
  /// The consumer processes of one schedule (execute.cc).
  void runConsumers(History& h, const Schedule& s, const std::map<int, std::map<std::string, std::string>>& fields);
};

} // namespace idem
