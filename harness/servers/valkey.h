#pragma once
/// Private: one embedded valkey-server (or redis-server when Valkey is not installed), no persistence.
#include "core/child.h"
#include "core/temp_dir.h"
#include "servers/server_util.h"

#include <chrono>
#include <filesystem>
#include <string>

namespace idem::servers {

class ValkeyServer {
public:
  /// Finds valkey-server, else redis-server, on PATH and makes the temp dir. Throws UsageError.
  ValkeyServer();
  ~ValkeyServer();
  ValkeyServer(const ValkeyServer&) = delete;
  ValkeyServer& operator=(const ValkeyServer&) = delete;

  void launch(int port);
  /// Polls PING every 5 ms; Ready once our process (INFO process_id) answers, PortTaken when it
  /// exited because the port was taken. Throws UsageError otherwise or at the deadline.
  Readiness awaitReady(std::chrono::steady_clock::time_point deadline);
  /// SIGKILL and reap (nothing to flush); idempotent.
  void stop();

  int port() const { return port_; }
  pid_t pid() const { return child_.pid(); }
  const std::string& binaryName() const { return name_; }
  const std::filesystem::path& dir() const { return dir_.path(); }
  const std::filesystem::path& log() const { return log_; }

private:
  [[noreturn]] void fail(const std::string& why);
  enum class Ping { No, Ours, Other };
  Ping ping() const;

  std::string name_;
  std::filesystem::path exe_;
  TempDir dir_;
  std::filesystem::path log_;
  Child child_;
  int port_ = 0;
  uintmax_t logOffset_ = 0;
};

} // namespace idem::servers
