#pragma once
/// Private: one embedded PostgreSQL server, started as a direct child (not pg_ctl) from a copy of
/// the cached template data dir, TCP only on 127.0.0.1.
#include "servers/pg_template.h"
#include "servers/server_process.h"

#include <filesystem>

namespace idem::servers {

class PgServer final : public ServerProcess {
public:
  /// Finds the binaries, makes the temp dir and copies the template into it (initdb on a cache
  /// miss). Throws UsageError.
  PgServer();
  ~PgServer() override;
  /// Fast shutdown (SIGINT), then SIGQUIT, then SIGKILL; idempotent. The temp dir goes with the object.
  void stop() override;

private:
  ChildSpec command(int port) const override;
  /// For restart(): a fast shutdown (SIGINT to the postmaster alone, as stop() starts): open transactions
  /// roll back, connections drop, a checkpoint is written and the postmaster exits. The data dir keeps
  /// everything the first start set up (the template's copy, pg_hba.conf, the secret in the catalog);
  /// the socket and listen settings come from command(), the same for every launch.
  void shutdown(std::chrono::steady_clock::time_point deadline) override;
  /// Ready once postmaster.pid names our pid and says "ready", and PQping says PQPING_OK.
  Probe probe() override;
  bool ownsPort() const;
  /// Sets the superuser's password to secret(), over the private socket.
  void setSecret();

  PgBinaries bin_;
  Account account_;
  std::filesystem::path data_;
};

} // namespace idem::servers
