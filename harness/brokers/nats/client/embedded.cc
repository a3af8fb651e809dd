// EmbeddedNats: nats-server launched through servers/server_process.h, probed with a raw CONNECT + PING
// carrying its token (ours answers PONG; a server that does not know the token is not ours).
#include "brokers/nats/client/embedded.h"

#include "core/error.h"
#include "core/ports.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace idem::nats::client {
namespace {

namespace fs = std::filesystem;

constexpr int kAttempts = 3;
constexpr auto kReadyTimeout = std::chrono::seconds(15);

/// A quoted string for nats-server's configuration (JSON's quoting is one it reads).
std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }

/// Reads from `fd` until `buf` holds `want` or the server closed, for up to `ms`.
bool readUntil(int fd, std::string& buf, const std::string& want, int ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (buf.find(want) == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char tmp[4096];
    const ssize_t n = ::read(fd, tmp, sizeof tmp);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<size_t>(n));
  }
  return true;
}

} // namespace

fs::path EmbeddedNats::findProgram() {
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
      const auto p = fs::path(dir.empty() ? "." : dir) / "nats-server";
      if (::access(p.c_str(), X_OK) == 0) return p;
    }
  }
  for (const char* p : {"/usr/sbin/nats-server", "/usr/bin/nats-server"})
    if (::access(p, X_OK) == 0) return p;
  throw UsageError("nats-server not found on PATH nor in /usr/sbin (Debian 12: apt-get install nats-server; "
                   "scripts/install-deps.sh)");
}

EmbeddedNats::EmbeddedNats()
    : ServerProcess("idemproof-nats-", "nats.log", "NATS server", "nats"), exe_(findProgram()),
      conf_(dir_.path() / "nats.conf"), store_(dir_.path() / "store"), account_(servers::serverAccount()) {
  servers::grantTraverse(dir_.path(), account_);
  std::error_code ec;
  fs::create_directory(store_, ec);
  if (ec) throw UsageError(fmt::format("embedded NATS server: cannot create {}: {}", store_.string(), ec.message()));
  fs::permissions(store_, fs::perms::owner_all, fs::perm_options::replace);
  if (account_.drop && ::chown(store_.c_str(), account_.uid, account_.gid) != 0)
    throw UsageError(fmt::format("embedded NATS server: cannot chown {}", store_.string()));
  {
    // The port is on the command line (a restart keeps it); the token only here.
    std::ofstream out(conf_, std::ios::trunc);
    out << "host: \"127.0.0.1\"\n"
        << "authorization { token: " << quoted(secret()) << " }\n"
        << "jetstream { store_dir: " << quoted(store_.string()) << " }\n";
    if (!out) throw UsageError(fmt::format("embedded NATS server: cannot write {}", conf_.string()));
  }
  fs::permissions(conf_, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  if (account_.drop && ::chown(conf_.c_str(), account_.uid, account_.gid) != 0)
    throw UsageError(fmt::format("embedded NATS server: cannot chown {}", conf_.string()));
  for (int attempt = 1;; ++attempt) {
    launch(freePort());
    if (awaitReady(std::chrono::steady_clock::now() + kReadyTimeout) == servers::Readiness::Ready) break;
    if (attempt == kAttempts)
      throw UsageError(fmt::format("embedded NATS server: the port was taken {} times in a row (log: {})", kAttempts,
                                   log().string()));
  }
}

EmbeddedNats::~EmbeddedNats() { stop(); }

std::string EmbeddedNats::url() const { return fmt::format("nats://{}@127.0.0.1:{}", secret(), port()); }

ChildSpec EmbeddedNats::command(int port) const {
  ChildSpec spec;
  spec.argv = {exe_.string(), "-c", conf_.string(), "-js", "-a", "127.0.0.1", "-p", std::to_string(port)};
  if (account_.drop) {
    spec.uid = account_.uid;
    spec.gid = account_.gid;
  }
  return spec;
}

servers::ServerProcess::Probe EmbeddedNats::probe() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Probe::NotYet;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port()));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  Probe out = Probe::NotYet;
  std::string buf;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && readUntil(fd, buf, "\r\n", 1000) &&
      buf.rfind("INFO ", 0) == 0) {
    const std::string hello = fmt::format("CONNECT {{\"verbose\":false,\"pedantic\":false,\"auth_token\":{}}}\r\nPING\r\n",
                                          quoted(secret()));
    if (::send(fd, hello.data(), hello.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(hello.size())) {
      buf.clear();
      if (readUntil(fd, buf, "\r\n", 1000))
        out = buf.rfind("PONG", 0) == 0 ? Probe::Ours : buf.rfind("-ERR", 0) == 0 ? Probe::Other : Probe::NotYet;
    }
  }
  ::close(fd);
  return out;
}

void EmbeddedNats::shutdown(std::chrono::steady_clock::time_point deadline) {
  // SIGTERM: a graceful stop (lame duck is SIGUSR2) that flushes its store, which the next launch recovers.
  child_.signalGroup(SIGTERM);
  if (!awaitExit(deadline)) fail("did not shut down in time for a restart");
}

void EmbeddedNats::restartInPlace() { restart(std::chrono::steady_clock::now() + kReadyTimeout); }

void EmbeddedNats::stop() {
  // A throwaway store: SIGKILL loses nothing that matters.
  if (child_.valid() && !child_.poll()) {
    child_.signalGroup(SIGKILL);
    child_.waitFor(std::chrono::hours(1));
  }
}

} // namespace idem::nats::client
