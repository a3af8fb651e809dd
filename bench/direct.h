#pragma once
/// The benchmarks' direct drivers: the same consumer on the same servers and events as a harness run, with
/// none of idemproof's proxies, history or checkers, so that a benchmark can set the harness's wall time
/// against the target's own. DirectValkey (which can also drive a kill) and DirectBroker (any broker,
/// no fault) share the database side (DirectDatabase) and the consumer's process spec (consumerSpec).
#include "brokers/broker.h"
#include "brokers/valkey/admin.h"
#include "core/child.h"
#include "core/temp_dir.h"
#include "driver/session.h"
#include "supervisor/admin.h"

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace idem::bench {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t0);

/// A database of its own on the session's Postgres, with the scenario's tables and the target's schema;
/// reset() empties every table and applies the scenario's initial state, as a workspace's reset does.
class DirectDatabase {
public:
  DirectDatabase(const ServerEndpoints& sv, const Scenario& sc, const Target& t, const std::string& name);
  void reset();
  std::string url() const;
  /// The one number `sql` selects.
  int64_t count(const std::string& sql);

private:
  ServerEndpoints sv_;
  Scenario sc_;
  std::string name_;
  std::unique_ptr<PgAdmin> pg_;
  std::vector<std::string> tables_;
};

/// The target's command as the harness spawns it (its env entries expanded over `vars`, its relative
/// command under its folder), with this process's environment and `vars`, logging to `logDir`/`name`.log.
ChildSpec consumerSpec(const Target& t, const std::string& name, std::map<std::string, std::string> vars,
                       const std::filesystem::path& logDir);

/// Valkey: one database and Valkey db of its own.
class DirectValkey {
public:
  DirectValkey(Session& session, const Target& t, int slot);

  void reset();
  /// Milliseconds from the first XADD to the exit of the last consumer. With a fault in `s`: SIGKILL once
  /// half the entries are acknowledged, a second process after CLAIM_IDLE_MS (a plain driver can't hold
  /// its requests at a proxy, so it sleeps).
  double run(const Schedule& s);

private:
  Child spawn(const std::string& name);
  /// Polls until every entry up to `last` is delivered and at most `pending` are unacknowledged.
  void waitUntil(const std::string& last, int64_t pending);

  ServerEndpoints sv_;
  Target t_;
  Scenario sc_;
  TempDir logs_;
  DirectDatabase db_;
  std::unique_ptr<ValkeyAdmin> vk_;
  int vdb_; // of the session's Valkey (64 databases), whose database 0 the pool's first workspace uses
  int counter_ = 0;
};

/// Any broker of the registry (supervisor/broker_registry.h), through its brokers::Broker seam: a namespace
/// of its own (a Valkey database, an embedded Kafka or nats-server, a vhost of the command's RabbitMQ
/// node), the messages published as the harness publishes them, one consumer pointed straight at the
/// broker's own port, stopped once every event is marked in processed_messages (a dedup-table target's
/// mark) and the broker has nothing pending.
class DirectBroker {
public:
  DirectBroker(Session& session, const Target& t);
  ~DirectBroker();

  /// The broker's namespace and the database back to their initial state.
  void reset();
  /// Milliseconds from the first message published to the consumer's exit. Faults are not driven: one
  /// process, no kill.
  double run(const Schedule& s);

private:
  Target t_;
  Scenario sc_;
  TempDir logs_;
  DirectDatabase db_;
  brokers::BrokerPtr broker_;
};

} // namespace idem::bench
