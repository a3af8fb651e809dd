#include "servers/postgres.h"

#include "core/error.h"

#include <libpq-fe.h>
#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <fstream>
#include <memory>

namespace fs = std::filesystem;

namespace idem::servers {

PgServer::PgServer()
    : ServerProcess("idemproof-pg-", "postgres.log", "PostgreSQL", "postgres"), bin_(findPgBinaries()),
      account_(postgresAccount()), data_(dir_.path() / "data") {
  grantTraverse(dir_.path(), account_); // initdb and the server reach the data dir inside
  fs::path tmpl = ensureTemplate(bin_, account_, dir_.path());
  copyDataDir(tmpl, data_, account_);
  // No local user gets in: TCP only with this server's secret (the `password` method: one round trip,
  // cleartext over loopback only), and the superuser without it only over a socket in the data
  // directory, which is private to the server's account (mode 0700), for setting that secret.
  fs::path hba = data_ / "pg_hba.conf";
  {
    std::ofstream out(hba, std::ios::trunc);
    out << "# written by idemproof for this server only\n"
           "local all postgres trust\n"
           "host all all 127.0.0.1/32 password\n";
    if (!out) throw UsageError(fmt::format("embedded PostgreSQL: cannot write {}", hba.string()));
  }
  fs::permissions(hba, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  if (account_.drop && ::chown(hba.c_str(), account_.uid, account_.gid) != 0)
    throw UsageError(fmt::format("embedded PostgreSQL: cannot chown {}", hba.string()));
}

PgServer::~PgServer() { stop(); }

ChildSpec PgServer::command(int port) const {
  ChildSpec spec;
  spec.argv = {(bin_.bindir / "postgres").string(), "-D", data_.string(),
               "-c", "listen_addresses=127.0.0.1",
               "-c", fmt::format("port={}", port),
               "-c", "unix_socket_directories=" + data_.string(),
               "-c", "unix_socket_permissions=0700",
               "-c", "fsync=off",
               "-c", "synchronous_commit=off",
               "-c", "full_page_writes=off",
               "-c", "max_connections=200",
               "-c", "shared_buffers=32MB",
               // Throwaway cluster: no WAL shipping, rare checkpoints, no JIT start-up costs.
               "-c", "wal_level=minimal",
               "-c", "max_wal_senders=0",
               "-c", "max_wal_size=1GB",
               "-c", "checkpoint_timeout=1h",
               "-c", "jit=off",
               "-c", "autovacuum=off",
               "-c", "max_logical_replication_workers=0",
               // Dynamic shared memory as files in the data dir (tmpfs), not /dev/shm/PostgreSQL.*:
               // they go with the temp dir even when the postmaster was SIGKILLed.
               "-c", "dynamic_shared_memory_type=mmap"};
  if (account_.drop) {
    spec.uid = account_.uid;
    spec.gid = account_.gid;
  }
  return spec;
}

bool PgServer::ownsPort() const {
  // postmaster.pid: line 1 is the pid, line 8 becomes "ready" once it accepts connections.
  std::ifstream in(data_ / "postmaster.pid");
  std::string line, first;
  for (int i = 1; std::getline(in, line); ++i) {
    if (i == 1) first = line;
    if (i == 8) return first == std::to_string(child_.pid()) && line.rfind("ready", 0) == 0;
  }
  return false;
}

ServerProcess::Probe PgServer::probe() {
  // Once postmaster.pid says ready, our postmaster listens on the port (it writes "ready" only after
  // binding every address) and accepts connections: no TCP ping, whose backend costs a fork. Setting the
  // secret over the private socket proves the server answers; after a restart the secret is already in
  // the catalog, and setting it again costs one local round trip.
  if (!ownsPort()) return Probe::NotYet;
  setSecret();
  return Probe::Ours;
}

void PgServer::setSecret() {
  const std::string local = fmt::format("host={} port={} user=postgres dbname=postgres connect_timeout=5", data_.string(), port());
  std::unique_ptr<PGconn, decltype(&PQfinish)> c(PQconnectdb(local.c_str()), &PQfinish);
  if (PQstatus(c.get()) != CONNECTION_OK) fail(fmt::format("cannot connect over its socket: {}", PQerrorMessage(c.get())));
  // Stored as MD5, not SCRAM: the `password` method gets the secret in clear and checks it against what is
  // stored, and a SCRAM verifier costs 4096 PBKDF2 rounds of the backend's CPU on every connection (a
  // fifth of a backend's CPU here: docs/benchmarks.md). The hash never leaves the private data dir.
  std::unique_ptr<PGresult, decltype(&PQclear)> r(
      PQexec(c.get(), fmt::format("SET password_encryption = 'md5'; ALTER ROLE postgres PASSWORD '{}'", secret()).c_str()),
      &PQclear);
  if (PQresultStatus(r.get()) != PGRES_COMMAND_OK)
    fail(fmt::format("cannot set its secret: {}", PQresultErrorMessage(r.get())));
}

void PgServer::shutdown(std::chrono::steady_clock::time_point deadline) {
  // The postmaster alone: it tells its children what to do (a SIGINT to a backend would only cancel its
  // query). It is our unreaped child, so its pid cannot have been reused.
  ::kill(child_.pid(), SIGINT);
  if (!awaitExit(deadline)) fail("did not finish its fast shutdown in time for a restart");
}

void PgServer::stop() {
  if (!child_.valid() || child_.poll()) return;
  // Immediate shutdown: the cluster is thrown away with its temp dir, so the checkpoint of a fast
  // shutdown would be written for nothing (a restart fault shuts down fast: shutdown()).
  child_.signalGroup(SIGQUIT);
  if (child_.waitFor(std::chrono::seconds(5))) return;
  child_.stop(std::chrono::milliseconds(0));
}

} // namespace idem::servers
