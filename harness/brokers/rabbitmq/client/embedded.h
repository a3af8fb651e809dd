#pragma once
/// The embedded RabbitMQ node: one per idemproof command, started by the first workspace that needs it and
/// shared by every workspace after it (a node takes 5–13 s to start). It runs as the servers' account when
/// idemproof is root (servers/server_util.h), under a private node name, with its own epmd on a private
/// port, its AMQP and Erlang distribution listeners on 127.0.0.1 only, and its files in a temp dir; a user
/// and password of its own; a vhost per workspace. Nothing of it outlives idemproof (core/cleanup.h).
#include "core/child.h"
#include "core/ports.h"
#include "core/temp_dir.h"
#include "servers/server_util.h"

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace idem::rabbitmq::client {

class EmbeddedRabbit {
public:
  /// The node of this command, started on the first call (UsageError naming the log when it cannot be).
  static std::shared_ptr<EmbeddedRabbit> shared();
  /// A node of its own, for a workspace whose schedules restart it: a restart of the shared node would drop
  /// every other workspace's connections, faults that no schedule of theirs holds.
  static std::shared_ptr<EmbeddedRabbit> own();
  ~EmbeddedRabbit();
  EmbeddedRabbit(const EmbeddedRabbit&) = delete;
  EmbeddedRabbit& operator=(const EmbeddedRabbit&) = delete;

  int port() const { return port_.port(); }
  const std::string& user() const { return user_; }
  const std::string& password() const { return password_; }
  /// How long the last start took, from spawn to the first AMQP login.
  std::chrono::milliseconds startTime() const { return startTime_; }
  /// A new vhost on which the user may do everything (rabbitmqctl, ~1 s).
  void addVhost(const std::string& name);
  /// Stops the node gracefully (what it stored stays in its data dir) and starts it again on the same
  /// ports: every connection of every workspace drops.
  void restart();
  /// Stops the node and its epmd. Idempotent; safe from the signal thread.
  void stop();

private:
  EmbeddedRabbit();
  /// A port the node was to listen on was taken before it bound it.
  struct PortTaken {};
  /// Starts the node (and its epmd when it has none) and waits for a login; halt()s and throws on failure:
  /// PortTaken when `portTakenIsRetried` and a port was taken, else UsageError naming its log.
  void start(bool portTakenIsRetried = false);
  /// stop() with mu_ held.
  void halt();
  std::map<std::string, std::string> env() const;
  /// Runs rabbitmqctl with `args` against the node; throws with its output when it fails.
  void ctl(const std::vector<std::string>& args);

  TempDir dir_;
  servers::Account account_;
  std::filesystem::path home_, log_;
  std::string node_, user_, password_;
  PortLease port_, distPort_, epmdPort_; ///< no other idemproof command's while the node lives
  std::chrono::milliseconds startTime_{0};
  std::mutex mu_;
  Child epmd_, server_;
  int cleanupId_ = -1;
};

} // namespace idem::rabbitmq::client
