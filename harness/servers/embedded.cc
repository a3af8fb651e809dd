// EmbeddedServers::start(): PostgreSQL and Valkey/Redis launched side by side on free ports, each
// retried on another port (up to 3 attempts) when the port was taken between freePort() and bind.
// EmbeddedServers::startValkeyBeside(): a Valkey/Redis alone, beside a PostgreSQL started before.
// EmbeddedServers::restart(): one of them restarted in place, on its port.
#include "servers/servers.h"

#include "core/error.h"
#include "core/cleanup.h"
#include "core/ports.h"
#include "servers/postgres.h"
#include "servers/valkey.h"

#include <fmt/format.h>

#include <atomic>
#include <mutex>
#include <optional>

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
  /// Both servers, or (`pgBeside` given) only Valkey, with that PostgreSQL in its endpoints.
  explicit EmbeddedServersImpl(const ServerEndpoints* pgBeside) {
    if (pgBeside) {
      ep_ = *pgBeside;
    } else {
      pg_.emplace();
      launchOnFreePort(*pg_, 0);
    }
    launchOnFreePort(valkey_, ep_.pg_port);
    if (pg_) awaitWithRetry(*pg_, "PostgreSQL", valkey_.port());
    awaitWithRetry(valkey_, valkey_.binaryName().c_str(), pg_ ? pg_->port() : ep_.pg_port);
    registerStop();

    if (pg_) {
      ep_.pg_host = "127.0.0.1";
      ep_.pg_port = pg_->port();
      ep_.pg_user = "postgres";
      ep_.pg_password = pg_->secret();
      ep_.pg_database = "postgres";
    }
    ep_.valkey_password = valkey_.secret();
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
  uint64_t restarts() const override { return restarts_; }

  void restart(const std::string& which, std::chrono::milliseconds timeout) override {
    servers::ServerProcess* server = which == "pg" && pg_ ? static_cast<servers::ServerProcess*>(&*pg_)
                                     : which == "valkey" ? &valkey_
                                                         : nullptr;
    if (!server)
      throw UsageError(fmt::format("restart: no embedded server named '{}' ({})", which, pg_ ? "pg or valkey" : "valkey"));
    ++restarts_;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) throw UsageError(fmt::format("restart {}: the embedded servers are stopped", which));
      server->restart(std::chrono::steady_clock::now() + timeout);
    }
    // The relaunched child's kill-the-group action is now newer than the graceful stop: register the stop
    // again (outside mu_: removing the old one waits if the signal thread is running it, and it takes mu_).
    registerStop();
  }

private:
  /// Registers stopAll() with Cleanup, replacing the previous registration. Newer than the kill-the-group
  /// actions of both children, so it runs first: a graceful stop (PostgreSQL removes its shared memory).
  void registerStop() {
    int id = Cleanup::instance().add("stop embedded servers", [this] { stopAll(); });
    Cleanup::instance().remove(cleanupId_.exchange(id));
  }

  /// Stops both servers; serialised with restart() (the signal thread may call it while another thread
  /// restarts a server), and no restart happens after it.
  void stopAll() {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    valkey_.stop();
    if (pg_) pg_->stop();
  }

  std::optional<servers::PgServer> pg_; ///< none when started beside another's PostgreSQL
  servers::ValkeyServer valkey_;
  ServerEndpoints ep_;
  std::mutex mu_;       ///< held by restart() and stopAll()
  bool stopped_ = false; ///< stopAll() ran: no restart any more
  std::atomic<uint64_t> restarts_{0}; ///< restart() calls begun (restarts())
  std::atomic<int> cleanupId_{-1};
};

} // namespace

EmbeddedServersPtr EmbeddedServers::start() { return std::make_unique<EmbeddedServersImpl>(nullptr); }

EmbeddedServersPtr EmbeddedServers::startValkeyBeside(const ServerEndpoints& pg) {
  return std::make_unique<EmbeddedServersImpl>(&pg);
}

} // namespace idem
