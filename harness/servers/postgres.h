#pragma once
/// Private: one embedded PostgreSQL server, started as a direct child (not pg_ctl) from a copy of
/// the cached template data dir, TCP only on 127.0.0.1.
#include "core/child.h"
#include "core/temp_dir.h"
#include "servers/pg_template.h"

#include <chrono>
#include <filesystem>

namespace idem::servers {

class PgServer {
public:
  /// Finds the binaries, makes the temp dir and copies the template into it (initdb on a cache
  /// miss). Throws UsageError.
  PgServer();
  ~PgServer();
  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  /// Spawns the postmaster on `port` (a previous attempt must have ended).
  void launch(int port);
  /// Polls every 5 ms until the postmaster is ready (postmaster.pid names our pid and says "ready",
  /// and PQping says PQPING_OK), or it exits because `port` was taken. Throws UsageError (with the log's path and last lines) on any other failure or timeout.
  Readiness awaitReady(std::chrono::steady_clock::time_point deadline);
  /// Fast shutdown (SIGINT), then SIGQUIT, then SIGKILL; idempotent. The temp dir goes with the object.
  void stop();

  int port() const { return port_; }
  pid_t pid() const { return child_.pid(); }
  const std::filesystem::path& dir() const { return dir_.path(); }
  const std::filesystem::path& log() const { return log_; }

private:
  [[noreturn]] void fail(const std::string& why);
  bool ownsPort() const;

  PgBinaries bin_;
  Account account_;
  TempDir dir_;
  std::filesystem::path data_;
  std::filesystem::path log_;
  Child child_;
  int port_ = 0;
  uintmax_t logOffset_ = 0;
};

} // namespace idem::servers
