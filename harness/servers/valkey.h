#pragma once
/// Private: one embedded valkey-server (or redis-server when Valkey is not installed). No automatic
/// persistence: its data reaches its data dir only as the RDB snapshot a restart() writes and reloads.
#include "servers/server_process.h"

#include <filesystem>
#include <string>
#include <utility>

namespace idem::servers {

class ValkeyServer final : public ServerProcess {
public:
  /// Finds valkey-server, else redis-server, on PATH and makes the temp dir. Throws UsageError.
  ValkeyServer();
  ~ValkeyServer() override;
  /// SIGKILL and reap (nothing to flush); idempotent.
  void stop() override;
  const std::string& binaryName() const { return name_; }

private:
  explicit ValkeyServer(std::pair<std::filesystem::path, std::string> exe);
  ChildSpec command(int port) const override;
  /// Ours once INFO's process_id is our child's pid; ready once it has loaded its snapshot (loading:0).
  Probe probe() override;
  /// For restart(): SHUTDOWN SAVE over an authenticated connection — the snapshot of every database (keys,
  /// streams, consumer groups, pending entry lists) and the exit in one command, so no write acknowledged
  /// after the snapshot is lost — then waits for the process to exit.
  void shutdown(std::chrono::steady_clock::time_point deadline) override;

  std::filesystem::path exe_;
  std::string name_;
  Account account_;
  std::filesystem::path conf_; ///< its configuration: the secret, the commands it refuses, where it saves
  std::filesystem::path data_; ///< its `dir`: the only place it writes (dump.rdb)
};

} // namespace idem::servers
