#pragma once
/// The PostgreSQL and Valkey/Redis servers a run uses: embedded (started by idemproof, the default) or
/// external (--database-url / --valkey-url).
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace idem {

/// Where the servers are. Admin URLs are for the harness itself (setup, reset, final state); consumers
/// always go through the proxies.
struct ServerEndpoints {
  std::string pg_host = "127.0.0.1";
  int pg_port = 0;
  std::string pg_user;      ///< role to connect as
  std::string pg_password;  ///< may be empty
  std::string pg_database;  ///< the database given (external) or "postgres" (embedded)
  std::string pg_options;   ///< extra libpq URI query (e.g. sslmode=disable), may be empty
  std::string valkey_host = "127.0.0.1";
  int valkey_port = 0;
  int valkey_db = 0;
  std::string valkey_password; ///< may be empty
  bool embedded = true;     ///< idemproof owns the servers: it may create databases and FLUSHDB
  std::string valkey_binary; ///< "valkey-server" or "redis-server" (embedded), for the report
  /// The user's brokers, by the name a target's manifest gives them (--amqp-url: "rabbitmq", --nats-url:
  /// "nats"); a broker not named here is embedded.
  std::map<std::string, std::string> broker_urls;
};

class EmbeddedServers;
using EmbeddedServersPtr = std::unique_ptr<EmbeddedServers>;

/// Starts PostgreSQL (from a cached template data dir, as the `postgres` user when running as root)
/// and valkey-server (or redis-server), both on free ports of 127.0.0.1, data on tmpfs when available.
/// Stopped and their temp dirs removed by the destructor and by Cleanup on any exit.
/// Throws UsageError with a one-line reason (and the server log path) when a server cannot start.
class EmbeddedServers {
public:
  static EmbeddedServersPtr start();
  /// A Valkey/Redis of its own beside the PostgreSQL of `pg` (an embedded one, which this does not own:
  /// restart("pg") is refused). The endpoints are `pg`'s with this Valkey's port and secret, database 0.
  static EmbeddedServersPtr startValkeyBeside(const ServerEndpoints& pg);
  virtual ~EmbeddedServers() = default;
  virtual const ServerEndpoints& endpoints() const = 0;
  /// Restarts one server in place, for the "restart" fault: `which` is "pg" (a fast shutdown: open
  /// transactions roll back, connections drop; committed data stays) or "valkey" (snapshotted and
  /// reloaded: every key, stream, consumer group and pending entry list comes back). It comes back on the
  /// same port with the same secret, so endpoints() do not change and clients reconnect as before.
  /// Thread-safe against the signal thread's cleanup. Throws UsageError naming `which` when it is neither,
  /// and (naming the server, its port and its log) when the server does not stop and come back within
  /// `timeout`, or cannot bind its port again; the server is then stopped.
  virtual void restart(const std::string& which, std::chrono::milliseconds timeout) = 0;
  /// How many restarts were begun (those that failed too): whoever shares these servers reconnects when the
  /// count moved since its connections were made.
  virtual uint64_t restarts() const = 0;
};

/// Parses --database-url (a libpq URI postgresql://user:pw@host:port/db?opts) and --valkey-url
/// (redis://[:pw@]host:port[/db]) into endpoints. Throws UsageError naming the flag.
ServerEndpoints externalEndpoints(const std::string& databaseUrl, const std::string& valkeyUrl);

} // namespace idem
