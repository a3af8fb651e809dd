// EmbeddedServers::start(): PostgreSQL and Valkey/Redis launched side by side on free ports, each
// retried on another port (up to 3 attempts) when the port was taken between freePort() and bind.
#include "servers/servers.h"

#include "core/error.h"
#include "core/cleanup.h"
#include "core/ports.h"
#include "servers/postgres.h"
#include "servers/valkey.h"

#include <fmt/format.h>

namespace idem {
namespace {

using servers::Readiness;

constexpr int kAttempts = 3;
constexpr auto kReadyTimeout = std::chrono::seconds(15);

template <class Server> int launchOnFreePort(Server& s, int avoid) {
  int port = freePort();
  while (port == avoid) port = freePort();
  s.launch(port);
  return port;
}

template <class Server> void awaitWithRetry(Server& s, const char* what, int avoid) {
  for (int attempt = 1;; ++attempt) {
    if (s.awaitReady(std::chrono::steady_clock::now() + kReadyTimeout) == Readiness::Ready) return;
    if (attempt == kAttempts) {
      throw UsageError(fmt::format("embedded {}: the port was taken {} times in a row (log: {})", what,
                                   kAttempts, s.log().string()));
    }
    launchOnFreePort(s, avoid);
  }
}

class EmbeddedServersImpl final : public EmbeddedServers {
public:
  EmbeddedServersImpl() {
    launchOnFreePort(pg_, 0);
    launchOnFreePort(valkey_, pg_.port());
    awaitWithRetry(pg_, "PostgreSQL", valkey_.port());
    awaitWithRetry(valkey_, valkey_.binaryName().c_str(), pg_.port());
    // Newer than the kill-the-group actions of both children, so it runs first: a graceful stop.
    cleanupId_ = Cleanup::instance().add("stop embedded servers", [this] { stopAll(); });

    ep_.pg_host = "127.0.0.1";
    ep_.pg_port = pg_.port();
    ep_.pg_user = "postgres";
    ep_.pg_password = pg_.secret();
    ep_.valkey_password = valkey_.secret();
    ep_.pg_database = "postgres";
    ep_.valkey_host = "127.0.0.1";
    ep_.valkey_port = valkey_.port();
    ep_.valkey_db = 0;
    ep_.embedded = true;
    ep_.valkey_binary = valkey_.binaryName();
  }

  ~EmbeddedServersImpl() override {
    Cleanup::instance().remove(cleanupId_); // waits if the signal thread is running it
    stopAll();
  }

  const ServerEndpoints& endpoints() const override { return ep_; }

private:
  void stopAll() {
    valkey_.stop();
    pg_.stop();
  }

  servers::PgServer pg_;
  servers::ValkeyServer valkey_;
  ServerEndpoints ep_;
  int cleanupId_ = -1;
};

} // namespace

EmbeddedServersPtr EmbeddedServers::start() { return std::make_unique<EmbeddedServersImpl>(); }

} // namespace idem
