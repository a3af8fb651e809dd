#pragma once
/// The server processes of an HTTP schedule (docs/http-contract.md, "Replicas"): R replicas of the target's
/// command (R = Schedule::replicas, 1 to 3), each behind its own proxies to PostgreSQL and Valkey and told its
/// own PORT. Replica r's first process is s<r>; a process that ends (killed at a kill point, or by itself) is
/// replaced at once by a new one serving the same replica, labelled with the next number after every
/// process so far (with two replicas: s1, s2, then s3 for the first replacement). Its spawn names the
/// replica it serves (ops::Spawn::consumer), so the history tells which replica did every step.
/// Also what a restart fault of PostgreSQL or Valkey meant to each process that lived through it.
#include "core/ports.h"
#include "history/history.h"
#include "proxy/hub.h"
#include "supervisor/controller.h"
#include "supervisor/processes.h"
#include "supervisor/workspace_impl.h"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace idem {

/// The run stopped at a limit (deadline, start timeout, restart bound): the history's end says which.
struct HttpRunLimit {
  std::string limit, reason;
};

class HttpReplicas {
public:
  using Clock = std::chrono::steady_clock;
  /// `tend` carries out what the controller leaves to the supervisor while a server starts (its restart
  /// faults); `remaining` is the time left before the run's deadline.
  HttpReplicas(Workspace::Impl& ws, History& h, Controller& ctl, proxy::Hub& hub, TargetProcesses& procs, int replicas,
               std::function<void()> tend, std::function<std::chrono::milliseconds()> remaining);

  int count() const { return static_cast<int>(servers_.size()); }
  /// Replica r's (1-based) live process: its port and label. Every replica has one between start() and stop().
  int port(int replica) const { return at(replica).port(); }
  const std::string& label(int replica) const { return at(replica).label; }

  /// Starts every replica, one after the other, each ready before the next starts.
  void start();
  /// Replaces every process that ended (killed at a kill point, or by itself) with a ready new one.
  void check();
  /// Whether live process `label` has a request at a server (PostgreSQL, Valkey, the sink) without its
  /// reply, other than a blocking read or a keep-alive: the server makes it wait (a lock).
  bool waitsOnAServer(const std::string& label) const;
  /// Stops every process (SIGTERM, then SIGKILL after the grace) and records how each came through restarts.
  void stop();
  /// A restart fault is about to restart `server` ("PostgreSQL", "Valkey"): notes each live process's
  /// connections so far, to tell once it ends whether it reconnected.
  void restarting(const Fault& f, const std::string& server);

private:
  struct Server : TargetProcess {
    PortLease lease; ///< its PORT, no other idemproof command's while it lives
    int port() const { return lease.port(); }
  };
  const Server& at(int replica) const { return *servers_.at(static_cast<size_t>(replica - 1)); }
  /// Starts replica r's process and waits until it is ready, on another port when another process took its
  /// port first (at most kPortAttempts processes).
  void startOne(int replica, const char* why);
  static constexpr int kPortAttempts = 3;
  /// How a process's start-up ended: ready, or exited in a way that is not the target's failure and calls
  /// for a new process: another process took its port (recorded by "port-taken"), or a server restart it
  /// lived through while starting (its start-up query failed: recorded by "self", with the restart's note).
  enum class Start { Ready, PortTaken, ExitedAfterRestart };
  /// Until replica r's process accepts a connection (and its health path answers 2xx, when there is one).
  /// Throws when it exits before that by itself.
  Start waitReady(Server& s);
  bool ready(const Server& s);
  /// How process `s` that ends now (`exit`: how it exited by itself, "" when the harness stopped or killed
  /// it) came through the restarts it lived through: "s1 reconnected" / "s1 exited (exit 1) and was
  /// replaced" / "s1 made no new connection".
  void restartOutcome(const Server& s, const std::string& exit);

  Workspace::Impl& ws_;
  History& h_;
  Controller& ctl_;
  proxy::Hub& hub_;
  TargetProcesses& procs_;
  std::function<void()> tend_;
  std::function<std::chrono::milliseconds()> remaining_;
  std::vector<std::optional<Server>> servers_; ///< replica r at r - 1
  int nserver_ = 0;                            ///< processes started so far (labels s1, s2, …)
  struct Restarted {
    std::string fault, server;
    int owner = 0;
    int connections = 0; ///< its connections made before the restart
  };
  std::vector<Restarted> restarted_;
};

} // namespace idem
