#pragma once
/// Private: one embedded valkey-server (or redis-server when Valkey is not installed), no persistence.
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
  /// Ours once INFO's process_id is our child's pid.
  Probe probe() override;

  std::filesystem::path exe_;
  std::string name_;
  Account account_;
  std::filesystem::path conf_; ///< its configuration: the secret and the commands it refuses
};

} // namespace idem::servers
