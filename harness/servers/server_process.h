#pragma once
/// Private: what the embedded servers share — a temp dir with the server's log in it, the child process
/// in its own group, the port it was launched on, the loop that waits until it is ready, and a restart in
/// place on that same port.
#include "core/child.h"
#include "core/temp_dir.h"
#include "servers/server_util.h"

#include <chrono>
#include <filesystem>
#include <string>

namespace idem::servers {

class ServerProcess {
public:
  virtual ~ServerProcess() = default;
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  /// Spawns the server on `port` (a previous attempt must have ended). Throws UsageError.
  void launch(int port);
  /// Polls every 5 ms until probe() says the server answering on the port is this one and ready, or it
  /// exits because `port` was taken. Throws UsageError (with the log's path and last lines) on any other
  /// failure or at the deadline.
  Readiness awaitReady(std::chrono::steady_clock::time_point deadline);
  /// Stops the server; idempotent.
  virtual void stop() = 0;
  /// Restarts the running server in place (the "restart" fault: clients reconnect while their run goes
  /// on): shutdown() ends it so that it keeps what it had committed, then it is launched again on the
  /// same port() — clients know only that port, so a port taken in the meantime is an error, never a move
  /// to another one — and awaited. Throws UsageError (fail(): name, port, log) when it was not running,
  /// does not stop, cannot bind its port again, or is not ready again by `deadline`.
  void restart(std::chrono::steady_clock::time_point deadline);

  int port() const { return port_; }
  pid_t pid() const { return child_.pid(); }
  const std::filesystem::path& dir() const { return dir_.path(); }
  const std::filesystem::path& log() const { return log_; }
  /// The secret a client must present (a password); fresh for every server.
  const std::string& secret() const { return secret_; }

protected:
  /// `name`: for messages ("PostgreSQL") and the kept log's name ("postgres").
  ServerProcess(const std::string& tempPrefix, const std::string& logName, std::string name, std::string logKeep);

  /// The command line and account of the server on `port`; launch() fills in cwd, env, log and what.
  virtual ChildSpec command(int port) const = 0;
  enum class Probe { NotYet, Ours, Other };
  /// Whether the server on the port answers, and whether it is this one (may call fail()).
  virtual Probe probe() = 0;
  /// Stops the server and throws UsageError naming it, its port, `why` and its log.
  [[noreturn]] void fail(const std::string& why);
  /// restart()'s first half: ends the running server the way that keeps its data for the next launch
  /// and returns once the process has exited and been reaped; calls fail() if it has not by `deadline`.
  virtual void shutdown(std::chrono::steady_clock::time_point deadline) = 0;
  /// Waits for the server process to exit until `deadline`; whether it did (then it is reaped).
  bool awaitExit(std::chrono::steady_clock::time_point deadline);

  TempDir dir_;
  std::filesystem::path log_;
  Child child_;
  const std::string secret_ = newSecret();

private:
  std::string name_, logKeep_;
  int port_ = 0;
  uintmax_t logOffset_ = 0;
};

} // namespace idem::servers
