#pragma once
/// Private: what the embedded servers share — a temp dir with the server's log in it, the child process
/// in its own group, the port it was launched on, and the loop that waits until it is ready.
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
