// Start failures of the embedded servers: port taken (retried), a server that dies at start, no binary.
#include "core/error.h"
#include "core/ports.h"
#include "server_test_util.h"
#include "servers/postgres.h"
#include "servers/servers.h"
#include "servers/valkey.h"

#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

using namespace idem;
using namespace idem::test;
namespace fs = std::filesystem;

namespace {

/// Holds a listening socket on a free port of 127.0.0.1.
struct PortSquatter {
  int fd = -1;
  int port = 0;
  PortSquatter() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd, 1) == 0);
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port = ntohs(addr.sin_port);
  }
  ~PortSquatter() { ::close(fd); }
};

auto deadline() { return std::chrono::steady_clock::now() + std::chrono::seconds(60); }

void writeScript(const fs::path& p, const std::string& body) {
  std::ofstream(p) << "#!/bin/sh\n" << body;
  ::chmod(p.c_str(), 0755);
}

} // namespace

TEST_CASE("PostgreSQL on a taken port reports PortTaken, then starts on another", "[embedded][port]") {
  EnvOverride cache("IDEMPROOF_CACHE_DIR", testCacheDir().string());
  servers::PgServer pg;
  PortSquatter squatter;
  pg.launch(squatter.port);
  CHECK(pg.awaitReady(deadline()) == servers::Readiness::PortTaken);
  pg.launch(freePort());
  CHECK(pg.awaitReady(deadline()) == servers::Readiness::Ready);
  pid_t pid = pg.pid();
  pg.stop();
  CHECK(::kill(pid, 0) == -1);
}

TEST_CASE("Valkey on a taken port reports PortTaken, then starts on another", "[embedded][port]") {
  servers::ValkeyServer vk;
  PortSquatter squatter;
  vk.launch(squatter.port);
  CHECK(vk.awaitReady(deadline()) == servers::Readiness::PortTaken);
  vk.launch(freePort());
  CHECK(vk.awaitReady(deadline()) == servers::Readiness::Ready);
  pid_t pid = vk.pid();
  vk.stop();
  CHECK(::kill(pid, 0) == -1);
}

TEST_CASE("a PostgreSQL that dies at start gives a UsageError with the kept log", "[embedded][failure]") {
  ScratchDir fake;
  ScratchDir cacheRoot;
  writeScript(fake.path / "postgres",
              "if [ \"$1\" = -V ]; then echo 'postgres (PostgreSQL) 99.1 (fake)'; exit 0; fi\n"
              "echo 'FATAL:  something is wrong' >&2\nexit 1\n");
  writeScript(fake.path / "initdb", "mkdir -p \"$2/global\" && echo 99 > \"$2/PG_VERSION\" && touch \"$2/global/pg_control\"\n");
  EnvOverride bindir("IDEMPROOF_PG_BINDIR", fake.path.string());
  EnvOverride cache("IDEMPROOF_CACHE_DIR", (cacheRoot.path / "cache").string());
  std::string message;
  try {
    EmbeddedServers::start();
  } catch (const UsageError& e) {
    message = e.what();
  }
  INFO(message);
  CHECK(message.rfind("embedded PostgreSQL on port ", 0) == 0);
  CHECK(message.find("exited at start (exit 1) (log: ") != std::string::npos);
  CHECK(message.find("): FATAL:  something is wrong") != std::string::npos);
  CHECK(message.find('\n') == std::string::npos);
  auto open = message.find("(log: ") + 6;
  fs::path kept = message.substr(open, message.find(')', open) - open);
  CHECK(slurp(kept).find("something is wrong") != std::string::npos);
  fs::remove(kept);
  CHECK(listDir(cacheRoot.path / "cache").size() == 1); // the fake template was cached all the same
}

TEST_CASE("a failing initdb gives a UsageError with its log", "[embedded][failure]") {
  ScratchDir fake;
  ScratchDir cacheRoot;
  writeScript(fake.path / "postgres", "echo 'postgres (PostgreSQL) 98.1 (fake)'\n");
  writeScript(fake.path / "initdb", "echo 'initdb: error: no space left' >&2\nexit 1\n");
  EnvOverride bindir("IDEMPROOF_PG_BINDIR", fake.path.string());
  EnvOverride cache("IDEMPROOF_CACHE_DIR", (cacheRoot.path / "cache").string());
  std::string message;
  try {
    EmbeddedServers::start();
  } catch (const UsageError& e) {
    message = e.what();
  }
  CHECK(message.rfind("embedded PostgreSQL: initdb failed (exit 1; log: ", 0) == 0);
  CHECK(message.find("): initdb: error: no space left") != std::string::npos);
  auto open = message.find("log: ") + 5;
  fs::remove(message.substr(open, message.find(')', open) - open));
  CHECK(listDir(cacheRoot.path / "cache").empty());
}

TEST_CASE("a bad IDEMPROOF_PG_BINDIR is a UsageError", "[embedded][failure]") {
  EnvOverride bindir("IDEMPROOF_PG_BINDIR", "/nonexistent/bin");
  CHECK_THROWS_WITH(EmbeddedServers::start(),
                    "IDEMPROOF_PG_BINDIR=/nonexistent/bin: no executable postgres and initdb there");
}
