#pragma once
/// The embedded NATS server of one workspace: `nats-server` with JetStream, on 127.0.0.1 and a free port,
/// its store in a temp folder of its own, a fresh token every connection must present (in its
/// configuration file, private to it, not on its command line), in a process group of its own that no
/// exit of idemproof leaves running (core/child.h, core/cleanup.h). restart() keeps its store and port.
#include "servers/server_process.h"

#include <chrono>
#include <filesystem>
#include <string>

namespace idem::nats::client {

class EmbeddedNats final : public servers::ServerProcess {
public:
  /// Starts it and waits until it answers with its token (~10 ms). Throws UsageError naming the program
  /// and its log when it cannot be found, exits, or is not ready within 15 s.
  EmbeddedNats();
  ~EmbeddedNats() override;

  /// nats-server on PATH, else /usr/sbin/nats-server (Debian's package puts it there). Throws UsageError.
  static std::filesystem::path findProgram();

  /// "nats://TOKEN@127.0.0.1:PORT".
  std::string url() const;
  /// The server in place again (the `restart` fault): a graceful stop that keeps its store, then the same
  /// port. Throws UsageError.
  void restartInPlace();
  void stop() override;

private:
  ChildSpec command(int port) const override;
  Probe probe() override;
  void shutdown(std::chrono::steady_clock::time_point deadline) override;

  std::filesystem::path exe_, conf_, store_;
  servers::Account account_;
};

} // namespace idem::nats::client
